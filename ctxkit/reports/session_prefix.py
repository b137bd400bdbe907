"""The start of every request a Claude Code session makes: the part it shares with other sessions, and
when the rest of it changes.

Claude Code's requests open with the tools and the system prompt. Their first part (the tools and the
static system prompt, the same for every session of one user and version) is cached under its own
breakpoint and shared by all of the user's sessions: a session's first request finds it cached (its
recorded ``cache_read_input_tokens``), and so does a request made after a pause longer than the cache
lifetime, or to another model, while other sessions keep it warm. The rest (the environment and git
status of the process, the context Claude Code adds to the first message) is the session's own, and it
is composed again when:

* the session compacts itself (the history restarts from its summary, with its context re-added);
* the process restarts: the user ran ``/exit`` (or ``/quit``) and resumed the session;
* the tools change: ``/mcp`` reconnected a server;
* the date changes (Claude Code writes today's date into it).

At those points the next request reads only the shared part and writes the rest again (measured on
real sessions: docs/simulate.md). :func:`prefix_changes` finds them; :func:`shared_prefix` estimates,
from the session's own usage, how large the shared part is and whether other sessions kept it warm.

The messages themselves change where the transcript does not say so: Claude Code's microcompact clears
old tool results in place (their text becomes a placeholder) once that saves enough, and the
transcript keeps the results as they were. The next request then reads the tools and system prompt and
writes the whole conversation again. Its recorded size says so: smaller than the request before
although the conversation only grew (:func:`history_rewrites`).

Over 400 lines: the shared part (its size per model, the shorter part other sessions kept of it, when it
was warm) and the changes of the session's own part are one model of the prefix, read from the same usage.
"""
from __future__ import annotations

import functools
import hashlib
import statistics
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import timezone
from itertools import takewhile
from operator import attrgetter
from typing import NamedTuple

from ..transcript.model import Transcript
from ..transcript.prompts import slash_command
from .api_cache import TAIL
from .cache_model import Piece, PromptCache, cache_key, remade, same_leading
from .history import is_compaction
from .pricing import normalize_model
from .usage import RecordedRequest

#: The identity of the shared part of the overhead (the piece :func:`ctxkit.reports.replayed.exact` cuts off)
WARM = hashlib.blake2b(b"warm-overhead", digest_size=16).digest()
#: The identity of the shorter shared part some requests found (:attr:`SharedPrefix.inner`), cut off before it
INNER = hashlib.blake2b(b"warm-overhead-inner", digest_size=16).digest()
_WARM_IDS = {WARM, INNER}  # and each model's own (:meth:`SharedPrefix.piece_id`)
_DIRECTORY_PARTS: set[bytes] = set()  # (:func:`directory_part`)
_CONTEXT_PARTS: set[bytes] = set()  # (:func:`context_id`)


def is_warm(digest: bytes) -> bool:
    """Whether a piece is the shared part of the overhead (of the session's first model, or another's own)."""
    return digest in _WARM_IDS


def warm_count(pieces: list[Piece]) -> int:
    """How many of a request's first pieces are the shared part of its overhead (the session's own part, if
    any, is the piece after them)."""
    return sum(1 for _ in takewhile(lambda p: is_warm(p.digest), pieces))


def context_id(own: bytes, salt: bytes = b"context") -> bytes:
    """The identity of the context before the first message, after the session's own part of the system prompt
    (:attr:`SharedPrefix.system_tokens`), known to :func:`is_context` from then on."""
    digest = hashlib.blake2b(own + salt, digest_size=16).digest()
    _CONTEXT_PARTS.add(digest)
    return digest


def is_context(digest: bytes) -> bool:
    """Whether a piece is the context before the first message, apart from the system prompt (:func:`context_id`)."""
    return digest in _CONTEXT_PARTS


class Warm(NamedTuple):
    """The shared part of a request's overhead, as :func:`ctxkit.reports.replayed.exact` cuts it off: its
    tokens, its piece's identity, and the shorter part other sessions kept of it (0: none seen)."""

    tokens: float = 0.0
    digest: bytes = WARM
    inner: float = 0.0
    inner_in_directory: bool = False  # (:attr:`SharedPrefix.inner_in_directory`)
    system_tokens: float = 0.0  # (:attr:`SharedPrefix.system_tokens`)


@functools.lru_cache(maxsize=128)
def _warm_id(label: bytes) -> bytes:
    """The identity of a shared piece made from ``label``, made once and known to :func:`is_warm` from then on."""
    digest = hashlib.blake2b(label, digest_size=16).digest()
    _WARM_IDS.add(digest)
    return digest


def directory_part(digest: bytes) -> bytes:
    """The identity of the shared piece ``digest`` beyond its shorter part where that part is what a turn in
    another directory read (:attr:`SharedPrefix.inner_in_directory`): the first directory's part, which
    :func:`ctxkit.reports.turn_settings.with_turn` keys by the directory."""
    part = _warm_id(b"directory" + digest)
    _DIRECTORY_PARTS.add(part)
    return part


def is_directory_part(digest: bytes) -> bool:
    """Whether a piece is the part of the shared prefix a turn in another directory does not share."""
    return digest in _DIRECTORY_PARTS

#: Slash commands after which Claude Code composes the session's own prefix again
RESTARTING_COMMANDS = frozenset({"/exit", "/quit", "/mcp"})
#: A request read the shared prefix when it read at least this share of it (the same prompt, one model's
#: name in it more or less)
SHARED_READ = 0.9
#: A request *missed* the cache when it read less than this share of what the request before it sent, and
#: found it alive when it read at least this share (:mod:`ctxkit.reports.cache_events`)
MISSED_BELOW = 0.8


def _command(entry: dict) -> str | None:
    """The slash command a user or local-command entry echoes (``/mcp``), if any."""
    content = entry.get("content") if entry.get("type") == "system" else (entry.get("message") or {}).get("content")
    if isinstance(content, list):
        content = next((b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"), None)
    if not isinstance(content, str):
        return None
    line = slash_command(content)
    return line.split()[0] if line else None


def prefix_changes(t: Transcript) -> list[int]:
    """Entry indexes (main chain) after which the session's own part of the prefix is composed again: its
    own compactions, a restart (``/exit``, ``/quit``) and an MCP reconnect (``/mcp``)."""
    out, answered = [], False
    for i in t.live_indexes():
        e = t.entry(i)
        answered = answered or (e.get("type") == "assistant" and not e.get("isSidechain"))
        if e.get("isSidechain") or e.get("type") not in ("system", "user"):
            continue
        if is_compaction(e, answered) or _command(e) in RESTARTING_COMMANDS:
            out.append(i)
    return out


#: Claude Code's microcompact clears old tool results only when that saves at least 20,000 tokens by its
#: count; a request whose prompt is smaller than the previous one's by more than half of that (what the
#: request adds since, and Claude Code counting characters rather than tokens, take the rest) while its
#: conversation only grew had its history rewritten. Smaller drops are other edits that keep the prefix
#: (an interrupted answer left out, a thinking block dropped: kfischer b3edadab, 167 and 823 tokens)
CLEARED_HISTORY_TOKENS = 10_000


def history_rewrites(points: list[RecordedRequest], raw: list[list[Piece]]) -> list[int]:
    """For each request, how many times before it (itself included) Claude Code rewrote the conversation in
    place without a trace in the transcript: the request's recorded prompt is smaller than the previous
    request's (same model) by more than :data:`CLEARED_HISTORY_TOKENS`, while its messages (``raw``:
    the estimated pieces) start with all of the previous request's. A compaction, a rewind or a policy's
    edit changes the messages themselves, and is not one."""
    out, n = [], 0
    for k, (point, pieces) in enumerate(zip(points, raw, strict=True)):
        if k and _rewritten(points[k - 1], point, raw[k - 1], pieces):
            n += 1
        out.append(n)
    return out


def _rewritten(before: RecordedRequest, now: RecordedRequest, raw_before: list[Piece], raw_now: list[Piece]) -> bool:
    was, size = before.usage.prompt_tokens, now.usage.prompt_tokens
    if not size or was - size <= CLEARED_HISTORY_TOKENS or normalize_model(before.model) != normalize_model(now.model):
        return False
    return grown(raw_before, raw_now)


def grown(raw_before: list[Piece], raw_now: list[Piece]) -> bool:
    """Whether the messages of a request (its estimated pieces after the tools and system prompt) start with
    all of an earlier request's: the transcript only grew between them (no compaction, rewind or edit)."""
    old = [p.digest for p in raw_before if not p.lead]
    new = [p.digest for p in raw_now if not p.lead]
    return len(new) >= len(old) and new[:len(old)] == old


def with_rewrites(pieces: list[Piece], rewrites: int, memo: dict | None = None) -> list[Piece]:
    """``pieces`` whose messages are those of the ``rewrites``-th rewrite of the conversation: other bytes
    (so another prefix for the cache, and sizes of their own) after the same tools and system prompt.
    ``memo``: kept across a replay's requests, which send the same pieces again: a piece rewritten the same
    way again is the same piece (made once, not once per request, as :func:`consistent` keeps them)."""
    if not rewrites:
        return pieces
    memo = {} if memo is None else memo
    salt = b"rewrite%d" % rewrites
    # (the uncached tail is no message: never cached, and known by its identity where a request is reused)
    return [p if p.lead or p.digest == TAIL else remade(memo, p, rewrites, lambda q: q.keyed(salt)) for p in pieces]


def read_it(before: RecordedRequest | None, now: RecordedRequest, overhead: float = 0.0) -> bool:
    """Whether ``now`` read at least :data:`MISSED_BELOW` of what ``before`` sent: the prefix was the same
    (whatever the lines between them say). ``overhead``: the session's tools and system prompt, which
    ``now`` must read more than: a prompt hardly larger than them is 80% the part other sessions keep
    warm, and a request that read only that wrote the session's own part again."""
    return (before is not None and now.usage.cache_read_input_tokens >= MISSED_BELOW * before.usage.prompt_tokens
            and now.usage.cache_read_input_tokens > overhead)


def epochs(points: list[RecordedRequest], changes: list[int], days: bool = True, overhead: float = 0.0) -> list[int]:
    """For each request, how many prefix changes came before it: the entries ``changes``, and each new day
    (:func:`new_days`) when ``days`` (a Claude Code session: what other agents put in their prompts is not
    modelled). Changes between two requests are none when the second read what the first sent (a ``/mcp``
    dialog the user dismissed, a resume that composed the same prompt: :func:`read_it`, with ``overhead``)."""
    new = new_days(points, overhead) if days else [0] * len(points)
    out, n, before, ahead = [], 0, None, sorted(changes)
    at = 0
    for p, d in zip(points, new, strict=True):
        passed = at
        while at < len(ahead) and ahead[at] < p.first_entry:
            at += 1
        n += at - passed if at > passed and not read_it(before, p, overhead) else 0
        out.append(n + d)
        if p.usage.prompt_tokens:
            before = p
    return out


def new_days(points: list[RecordedRequest], overhead: float = 0.0) -> list[int]:
    """For each request, how many times the date changed since the first: Claude Code writes today's date
    into the session's own part of the prompt, so the first request of a new day writes that part again.
    The date is Claude Code's local one; the transcript's times are UTC and it does not say which timezone
    the session ran in, so the day is UTC's (a CI runner's: erk's sessions on GitHub's runners rewrote it
    at every midnight they crossed), unless the first request of the UTC day read what the request before
    it sent: then the session's date had not changed there (a user's evening in UTC-7), and where it did
    change, its usage shows a loss (:mod:`ctxkit.reports.cache_events`)."""
    out, n, last, before = [], 0, None, None
    for p in points:
        day = p.sent_at.astimezone(timezone.utc).date() if p.sent_at is not None else None
        if day is not None:
            n += last is not None and day != last and not read_it(before, p, overhead)
            last = day
        if p.usage.prompt_tokens:
            before = p
        out.append(n)
    return out


def restarts(t: Transcript, points: list[RecordedRequest], overhead: float = 0.0) -> list[int]:
    """Each request's epoch counting restarts and reconnects only: the prefix changes that happen whatever
    manages the context (``none`` and the policy rows have their own compactions, or none)."""
    changes = [i for i in prefix_changes(t) if not is_compaction(t.entry(i))]  # (a restart or reconnect)
    return epochs(points, changes, t.format == "claude-code", overhead)


@dataclass(frozen=True)
class SharedPrefix:
    """The part of the prefix the session shares with others: its tokens (0: none seen), and the models for
    which other sessions kept it in the cache whenever the session itself did not (the cache is per model:
    the user's other sessions keep warm the models they use). At a cold request, what it read says whether
    it was warm then (``read_at``, ``missed_at``: the user's other sessions come and go, and that request's
    usage shows where they were): the vote of the model's cold requests is for the others."""

    tokens: float
    warm_models: frozenset[str] = frozenset()
    read_at: frozenset[int] = frozenset()
    missed_at: frozenset[int] = frozenset()
    #: a model's own size (by its cache key), where its first request read another (each model has its own
    #: system prompt: held-out ``e739b244`` began on Haiku, whose shared prefix it read, and its Sonnet
    #: requests read 14,205)
    own_sizes: Mapping[str, float] = field(default_factory=dict, hash=False)
    #: a shorter shared part: what the cold requests, and those that lost the cache, read when they read some
    #: of the shared prefix but not all of it (held-out ``b4b90999``: the first request read 8,595, one after a
    #: pause of 2.8 hours 7,452, what the user's other sessions had then; ``6bff27da`` read 35,157 at once,
    #: 14,015 after a loss), and the cold requests that found it
    inner: float = 0.0
    inner_at: frozenset[int] = frozenset()
    #: the shorter part is what the requests that began a turn in another directory read (Claude Code 1.x):
    #: the shared prefix, measured in the first turn's directory, holds that directory's part of the system
    #: prompt after it (SWORDIntel ``0c45b0a6``: 16,565 read in the first directory, 11,704 in the next)
    inner_in_directory: bool = False
    #: where the tools and the system prompt end, up to their breakpoint (0: not seen): the rest of the overhead
    #: is the context Claude Code puts before the first message, with no breakpoint of its own. Read where a
    #: turn's thinking budget changed when nothing else showed the shared size (then it is that size: SWORDIntel
    #: ``155c3456``, the turn back at no budget within the cache lifetime read 15,617, not the 27,245 cached
    #: under it before), or recurring where the messages were lost (:func:`ctxkit.reports.cache_events.system_end_read`)
    system_tokens: float = 0.0

    def kept_warm(self, model: str, k: int | None = None) -> bool:
        if k in self.read_at or k in self.missed_at:
            return k in self.read_at
        return cache_key(model) in self.warm_models

    def tokens_for(self, model: str) -> float:
        """The shared prefix's tokens for a request to ``model``."""
        return self.own_sizes.get(cache_key(model), self.tokens)

    def piece_id(self, model: str) -> bytes:
        """The identity of the shared prefix's piece for a request to ``model`` (another for a model with a
        size of its own: a piece keeps the size it was first sent with)."""
        key = cache_key(model)
        return _warm_id(b"warm-overhead" + key.encode()) if key in self.own_sizes else WARM


def warm_piece(shared: SharedPrefix | None, model: str, default: float = 0.0) -> Warm:
    """The shared part of the overhead of a request to ``model`` (``default`` tokens without a shared prefix
    model)."""
    if shared is None:
        return Warm(default)
    # (a model with a size of its own has a system prompt of its own: where the session's ends is not where its does)
    return Warm(shared.tokens_for(model), shared.piece_id(model), shared.inner, shared.inner_in_directory,
                0.0 if cache_key(model) in shared.own_sizes else shared.system_tokens)


def cold_requests(points: list[RecordedRequest], marks: list[int], ttl_of: list[int]) -> list[int]:
    """The requests (after the first) that found nothing of the session's own in the cache: the first to a
    model, the first after a pause longer than the cache lifetime, the first after a prefix change
    (``marks``: each request's epoch)."""
    out, last_at, last_epoch = [], {}, None
    for k, p in enumerate(points):
        before = last_at.get(p.cache_model)
        at = p.sent_at
        if k and (before is None or (at and before and (at - before).total_seconds() > ttl_of[k])
                  or marks[k] != last_epoch):
            out.append(k)
        if at is not None:
            last_at[p.cache_model] = at
        last_epoch = marks[k]
    return out


def shared_prefix(points: list[RecordedRequest], marks: list[int], ttl_of: list[int],
                  first_overhead: float, lost: Iterable[int] = (), moved: Iterable[int] = (),
                  rethought: Iterable[int] = (), system: float = 0.0, lead_only: bool = False) -> SharedPrefix:
    """The shared prefix, estimated from the session's own usage (one figure per session, never per
    request): its size is what the first request read from the cache when that is less than the overhead
    (the cached part of the tools and system prompt), else the median read of the cold requests and of
    those that ``lost`` the cache (:mod:`ctxkit.reports.cache_events`); it was kept warm at each cold
    request that read it, and for a model when most of that model's cold requests read it. The requests that
    began a turn in another directory (``moved``, Claude Code 1.x) read it too: with the cold ones, when the
    first read nothing; and where they read less of it than the others, what they read is its shorter part
    (:attr:`SharedPrefix.inner`, :attr:`SharedPrefix.inner_in_directory`). When none of these shows it, the
    requests whose turn has another thinking budget than the turn before (``rethought``, Claude Code 1.x) do:
    they read the tools and the whole system prompt (:attr:`SharedPrefix.system_tokens`; ``system``: where the
    reads show those end, :func:`ctxkit.reports.cache_events.system_end_read`). For an API that cached those only
    (``lead_only``), what its requests read is where they end, and the size when nothing else shows one."""
    if not points:
        return SharedPrefix(0.0)
    cold = cold_requests(points, marks, ttl_of)

    def read(k: int) -> float:
        return float(points[k].usage.cache_read_input_tokens)

    first, cold_reads, lost_reads = read(0), [(k, read(k)) for k in cold], [(k, read(k)) for k in lost]
    moved_reads = [(k, read(k)) for k in moved]
    size = first if 0 < first < first_overhead else 0.0
    if not size:
        seen = [r for _, r in [*cold_reads, *lost_reads, *moved_reads] if 0 < r < first_overhead]
        if not seen:
            seen = [r for r in map(read, rethought) if 0 < r < first_overhead]
            system = statistics.median(seen) if seen else system
            seen = seen or ([system] if lead_only and system else [])
        size = statistics.median(seen) if seen else 0.0
    own = _own_sizes(points, cold, size)

    def size_of(k: int) -> float:  # (the shared prefix of request k's model)
        return own.get(cache_key(points[k].cache_model), size)

    below = [r for k, r in [*cold_reads, *lost_reads] if 0 < r < SHARED_READ * size_of(k)]
    elsewhere = [r for k, r in moved_reads if 0 < r < SHARED_READ * size_of(k)]
    inner = statistics.median(elsewhere or below) if elsewhere or below else 0.0
    inner_at = frozenset(k for k, r in cold_reads if inner and SHARED_READ * inner <= r < SHARED_READ * size_of(k))
    votes: dict[str, list[bool]] = {}
    for k, r in cold_reads:
        votes.setdefault(cache_key(points[k].cache_model), []).append(r >= SHARED_READ * size_of(k))
    warm = frozenset(m for m, v in votes.items() if sum(v) * 2 > len(v) and own.get(m, size))
    read_at = frozenset(k for k, r in cold_reads if size_of(k) and r >= SHARED_READ * size_of(k))
    missed = frozenset(k for k in cold if size_of(k)) - read_at
    return SharedPrefix(size, warm, read_at, missed, own, inner, inner_at, bool(elsewhere),
                        system if size and system >= size else 0.0)


def _own_sizes(points: list[RecordedRequest], cold: list[int], size: float) -> dict[str, float]:
    """The models (after the session's first) whose first request read a shared prefix of another size than
    ``size``: nothing of the session's own was cached for that model yet, so what it read another session
    had left, that model's own tools and system prompt."""
    out: dict[str, float] = {}
    seen = {cache_key(points[0].cache_model)}
    for k in cold:
        key = cache_key(points[k].cache_model)
        if key in seen:
            continue
        seen.add(key)
        read = float(points[k].usage.cache_read_input_tokens)
        if 0 < read < points[k].usage.prompt_tokens and (not size or abs(read - size) > (1 - SHARED_READ) * size):
            out[key] = read
    return out


def _kept_sizes(pieces: list[Piece], sizes: dict[bytes, float], memo: dict,
                sized: Callable[[Piece, float], Piece]) -> list[Piece]:
    """:func:`consistent` without a size to make up: each piece at the size it was first sent with.

    The call before (``memo``) is gone on from: after the lead pieces (the overhead, tools and system, made
    again at each request), a piece it was given too (the same object, at the same place) is the piece it
    made, as long as what it made is at the size ``sizes`` holds for it (a size, once held, never changes):
    only what the request adds is looked at."""
    lead = sum(1 for _ in takewhile(attrgetter("lead"), pieces))
    before = memo.get("kept-sizes")  # (sizes, given, made, lead, how many made after the lead are at their size)
    reuse = 0
    if before is not None and before[0] is sizes and before[3] == lead:
        reuse = min(same_leading(before[1][lead:], pieces[lead:]), before[4])
    out = [sized(p, sizes.get(p.digest, p.tokens)) for p in pieces[:lead]]
    out.extend(before[2][lead:lead + reuse] if reuse else ())
    out.extend(sized(p, sizes.get(p.digest, p.tokens)) for p in pieces[lead + reuse:])
    for p in out[:lead]:
        sizes.setdefault(p.digest, p.tokens)
    held, at_size = reuse, True  # (the pieces taken whole were held before: setting them again does nothing)
    for p in out[lead + reuse:]:
        at_size = sizes.setdefault(p.digest, p.tokens) == p.tokens and at_size
        held += at_size
    memo["kept-sizes"] = (sizes, pieces, out, lead, held)
    return out


def with_epoch(pieces: list[Piece], epoch: int) -> list[Piece]:
    """``pieces`` whose own part of the overhead (the piece after the shared ones when there are, else the
    first) is that of ``epoch``: composed again, so another prefix for the cache. Where reads showed where
    the system prompt ends, the context after it is what is composed again (held-out ``b9702b38``,
    ``48244adb``, ``354b2588``: each request after a ``/mcp`` or a restart, within the lifetime, read the
    system prompt to its end)."""
    if not epoch or not pieces:
        return pieces
    shared = warm_count(pieces)
    own = shared if shared < len(pieces) else 0
    salt = b"epoch%d" % epoch
    if own + 1 < len(pieces) and is_context(pieces[own + 1].digest):
        p = pieces[own + 1]
        return [*pieces[:own + 1], replace(p, digest=context_id(p.digest, salt), lead=True), *pieces[own + 2:]]
    p = pieces[own]
    digest = hashlib.blake2b(salt + p.digest, digest_size=16).digest()
    return [*pieces[:own], replace(p, digest=digest, lead=True), *pieces[own + 1:]]


def keep_warm(cache: PromptCache | None, shared: SharedPrefix, point: RecordedRequest, pieces: list[Piece],
              ttl: int, k: int | None = None) -> None:
    """Before the request at ``point`` (the ``k``-th of the session): when other sessions kept the shared prefix
    warm, it is in the cache for the request's model (as if one of them had just sent it)."""
    if cache is None or not pieces or not is_warm(pieces[0].digest):
        return
    if shared.kept_warm(point.cache_model, k):
        kept = pieces[:warm_count(pieces)]
    elif k in shared.inner_at and pieces[0].digest == INNER:
        kept = pieces[:1]  # (the shorter part only: what the user's other sessions had then)
    else:
        return
    cache.request(point.sent_at, point.cache_model, [Piece(p.digest, p.tokens, True, True) for p in kept], ttl)


def consistent(pieces: list[Piece], sizes: dict[bytes, float], prompt_tokens: int,
               memo: dict | None = None) -> list[Piece]:
    """``pieces`` with the tokens each had when an earlier request sent it (``sizes``, by digest; the
    pieces seen first here are added): a cached prefix is read at the size it was written, so the
    difference between this request's size and what it repeats is in what it adds. When what it repeats
    is already more than its size, or it adds nothing, the pieces stay as they were cut. Without a size
    (``prompt_tokens`` 0: a request no one sent), what it repeats keeps its size and what it adds its own.
    ``memo``: kept across a replay's requests, which send the same pieces again: a piece given the same size
    again is the same piece (made once, not once per request)."""
    memo = {} if memo is None else memo

    def sized(p: Piece, tokens: float) -> Piece:
        if tokens == p.tokens:
            return p
        return remade(memo, p, tokens, lambda p: replace(p, tokens=tokens))

    if prompt_tokens <= 0:  # no size to make up: what was sent before keeps its size, the rest its own
        return _kept_sizes(pieces, sizes, memo, sized)
    known = sum(sizes[p.digest] for p in pieces if p.digest in sizes)
    # a shared part seen first here (another model's own) has the size its read showed: none of it is made up
    read = sum(p.tokens for p in pieces if p.digest not in sizes and is_warm(p.digest))
    new = sum(p.tokens for p in pieces if p.digest not in sizes and not is_warm(p.digest))
    rest = prompt_tokens - known - read
    if known and new > 0 and rest > 0:
        factor = rest / new
        pieces = [sized(p, sizes[p.digest] if p.digest in sizes else p.tokens if is_warm(p.digest) else p.tokens * factor)
                  for p in pieces]
    for p in pieces:
        sizes.setdefault(p.digest, p.tokens)
    return pieces
