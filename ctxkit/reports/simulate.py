"""``ctxkit simulate``: what a policy would have done to a recorded session, and what it would have cost.

Each session is replayed request by request (:mod:`ctxkit.reports.replay`). For every row:

* ``recorded`` — what the session's main chain was billed: its usage figures, each response counted
  once with its final figures (:mod:`ctxkit.reports.usage`; another agent's session: its own usage
  records, :mod:`ctxkit.reports.agent_usage`); ``sidechain`` holds its subagents'
  requests (inline, and the files beside it), apart.
* ``replayed`` — the session as it happened, through the cost model (:mod:`ctxkit.reports.replayed`):
  the check on the model, and with ``none`` the baseline every policy is compared with; its
  ``calibration`` against ``recorded`` is in every session's result, with a warning past 10%.
* ``none`` — no context management: the view of the whole history at each request, the session's own
  compactions left out (:mod:`ctxkit.reports.history`); a request whose context is over the window
  is a failure (``failures``), and still counts in the peak.
* one row per policy — the view the policy's pipeline leaves at each request of that same whole
  history, with its compactions; a compaction made by a summarizer that calls a model (or any, with
  ``--price-summaries-as``) is a request of its own, made as Claude Code makes one.

Requests are priced through the prompt-cache model of :mod:`ctxkit.reports.cache_model` (breakpoints,
20-block lookback, per model, each request's lifetime, minimum length); their pieces are ctxkit's
estimates calibrated on the session's usage (:func:`ctxkit.reports.replayed.fit_overhead`). The output
of each request is the recorded one (the same answer under every policy). Costs come from
:mod:`ctxkit.reports.pricing`, by the model each request was made with.

Over 400 lines: one session's rows share what is worked out once from its requests and usage (the
pieces, the fit, the cache behaviours its usage shows: events, shared prefix, stripped thinking), here,
where every row is built from them.
"""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Callable

from ..errors import CtxkitError, UsageError
from ..policy.model import Policy
from ..run_context import build_context
from ..stages.microcompact import Microcompact
from ..store.disk import Store
from ..summarize.redact import redactor_for
from ..tokens import budget_for, make_counter
from ..tokens.session import policy_with_settings, session_policy
from ..transcript.claude_code.session import RecordedSettings
from ..transcript.interface import RequestUsage
from ..transcript.model import Transcript
from ..transcript.reader import read_bytes, read_transcript, require_a_readable_line
from .agent_usage import agent_requests
from .api_cache import (
    anthropic_cache,
    prompt_cache,
    reports_writes_as_input,
    request_ttl,
    run_cache,
    session_caches,
    uncached_tail,
)
from .cache_events import CacheEvents
from .cache_model import Piece, PromptCache
from .history import own_boundaries, whole_history
from .pricing import PriceTable, Usage
from .removed import removed_items
from .replay import GrowingRead, PolicyReplay, request_segments
from .replayed import (
    calibration,
    exact,
    first_overhead,
    fit_overhead,
    read_subagents,
    replayed_row,
    session_prefix_model,
    warm_start,
    without_tail,
)
from .rows import ROW_KEYS, Request, Row, sum_rows  # noqa: F401 (ROW_KEYS: the CLI reads it here)
from .session_prefix import SharedPrefix, consistent, keep_warm, restarts, warm_piece, with_epoch
from .stats import view_stats
from .stripped_thinking import strips_thinking, without_earlier_thinking
from .turn_settings import TurnSetting, turn_settings, with_turn
from .usage import RecordedRequest, recorded_requests


def _modelled_request(cache: PromptCache | None, point: RecordedRequest, pieces: list[Piece], policy: Policy,
                      prices: PriceTable, window: int) -> Request:
    """The request sent at ``point`` with these (calibrated) pieces: what the cache model reads and writes,
    priced, and whether it went over the window. Output tokens are the recorded answer's; the cache
    lifetime is the one the session's request had there, unless the policy sets ``request.cache_ttl``."""
    ttl = policy.cache_minutes * 60
    res = run_cache(cache, point.sent_at, point.cache_model, pieces,
                    ttl if policy.explicit("request.cache_ttl") else request_ttl(point.usage, ttl))
    usage = Usage(input_tokens=res.input, cache_creation_input_tokens=res.write, cache_read_input_tokens=res.read,
                  output_tokens=point.usage.output_tokens, cache_write_1h_tokens=res.write_1h)
    context = res.input + res.read + res.write
    return Request(point.timestamp, point.model, context, usage, prices.cost(point.model, usage),
                   failed=context > window)


def _thresholds(policy: Policy, context_window: int | None) -> dict[str, int]:
    b = budget_for(policy, context_window)
    return {"context_window": b.context_window, "autocompact_threshold": b.autocompact_threshold,
            "warning_threshold": b.warning_threshold, "blocking_limit": b.blocking_limit}


def _refuse_unmodelled(name: str, policy: Policy) -> None:
    """simulate prices what the API would bill; server-side clearing is not modelled, so a policy that
    relies on it is refused rather than priced as if it cleared nothing."""
    spec = policy.stage(Microcompact.name)
    if spec is None or not spec.enabled:
        return
    mode = {**Microcompact.defaults(), **dict(spec.options)}["mode"]
    if mode != "time-based":
        raise UsageError(f"policy {name}: simulate does not model microcompact's mode {mode} (the API clears "
                         "or edits the cached prompt server-side, and what that bills is not published); "
                         "simulate it with mode time-based (--set stages.microcompact.options.mode=time-based)")


def _prefix_pieces(lines: list[bytes], points: list[RecordedRequest], policy: Policy, counter: Any,
                   where: Path, memo: dict[bytes, int], known: list[list[Piece]] | None = None,
                   strip_thinking: bool = False, turns: list[int] | None = None,
                   ) -> tuple[list[list[Piece]], Transcript | None]:
    """The estimated pieces of the request at each point, each the view of the lines before it (each line
    read once: :class:`GrowingRead`), and the last prefix read. ``known``: the pieces of the first points,
    worked out already (the same lines before them): those are not built again. ``strip_thinking``: as
    :func:`request_segments`; ``turns``: where each built request's last turn begins is added to it."""
    growing = GrowingRead(where)
    prefix, done, out = None, 0, list(known or [])
    if out:
        done = points[len(out) - 1].first_entry
        prefix = growing.add(lines[:done])
    for point in points[len(out):]:
        prefix = growing.add(lines[done:point.first_entry])
        done = point.first_entry
        out.append(request_segments(prefix, policy, counter, point.timestamp, memo, strip_thinking))
        if turns is not None:
            turns.append(memo["turn"])
    return out, prefix


def simulate_session(path: str, policies: list[tuple[str, Policy]], prices: PriceTable, *,
                     context_window: int | None = None, cwd: Path | None = None,
                     summaries_as: str | None = None, on_bad_line: str = "fail") -> dict[str, Any]:
    """Replay one recorded session (Claude Code's, or another agent's: its requests from
    :mod:`ctxkit.reports.agent_usage`) under each policy; returns its rows (see the module docstring).

    The result holds :class:`Row` objects under ``"rows"`` (for the HTML report) beside the JSON
    parts; :func:`session_json` keeps only what ``simulate --json`` prints.
    ``on_bad_line="skip"``: an unreadable line is left out of every row, as if the file did not hold it
    (:func:`_without_bad_lines`), with a warning naming the first."""
    # an unreadable line stops here, named (exit 3), unless skipped; the steps read their own output
    t = require_a_readable_line(read_transcript(path, on_bad_line=on_bad_line))
    skipped = t.info.bad_lines
    if skipped.count:
        t = _without_bad_lines(path, t)
    if t.format in ("anthropic", "openai") or not t.lines:  # a message list records no requests, no usage
        what = f"this one is {t.format} messages" if t.lines else "this file is empty"  # empty: no format to name
        raise UsageError(f"{path}: simulate replays an agent's session (the requests it recorded and their "
                         f"usage: Claude Code, Codex, Gemini CLI, ...); {what}")
    # each policy as it applies to this session: its model, max_tokens and cache lifetime where the policy names none
    policies = [(name, session_policy(pol, t)) for name, pol in policies]
    everything = recorded_requests(t) if t.format == "claude-code" else agent_requests(t)
    points = [r for r in everything if not r.sidechain]
    # no write names its lifetime: the Anthropic API's default, as a relay behind Claude Code would have it; not
    # another agent's provider (OpenAI's cache outlives 5 minutes: Codex rollouts read after 8-minute pauses)
    writes_unreported = t.format == "claude-code" and reports_writes_as_input(points)
    if writes_unreported:
        unsaid = RecordedSettings(cache_ttl="5m", cache_ttl_source="the API's default: no usage reports a cache write")
        policies = [(name, policy_with_settings(pol, unsaid)) for name, pol in policies]
    base = policies[0][1]
    first_model = points[0].model if points else base.model
    window = budget_for(base, context_window).context_window
    unread: list[str] = []
    subagents = read_subagents(path, t, everything, unread)
    recorded = _recorded_row("recorded", points, prices, own_boundaries(t))
    sidechain = _recorded_row("sidechain", [r for r in everything if r.sidechain]
                              + [r for f in subagents for r in f.points], prices, [])
    counter = make_counter(base.estimator, model=base.model)
    raw_lines = [t.raw_line(i)[0] + b"\n" for i in range(t.n_lines)]
    caches = session_caches(points)
    none = Row("none", window=window, thresholds=_thresholds(base, context_window))
    with tempfile.TemporaryDirectory(prefix="ctxkit-simulate-") as tmp:
        memo: dict[bytes, int] = {}
        turn_starts: list[int] = []
        as_sent, prefix = _prefix_pieces(raw_lines, points, base, counter, Path(tmp) / "as-sent.jsonl", memo,
                                         turns=turn_starts)
        # what the API kept of the thinking of earlier turns (:mod:`ctxkit.reports.stripped_thinking`)
        cache = prompt_cache(points, caches)  # (the rows' cache: none's here, fresh until its first request)
        strips = anthropic_cache(cache) and strips_thinking(
            points, as_sent, turn_starts, base.cache_minutes * 60)
        if strips:
            as_sent = list(map(without_earlier_thinking, as_sent, turn_starts))
        fit = fit_overhead([sum(p.tokens for p in ps) for ps in as_sent], [p.usage.prompt_tokens for p in points])
        turns = turn_settings(t, points)
        prefix_model = session_prefix_model(t, points, as_sent, fit, base, caches, turns)
        replayed = replayed_row(t, points, as_sent, subagents, fit, base, counter, prices, caches, turns, prefix_model)
        lines, whole_points = whole_history(t, raw_lines, points)
        if lines is not raw_lines:  # the requests before the first compaction are the same ones
            first = own_boundaries(t)[0]
            same = as_sent[:sum(1 for p in points if p.first_entry < first)]
            none_pieces, prefix = _prefix_pieces(lines, whole_points, base, counter, Path(tmp) / "whole.jsonl", memo,
                                                 same, strips)
        else:
            none_pieces = same = as_sent
        keyed: dict = {}
        marks = restarts(t, points, first_overhead(points, as_sent, fit))
        shared, events = prefix_model[1:]
        none_events = events.met_by(base)
        tail = uncached_tail(points, cache)
        sizes: dict[bytes, float] = {}
        scaled: dict = {}
        resized: dict = {}
        sent: list[Piece] | None = None  # (none's request before: events.before)
        for k, (point, ps) in enumerate(zip(points, none_pieces, strict=True)):
            # a request the session sent as it is here has the size the API counted; after the session's first
            # compaction, what none repeats keeps that size and what it adds is estimated (the fit)
            tokens = point.usage.prompt_tokens if k < len(same) else 0
            shared_part = warm_piece(shared, point.cache_model)
            pieces = with_turn(consistent(with_epoch(exact(ps, fit, tokens, shared_part, scaled, tail), marks[k]),
                                          sizes, tokens, resized), turns[k], keyed)
            if k == 0:
                warm_start(cache, point, pieces, base.cache_minutes * 60)
            elif shared is not None:
                keep_warm(cache, shared, point, pieces, base.cache_minutes * 60, k)
            none_events.before(cache, k, point.cache_model, point.sent_at, pieces, sent)
            none.requests.append(_modelled_request(cache, point, pieces, base, prices, window))
            sent = pieces
        if prefix is not None:
            ctx = build_context(base, Store(Path(tmp) / "none", dry_run=True), now=points[-1].timestamp,
                                context_window=context_window)
            ctx.tokens = counter
            none.breakdown = _breakdown(prefix, ctx)
        rows = [_policy_row(name, pol, whole_points, lines, prices, Path(tmp) / f"p{k}", context_window, cwd, path,
                            fit=fit, caches=caches, summaries_as=summaries_as, prefix=(marks, shared, turns, events, tail),
                            strip_thinking=strips)
                for k, (name, pol) in enumerate(policies)]
    warnings = list(dict.fromkeys([*prices.warnings, *unread]))
    if skipped.count:
        warnings.insert(0, f"skipped {skipped.count} unreadable line(s); first: {skipped.first[0]}")
    if not any(r.usage.prompt_tokens or r.usage.output_tokens for r in points):
        warnings.append("the session records no usage on its main chain: the recorded row is empty, and costs 0")
    actual = sum_rows("recorded", [recorded.to_json(), sidechain.to_json()])
    check = {**calibration(replayed, actual), "cache_events": replayed.cache_events}
    if check["off"] and any(r.usage.prompt_tokens for r in points):
        warnings.append("the replayed row is more than 10% off the recorded one on "
                        + ", ".join(f"{k} ({_percent(check['relative_error'][k])})" for k in check["off"])
                        + ": the cost model does not reproduce this session, so the policy rows are less certain")
    for row in rows:
        if row.final is not None:
            warnings.extend(w for w in row.final.ctx.warnings if w not in warnings)
    # the cache lifetime: the policy's when it sets one, else each request's own (as the session had it), else
    # the default taken for an API that reports no write (which no request records)
    ttl = base.cache_ttl if base.explicit("request.cache_ttl") else \
        f"{base.cache_ttl} (the API's default: no usage reports a cache write)" if writes_unreported \
        else "as recorded"
    return {"session": path, "model": first_model, "context_window": window, "cache_ttl": ttl,
            "overhead": {"tokens": round(fit[0]), "scale": round(fit[1], 4)}, "calibration": check,
            "rows": {"recorded": recorded, "sidechain": sidechain, "replayed": replayed, "none": none,
                     "policies": rows},
            "warnings": warnings}


def _without_bad_lines(path: str, t: Transcript) -> Transcript:
    """``t`` read again without its unreadable lines: every row (recorded, replayed, none, each policy)
    then comes from the same lines, the ones a file without the bad lines holds. The replay steps number
    requests by line, so the lines are gone, not only out of the view."""
    data = b"".join(t.raw_line(i)[0] + b"\n" for i in range(t.n_lines) if not t.lines.bad(i))
    t.close()
    return read_bytes(data, name=path, fmt=t.format, on_bad_line="skip")


def _warm(points: list[RecordedRequest], fit: tuple[float, float], caches: bool) -> float:
    """How much of the overhead the session found in the cache (its first request's read), for the modelled
    rows: every row starts with the cache as the session did (:func:`ctxkit.reports.replayed.warm_start`)."""
    if not caches or not points:
        return 0.0
    return float(min(points[0].usage.cache_read_input_tokens, fit[0]))


def _percent(error: float | None) -> str:
    return "recorded 0" if error is None else f"{error:+.1%}"


def _recorded_row(name: str, requests: list[RecordedRequest], prices: PriceTable, boundaries: list[int]) -> Row:
    row = Row(name)
    for r in requests:
        row.requests.append(Request(r.timestamp, r.model, r.usage.prompt_tokens, r.usage,
                                    prices.cost(r.model, r.usage)))
    for b in boundaries:  # marked before the first request after the boundary
        after = next((k for k, r in enumerate(requests) if r.first_entry > b), None)
        row.compactions.append({"request": after, "trigger": "recorded"})
    return row


def _policy_row(name: str, policy: Policy, points: list[RecordedRequest], raw_lines: list[bytes],
                prices: PriceTable, workdir: Path, context_window: int | None, cwd: Path | None,
                path: str, *, fit: tuple[float, float], caches: bool, summaries_as: str | None,
                prefix: tuple[list[int], SharedPrefix | None, list[TurnSetting], CacheEvents, float] | None = None,
                strip_thinking: bool = False) -> Row:
    workdir.mkdir(parents=True)
    counter = make_counter(policy.estimator, model=policy.model)
    replay = PolicyReplay(policy, workdir, context_window=context_window, cwd=cwd or Path.cwd(),
                          transcript_path=str(Path(path).resolve()), counter=counter)
    thresholds = _thresholds(policy, context_window)
    window = thresholds["context_window"]
    row = Row(name, window=window, thresholds=thresholds)
    cache = prompt_cache(points, caches)
    marks, shared, turns, events, tail = prefix or ([0] * len(points), None, [TurnSetting()] * len(points),
                                                   CacheEvents(), 0.0)
    events = events.met_by(policy)
    keyed: dict = {}
    warm = _warm(points, fit, caches) if shared is None else 0.0  # (with one, warm_piece says per request)
    memo: dict[bytes, int] = {}
    scaled: dict = {}  # (calibrated pieces, by the piece: replay.calibrated)
    summarizer_model = str((policy.summarizer or {}).get("model") or policy.model)
    done, previous, sent = 0, None, None  # (sent: the row's request before, for events.before)
    for k, point in enumerate(points):
        step = replay.step(raw_lines[done:point.first_entry], point.timestamp)
        done = point.first_entry
        for call in step.summarizer_calls:
            if call["offline"] and summaries_as is None:
                continue  # the extractive summarizer is local and free
            model = summaries_as if call["offline"] else summarizer_model
            row.requests.append(summary_request(cache, point, previous, call, model, fit, policy, prices))
        for r in step.result.reports:
            if r.use == "autocompact" and r.action == "applied":
                row.compactions.append({"request": k, "tokens_before": r.tokens_before,
                                        "tokens_after": r.tokens_after, "trigger": "auto" if not r.details.get("forced")
                                        else "manual", "summarizer": r.details.get("summarizer")})
                if "retention" in r.details:
                    row.retention.append(r.details["retention"])
        segments = request_segments(step.transcript, policy, counter, point.timestamp, memo, strip_thinking)
        sent, previous = previous, with_turn(with_epoch(exact(segments, fit, 0, warm_piece(shared, point.cache_model, warm),
                                                              scaled, tail), marks[k]), turns[k], keyed)
        if k == 0:
            warm_start(cache, point, previous, policy.cache_minutes * 60)
        elif shared is not None:
            keep_warm(cache, shared, point, previous, policy.cache_minutes * 60, k)
        events.before(cache, k, point.cache_model, point.sent_at, previous, sent)
        request = _modelled_request(cache, point, previous, policy, prices, window)
        row.requests.append(request)
        # what the answer to this request reports (next step): never the recorded usage of a rewritten history
        replay.sent = RequestUsage(request.usage.input_tokens, request.usage.cache_read_input_tokens,
                                   request.usage.cache_creation_input_tokens)
        row.final = step
    replay.finish()
    if row.final is not None:
        t_last, ctx = row.final.transcript, row.final.ctx
        row.breakdown = _breakdown(t_last, ctx)
        row.removed = removed_items(t_last, Store(workdir / "store", dry_run=True), redactor_for(ctx),
                                    counter.count_text)
    return row


def summary_request(cache: PromptCache | None, point: RecordedRequest, previous: list[Piece] | None,
                    call: dict[str, Any], model: str, fit: tuple[float, float], policy: Policy,
                    prices: PriceTable) -> Request:
    """A compaction's summary request as Claude Code makes it: the previous request's pieces (the history,
    read from the cache when the summarizer's model is the one that cached it), then the compact prompt;
    the summary out. Without a previous request, the history is plain input."""
    prompt = Piece(b"compact-prompt", call["prompt_tokens"] * fit[1], True)
    history = without_tail(previous) if previous is not None else [Piece(b"history", call["input_tokens"] * fit[1])]
    res = run_cache(cache, point.timestamp, model, [*history, prompt], policy.cache_minutes * 60)
    usage = Usage(input_tokens=res.input, cache_creation_input_tokens=res.write, cache_read_input_tokens=res.read,
                  output_tokens=round(call["output_tokens"] * fit[1]), cache_write_1h_tokens=res.write_1h)
    return Request(point.timestamp, model, res.input + res.read + res.write, usage, prices.cost(model, usage),
                   kind="summarizer")


def _breakdown(t: Transcript, ctx: Any) -> dict[str, Any]:
    """Where the tokens of a view go: by tool and by kind of message (:func:`ctxkit.reports.stats.view_stats`)."""
    stats = view_stats(t, ctx, simulate=False)
    return {"by_tool": stats["by_tool"], "by_kind": stats["by_kind"]}


def session_json(result: dict[str, Any]) -> dict[str, Any]:
    """What ``simulate --json`` prints for one session."""
    rows = result["rows"]
    out = {k: v for k, v in result.items() if k != "rows"}
    out.update(recorded=rows["recorded"].to_json(), sidechain=rows["sidechain"].to_json(),
               replayed=rows["replayed"].to_json(), none=rows["none"].to_json(), policies=[r.to_json() for r in rows["policies"]])
    if "sweep" in result:
        out["sweep"] = result["sweep"]
    return out


def cheapest_within_window(rows: list[dict[str, Any]]) -> int | None:
    """Index of the cheapest row that never went over the window, or None."""
    fitting = [(r["cost_usd"], k) for k, r in enumerate(rows) if r["failures"] == 0]
    return min(fitting)[1] if fitting else None


def simulate(paths: list[str], policies: list[tuple[str, Policy]], prices: PriceTable, *,
             context_window: int | None = None, cwd: Path | None = None,
             sweep: tuple[str, list[str]] | None = None,
             on_error: Callable[[str, CtxkitError], None] | None = None,
             summaries_as: str | None = None, on_bad_line: str = "fail",
             ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Every session under every policy: (the ``--json`` document, the per-session results with rows).

    A session that cannot be replayed (an unreadable line, not a Claude Code transcript) raises; with
    ``on_error`` it is handed to it instead and left out, so one bad file does not stop the others."""
    for name, pol in policies:  # before any session: it is the same refusal for each
        _refuse_unmodelled(name, pol)
    results = []
    for p in paths:
        try:
            results.append(simulate_session(p, policies, prices, context_window=context_window, cwd=cwd,
                                            summaries_as=summaries_as, on_bad_line=on_bad_line))
        except CtxkitError as exc:
            if on_error is None:
                raise
            on_error(p, exc)
    sessions = [session_json(r) for r in results]
    total: dict[str, Any] = {
        "sessions": len(sessions),
        "recorded": sum_rows("recorded", [s["recorded"] for s in sessions]),
        "sidechain": sum_rows("sidechain", [s["sidechain"] for s in sessions]),
        "replayed": sum_rows("replayed", [s["replayed"] for s in sessions]),
        "none": sum_rows("none", [s["none"] for s in sessions]),
        "policies": [sum_rows(name, [s["policies"][k] for s in sessions]) for k, (name, _) in enumerate(policies)],
    }
    if sweep is not None:
        setting, values = sweep
        for s in [*sessions, total]:
            best = cheapest_within_window(s["policies"])
            s["sweep"] = {"setting": setting, "values": values, "cheapest": None if best is None else values[best]}
    return {"sessions": sessions, "total": total}, results
