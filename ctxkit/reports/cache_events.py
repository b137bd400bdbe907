"""What a session's own usage shows of the prompt cache that its transcript gives no cause for.

Real Claude Code sessions miss the cache where nothing the transcript records explains it: a request
sent seconds after the one before, to the same model, in the same turn setting, with no compaction,
restart, ``/mcp`` or new day between them, that reads only the tools and system prompt (or nothing)
and writes the conversation again. They fall on the first request of a turn (5.9% of those on 374
held-out sessions, against 0.1% inside a turn: ``bench/cache_misses.py``), which fits Claude Code
composing part of its prompt again as a turn begins, or the API losing an entry before its lifetime
ends (it promises no hit). The other way round, a request sent longer after the one before than the
cache lifetime still reads all of it: the lines' times are not when the requests were sent (Claude
Code 1.0 wrote a turn's lines at one instant when it ended), or the entry outlived its lifetime. And a
new prompt can read more than all the request before it sent, by about the answer between them, and write
little more than itself: only a request sent after that answer can have cached it, and the transcript
records none (a request Claude Code sends of its own between an answer and the next prompt, or one
cancelled before any of its answer was written: SWORDIntel ``05305169``, 1.0.89). Held-out ``dee67297``
(2.1.150) and ``11e00291`` (2.1.12) read the answer at most of their new prompts, and the model, which
wrote it again each time, was +12% on their writes. Before such a request every row caches its own
conversation up to the end of that answer (:meth:`CacheEvents.before`). And a new prompt can read most of
what the request before cached and still stop short of it, where an earlier prompt went out with context
the transcript does not record and without it since (held-out ``30128756``, Claude Code 2.0.2): a loss of
the prefixes past that read (:attr:`CacheEvents.near`).

No model of the transcript predicts either, but the recorded usage shows each one, and how deep a loss
went (what the request still read). ``simulate`` takes them as events of the session, as it takes the
pauses between requests, and every row (``replayed``, ``none``, each policy's) meets them where the
session did (:meth:`CacheEvents.before`): a policy would have met the same loss, or found the cache
alive, at the same moment, so its row is compared with ``none`` and ``replayed`` on the same footing.
Not where that row's own history or lifetime decides instead (:meth:`CacheEvents.for_lifetime`: a
history Claude Code rewrote in place, which ``none`` and the policies keep whole; a policy's own
``request.cache_ttl``). ``simulate --json`` counts them (``calibration.cache_events``).
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime

from ..policy.model import Policy
from .api_cache import TAIL_AT_MOST, without_tail
from .cache_model import Piece, PromptCache
from .session_prefix import MISSED_BELOW, SHARED_READ, cold_requests, grown, history_rewrites, read_it
from .turn_settings import TurnSetting
from .usage import RecordedRequest

#: A request smaller than this share of the one before did not send the same prompt again (its history
#: cleared in place: :func:`ctxkit.reports.session_prefix.history_rewrites`): not taken for a read past the lifetime
SAME_SIZE = 0.9
#: Reads this close (a share) are one read, and a loss read this close to where the system prompt ends read that
#: and nothing of the messages (:func:`system_end_read`)
SAME_READ = 0.005
#: How many times its estimate a read past all the request before sent may be and still be the answer between
#: them: the estimator's error per token is 0.78-1.40 on the public sessions (the fitted scale, docs/simulate.md)
ANSWER_BOUND = 2.0


@dataclass
class CacheEvents:
    """The cache events of a session's main chain, by request index."""

    lost: dict[int, float] = field(default_factory=dict)  # a loss: the tokens the request still read
    kept: dict[int, datetime] = field(default_factory=dict)  # alive past its lifetime: since the request before
    expected: set[int] = field(default_factory=set)  # the losses after a pause past the lifetime (no surprise)
    #: each kept one: the lifetime it outlived; each :attr:`near` one: the lifetime within which it came (seconds)
    lifetimes: dict[int, int] = field(default_factory=dict)
    #: the losses where the history sent is not the one before grown: Claude Code rewrote it in place (its
    #: microcompact), or the transcript forked at a smaller prompt (a rewind): the rows that keep the
    #: whole history send their own there (:meth:`for_lifetime`)
    rewritten: set[int] = field(default_factory=set)
    #: a read beyond all the request before sent: a request the transcript does not record had cached the
    #: conversation up to the answer before it, with this lifetime (seconds)
    side: dict[int, int] = field(default_factory=dict)
    #: the side events whose request's messages go on from all the request before sent (the session's
    #: history only grew between them): where a row's own history does not, that row rewrote it (:meth:`before`)
    extends: set[int] = field(default_factory=set)
    #: the losses at a new prompt that read most of what the request before cached (at least
    #: :data:`MISSED_BELOW` of it, or of their own prompt where that is smaller) and still less: the prefix
    #: changed a little before its end, so no cached prefix much longer than the read outlives them
    #: (:func:`kept_below`), and what they read was alive: since the request before (its time)
    near: dict[int, datetime] = field(default_factory=dict)
    #: the row's own cache lifetime (seconds), where a policy sets one (:meth:`for_lifetime`); None: the session's
    lifetime: int | None = None

    def for_lifetime(self, seconds: int | None) -> CacheEvents:
        """The events a row that keeps the history whole meets (``none``, a policy's: not the losses
        :attr:`rewritten` holds, where the history they send is theirs): all the others at the session's own
        cache lifetimes (``seconds`` None); under another (a policy's ``request.cache_ttl``) the losses within the lifetime
        (how long an entry lives past a pause is that lifetime's to say), and the reads past the lifetime where
        it is at least the one the session's entry outlived: the lines' times, not the pause, were wrong there,
        and an entry that lives as long lives through the same pause (the session's own 5 minutes set again).
        Likewise a read short of the request before (:attr:`near`) keeps alive what was alive when that request
        went out only under a lifetime at least the session's there; under a shorter one the row's own prefix
        must have outlived the pause (a 1-hour session's row under 5 minutes, 10 minutes after the request
        before, read what it had let expire)."""
        lost = {k: v for k, v in self.lost.items() if k not in self.rewritten}
        if seconds is None:
            return CacheEvents(lost, self.kept, self.expected & lost.keys(), self.lifetimes, side=self.side,
                               extends=self.extends, near=self.near)
        kept = {k: v for k, v in self.kept.items() if seconds >= self.lifetimes.get(k, seconds + 1)}
        return CacheEvents({k: v for k, v in lost.items() if k not in self.expected}, kept,
                           lifetimes={k: self.lifetimes[k] for k in [*kept, *self.near]},
                           side=dict.fromkeys(self.side, seconds), extends=self.extends, near=self.near,
                           lifetime=seconds)

    def met_by(self, policy: Policy) -> CacheEvents:
        """The events a row of ``policy`` meets: :meth:`for_lifetime` its own ``request.cache_ttl`` when it sets
        one, else the session's."""
        return self.for_lifetime(policy.cache_minutes * 60 if policy.explicit("request.cache_ttl") else None)

    def counts(self) -> dict[str, int]:
        """How many of each the transcript does not explain (``simulate --json``'s ``cache_events``)."""
        return {"lost": len(self.lost.keys() - self.expected), "kept": len(self.kept), "side": len(self.side)}

    def before(self, cache: PromptCache | None, k: int, model: str, when: datetime | None,
               pieces: list[Piece] | None = None, sent_before: list[Piece] | None = None) -> None:
        """Before request ``k`` to ``model``, sent ``when``, with ``pieces`` (the row's own; ``sent_before``: the
        row's request before it): ``cache`` loses the prefixes longer than what the recorded request read, and a
        quarter more (all of them when it read nothing), or keeps alive until then what was alive when the
        request before it was sent, or caches ``pieces`` up to the answer before the request's new message
        (:attr:`side`). Not where the session's history only grew there (:attr:`extends`) and the row's did not
        (``pieces`` do not go on from ``sent_before``): the unrecorded request went out before the row rewrote
        its history for this one (a policy's clearing or compaction as the turn begins), so it held the
        history before the rewrite, and cached nothing this request reads."""
        if cache is None:
            return
        if k in self.side and pieces is not None:
            # (the row's conversation up to its breakpoint before the last: the end of the answer the new prompt follows)
            marks = [j for j, p in enumerate(pieces) if p.breakpoint and not p.lead]
            rewrote = k in self.extends and sent_before is not None and \
                not grown(without_tail(sent_before), pieces)
            if len(marks) >= 2 and not rewrote:
                cache.request(when, model, pieces[:marks[-2] + 1], self.side[k])
        elif k in self.lost:
            # (what it read is where the request's prefix changed, or a breakpoint before it: the prefixes the row
            # cached up to a little more than that are the same ones, composed by its own estimates; a read of
            # the tools and system prompt, up to the row's last breakpoint before the messages, keeps those only)
            if k in self.near:
                # (a read short of the request before: only where the row holds a prefix of this request that ends
                # about there, alive when the request before went out (the API's was, having been read), can the
                # row be cut there; elsewhere it cached no such prefix, as no recorded request had a breakpoint
                # there (held-out 51c0fa5f), or its own prefix had changed before (e739b244): cut, it would have
                # read only the tools and system prompt)
                # (under a lifetime of the row's own shorter than the session's there, what outlived the pause is that
                # lifetime's to say: the prefix must be alive now, and nothing is kept alive for it)
                if when is None:
                    return
                alive_at = self.near[k] if self.lifetime is None or self.lifetime >= self.lifetimes[k] else when
                if not cache.held_near(model, pieces or [], self.lost[k], SAME_READ, alive_at):
                    return
                cache.keep_alive(model, alive_at, when)
            cache.forget_beyond(model, kept_below(self.lost[k], pieces or [], k in self.near), when)
        elif k in self.kept and when is not None:
            cache.keep_alive(model, self.kept[k], when)


def kept_below(read: float, pieces: list[Piece], near: bool = False) -> float:
    """How long a cached prefix of the row may be and outlive a loss whose request still read ``read`` tokens
    (``pieces``: the row's request). A read of the tools and system prompt, up to the row's last breakpoint
    before the messages, keeps those only. A read at another of the row's breakpoints (the shared prefix other
    sessions keep warm: held-out ``6ab0ef1f`` read its 25,807 tokens at a new prompt, the session's own part
    of the system prompt gone) keeps the prefixes cached there, whose sizes the row's estimates put a little
    apart from one request to the next (that own part: 5,829 tokens at the request before, 6,513 at this
    one), up to half-way to its next breakpoint. Any other read: where the request's prefix changed, or a
    breakpoint before it, so the prefixes up to a quarter more than it; for a read that stopped a little short
    of all the request before sent (``near``: :attr:`CacheEvents.near`), up to :data:`SAME_READ` more."""
    end = lead_end(pieces)
    if abs(read - end) <= SAME_READ * end:
        return end
    total, ends = 0.0, []
    for p in pieces:
        total += p.tokens
        if p.breakpoint:
            ends.append(total)
            if total > read / MISSED_BELOW:
                break
    for here, after in zip(ends, ends[1:], strict=False):
        if abs(read - here) <= SAME_READ * here:
            return (here + after) / 2
    return read * (1 + SAME_READ) if near else read / MISSED_BELOW


def lead_end(pieces: list[Piece]) -> float:
    """The tokens up to the last breakpoint among ``pieces``' tools and system prompt (0: none)."""
    total, end = 0.0, 0.0
    for p in pieces:
        if not p.lead:
            break
        total += p.tokens
        end = total if p.breakpoint else end
    return end


def system_end_read(points: list[RecordedRequest], marks: list[int], ttl_of: list[int], overhead: float,
                    moved: Iterable[int] = ()) -> float:
    """Where the tools and the system prompt end, as the session's own reads show it (0: they do not): a read
    that recurs (twice or more, within :data:`SAME_READ`) at requests sent within the cache lifetime, above what
    the first request read (the part other sessions keep warm) and below its overhead (what its view does not
    hold: the system prompt and the context before the first message). Those requests read the tools and
    system prompt and none of the messages: held-out ``3d83c7e8`` (Claude Code 2.1.81, Sonnet 4.6) read 14,827
    at three of its new prompts, its first request having read 8,596 and sent 17,565; the replay, which took
    the first message's context for system prompt too, read 17,761 there (-31% on writes). Not the requests
    that began a turn in another directory (``moved``, Claude Code 1.x): their directory's part of the system
    prompt changed, so they read less than it (SWORDIntel ``0c45b0a6``, a copy whose first request read
    nothing: three such turns read 11,704, the two whose thinking changed 16,567)."""
    if not points:
        return 0.0
    first, cold = points[0].usage.cache_read_input_tokens, {*cold_requests(points, marks, ttl_of), *moved}
    reads = sorted(float(p.usage.cache_read_input_tokens) for k, p in enumerate(points)
                   if k and k not in cold and first < p.usage.cache_read_input_tokens < overhead)
    groups: list[list[float]] = []
    for r in reads:
        if groups and r - groups[-1][0] <= SAME_READ * groups[-1][0]:
            groups[-1].append(r)
        else:
            groups.append([r])
    best = max(groups, key=len, default=[])
    return best[len(best) // 2] if len(best) >= 2 else 0.0


def answer_estimate(raw_before: list[Piece], raw_now: list[Piece]) -> float:
    """The estimated tokens of what a request holds after all an earlier one sent, up to its breakpoint before
    the last (the answer its new message follows); 0 when its messages do not start with all of the earlier
    one's (:func:`ctxkit.reports.session_prefix.grown`)."""
    if not grown(raw_before, raw_now):
        return 0.0
    old = sum(not p.lead for p in raw_before)
    new = [p for p in raw_now if not p.lead]
    marks = [j for j, p in enumerate(new) if p.breakpoint]
    return sum(p.tokens for p in new[old:marks[-2] + 1]) if len(marks) >= 2 else 0.0


def comparable(points: list[RecordedRequest], marks: list[int],
               turns: list[TurnSetting]) -> Iterator[tuple[int, int, float]]:
    """Each request ``k`` with usage whose prompt repeats the one before it with usage (``b``): sent to the same
    model and platform, in the same epoch (``marks``: no compaction, restart, ``/mcp`` or new day between
    them: :func:`ctxkit.reports.session_prefix.epochs`) and turn setting (``turns``: thinking, directory,
    model: :func:`ctxkit.reports.turn_settings.turn_settings`), both with a send time: ``(k, b, seconds
    between them)``."""
    before = None
    for k, now in enumerate(points):
        if not now.usage.prompt_tokens:
            continue
        b, before = before, k
        if b is None:
            continue
        was = points[b]
        if (was.sent_at is not None and now.sent_at is not None and now.cache_model == was.cache_model
                and marks[k] == marks[b] and turns[k] == turns[b]):
            yield k, b, (now.sent_at - was.sent_at).total_seconds()


def cache_events(points: list[RecordedRequest], marks: list[int], turns: list[TurnSetting],
                 ttl_of: list[int], overhead: float = 0.0, raw: list[list[Piece]] | None = None,
                 starts: frozenset[int] = frozenset(), system: float = 0.0, near_losses: bool = True) -> CacheEvents:
    """The cache events the usage of ``points`` shows (see the module docstring): before each request that
    read less than :data:`MISSED_BELOW` of what the request before it sent, or of its own prompt when that
    is smaller (:func:`comparable`; a history rewritten smaller, as a subagent resumed anew, counts), the
    cache keeps only what it read; before each that begins a turn (``starts``), sent after that request, and
    read more than all it sent, by no more than its answer, that answer was cached (:attr:`CacheEvents.side`);
    before each of at least :data:`SAME_SIZE` of that request's size that
    read at least that much of it, and more than the tools and system prompt (``overhead``: other sessions
    keep those warm), what was alive when the request before it was sent is kept alive. Where the pause
    between them says the same (``ttl_of``: each request's lifetime) the event changes nothing, and
    :attr:`CacheEvents.expected` holds it; where the lines' times are not when the requests went out (Claude
    Code 1.0 wrote some turns' lines at one instant, between earlier ones) it keeps the cache as the API had
    it, whatever the times say. ``raw``: each request's estimated pieces: a loss where Claude Code rewrote the
    history (:func:`ctxkit.reports.session_prefix.history_rewrites`), or at a prompt smaller than
    :data:`SAME_SIZE` of the one before whose messages do not start with all of its (a rewind: the transcript
    forked), is :attr:`CacheEvents.rewritten`. A read of the tools and system prompt alone (``system``:
    :func:`system_end_read`), after a request that sent more than those, is a loss too, however much of that
    request it was. So is a read at a new prompt within the lifetime that stopped short of what the request
    before cached, by more than :data:`SAME_READ` (``near_losses``: an API that reads at the breakpoints, the
    Anthropic API's, not one that caches every prefix and reads it in units): held-out ``30128756`` (Claude
    Code 2.0.2) read, at 2 of its 3 new prompts, up to where the previous turn began (20,709 after a request
    of 22,516), the prompt having gone out the first time with context Claude Code does not record; the
    replay read all of it there (-12.3% on writes). Such a loss keeps only the prefixes the read ends near
    (:attr:`CacheEvents.near`)."""
    out = CacheEvents()
    rewrites = history_rewrites(points, raw) if raw is not None else []
    for k, b, gap in comparable(points, marks, turns):
        was, now = points[b].usage, points[k].usage
        past = gap >= ttl_of[b]  # (a request whose time is before the one before: no pause says anything)
        only_system = system > 0 and abs(now.cache_read_input_tokens - system) <= SAME_READ * system \
            and was.prompt_tokens * SHARED_READ > system
        if now.cache_read_input_tokens < MISSED_BELOW * min(was.prompt_tokens, now.prompt_tokens) or only_system:
            out.lost[k] = float(now.cache_read_input_tokens)
            if past:
                out.expected.add(k)
            if raw is not None and (rewrites[k] != rewrites[b] or (
                    now.prompt_tokens < SAME_SIZE * was.prompt_tokens and not grown(raw[b], raw[k]))):
                out.rewritten.add(k)
        elif near_losses and k in starts and 0 < gap < ttl_of[b] and not (raw is not None and rewrites[k] != rewrites[b]) \
                and now.cache_read_input_tokens < (1 - SAME_READ) * (was.prompt_tokens - min(was.input_tokens, TAIL_AT_MOST)):
            out.lost[k] = float(now.cache_read_input_tokens)
            out.near[k] = points[b].sent_at  # type: ignore[assignment]  (comparable: it has one)
            out.lifetimes[k] = ttl_of[b]
        elif k in starts and gap > 0 and raw is not None and \
                0 < now.cache_read_input_tokens - was.prompt_tokens <= max(
                    was.output_tokens, ANSWER_BOUND * answer_estimate(raw[b], raw[k])):
            # (a new prompt: between an answer and it, Claude Code sends requests of its own, which a turn's tool
            # calls do not wait for; sent after the request before: where the lines' times are out of order, as
            # Claude Code 1.0 wrote some, the request before in the file need not be the one before on the wire;
            # no more beyond it than the answer can hold (its recorded output where that is a count, some versions
            # writing that of the first streamed event, 1 to 5; else twice its estimate): a longer read is of
            # another prefix, as a session whose first request went out before its MCP tools were listed reads
            # their longer tools later)
            out.side[k] = ttl_of[b]
            if grown(raw[b], raw[k]):
                out.extends.add(k)
        elif past and now.prompt_tokens >= SAME_SIZE * was.prompt_tokens and read_it(points[b], points[k], overhead):
            out.kept[k] = points[b].sent_at  # type: ignore[assignment]  (comparable: it has one)
            out.lifetimes[k] = ttl_of[b]
    return out


def lead_losses(points: list[RecordedRequest], marks: list[int], turns: list[TurnSetting],
                ttl_of: list[int]) -> CacheEvents:
    """The losses of a session whose API cached the tools and system prompt only
    (:func:`ctxkit.reports.api_cache.caches_lead_only`): each of its requests reads those and no more, which
    is how it caches, not a loss; a request that read less than :data:`MISSED_BELOW` of what the request
    before it read (:func:`comparable`) lost them. aistrad ``38ff1293`` (Claude Code 2.0.76 through a relay)
    read its tools and system prompt (26,176 tokens, then 25,843) at 217 of its 228 requests and nothing at 8
    sent 6 to 172 seconds after one that read them, writing them again: replayed without those losses, the
    row wrote them at 3 requests where the session wrote them at 11 (-67% on writes, with the lead too long)."""
    out = CacheEvents()
    for k, b, gap in comparable(points, marks, turns):
        if points[k].usage.cache_read_input_tokens < MISSED_BELOW * points[b].usage.cache_read_input_tokens:
            out.lost[k] = float(points[k].usage.cache_read_input_tokens)
            if gap >= ttl_of[b]:
                out.expected.add(k)
    return out
