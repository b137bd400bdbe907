"""``simulate``'s ``replayed`` row: the session as it happened, through the cost model.

The ``recorded`` row is what the API billed; the ``replayed`` row is what ctxkit's model of the API
says the same requests cost. Their difference (the ``calibration`` object of each session) is the
model's error, and it bounds what any policy row can claim: policy rows are compared with ``none``
and ``replayed`` (both modelled), never with ``recorded``.

What is replayed:

* every main-chain request, with the view the session had at that point (its own compactions
  included), in Claude Code's layout and with its breakpoints (:func:`ctxkit.reports.replay.request_segments`);
* each request's size as the API counted it: the recorded usage. The pieces the request is cut into
  are ctxkit's estimates, scaled by the session's fitted factor, after an overhead piece (the system
  prompt and tools the view does not hold, plus the estimator's constant error) that makes up the
  rest (:func:`fit_overhead`: the form of :class:`ctxkit.tokens.view_count.Calibration`, which one
  usage gives the pipeline's counts, fitted here over all of the session's usages, since pricing
  splits every request into pieces); what the model decides is how that size splits into cache
  reads, cache writes and plain input (:mod:`ctxkit.reports.cache_model`);
* the conversation written again where Claude Code cleared old tool results in place (its microcompact),
  and keyed anew by what a turn's prompt set: a Claude Code 1.x turn's thinking budget and directory,
  the model its system prompt names (:mod:`ctxkit.reports.turn_settings`); each platform (the Anthropic
  API, Vertex AI, Bedrock) caching apart (:attr:`ctxkit.reports.usage.RecordedRequest.cache_model`);
* each request's cache lifetime, from its usage's ``cache_creation`` split (1 hour when it wrote any 1-hour tokens, else
  5 minutes when it wrote any 5-minute ones, else the session's);
* the session's own compactions as Claude Code makes them: one request of the history before the
  boundary (read from the cache) plus the compact prompt, by the model of the request before it;
  its figures are those of the ``agent-acompact-*`` file beside the session when there is one;
* the subagents' requests: the files under ``<session>/subagents/`` (and, for Claude Code 2.0, the ``agent-*.jsonl``
  files beside the session that name its ``sessionId``), each replayed the same way with an overhead piece of its own,
  each response once whichever files hold it, and a subagent's own compactions as the main chain's
  (:mod:`ctxkit.reports.compaction_agents`).

A session whose usage never reports a cache read or write talked to an API that did not cache (a
stand-in server, or caching turned off): every row of it is replayed without a cache; one that cached
the tools and system prompt only, sending the messages as plain input, with a cache of those only
(:func:`ctxkit.reports.api_cache.prompt_cache`).

Over 400 lines: the row's parts (the main chain, its own compactions' requests, the subagents inline and
in files beside it) and its calibration share the fit and the conversation replay defined here.
"""
from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from typing import Any

import orjson

from ..errors import CtxkitError
from ..policy.model import Policy
from ..summarize.prompt import build_compact_prompt
from ..transcript import read_transcript
from ..transcript.model import Transcript
from ..transcript.view import SUMMARY
from .api_cache import (
    TAIL,
    anthropic_models,
    caches_every_prefix,
    caches_lead_only,
    prompt_cache,
    request_ttl,
    run_cache,
    uncached_tail,
    without_tail,
)
from .cache_events import CacheEvents, cache_events, lead_losses, system_end_read
from .cache_model import CacheResult, Piece, PromptCache
from .compaction_agents import SubagentFile, made_for, with_compactions_attributed
from .history import own_boundaries
from .pricing import PriceTable, Usage
from .replay import calibrated, request_segments
from .rows import Request, Row
from .session_prefix import (
    INNER,
    WARM,
    SharedPrefix,
    Warm,
    consistent,
    context_id,
    directory_part,
    epochs,
    history_rewrites,
    is_warm,
    keep_warm,
    prefix_changes,
    shared_prefix,
    warm_piece,
    with_epoch,
    with_rewrites,
)
from .turn_settings import TurnSetting, turn_starts, with_turn
from .usage import RecordedRequest, recorded_requests

#: Figures compared by the calibration, and how far off the replay may be before simulate warns.
CALIBRATED_KEYS = ("cost_usd", "cache_read_input_tokens", "cache_creation_input_tokens")
TOLERANCE = 0.10
#: The id prefix of a request the replay adds without a recorded counterpart (a compaction's summary
#: request when no ``agent-acompact-*`` file holds it): priced in the row, left out of the calibration
UNRECORDED = "unrecorded-"


def fit_overhead(estimates: list[float], usages: list[float]) -> tuple[float, float]:
    """(overhead, scale) such that ``usage ≈ overhead + scale * estimate`` over a session's requests
    (least squares over those with usage): the overhead is what every request carries that the
    estimate does not see (the system prompt and tools when they are not recorded); the scale is the
    estimator's error per token. Overhead is never negative and scale is always positive."""
    pts = [(e, u) for e, u in zip(estimates, usages, strict=True) if u > 0]
    if not pts:
        return 0.0, 1.0
    n = len(pts)
    me, mu = sum(e for e, _ in pts) / n, sum(u for _, u in pts) / n
    var = sum((e - me) ** 2 for e, _ in pts)
    if n < 2 or var <= 0:
        return max(0.0, mu - me), 1.0
    scale = sum((e - me) * (u - mu) for e, u in pts) / var
    if scale <= 0:
        return max(0.0, mu - me), 1.0
    overhead = mu - scale * me
    if overhead < 0:
        overhead = 0.0
        scale = sum(e * u for e, u in pts) / max(1e-9, sum(e * e for e, _ in pts))
    return overhead, scale


def exact(pieces: list[Piece], fit: tuple[float, float], prompt_tokens: int, warm: Warm = Warm(),
          memo: dict | None = None, tail: float = 0.0) -> list[Piece]:
    """``pieces`` calibrated so that they add up to ``prompt_tokens`` (the usage the API reported for this
    request): the fitted scale, and the overhead piece makes up the rest; when the scaled estimate alone
    is already more, the pieces are scaled down to it and the overhead is empty. ``warm``: the part of
    the overhead that was in the cache before the session began (:func:`warm_start`), a piece of its own
    (or, with a shorter part other sessions kept of it, :attr:`SharedPrefix.inner`, two).
    ``memo``: :func:`ctxkit.reports.replay.calibrated`'s. ``tail``: the request's last tokens, never cached
    (:func:`ctxkit.reports.api_cache.uncached_tail`), a piece of their own after the rest (of the fitted overhead, without a
    recorded size)."""
    overhead, scale = fit
    estimate = sum(map(attrgetter("tokens"), pieces))  # (in C: the same sum, in the same order)
    tail = min(tail, prompt_tokens) if prompt_tokens > 0 else min(tail, overhead)
    if prompt_tokens <= 0:
        out = calibrated(pieces, overhead - tail, scale, memo)
    elif scale * estimate > prompt_tokens - tail:
        out = calibrated(pieces, 0.0, (prompt_tokens - tail) / estimate if estimate else 0.0, memo)
    else:
        out = calibrated(pieces, prompt_tokens - tail - scale * estimate, scale, memo)
    if warm.tokens > 0:
        head = out[0]
        shared = min(warm.tokens, head.tokens)
        # (a model with a shared prefix of its own has its own system prompt: the rest of it is another piece)
        own = head.digest if warm.digest == WARM else hashlib.blake2b(warm.digest + head.digest, digest_size=16).digest()
        beyond = directory_part(warm.digest) if warm.inner_in_directory else warm.digest
        # (two parts or one decided on the session's figures too: a request's overhead under the shorter part cuts it short)
        parts = [Piece(INNER, min(warm.inner, shared), True, True), Piece(beyond, max(0.0, shared - warm.inner), True, True)] \
            if 0 < warm.inner < warm.tokens else [Piece(warm.digest, shared, True, True)]
        end = warm.system_tokens  # (where the system prompt ends, when reads showed it: the context after it has no breakpoint)
        # (decided on the session's figures, not on this request's calibrated overhead: the same pieces at every request)
        own_parts = [Piece(own, max(0.0, min(end, head.tokens) - shared), True, True),
                     Piece(context_id(own), max(0.0, head.tokens - max(end, shared)), False, True)] if warm.tokens < end \
            else [Piece(own, head.tokens - shared, head.breakpoint and not 0 < end <= warm.tokens, True)]
        out = [*parts, *own_parts, *out[1:]]
    return [*out, Piece(TAIL, tail)] if tail > 0 else out


def warm_start(cache: PromptCache | None, point: RecordedRequest, pieces: list[Piece], ttl: int) -> None:
    """Put in the cache what the session's first request found there: Claude Code's system prompt and tools
    are the same from one session to the next, so a session begun within the cache lifetime of another
    reads them at once. The first request's recorded cache read says how much: that prefix of its pieces
    is cached just before it (never its uncached tail: a cut that ended on it would cache no prefix the
    request reads)."""
    read = point.usage.cache_read_input_tokens
    if cache is None or read <= 0:
        return
    cut, total = [], 0.0
    for p in without_tail(pieces):
        if total + p.tokens > read + 1:
            break
        total += p.tokens
        cut.append(Piece(p.digest, p.tokens, is_warm(p.digest), p.lead))  # (the shared parts: breakpoints of their own)
    if cut:
        cut[-1].breakpoint = True
        cache.request(point.sent_at, point.cache_model, cut, ttl)


def salted(pieces: list[Piece], salt: bytes) -> list[Piece]:
    """``pieces`` of another conversation (a subagent's): the same content is a different cache prefix
    when its overhead (system prompt, tools) is another one; the salt goes into the first piece."""
    if not pieces:
        return pieces
    return [pieces[0].keyed(salt), *pieces[1:]]


@dataclass
class Replayed:
    """What the replay of one conversation (the main chain or a subagent) gives the row."""

    requests: list[tuple[RecordedRequest, CacheResult, float]]  # (point, cache result, context)
    pieces: dict[int, list[Piece]]  # the calibrated pieces of the requests kept (the prefix of a compaction request)


def first_overhead(points: list[RecordedRequest], raw: list[list[Piece]], fit: tuple[float, float]) -> float:
    """The overhead piece of the conversation's first request (what its view does not hold)."""
    return exact(raw[0], fit, points[0].usage.prompt_tokens)[0].tokens if points else 0.0


def replay_conversation(points: list[RecordedRequest], raw: list[list[Piece]], cache: PromptCache | None,
                        default_ttl: int, fit: tuple[float, float], salt: bytes = b"",
                        marks: list[int] | None = None, shared: SharedPrefix | None = None,
                        keep: frozenset[int] = frozenset(), turns: list[TurnSetting] | None = None,
                        events: CacheEvents | None = None, tail: float = 0.0) -> Replayed:
    """The recorded requests ``points`` of one conversation, each with its estimated ``raw`` pieces.
    ``marks``: each request's epoch (:func:`ctxkit.reports.session_prefix.epochs`): the session's own part
    of the overhead is another piece in each; ``shared``: the part of the overhead shared with other
    sessions (:func:`ctxkit.reports.session_prefix.shared_prefix`), its own piece, kept in the cache
    before every request when other sessions kept it warm; ``turns``: each request's turn setting
    (:func:`ctxkit.reports.turn_settings.turn_settings`); ``events``: the cache events its usage shows
    (:mod:`ctxkit.reports.cache_events`); ``tail``: each request's uncached tail
    (:func:`ctxkit.reports.api_cache.uncached_tail`). ``keep``: the requests whose calibrated pieces the
    result holds (only those: each request's are new objects, and all would grow with the square of the
    requests)."""
    out = Replayed([], {})
    warm = 0.0
    sizes: dict[bytes, float] = {}
    scaled: dict = {}
    resized: dict = {}
    rewritten: dict = {}
    keyed: dict = {}
    rewrites = history_rewrites(points, raw)  # (Claude Code's microcompact, which its transcript does not show)
    sent: list[Piece] | None = None  # (the request before's calibrated pieces)
    for k, (point, pieces) in enumerate(zip(points, raw, strict=True)):
        ttl = request_ttl(point.usage, default_ttl)
        if k == 0 and cache is not None and shared is None:
            warm = float(point.usage.cache_read_input_tokens)
            warm = warm if warm < first_overhead(points, raw, fit) else 0.0  # more: cut at a block (warm_start)
        shared_part = warm_piece(shared, point.cache_model, warm) if cache is not None else Warm(warm)
        cal = with_epoch(exact(pieces, fit, point.usage.prompt_tokens, shared_part, scaled, tail), marks[k] if marks else 0)
        cal = consistent(with_rewrites(cal, rewrites[k], rewritten), sizes, point.usage.prompt_tokens, resized)
        cal = with_turn(cal, turns[k], keyed) if turns else cal
        cal = salted(cal, salt) if salt else cal
        if k == 0:
            warm_start(cache, point, cal, ttl)
        elif shared is not None:
            keep_warm(cache, shared, point, cal, ttl, k)
        if events is not None:
            events.before(cache, k, point.cache_model, point.sent_at, cal, sent)
        sent = cal
        result = run_cache(cache, point.sent_at, point.cache_model, cal, ttl)
        out.requests.append((point, result, sum(p.tokens for p in cal)))
        if k in keep:
            out.pieces[k] = cal
    return out


def subagent_files(path: str, t: Transcript) -> list[Path]:
    """The files holding the session's subagents: ``<session>/subagents/*.jsonl`` (Claude Code 2.1), and
    ``agent-*.jsonl`` beside it whose first entry names the session's ``sessionId`` (Claude Code 2.0)."""
    p = Path(path)
    found = sorted((p.parent / p.stem / "subagents").glob("*.jsonl")) if (p.parent / p.stem).is_dir() else []
    session_id = next((t.entry(i).get("sessionId") for i in t.live_indexes() if t.entry(i).get("sessionId")), None)
    if session_id:
        for other in sorted(p.parent.glob("agent-*.jsonl")):
            try:
                with open(other, "rb") as f:
                    first = orjson.loads(f.readline() or b"{}")
            except (OSError, orjson.JSONDecodeError):
                continue
            if isinstance(first, dict) and first.get("sessionId") == session_id:
                found.append(other)
    return found


def estimated_pieces(lines: list[bytes], policy: Policy, counter: Any, points: list[RecordedRequest]) -> list[list[Piece]]:
    """The estimated pieces of each request of one conversation held in ``lines`` (a subagent's): the view
    of the lines written before each point."""
    import tempfile

    from .replay import GrowingRead

    out: list[list[Piece]] = []
    memo: dict[bytes, int] = {}
    with tempfile.TemporaryDirectory(prefix="ctxkit-subagent-") as tmp:
        growing, done = GrowingRead(Path(tmp) / "prefix.jsonl"), 0
        for point in points:
            prefix = growing.add(lines[done:point.first_entry])
            done = point.first_entry
            out.append(request_segments(prefix, policy, counter, point.timestamp, memo))
    return out


def inline_subagents(t: Transcript, points: list[RecordedRequest]) -> list[tuple[str, list[bytes], list[RecordedRequest]]]:
    """The subagents Claude Code 1.0 wrote into the session's own file (``isSidechain`` lines), one
    conversation per chain root, each as (name, its lines, its requests renumbered to those lines)."""
    parent: dict[int, int | None] = {}
    index_of: dict[str, int] = {}
    for i in t.live_indexes():
        e = t.entry(i)
        if e.get("isSidechain"):
            if isinstance(e.get("uuid"), str):
                index_of[e["uuid"]] = i
            parent[i] = None
    for i in parent:
        parent[i] = index_of.get(t.entry(i).get("parentUuid"))

    def root(i: int) -> int:
        seen = set()
        while parent.get(i) is not None and i not in seen:
            seen.add(i)
            i = parent[i]  # type: ignore[assignment]
        return i

    groups: dict[int, list[int]] = {}
    for i in sorted(parent):
        groups.setdefault(root(i), []).append(i)
    out = []
    for r, members in groups.items():
        at = {i: k for k, i in enumerate(members)}
        pts = [dataclasses.replace(p, first_entry=at[p.first_entry]) for p in points if p.first_entry in at]
        if pts:
            out.append((f"inline-{r}", [t.raw_line(i)[0] + b"\n" for i in members], pts))
    return out


def _last_before(points: list[RecordedRequest], entry: int) -> int | None:
    return max((j for j, p in enumerate(points) if p.first_entry < entry), default=None)  # (None: none before)


def compaction_requests(t: Transcript, points: list[RecordedRequest], main: Replayed, acompact: list[RecordedRequest],
                        counter: Any, fit: tuple[float, float], cache: PromptCache | None,
                        default_ttl: int, boundaries: list[int]) -> list[tuple[RecordedRequest, CacheResult, float]]:
    """The summary request of each of the session's own compactions, as Claude Code makes it: the history
    before the boundary (the previous request's pieces, so read from the cache), then the compact prompt,
    by the previous request's model. With the ``agent-acompact-*`` file's request, its size and output
    are the recorded ones; otherwise the prompt is ctxkit's copy of Claude Code's and the output the
    summary the session wrote. ``boundaries``: the session's own compact boundaries (:func:`own_boundaries`)."""
    summaries = {min(m.entries): m for m in t.view().messages if m.kind == SUMMARY and m.entries}
    out = []
    prompt_tokens = counter.count_text(build_compact_prompt())
    made = made_for(t, boundaries, acompact)
    for k, b in enumerate(boundaries):
        before = _last_before(points, b)
        if before is None:
            continue
        prev, pieces = points[before], without_tail(main.pieces[before])
        history = sum(p.tokens for p in pieces)
        recorded = made[k]
        if recorded is not None and recorded.usage.prompt_tokens > history:
            extra, output, model = recorded.usage.prompt_tokens - history, recorded.usage.output_tokens, recorded.model
        else:
            after = [m for at, m in summaries.items() if at > b]
            extra = prompt_tokens * fit[1]
            output = round(counter.count_message(after[0].api()) * fit[1]) if after else 0
            model = prev.model
        prompt = Piece(hashlib.blake2b(b"compact-prompt%d" % k, digest_size=16).digest(), extra, True)
        stamp = recorded.timestamp if recorded is not None else prev.timestamp
        point = RecordedRequest(f"{'' if recorded is not None else UNRECORDED}compaction-{k}", b, stamp, model,
                                Usage(output_tokens=output), False)
        result = run_cache(cache, stamp, model, [*pieces, prompt], request_ttl(prev.usage, default_ttl))
        out.append((point, result, history + extra))
    return out


def calibration(row: Row, recorded: dict[str, Any]) -> dict[str, Any]:
    """Each figure's relative error, replayed against recorded ((replayed - recorded) / recorded; 0 when
    both are 0, None when only the recording is 0), and which are off by more than the tolerance. The
    requests the replay adds without a recorded counterpart are left out (``unrecorded``: how many, and
    their cost): the recording cannot say whether they are right."""
    extra = [r for r in row.requests if r.unrecorded]
    replayed = Row(row.policy, requests=[r for r in row.requests if not r.unrecorded]).to_json()
    errors: dict[str, Any] = {}
    for key in (*CALIBRATED_KEYS, "input_tokens", "output_tokens", "requests"):
        r, m = recorded[key], replayed[key]
        errors[key] = 0.0 if r == m == 0 else (None if not r else round((m - r) / r, 4))
    off = [k for k in CALIBRATED_KEYS if errors[k] is None or abs(errors[k]) > TOLERANCE]
    return {"relative_error": errors, "tolerance": TOLERANCE, "off": off,
            "unrecorded": {"requests": len(extra), "cost_usd": round(sum(r.cost for r in extra), 6)}}


def _request(point: RecordedRequest, res: CacheResult, context: float, prices: PriceTable, kind: str) -> Request:
    usage = Usage(input_tokens=res.input, cache_creation_input_tokens=res.write, cache_read_input_tokens=res.read,
                  output_tokens=point.usage.output_tokens, cache_write_1h_tokens=res.write_1h)
    return Request(point.timestamp, point.model, round(context), usage, prices.cost(point.model, usage), kind=kind,
                   unrecorded=point.message_id.startswith(UNRECORDED))


def read_subagents(path: str, t: Transcript, requests: list[RecordedRequest],
                   warnings: list[str]) -> list[SubagentFile]:
    """Each subagent file of the session (:func:`subagent_files`): its name, transcript and recorded requests
    (a compaction agent's: its own, and whose compaction it made: :mod:`ctxkit.reports.compaction_agents`;
    ``requests``: every request of the session's own file, which the agents' files may copy).
    A file that cannot be read is left out of both rows (recorded and replayed), with a warning."""
    out = []
    for f in subagent_files(path, t):
        try:
            sub = read_transcript(str(f), on_bad_line="skip")
        except CtxkitError as exc:
            warnings.append(f"subagent file left out: {exc.message}")
            continue
        out.append(SubagentFile(f.name, sub, recorded_requests(sub)))
    return with_compactions_attributed(requests, out)


def session_prefix_model(t: Transcript, points: list[RecordedRequest], pieces: list[list[Piece]],
                         fit: tuple[float, float], policy: Policy, caches: bool,
                         turns: list[TurnSetting]) -> tuple[list[int], SharedPrefix | None, CacheEvents]:
    """Each main request's epoch (:func:`ctxkit.reports.session_prefix.epochs`), the session's shared
    prefix, estimated from its usage (None for a session whose API did not cache), and the cache events
    its usage shows (:func:`ctxkit.reports.cache_events.cache_events`; ``turns``: each request's turn setting):
    a read of the system prompt alone, where reads recurring show it, or else of the shared prefix the first
    request found warm, after a request that sent more, is a loss (held-out ``9ffed815``, Claude Code 2.1.63
    through a relay: 16,132 read at once and again 20 seconds later, after a request of 19,794, 81.5% of it;
    -19.1% on cost when taken for a read of it all).
    An API that cached the tools and system prompt only (:func:`caches_lead_only`) shows only the losses of
    those (:func:`ctxkit.reports.cache_events.lead_losses`): each of its requests reading only them is how it
    caches, not a loss."""
    overhead = first_overhead(points, pieces, fit)
    marks = epochs(points, prefix_changes(t), t.format == "claude-code", overhead)
    ttls = [request_ttl(p.usage, policy.cache_minutes * 60) for p in points]
    if not caches:
        return marks, None, CacheEvents()
    moved = [k for k in range(1, len(turns)) if turns[k].cwd != turns[k - 1].cwd]  # (Claude Code 1.x: with_turn)
    system = system_end_read(points, marks, ttls, overhead, moved)
    # (an API that caches every prefix caches a request's answer with its prompt, not only before a new prompt)
    every_prefix = bool(caches_every_prefix(points))
    starts = frozenset(range(len(points))) if every_prefix else turn_starts(t, points)
    lead_only = caches_lead_only(points)
    # (where no read recurred to show where the system prompt ends, the part of it the first request found warm
    # stands for it: a later read of that alone lost the rest, however much of the request before it was)
    first = points[0].usage.cache_read_input_tokens if points else 0
    events = lead_losses(points, marks, turns, ttls) if lead_only else cache_events(
        points, marks, turns, ttls, overhead, pieces, starts, system or (first if 0 < first < overhead else 0.0),
        near_losses=anthropic_models(points) and not every_prefix)
    rethought = [k for k in range(1, len(turns)) if turns[k].budget != turns[k - 1].budget]
    # (a loss that read most of the request before shows where an earlier prompt changed, not the shared prefix)
    lost = events.lost.keys() - events.expected - events.near.keys()
    return marks, shared_prefix(points, marks, ttls, overhead, lost, moved, rethought, system, lead_only), events


def replayed_row(t: Transcript, points: list[RecordedRequest], pieces: list[list[Piece]],
                 subagent_reads: list[SubagentFile],
                 fit: tuple[float, float], policy: Policy, counter: Any, prices: PriceTable,
                 caches: bool, turns: list[TurnSetting],
                 prefix: tuple[list[int], SharedPrefix | None, CacheEvents]) -> Row:
    """The ``replayed`` row (see the module docstring): ``pieces`` are the estimated pieces of each main
    request as the session sent it, ``fit`` the session's (overhead, scale), ``turns`` each request's turn
    setting and ``prefix`` what :func:`session_prefix_model` made of them (the other rows share it)."""
    cache = prompt_cache(points, caches)
    ttl = policy.cache_minutes * 60
    row = Row("replayed")
    marks, shared, events = prefix
    boundaries = own_boundaries(t)
    before = (_last_before(points, b) for b in boundaries)
    main = replay_conversation(points, pieces, cache, ttl, fit, marks=marks, shared=shared,
                               keep=frozenset(k for k in before if k is not None), turns=turns, events=events,
                               tail=uncached_tail(points, cache))
    acompact: dict[str, list[RecordedRequest]] = {}  # the compaction agents' requests, by the conversation compacted
    for f in subagent_reads:
        if f.compacts is not None:
            acompact.setdefault(f.compacts, []).extend(f.points)
    for made in acompact.values():  # (in the order they were made, as the boundaries they answer)
        made.sort(key=lambda p: p.sent_at.timestamp() if p.sent_at else 0.0)
    subagents: list[tuple[str, list[RecordedRequest], list[list[Piece]], Transcript | None]] = []
    for f in subagent_reads:
        if f.compacts is None and f.points:
            lines = [f.transcript.raw_line(i)[0] + b"\n" for i in range(f.transcript.n_lines)]
            subagents.append((f.name, f.points, estimated_pieces(lines, policy, counter, f.points), f.transcript))
    for name, lines, pts in inline_subagents(t, [r for r in recorded_requests(t) if r.sidechain]):
        subagents.append((name, pts, estimated_pieces(lines, policy, counter, pts), None))
    compactions = {p.first_entry: (p, res, ctx) for p, res, ctx in
                   compaction_requests(t, points, main, acompact.get("", []), counter, fit, cache, ttl, boundaries)}
    for k, (point, res, ctx) in enumerate(main.requests):
        for at in [b for b in compactions if b < point.first_entry]:
            row.requests.append(_request(*compactions.pop(at), prices, "summarizer"))
            row.compactions.append({"request": k, "trigger": "recorded"})
        row.requests.append(_request(point, res, ctx, prices, "main"))
    counts = events.counts()
    for name, pts, raw, sub in subagents:
        fit_s = fit_overhead([sum(p.tokens for p in ps) for ps in raw], [p.usage.prompt_tokens for p in pts])
        # (an API that caches every prefix cached the subagent's answers too, as the main chain's: at every request)
        own = CacheEvents() if cache is None or cache.lead_only else cache_events(
            pts, [0] * len(pts), [TurnSetting()] * len(pts), [request_ttl(p.usage, ttl) for p in pts],
            first_overhead(pts, raw, fit_s), raw, frozenset(range(len(pts))) if cache.unit else frozenset(),
            near_losses=anthropic_models(pts) and not cache.unit)
        counts = {k: v + own.counts()[k] for k, v in counts.items()}
        # (a subagent that compacted: its summary requests, made as the main chain's are)
        sub_boundaries = own_boundaries(sub, sidechain=True) if sub is not None and name in acompact else []
        before = frozenset(k for k in (_last_before(pts, b) for b in sub_boundaries) if k is not None)
        replayed_sub = replay_conversation(pts, raw, cache, ttl, fit_s, salt=name.encode(), events=own,
                                           tail=uncached_tail(pts, cache), keep=before)
        for point, res, ctx in replayed_sub.requests:
            row.requests.append(_request(point, res, ctx, prices, "subagent"))
        if sub_boundaries:
            for point, res, ctx in compaction_requests(sub, pts, replayed_sub, acompact[name], counter, fit_s, cache,
                                                       ttl, sub_boundaries):
                row.requests.append(_request(point, res, ctx, prices, "summarizer"))
    row.cache_events = counts
    return row
