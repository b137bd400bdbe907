"""The exact bytes of input lines a run rewrites, kept so ``ctxkit expand`` gives them back as they were.

A stage that edits an entry writes it re-serialized (compact JSON): a line written
with spaces (``{"a": 1,  "b": 2}``), ``\\u00e9`` escapes or any other formatting of
the same JSON would come back from ``expand`` with the same content but other bytes.
So, at the end of a run, every input line the output rewrites or removes and whose
bytes are not what re-serializing its entry gives is saved in the store, all of a run's
lines in one file (a pack: one write and one fsync, where a file per line made a
compaction of 30,000 one-word messages written by ``json.dumps`` take minutes)::

    STORE/lines/pack-<sha256 of the pack>.json    {sha256 of the re-serialized entry: the line, ending included}

(Stores written before packs hold one file per line, ``STORE/lines/ab/<sha256 of the
re-serialized entry>.json``, the line's bytes: still read.) When ``expand`` writes an
entry it has put back, it looks up the SHA-256 of the bytes it would write; when the
store holds a line that parses to exactly that entry, the original bytes, line ending
included, are written instead. Lines that already are in compact form ended by ``\n``
(every line Claude Code writes) cost nothing: nothing is saved for them.
"""
from __future__ import annotations

import hashlib
import os
import re

import orjson

from ..confined import Refused, read_under
from ..transcript.jsonl import dumps, split_ending
from ..transcript.model import Transcript
from .disk import Store

LINES_DIR = "lines"
_PACK = re.compile(r"pack-[0-9a-f]{64}\.json")
#: the most bytes of lines one pack holds (a run with more writes several): expand reads a pack whole
_PACK_BYTES = 64 * 1024 * 1024


def _name(serialized: bytes) -> list[str]:
    """Where a store written before packs keeps one line."""
    digest = hashlib.sha256(serialized).hexdigest()
    return [LINES_DIR, digest[:2], f"{digest}.json"]


def _write_pack(store: Store, pack: dict[str, str]) -> None:
    if pack:
        data = orjson.dumps(pack, option=orjson.OPT_SORT_KEYS)
        store.put_file([LINES_DIR, f"pack-{hashlib.sha256(data).hexdigest()}.json"], data)


def keep_original_lines(before: Transcript, after: Transcript, store: Store) -> int:
    """Save the bytes of each input line of ``before`` that ``after`` rewrites or removes, when they
    differ from the entry's compact serialization ended by ``\n`` (the last line too, when it has no newline);
    returns how many were saved (none in a dry run)."""
    if store.dry_run:
        return 0
    n = len(before.lines)
    # a last line without its newline is written with one (something may follow it): kept, so that
    # expand gives the file back without it (:func:`ctxkit.transcript.writer.ends_unterminated`)
    unterminated = {n - 1} if n and not before.ends_with_newline() else set()
    touched = sorted(i for i in {*after.overrides, *after.removed, *unterminated} if i < n and not before.lines.bad(i))
    saved, size, pack = 0, 0, {}
    for i in touched:
        found = _uncompact(before, i)
        if found is None:
            continue
        serialized, full = found
        pack[hashlib.sha256(serialized).hexdigest()] = full.decode("utf-8")  # (it parsed as JSON: UTF-8)
        saved, size = saved + 1, size + len(full)
        if size >= _PACK_BYTES:
            _write_pack(store, pack)
            size, pack = 0, {}
    _write_pack(store, pack)
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
        self._packs: dict[str, str] | None = None  # every pack's lines, read at the first lookup

    def __call__(self, serialized: bytes) -> bytes | None:
        digest = hashlib.sha256(serialized)
        try:
            raw = read_under(self.store.root, _name(serialized))
        except (Refused, OSError):
            raw = None
        if raw is None:
            line = self._packed().get(digest.hexdigest())
            raw = line.encode("utf-8") if isinstance(line, str) else None
        if raw is None:
            raw = self._source_lines.get(digest.digest())
        if raw is None:
            return None
        try:
            return raw if dumps(orjson.loads(raw.rstrip(b"\r\n"))) == serialized else None
        except orjson.JSONDecodeError:
            return None


    def _packed(self) -> dict:
        """The lines of every pack of the store (a pack that is a link, not a file or not JSON is passed over)."""
        if self._packs is None:
            self._packs = {}
            try:
                names = sorted(n for n in os.listdir(self.store.root / LINES_DIR) if _PACK.fullmatch(n))
            except OSError:
                names = []
            for name in names:
                try:
                    pack = orjson.loads(read_under(self.store.root, [LINES_DIR, name]) or b"{}")
                except (Refused, OSError, orjson.JSONDecodeError):
                    continue
                if isinstance(pack, dict):
                    self._packs.update(pack)
        return self._packs


def _uncompact_lines(t: Transcript) -> dict[bytes, bytes]:
    """sha256 of the serialized entry -> the line's bytes, for the lines of ``t`` not in compact form."""
    out: dict[bytes, bytes] = {}
    for i in range(t.n_lines):
        found = None if t.lines.bad(i) else _uncompact(t, i)
        if found is not None:
            out[hashlib.sha256(found[0]).digest()] = found[1]
    return out
