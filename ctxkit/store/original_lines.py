"""The exact bytes of input lines a run rewrites, kept so ``ctxkit expand`` gives them back as they were.

A stage that edits an entry writes it re-serialized (compact JSON): a line written
with spaces (``{"a": 1,  "b": 2}``), ``\\u00e9`` escapes or any other formatting of
the same JSON would come back from ``expand`` with the same content but other bytes.
So, at the end of a run, every input line the output rewrites or removes and whose
bytes are not what re-serializing its entry gives is saved in the store::

    STORE/lines/ab/<sha256 of the re-serialized entry>.json    the line's original bytes (and ending)

When ``expand`` writes an entry it has put back, it looks up the SHA-256 of the bytes
it would write; when the store holds a line that parses to exactly that entry, the
original bytes, line ending included, are written instead. Lines that already are
in compact form ended by ``\n`` (every line Claude Code writes) cost nothing:
nothing is saved for them.
"""
from __future__ import annotations

import hashlib

import orjson

from ..confined import Refused, read_under
from ..transcript.jsonl import dumps, split_ending
from ..transcript.model import Transcript
from .disk import Store

LINES_DIR = "lines"


def _name(serialized: bytes) -> list[str]:
    digest = hashlib.sha256(serialized).hexdigest()
    return [LINES_DIR, digest[:2], f"{digest}.json"]


def keep_original_lines(before: Transcript, after: Transcript, store: Store) -> int:
    """Save the bytes of each input line of ``before`` that ``after`` rewrites or removes, when they
    differ from the entry's compact serialization ended by ``\n``; returns how many were saved (none
    in a dry run)."""
    if store.dry_run:
        return 0
    n = len(before.lines)
    touched = sorted(i for i in {*after.overrides, *after.removed} if i < n and not before.lines.bad(i))
    saved = 0
    for i in touched:
        found = _uncompact(before, i)
        if found is None:
            continue
        serialized, full = found
        store.put_file(_name(serialized), full)
        saved += 1
    return saved


def _uncompact(t: Transcript, i: int) -> tuple[bytes, bytes] | None:
    """(the entry's compact serialization, the line's bytes with its line ending) when these differ
    from that serialization and ``\n``; None for a line in compact form (or not JSON)."""
    raw = t.source.read_at(*t.lines.span(i))
    body, _ = split_ending(raw)
    ending = raw[len(body):]
    parsed = t.parsed_input_line(i)  # kept by the reader (most edited lines are in the view)
    if parsed is None:
        try:
            parsed = orjson.loads(body)
        except orjson.JSONDecodeError:
            return None
        if isinstance(parsed, dict):
            t.remember_input_line(i, parsed)  # the writer needs its harness-only fields: not parsed twice
    serialized = dumps(parsed)
    if serialized == body and ending == b"\n":
        return None
    return serialized, body + ending


class OriginalLines:
    """``lookup(serialized) -> the original line (its ending included) or None``: what
    :meth:`Transcript.write` asks for each entry it re-serializes (pass the instance as ``originals``).

    Looked up in the store first; for plain message lists also among the lines of ``source`` itself
    (``expand`` of a collapse writes every line again, the untouched ones included): those are
    indexed when the instance is made, since reading the source while it is being written would
    move the writer's position. A saved line is used only if it parses to exactly the entry being
    written."""

    def __init__(self, store: Store, source: Transcript | None = None):
        self.store = store
        self._source_lines = _uncompact_lines(source) if source is not None and source.format != "claude-code" \
            else {}

    def __call__(self, serialized: bytes) -> bytes | None:
        try:
            raw = read_under(self.store.root, _name(serialized))
        except (Refused, OSError):
            raw = None
        if raw is None:
            raw = self._source_lines.get(hashlib.sha256(serialized).digest())
        if raw is None:
            return None
        try:
            return raw if dumps(orjson.loads(raw.rstrip(b"\r\n"))) == serialized else None
        except orjson.JSONDecodeError:
            return None


def _uncompact_lines(t: Transcript) -> dict[bytes, bytes]:
    """sha256 of the serialized entry -> the line's bytes, for the lines of ``t`` not in compact form."""
    out: dict[bytes, bytes] = {}
    for i in range(t.n_lines):
        found = None if t.lines.bad(i) else _uncompact(t, i)
        if found is not None:
            out[hashlib.sha256(found[0]).digest()] = found[1]
    return out
