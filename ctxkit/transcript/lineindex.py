"""What ctxkit keeps of each input line, in compact arrays: where it is, and the few fields the
projection routes on.

A transcript may hold millions of lines of which the view (after the last compact boundary) needs
a few hundred, so the per-line cost decides how much memory a run takes. A Python object per line
(with an int for each offset and length and a string for each field) cost ~500 bytes a line; here a
line costs an 8-byte offset, a type code and a flag byte, and list slots for the uuid, the parent
(the same string object as the previous line's uuid when it is that one, as it nearly always is)
and the assistant message id; the entries themselves are parsed again on demand from the file.
"""
from __future__ import annotations

import operator
from array import array
from itertools import islice
from typing import Any

SIDECHAIN = 1
BAD = 2  # unreadable or of the wrong shape, kept as-is under --on-bad-line skip
#: a line a person may have typed (Claude Code: a user entry carrying no tool result, or a queued command):
#: the walk for the session's prompts reads only these (ctxkit.transcript.prompts)
MAYBE_TYPED = 4
_ODD_TYPE = 255  # a type beyond the 254 the code table holds: looked up in ``odd_types``


class LineIndex:
    """Per-line facts of one input file, by line index ``i`` (line number ``i + 1``)."""

    __slots__ = ("starts", "end", "types", "type_names", "type_codes", "odd_types", "flags", "uuids", "parents",
                 "msg_ids", "sources", "memo", "facts")

    def __init__(self) -> None:
        self.starts = array("q")  # byte offset where each line starts
        self.end = 0  # byte offset of the end of the file
        self.types = bytearray()
        self.type_names: list[str | None] = [None]
        self.type_codes: dict[str | None, int] = {None: 0}
        self.odd_types: dict[int, str] = {}
        self.flags = bytearray()
        self.uuids: list[str | None] = []
        self.parents: list[str | None] = []
        self.msg_ids: list[str | None] = []
        self.sources: dict[int, str] = {}  # sourceToolAssistantUUID, where a line has one (few do)
        #: maps derived from the arrays above, built on first use (they hold for every transcript version)
        self.memo: dict[str, object] = {}
        #: what the format collects about the whole session while indexing (Claude Code: SessionFacts)
        self.facts: Any = None

    def __len__(self) -> int:
        return len(self.starts)

    def add(self, offset: int) -> int:
        """Add a line starting at ``offset``; its index."""
        self.starts.append(offset)
        self.types.append(0)
        self.flags.append(0)
        self.uuids.append(None)
        self.parents.append(None)
        self.msg_ids.append(None)
        return len(self.starts) - 1

    def span(self, i: int) -> tuple[int, int]:
        """(offset, length) of line ``i`` with its line ending."""
        start = self.starts[i]
        stop = self.starts[i + 1] if i + 1 < len(self.starts) else self.end
        return start, stop - start

    # -- routing fields ---------------------------------------------------------------------------------
    def set_type(self, i: int, name: str | None) -> None:
        code = self.type_codes.get(name)
        if code is None:
            if len(self.type_names) < _ODD_TYPE:
                code = self.type_codes[name] = len(self.type_names)
                self.type_names.append(name)
            else:
                code = _ODD_TYPE
                self.odd_types[i] = name  # type: ignore[assignment]
        self.types[i] = code

    def type(self, i: int) -> str | None:
        code = self.types[i]
        return self.odd_types.get(i) if code == _ODD_TYPE else self.type_names[code]

    def set_routing(self, i: int, uuid: str | None, parent: str | None, sidechain: bool, msg_id: str | None,
                    source: str | None) -> None:
        if parent is not None and i > 0:
            prev = self.uuids[i - 1]
            if parent == prev:
                parent = prev  # share the previous line's string: one object for both
        if msg_id is not None and i > 0 and msg_id == self.msg_ids[i - 1]:
            msg_id = self.msg_ids[i - 1]  # fragments of one message share its id
        self.uuids[i] = uuid
        self.parents[i] = parent
        self.msg_ids[i] = msg_id
        if sidechain:
            self.flags[i] |= SIDECHAIN
        if source is not None:
            self.sources[i] = source

    def sidechain(self, i: int) -> bool:
        return bool(self.flags[i] & SIDECHAIN)

    def bad(self, i: int) -> bool:
        return bool(self.flags[i] & BAD)

    def mark_bad(self, i: int) -> None:
        self.flags[i] |= BAD


# -- kept in a checkpoint (ctxkit.store.checkpoint) -----------------------------------------------------
_SAME = 0  # in a saved ``parents`` list: the uuid of the line before


def index_state(idx: LineIndex, n: int) -> dict[str, Any]:
    """The first ``n`` lines of ``idx`` as plain JSON data (the facts are the format's to save)."""
    return {"lines": n, "starts": idx.starts[:n].tobytes().hex(), "end": idx.starts[n] if n < len(idx) else idx.end,
            "types": idx.types[:n].hex(), "type_names": idx.type_names,
            "odd_types": {str(i): name for i, name in idx.odd_types.items() if i < n},
            "flags": idx.flags[:n].hex(), "uuids": idx.uuids[:n],
            # a parent that is the line before (nearly every line): _SAME, not the uuid again
            "parents": [_SAME if p is not None and p is u else p for p, u in zip(idx.parents[:n], [None, *idx.uuids[:n - 1]],
                                                                                   strict=True)],
            "msg_ids": idx.msg_ids[:n], "sources": {str(i): s for i, s in idx.sources.items() if i < n}}


def index_from_state(doc: dict[str, Any]) -> LineIndex:
    """A line index from :func:`index_state`; raises ValueError, TypeError or KeyError on a document
    of another shape (a checkpoint is read from the store: input like any other)."""
    n = doc["lines"]
    idx = LineIndex()
    idx.starts = array("q")
    idx.starts.frombytes(bytes.fromhex(doc["starts"]))
    idx.end = int(doc["end"])
    idx.types = bytearray.fromhex(doc["types"])
    idx.flags = bytearray.fromhex(doc["flags"])
    names = doc["type_names"]
    if not isinstance(names, list) or not names or names[0] is not None or not _strings(names[1:], len(names) - 1):
        raise ValueError("type_names")
    idx.type_names = names
    idx.type_codes = {name: code for code, name in enumerate(names)}
    idx.odd_types = {int(i): str(name) for i, name in doc["odd_types"].items()}
    uuids, parents, msg_ids = doc["uuids"], doc["parents"], doc["msg_ids"]
    if not isinstance(parents, list) or len(parents) != n:
        raise ValueError("parents")
    # one string object for a parent and the previous line's uuid (see set_routing), and for the
    # message id of fragments of one message
    parents = [u if type(p) is int and p == _SAME else p for p, u in zip(parents, [None, *uuids[:-1]], strict=True)]
    if not (_strings(uuids, n) and _strings(parents, n) and _strings(msg_ids, n)):
        raise ValueError("uuids, parents or message ids")
    idx.uuids = uuids
    idx.parents = parents
    idx.msg_ids = [q if m is not None and m == q else m for m, q in zip(msg_ids, [None, *msg_ids[:-1]], strict=True)]
    idx.sources = {int(i): str(s) for i, s in doc["sources"].items()}
    if {len(idx.starts), len(idx.types), len(idx.flags)} != {n} or any(
            c >= len(idx.type_names) and c != _ODD_TYPE for c in set(idx.types)):
        raise ValueError("line counts or type codes")
    # (map over C functions: a checkpoint of a long session holds a few hundred thousand lines)
    if not all(map(operator.lt, idx.starts, islice(idx.starts, 1, None))) or (n and idx.starts[-1] >= idx.end):
        raise ValueError("offsets")
    return idx


_STRING_TYPES = {str, type(None)}


def _strings(values: Any, n: int) -> bool:
    return isinstance(values, list) and len(values) == n and set(map(type, values)) <= _STRING_TYPES
