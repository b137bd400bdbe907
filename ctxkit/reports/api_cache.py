"""The prompt cache a session's API ran, as its usage tells: whether it cached at all, what (the messages at
their breakpoints, or the tools and system prompt only), whether it reported its writes, for how long an
entry lived, and the few tokens of each request it never caches. ``simulate``'s rows (``replayed``,
``none``, each policy's) are replayed through that cache (:mod:`ctxkit.reports.cache_model`)."""
from __future__ import annotations

import hashlib
from typing import Any

from .cache_model import CacheResult, Piece, PromptCache
from .pricing import Usage, normalize_model, other_family
from .usage import RecordedRequest

TTL_5M, TTL_1H = 300, 3600
#: The most plain input a request's framing is taken to be (:func:`uncached_tail`), and its piece's identity
TAIL_AT_MOST = 64
TAIL = hashlib.blake2b(b"uncached-tail", digest_size=16).digest()


def without_tail(pieces: list[Piece]) -> list[Piece]:
    """A request's pieces without its uncached tail (:func:`uncached_tail`): what a request made after it repeats."""
    return pieces[:-1] if pieces and pieces[-1].digest == TAIL else pieces


def session_caches(points: list[RecordedRequest]) -> bool:
    """Whether the API the session talked to cached at all (any request read or wrote the cache); a
    session with no usage is assumed to have (the real API always does)."""
    with_usage = [p for p in points if p.usage.prompt_tokens]
    return not with_usage or any(p.usage.cache_read_input_tokens or p.usage.cache_creation_input_tokens
                                 for p in with_usage)


#: the share of a prompt a request sent as plain input (neither read from the cache nor written to it) above
#: which, on most of a session's requests, its API cached the tools and system prompt only
UNCACHED_SHARE = 0.5
#: the requests a session needs for that to be told (its first writes everything it caches)
UNCACHED_SEEN = 10


def prompt_cache(points: list[RecordedRequest], caches: bool) -> PromptCache | None:
    """The cache a session's rows are replayed through: none for an API that did not cache
    (:func:`session_caches`); one that keeps the tools and system prompt only for an API that cached
    those but sent the messages as plain input on most requests (:data:`UNCACHED_SHARE`) -- seen on a
    real Claude Code 2.0.76 session (Opus 4.5, its thinking unsigned: an Anthropic-compatible relay) whose
    every request read the 25,843 tokens of tools and system prompt and sent 100,000 and more of messages
    uncached; the Anthropic API reads them at Claude Code's breakpoints (its plain input is a few hundred
    tokens a request), so replayed through that cache the row was 85% under the recorded cost. And one
    that reports what it writes as plain input for an API that read the cache yet never reported a write
    (:func:`reports_writes_as_input`) -- seen on the real Claude Code 2.1.63 sessions of one user whose
    relay named the model ``claude-opus-4.6-1m``: each request read the prefix and reported the rest as
    input; replayed with writes, every one of them was off on writes (recorded: none)."""
    if not caches:
        return None
    return PromptCache(lead_only=caches_lead_only(points), writes_as_input=reports_writes_as_input(points),
                       unit=caches_every_prefix(points))


#: The unit DeepSeek's Anthropic-compatible API reads its cache in: every read of 308 real Claude Code
#: sessions on its models is a multiple of 128 tokens
PREFIX_UNIT = 128


def caches_every_prefix(points: list[RecordedRequest]) -> int:
    """The unit (tokens) in which the session's API read whatever prefix it had seen, at no breakpoint; 0 for
    an API that caches at the request's breakpoints. DeepSeek caches each request's prompt, and most often its
    answer, on its own, and reads the longest prefix it holds in units of :data:`PREFIX_UNIT`: on 10,880
    requests of 341 held-out files, the read is the previous request's prompt, or that prompt and its answer,
    in 128-token units, on 9,653. Told by its usage: no write reported, every read a multiple of the unit, and
    two different reads at least: one read repeated (an API that caches the tools and system prompt only reads
    them at every request) is a multiple by one chance in 128, however often it recurs. Not OpenAI's or Google's models (Codex, Gemini CLI): their APIs read in 128-token units too but
    do not cache the answer, and the breakpoint model replays their sessions within 0.1% (a Codex rollout went
    to +11.7% on cost as this one)."""
    reads = {p.usage.cache_read_input_tokens for p in points if p.usage.cache_read_input_tokens}
    if len(reads) < 2 or any(p.usage.cache_creation_input_tokens for p in points) or \
            any(other_family(normalize_model(p.model)) for p in points):
        return 0
    return PREFIX_UNIT if all(r % PREFIX_UNIT == 0 for r in reads) else 0


def anthropic_models(points: list[RecordedRequest]) -> bool:
    """Whether every request of the session went to a Claude model: what the Anthropic API caches at the
    breakpoints, and a read short of a prefix it cached says where that prefix changed (not so another
    provider's Anthropic-compatible API: DeepSeek's caches every prefix and reads it in units)."""
    return all(not p.model or normalize_model(p.model).startswith("claude-") for p in points)


def caches_lead_only(points: list[RecordedRequest]) -> bool:
    """Whether the session's API cached the tools and system prompt only (:func:`prompt_cache`)."""
    shares = sorted(p.usage.input_tokens / p.usage.prompt_tokens for p in points[1:] if p.usage.prompt_tokens)
    return len(shares) >= UNCACHED_SEEN and shares[len(shares) // 2] > UNCACHED_SHARE


def anthropic_cache(cache: PromptCache | None) -> bool:
    """Whether a session's API caches as Anthropic's does (:func:`prompt_cache`): at the breakpoints, reporting
    its writes; not none, nor one that caches the tools and system prompt only, every prefix in units, or
    reports its writes as plain input. Only of such an API do a request's plain input and reads say what
    :func:`uncached_tail` and :func:`ctxkit.reports.stripped_thinking.strips_thinking` take from them."""
    return cache is not None and not (cache.unit or cache.lead_only or cache.writes_as_input)


def uncached_tail(points: list[RecordedRequest], cache: PromptCache | None) -> float:
    """The tokens at the end of each request that the API counts as plain input although the request cached
    everything before them (it frames each turn with a few tokens after the last breakpoint: 1 to 14 on real
    sessions): the median ``input_tokens`` of the session's requests; 0 when that is more than
    :data:`TAIL_AT_MOST`, or for a cache that is not the Anthropic API's (none, the lead only, writes
    reported as input), whose plain input is something else."""
    if not anthropic_cache(cache):
        return 0.0
    plain = sorted(p.usage.input_tokens for p in points if p.usage.prompt_tokens)
    tail = plain[len(plain) // 2] if plain else 0
    return float(tail) if tail <= TAIL_AT_MOST else 0.0


def reports_writes_as_input(points: list[RecordedRequest]) -> bool:
    """Whether the session's API read the cache yet never reported a write: it reported what it wrote as
    plain input (see :func:`prompt_cache`); what lifetime its writes had, no usage says. One read is enough:
    a read on a session's first request found what an earlier session wrote (DeepSeek's and GLM's
    Anthropic-compatible APIs cache every prefix on their own, across sessions: 17 real one- to three-request
    Claude Code sessions on them read 5,000 tokens and more at once and reported no write)."""
    return any(p.usage.cache_read_input_tokens for p in points) and \
        not any(p.usage.cache_creation_input_tokens for p in points)


def request_ttl(usage: Usage, default_seconds: int) -> int:
    """The cache lifetime a request asked for, told from what it wrote (its ``cache_creation`` split; a usage
    without one, as older Claude Code wrote, is the API's default: 5 minutes); the session's when it wrote
    nothing."""
    return {"1h": TTL_1H, "5m": TTL_5M}.get(usage.lifetime or "", default_seconds)


def run_cache(cache: PromptCache | None, when: Any, model: str, pieces: list[Piece], ttl: int) -> CacheResult:
    """One request through the cache model, or, for a session whose API did not cache, all plain input."""
    if cache is None:
        return CacheResult(0, 0, 0, round(sum(p.tokens for p in pieces)))
    return cache.request(when, model, pieces, ttl)
