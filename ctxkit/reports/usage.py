"""What a recorded Claude Code session actually used: its requests, read from the usage figures it wrote.

Claude Code writes one assistant API response as several lines (one per content block), all with
the same ``message.id``, each carrying the usage of the response *so far*: ``output_tokens`` grows
from line to line and only the last line has the true count. A request is therefore one message id,
counted once, with the figures of its **last** line (a tool that keeps the first line undercounts
output several times over). Lines written by Claude Code itself rather than a model
(``model: "<synthetic>"``, API error placeholders) are no requests.

Main-chain requests (``isSidechain`` false) are the session's own; sidechain ones (subagents written
inline, as Claude Code 1.0 did) are kept apart, for ``ctxkit simulate``'s ``sidechain`` figures.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..clock import parse_instant
from ..transcript.claude_code.usage import read_about_input
from ..transcript.claude_code.usage import reads_counted_in_input as counted_in_input
from ..transcript.model import Transcript
from .pricing import Usage


@dataclass
class RecordedRequest:
    """One API request of a recorded session: where it starts in the file, when, which model, its usage."""

    message_id: str
    first_entry: int  # index of the first line of the response: the request was sent just before it
    timestamp: datetime | None
    model: str
    usage: Usage
    sidechain: bool
    #: when the request was sent: the time of the last line written before its response (the prompt or the
    #: tool results it answers). A response line is written when its block is complete, minutes later for a
    #: long one; the prompt cache counts its lifetime from the request.
    sent: datetime | None = None

    @property
    def sent_at(self) -> datetime | None:
        return self.sent or self.timestamp

    @property
    def cache_model(self) -> str:
        """The model as the prompt cache knows it: each platform caches apart, so a request served by
        Vertex AI or Bedrock (their message ids say so) does not read what the Anthropic API cached for
        the same model (``aistrad/work``: a router sent one session's requests to both, and each read
        only what its own platform had cached)."""
        platform = next((name for prefix, name in PLATFORMS if self.message_id.startswith(prefix)), "")
        return f"{self.model}@{platform}" if platform else self.model


#: message id prefixes of the platforms other than the Anthropic API, and the name the cache keys them by
PLATFORMS = (("msg_vrtx_", "vertex"), ("msg_bdrk_", "bedrock"))


#: more tokens than any request holds: a usage figure above it is not a count (fuzzed or corrupted)
MAX_REPORTED_TOKENS = 10 ** 9


def _usage(raw: Any) -> Usage:
    raw = raw if isinstance(raw, dict) else {}
    creation = raw.get("cache_creation") if isinstance(raw.get("cache_creation"), dict) else {}

    def num(value: Any) -> int:
        """A figure as the API reports one (a count from 0 to a billion); anything else (a negative, 1e300, a
        string) is the transcript's noise, counted as not reported rather than priced or overflowing JSON."""
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= MAX_REPORTED_TOKENS
        return int(value) if ok else 0

    return Usage(input_tokens=num(raw.get("input_tokens")),
                 cache_creation_input_tokens=num(raw.get("cache_creation_input_tokens")),
                 cache_read_input_tokens=num(raw.get("cache_read_input_tokens")),
                 output_tokens=num(raw.get("output_tokens")),
                 cache_write_1h_tokens=num(creation.get("ephemeral_1h_input_tokens")),
                 lifetime="1h" if num(creation.get("ephemeral_1h_input_tokens")) else
                 "5m" if num(creation.get("ephemeral_5m_input_tokens")) or "cache_creation" not in raw else None)


def instant(text: Any) -> datetime | None:
    """A line's ``timestamp`` as an instant (None: none, or not one)."""
    if not isinstance(text, str):
        return None
    try:
        return parse_instant(text)
    except ValueError:
        return None


def recorded_requests(t: Transcript) -> list[RecordedRequest]:
    """Every model request of a Claude Code transcript, in the order their responses start."""
    by_id: dict[str, RecordedRequest] = {}
    last: dict[bool, datetime | None] = {}  # the time of the last line written, main chain and sidechain apart
    for i in t.live_indexes():
        entry = t.entry(i)
        side = bool(entry.get("isSidechain"))
        before, last[side] = last.get(side), instant(entry.get("timestamp")) or last.get(side)
        if entry.get("type") != "assistant" or entry.get("isApiErrorMessage"):
            continue
        msg = entry.get("message")
        if not isinstance(msg, dict) or msg.get("model") == "<synthetic>":
            continue
        mid = msg.get("id") or entry.get("requestId") or entry.get("uuid")
        if not isinstance(mid, str):
            continue
        usage = _usage(msg.get("usage"))
        known = by_id.get(mid)
        if known is None:
            at = instant(entry.get("timestamp"))
            by_id[mid] = RecordedRequest(mid, i, at, str(msg.get("model") or ""), usage, side,
                                         before if before is not None and at is not None and before <= at else at)
        elif "usage" in msg:
            known.usage = usage  # the later line has the figures of the response so far: the last is final
    requests = sorted(by_id.values(), key=lambda r: r.first_entry)
    if reads_counted_in_input(requests):
        for r in requests:
            u = r.usage
            if u.input_tokens >= u.cache_read_input_tokens:  # (a request of another API: never less)
                r.usage = dataclasses.replace(u, input_tokens=u.input_tokens - u.cache_read_input_tokens)
    return requests


def reads_counted_in_input(requests: list[RecordedRequest]) -> bool:
    """Whether the session's API counted the reads in ``input_tokens``
    (:func:`ctxkit.transcript.claude_code.usage.reads_counted_in_input`): such a session's requests are read
    with the plain input alone; one that read more than its input is left as it is (a session whose user
    switched APIs midway: 4 of 15 requests)."""
    pairs = [(a.usage.input_tokens, b.usage.cache_read_input_tokens) for a, b in zip(requests, requests[1:], strict=False)
             if b.usage.cache_read_input_tokens and a.model == b.model and a.sidechain == b.sidechain]
    return counted_in_input(sum(read_about_input(before, read) for before, read in pairs), len(pairs))
