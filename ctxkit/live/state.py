"""A conversation's state between calls, in memory and in the store.

What a :class:`~ctxkit.ContextManager` needs to go on with a conversation: which messages it has seen
(the caller's objects in memory; their digests in the store), the lines it returned last (the next call
runs on them plus the new messages) and how a request's count is made up (the estimate of what was
sent, the overhead the API's usage showed).

In the store it is a journal per conversation, ``live/<key>.jsonl``, the key a digest of the
conversation's first two messages (so a new process finds it from the messages alone): a header line, then
one line per call saying what changed (the digests of the new messages; how many lines of the last
answer were kept and the lines after them). A call appends one short line, however long the
conversation; a call that rewrote the history (a compaction) writes the journal afresh. A last line cut
short (a process killed while appending) is left out when the journal is read; a journal that cannot be
used is a conversation that starts over (the ledger still freezes every decision made).
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..confined import Refused, read_under
from ..store.disk import Store

FOLDER = "live"
_VERSION = 1
#: the largest journal read back (a longer one is not ours: the conversation starts over)
_MAX_JOURNAL = 1 << 30


def state_key(first_lines: list[bytes]) -> str:
    """The journal's name for a conversation starting with these lines: its first two messages (an OpenAI
    list's first is often a system prompt many conversations share), or its first alone."""
    return hashlib.sha256(b"\n".join(first_lines[:2])).hexdigest()[:16]


def state_keys(first_lines: list[bytes]) -> list[str]:
    """The names a conversation's journal may have: by its first two messages, or, made when only its
    first had been given, by that one."""
    return list(dict.fromkeys([state_key(first_lines[:2]), state_key(first_lines[:1])]))


def digest(line: bytes) -> str:
    return hashlib.sha256(line).hexdigest()[:32]


@dataclass
class LiveState:
    key: str
    fmt: str
    #: the caller's message objects seen so far, in order (in memory; empty when loaded from the store)
    refs: list[Any] = field(default_factory=list)
    #: the digests of the lines of the messages seen so far
    seen: list[str] = field(default_factory=list)
    #: the lines the last call returned, and the same as dicts (given to the caller, read-only)
    out: list[bytes] = field(default_factory=list)
    out_msgs: list[dict] = field(default_factory=list)
    #: the estimate (without overhead) of the view of ``out``: record_usage's reference, and what the
    #: messages left out of an incremental run count
    sent_estimate: int = 0
    #: tokens beyond the messages' estimate that a request holds, as the last recorded usage showed
    overhead: int | None = None
    #: the journal no longer says what ``seen`` holds (the caller handed back the managed list): written afresh
    rewrite: bool = False

    def starts(self, given: list[Any]) -> bool:
        """Whether ``given`` starts with every message seen: the same objects (or equal ones) in
        memory; the same lines when loaded from the store."""
        n = len(self.seen)
        if n > len(given):
            return False
        if self.refs:
            return given[:n] == self.refs
        return [digest(orjson.dumps(m)) for m in given[:n]] == self.seen


def _parts(key: str) -> list[str]:
    return [FOLDER, f"{key}.jsonl"]


def _header(state: LiveState) -> bytes:
    return orjson.dumps({"version": _VERSION, "format": state.fmt}) + b"\n"


def _record(seen: list[str], keep: int, out: list[bytes], state: LiveState) -> bytes:
    return orjson.dumps({"seen": seen, "keep": keep, "out": [line.decode() for line in out],
                         "sent_estimate": state.sent_estimate, "overhead": state.overhead}) + b"\n"


def rewrite(store: Store, state: LiveState) -> None:
    """The journal afresh: the header and one record of the whole state."""
    store.save_file(_parts(state.key), [_header(state), _record(state.seen, 0, state.out, state)])


def append(store: Store, state: LiveState, new_seen: list[str], keep: int, new_out: list[bytes]) -> None:
    """One call's record: ``new_seen`` messages were seen, the answer is the last one's first ``keep``
    lines and ``new_out``. Not fsynced: a record lost in a crash is a call the next process runs again."""
    parts = _parts(state.key)
    if store.dry_run:
        return
    if not store.has_file(parts):
        rewrite(store, state)
        return
    fd = os.open(store.root.joinpath(*parts), os.O_WRONLY | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0))
    try:
        os.write(fd, _record(new_seen, keep, new_out, state))
    finally:
        os.close(fd)


def load(store: Store, key: str) -> LiveState | None:
    """The conversation's state as the journal left it, or None (no journal, or one that cannot be used)."""
    try:
        data = read_under(store.root, _parts(key), limit=_MAX_JOURNAL)
    except (Refused, OSError):
        return None
    if data is None:
        return None
    lines = data.split(b"\n")
    try:
        head = orjson.loads(lines[0])
        if head.get("version") != _VERSION:
            return None
        state = LiveState(key=key, fmt=str(head["format"]))
        for line in lines[1:]:
            if not line:
                continue
            try:
                rec = orjson.loads(line)
            except orjson.JSONDecodeError:
                break  # a record cut short: the calls before it stand
            state.seen.extend(str(d) for d in rec["seen"])
            state.out[int(rec["keep"]):] = [_text(x).encode() for x in rec["out"]]
            state.sent_estimate, state.overhead = int(rec["sent_estimate"]), _count(rec.get("overhead"))
        state.out_msgs = [orjson.loads(line) for line in state.out]
        if not all(isinstance(m, dict) for m in state.out_msgs):
            return None
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
        return None
    return state


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("not a line")
    return value


def _count(value: Any) -> int | None:
    """A token count as a journal holds one (None: not known yet); anything else is not ctxkit's journal."""
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
        return value
    raise TypeError("not a count")
