"""The prompt cache as the Messages API runs it: what a request reads from the cache, writes to it, and
sends as plain input.

A request is a list of pieces in the order the API caches them (tools, system blocks, then every
content block of every message), each with its tokens, and the pieces that carry a ``cache_control``
breakpoint. The API's rules, as Anthropic documents them for prompt caching:

* **Reads happen only at breakpoints.** For each breakpoint, the API looks for a cached prefix that
  ends at that block or at one of the 20 blocks before it (the *lookback*); the longest hit over all
  breakpoints is read. A prefix that changed earlier than that window is not found, even if an
  earlier request cached a longer part of it. Thinking blocks are not among the 20: SWORDIntel
  ``69d6710c`` (Claude Code 1.0.89, Sonnet 4), after seven requests of an "ultrathink" turn, read at a
  prompt without thinking the prefix cached before them, 20 blocks back without their thinking blocks and
  27 with (the API leaves out a previous turn's thinking); counted, the replay wrote it all again (+21.9%
  on writes, now +0.2%).
* **Writes happen at breakpoints.** Each breakpoint's prefix is cached; the tokens up to the last
  breakpoint that were not read are the request's cache writes, and the tokens after it are plain
  input (``input_tokens``).
* **A prefix shorter than the model's minimum cacheable length** (1,024 tokens and up, by model) is
  neither read nor written at that breakpoint.
* **The cache is per model**: a request to Haiku does not read what Opus cached.
* **Lifetime**: an entry lives 5 minutes or 1 hour from its last use (the request's ``ttl``); a read
  refreshes it.

Prefixes are compared by a chained digest of their pieces, so one request costs what its pieces cost
(a dictionary lookup per breakpoint and lookback position), whatever the number of earlier requests.
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from itertools import accumulate, compress
from operator import attrgetter, is_

from .pricing import family_and_version, normalize_model

LOOKBACK_BLOCKS = 20

#: Minimum cacheable prompt length per model family and version (Anthropic's prompt-caching page):
#: (family, lowest version it applies from) -> tokens; the highest matching version wins. A model of a
#: newer version than the table names takes its family's newest figure.
_MINIMUMS: dict[tuple[str, tuple[int, int]], int] = {
    ("haiku", (3, 0)): 2048,
    ("haiku", (4, 5)): 4096,
    ("sonnet", (3, 0)): 1024,
    ("opus", (3, 0)): 1024,
    ("opus", (4, 5)): 4096,
    ("fable", (5, 0)): 4096,
    ("mythos", (5, 0)): 4096,
}
DEFAULT_MINIMUM = 1024


def min_cacheable_tokens(model: str) -> int:
    """The shortest prefix ``model`` caches (1,024 for an unknown model: the lowest the API has)."""
    fv = family_and_version(normalize_model(model))
    if fv is None:
        return DEFAULT_MINIMUM
    family, version = fv
    fits = [(v, n) for (f, v), n in _MINIMUMS.items() if f == family and v <= version]
    return max(fits)[1] if fits else DEFAULT_MINIMUM


@dataclass
class Piece:
    """One block of a request, in cache order: its identity (bytes and position), tokens, and whether the
    request put a ``cache_control`` breakpoint on it."""

    digest: bytes
    tokens: float
    breakpoint: bool = False
    lead: bool = False  # tools or system (the part before the messages)
    thinking: bool = False  # a thinking block: not one of the 20 blocks a breakpoint looks back over

    def keyed(self, salt: bytes) -> Piece:
        """The same block under another prefix (a rewrite, a turn's thinking budget, another conversation):
        another identity for the cache, the same tokens and breakpoint."""
        return replace(self, digest=hashlib.blake2b(salt + self.digest, digest_size=16).digest())


def cache_key(model: str) -> str:
    """The cache a request to ``model`` reads: the model's (dated ids and aliases as one), and apart for
    each platform named after an ``@`` (:attr:`ctxkit.reports.usage.RecordedRequest.cache_model`)."""
    base, _, platform = model.partition("@")
    return normalize_model(base) + (f"@{platform}" if platform else "")


def remade(memo: dict, p: Piece, key: object, make: Callable[[Piece], Piece]) -> Piece:
    """``make(p)``, made once per ``(p, key)`` over a replay's requests (``memo``, kept across them): a replay
    sends the same pieces again at every request, and a piece derived the same way again is the same piece.
    Looked up by ``p``'s identity; the memo keeps ``p``, so its id is no other piece's."""
    found = memo.get(id(p))
    if found is None or found[0] is not p or found[1] != key:
        found = memo[id(p)] = (p, key, make(p))
    return found[2]


@dataclass(frozen=True)
class CacheResult:
    """What one request did: tokens read from the cache, written to it (of which for an hour), plain input."""

    read: int
    write: int
    write_1h: int
    input: int


class PromptCache:
    """Every prefix cached so far, by model and chained digest, with when it expires."""

    def __init__(self, lead_only: bool = False, writes_as_input: bool = False, unit: int = 0) -> None:
        self.entries: dict[tuple[str, bytes], float] = {}  # (model, prefix digest) -> expiry (POSIX seconds)
        #: (model, prefix digest) -> the prefix's tokens when first written: a read counts those (the same
        #: content), where a later request's calibration may size its pieces otherwise
        self.sizes: dict[tuple[str, bytes], float] = {}
        #: an API that caches the tools and system prompt only, never the messages at their breakpoints
        #: (:func:`ctxkit.reports.api_cache.prompt_cache`)
        self.lead_only = lead_only
        #: an API that caches as the Anthropic API does but reports (and bills) what it writes as plain input
        self.writes_as_input = writes_as_input
        #: an API that caches every request's whole prompt, at no breakpoint, and reads the longest prefix it
        #: holds in units of this many tokens (0: the Anthropic API's breakpoints;
        #: :func:`ctxkit.reports.api_cache.caches_every_prefix`); what it writes is plain input
        self.unit = unit
        #: the previous request's piece digests and their chained digests: a request repeats most of the one
        #: before, and the chain of the prefix they share is not worked out again
        self._last: tuple[list[bytes], list[bytes]] = ([], [])

    def _chain(self, digests: list[bytes]) -> list[bytes]:
        """The chained digest of each prefix of ``digests`` (the k-th: of the first k + 1)."""
        before, chained = self._last
        shared = _shared_prefix(before, digests)
        chain = chained[:shared]
        h = chain[-1] if chain else b""
        for d in digests[shared:]:
            h = hashlib.blake2b(h + d, digest_size=16).digest()
            chain.append(h)
        self._last = (digests, chain)
        return chain

    def request(self, when: datetime | None, model: str, pieces: list[Piece], ttl_seconds: int) -> CacheResult:
        """Run one request made ``when`` to ``model`` with ``pieces``; its writes live ``ttl_seconds``.
        ``model`` may name the platform after an ``@`` (:attr:`ctxkit.reports.usage.RecordedRequest.cache_model`):
        each platform caches apart."""
        now = when.timestamp() if when is not None else 0.0
        key = cache_key(model)
        minimum = min_cacheable_tokens(model.partition("@")[0])
        # (over the pieces in C: a request's pieces are as many as the blocks of its context)
        chain = self._chain(list(map(_DIGEST, pieces)))
        cumulative = list(accumulate(map(_TOKENS, pieces), initial=0.0))[1:]  # (in order, as one at a time)

        def live(k: int) -> bool:
            expiry = self.entries.get((key, chain[k]))
            return expiry is not None and (when is None or expiry >= now)

        if self.unit:  # (no breakpoints to find: the request's pieces are not walked again)
            return self._every_prefix(key, chain, cumulative, live, now, ttl_seconds)
        total = cumulative[-1] if cumulative else 0.0
        marks = [k for k in compress(range(len(pieces)), map(_BREAKPOINT, pieces)) if cumulative[k] >= minimum
                 and (pieces[k].lead or not self.lead_only)]
        hit = -1
        for b in marks:
            span = 0
            for k in range(b, -1, -1):
                if k <= hit or span > LOOKBACK_BLOCKS:
                    break
                if cumulative[k] >= minimum and live(k):
                    hit = k
                    break
                span += not pieces[k].thinking
        if hit >= 0:
            self.entries[(key, chain[hit])] = now + ttl_seconds  # a read refreshes the entry's lifetime
        for b in marks:
            self.entries[(key, chain[b])] = max(self.entries.get((key, chain[b]), 0.0), now + ttl_seconds)
            self.sizes.setdefault((key, chain[b]), cumulative[b])
        read = self._read_size((key, chain[hit]), cumulative[hit]) if hit >= 0 else 0.0
        cached_end = cumulative[marks[-1]] if marks else 0.0
        write = max(0.0, cached_end - read)
        read_i, write_i = round(read), round(write)
        plain = max(0, round(total) - read_i - write_i)
        if self.writes_as_input:
            return CacheResult(read_i, 0, 0, plain + write_i)
        return CacheResult(read_i, write_i, write_i if ttl_seconds >= 3600 else 0, plain)

    def _every_prefix(self, key: str, chain: list[bytes], cumulative: list[float], live: Callable[[int], bool],
                      now: float, ttl_seconds: int) -> CacheResult:
        """A request to an API that caches every prompt whole (:attr:`unit`): it reads the longest prefix any
        earlier request sent (or cached with its answer), in whole units, and caches its own prompt; nothing
        it sends is a write. The longest is looked for from the end: most often the request before's prompt,
        a few pieces back."""
        hit = next((k for k in range(len(chain) - 1, -1, -1) if live(k)), -1)
        if hit >= 0:
            self.entries[(key, chain[hit])] = now + ttl_seconds
        if chain:
            self.entries[(key, chain[-1])] = max(self.entries.get((key, chain[-1]), 0.0), now + ttl_seconds)
            self.sizes.setdefault((key, chain[-1]), cumulative[-1])
        read = int(self._read_size((key, chain[hit]), cumulative[hit]) // self.unit) * self.unit if hit >= 0 else 0
        return CacheResult(read, 0, 0, max(0, round(cumulative[-1] if cumulative else 0.0) - read))

    def _read_size(self, entry: tuple[str, bytes], size: float) -> float:
        """The tokens a read of the cached ``entry`` counts, where the request reading it gives it ``size``: the
        size it was written at (the same content), or the request's where that is smaller (a request cut to its
        own size, smaller than its pieces had been, reads no more than it holds)."""
        return min(size, self.sizes.get(entry, size))

    def forget_beyond(self, model: str, tokens: float, when: datetime | None) -> None:
        """Lose ``model``'s cached prefixes longer than ``tokens`` at ``when`` (a loss the API's usage showed:
        :mod:`ctxkit.reports.cache_events`): they end then, so a request replayed later but sent before
        (a compaction's, a subagent's) still finds them."""
        key = cache_key(model)
        for entry in [e for e, size in self.sizes.items() if e[0] == key and size > tokens and e in self.entries]:
            if when is None:  # (a replay without times: the entries are gone)
                del self.entries[entry]
            else:
                self.entries[entry] = min(self.entries[entry], when.timestamp() - 1e-3)

    def held_near(self, model: str, pieces: list[Piece], tokens: float, share: float, at: datetime) -> bool:
        """Whether a prefix of ``pieces`` was cached for ``model``, alive ``at``, at a size within ``share`` of
        ``tokens`` (the size it was written at, as a read counts it and :meth:`forget_beyond` measures it):
        one a request sending them could have read."""
        key, then = cache_key(model), at.timestamp()
        chain = self._chain(list(map(_DIGEST, pieces)))
        return any(abs(self.sizes[entry] - tokens) <= share * tokens and self.entries.get(entry, 0.0) >= then
                   for entry in ((key, link) for link in chain) if entry in self.sizes)

    def keep_alive(self, model: str, alive_at: datetime, until: datetime) -> None:
        """Keep ``model``'s entries that were alive at ``alive_at`` alive until ``until`` (an entry the API's
        usage showed read past its lifetime: :mod:`ctxkit.reports.cache_events`)."""
        key, then, later = cache_key(model), alive_at.timestamp(), until.timestamp()
        for entry, expiry in self.entries.items():
            if entry[0] == key and then <= expiry < later:
                self.entries[entry] = later


_DIGEST, _TOKENS, _BREAKPOINT = attrgetter("digest"), attrgetter("tokens"), attrgetter("breakpoint")


def same_leading(a: Sequence[object], b: Sequence[object]) -> int:
    """How many first items of ``a`` and ``b`` are the same objects (compared in C): what a replay's request
    repeats of the one before, where each step keeps the objects it did not change (a view's messages, a
    request's message dicts), so that a step works on what is new, not on the whole request again."""
    same = list(map(is_, a, b))
    try:
        return same.index(False)
    except ValueError:
        return len(same)


def _shared_prefix(a: list[bytes], b: list[bytes]) -> int:
    """How many first items ``a`` and ``b`` have in common (compared a slice at a time, in C)."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n - 1  # a[:lo] == b[:lo]; they differ before hi + 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo
