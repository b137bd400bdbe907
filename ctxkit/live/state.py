"""A conversation's state between calls, in memory and in the store.

What a :class:`~ctxkit.ContextManager` needs to continue a conversation: which messages it has seen
(their lines in memory; in the store, their digests), the lines it returned last (the next call runs on
them plus the new messages), and how the request's count is made up (the estimate of what was sent,
the overhead the usage showed). Kept in the store as one document per conversation, ``live-<key>.json``,
where the key is a digest of the conversation's first message (what the store's decision scope of a
plain message list hashes too), so a new process finds it from the messages alone.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from ..store.disk import Store

_VERSION = 1


def state_key(first_line: bytes) -> str:
    return hashlib.sha256(first_line).hexdigest()[:16]


def digest(line: bytes) -> str:
    return hashlib.sha256(line).hexdigest()[:32]


@dataclass
class LiveState:
    key: str
    fmt: str
    #: the lines of the messages seen so far (in memory), or None when loaded from the store
    seen: list[bytes] | None = field(default_factory=list)
    #: their digests, when loaded from the store (``seen`` is None then)
    seen_digests: list[str] | None = None
    #: the lines the last call returned
    out: list[bytes] = field(default_factory=list)
    #: the estimate (without overhead) of what the last call returned: record_usage's reference
    sent_estimate: int | None = None
    #: tokens beyond the messages' estimate that a request holds, as the last recorded usage showed
    overhead: int | None = None

    def n_seen(self) -> int:
        return len(self.seen) if self.seen is not None else len(self.seen_digests or ())

    def starts(self, given: list[bytes]) -> bool:
        """Whether ``given`` starts with every message seen."""
        n = self.n_seen()
        if n > len(given):
            return False
        if self.seen is not None:
            return given[:n] == self.seen
        return [digest(line) for line in given[:n]] == self.seen_digests


def _name(key: str) -> str:
    return f"live-{key}.json"


def save_state(store: Store, state: LiveState) -> None:
    seen = state.seen_digests if state.seen is None else [digest(line) for line in state.seen]
    store.save_document(_name(state.key), {
        "version": _VERSION, "format": state.fmt, "seen": seen, "out": [line.decode() for line in state.out],
        "sent_estimate": state.sent_estimate, "overhead": state.overhead})


def load_state(store: Store, key: str) -> LiveState | None:
    doc = store.load_document(_name(key))
    if doc.get("version") != _VERSION:
        return None
    try:
        return LiveState(key=key, fmt=str(doc["format"]), seen=None, seen_digests=[str(d) for d in doc["seen"]],
                         out=[str(line).encode() for line in doc["out"]], sent_estimate=doc.get("sent_estimate"),
                         overhead=doc.get("overhead"))
    except (KeyError, TypeError):
        return None  # a damaged document: the conversation starts over (the ledger still freezes decisions)
