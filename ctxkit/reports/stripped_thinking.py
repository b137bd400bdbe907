"""The thinking of earlier turns, which the API leaves out of the prompt on some sessions.

Anthropic's extended-thinking page says that when a request's newest user message is not tool results
(a new prompt), the thinking blocks of the turns before it are stripped from the context: not counted,
not cached. The request at a new prompt then reads from the cache only the prefix before the first
thinking block the turn before sent, and writes the rest again. Claude Code sends every thinking block,
and on most sessions the API keeps them: a new prompt's request reads all of the request before it
(held-out dd6e7648 and 40 more sessions of one user, Claude Code 2.1.41 to 2.1.150, Sonnet 4.5; Claude
Code's ``clear_thinking_20251015`` edit with ``keep: "all"`` asks for that). On a few, the usage shows the
strip: held-out 8e0abc0e (the same user, version and model) read at each of its three new prompts exactly
the prefix before the previous turn's first thinking block (38,989 of the 42,028 tokens the request before
had cached, 41,886 of 52,280, 52,476 of 53,425), and a replay that kept the thinking read it all, 17%
under the recorded cache writes.
Nothing in the transcript tells the two apart, so the session's own usage decides
(:func:`strips_thinking`), as it does the other cache behaviours the transcript does not record
(:mod:`ctxkit.reports.cache_events`); a session that strips has every request's pieces without the thinking
of the turns before its last (:func:`without_earlier_thinking`): the replayed row, ``none`` and every
policy row alike.
"""
from __future__ import annotations

from itertools import filterfalse
from operator import attrgetter

from .api_cache import request_ttl
from .cache_model import Piece
from .session_prefix import grown
from .usage import RecordedRequest

_THINKING = attrgetter("thinking")


def without_earlier_thinking(pieces: list[Piece], turn: int) -> list[Piece]:
    """``pieces`` as an API that strips the thinking of earlier turns counts and caches them: without the
    thinking pieces before ``turn`` (where the request's last turn begins)."""
    before = pieces[:turn]
    if not any(map(_THINKING, before)):
        return pieces
    return [*filterfalse(_THINKING, before), *pieces[turn:]]


def strips_thinking(points: list[RecordedRequest], raw: list[list[Piece]], turns: list[int],
                    default_ttl: int) -> bool:
    """Whether the API stripped the thinking of earlier turns from this conversation's requests, as its
    usage shows. At each request that opens a turn after one with thinking (same model and platform, the
    messages only grown since, within the cache lifetime of the request before), the prefix the request
    before cached is read whole (kept), or only what the last request sent before that turn's first
    thinking block cached (stripped: the same figure, within 2%); the session strips when more requests
    show the strip than show the thinking kept. ``raw``: each request's estimated pieces, thinking
    included; ``turns``: where each request's last turn begins among them. For an API that caches as
    Anthropic's does (:func:`ctxkit.reports.api_cache.anthropic_cache`)."""
    stripped = kept = 0
    for k in range(1, len(points)):
        before, now, sent = points[k - 1], points[k], raw[k - 1]
        if (turns[k] < len(sent) or now.cache_model != before.cache_model or not _within_lifetime(before, now, default_ttl)
                or not grown(sent, raw[k])):
            continue
        first = next((i for i in range(turns[k - 1], len(sent)) if sent[i].thinking), None)
        if first is None:
            continue
        cached = _cached(before)
        if now.usage.cache_read_input_tokens >= cached - sum(p.tokens for p in sent[first:]) / 2:
            kept += 1
            continue
        # the last request sent before the thinking block was written: what it cached is the stripped prefix
        j = next((i for i in range(k - 1, -1, -1) if len(raw[i]) <= first), None)
        if j is not None and points[j].cache_model == now.cache_model and \
                abs(now.usage.cache_read_input_tokens - _cached(points[j])) <= max(64, _cached(points[j]) / 50):
            stripped += 1
    return stripped > kept


def _cached(point: RecordedRequest) -> int:
    """What a request left in the cache up to its last breakpoint: what it read and what it wrote."""
    return point.usage.cache_read_input_tokens + point.usage.cache_creation_input_tokens


def _within_lifetime(before: RecordedRequest, now: RecordedRequest, default_ttl: int) -> bool:
    if before.sent_at is None or now.sent_at is None:
        return True
    return (now.sent_at - before.sent_at).total_seconds() <= request_ttl(before.usage, default_ttl)

