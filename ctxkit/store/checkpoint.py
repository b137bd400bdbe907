"""Checkpoints: what a run read and wrote, so that the next run reads only the bytes added since.

ctxkit runs after every agent turn, and a session file only grows: the agent appends to it, and
either ctxkit writes a separate output each time, or ctxkit's output is what the agent goes on
appending to (``-o`` onto the input). With the store, before it writes the output, ``compact`` keeps
two checkpoints: one of the bytes it read, one of the bytes it writes. Each holds the length of that file, a CRC (CRC-32C, or CRC-32 without google-crc32c) of
each MiB of it, and what a read of it produced (the line index and the session facts of
:mod:`ctxkit.transcript.claude_code.session`; for the input, the prompts typed before its newest
compact boundary, :class:`ctxkit.transcript.prompts.EarlierPrompts`, when this run looked for them)::

    STORE/checkpoints/<first line>/<length>-<id>.json

A checkpoint is found by content, never by file name: the folder is named by a hash of the file's
first line, and a run whose input is at least as long as a checkpoint and whose first bytes hash
block by block to the checkpoint's is resumed from it (the longest such one): only the lines after it
are read, and the output's unchanged lines are copied as byte ranges. The transcript, the view and
the output are the same as a full read gives (``--no-checkpoint`` forces one); an input that does not
start with a checkpoint's bytes (an edited file) is read in full.

Only Claude Code transcripts are checkpointed (a message list is all view: there is nothing to skip),
only a prefix of whole lines without unreadable ones, and only in a store that exists (a run that
needs no store makes none for its checkpoints). A checkpoint is a cache: one that cannot be
read, whose bytes were changed since it was written (its last field, ``check``, is a CRC of every
byte before it: :func:`ctxkit.store.block_crc.sealed`) or that is not of its shape
(:func:`check_checkpoint`) is a warning and is not used; at most :data:`KEEP` are kept per first
line, the oldest removed.
"""
from __future__ import annotations

import hashlib
import os
from typing import Any

import orjson

from ..confined import Refused, read_under
from ..transcript.claude_code import projection as claude_code
from ..transcript.claude_code import session as claude_code_session
from ..transcript.interface import handler
from ..transcript.jsonl import Source
from ..transcript.lineindex import LineIndex, index_from_state, index_state
from ..transcript.model import Transcript
from ..transcript.reader import Resume
from ..transcript.shapes import problem
from . import block_crc
from .disk import Store, is_marked_store

FOLDER = "checkpoints"
# 2: the line index tells the lines a person may have typed (lineindex.MAYBE_TYPED; 6: a prompt a hook blocked
# too); 3: CRC blocks; 4: sealed (a check of its own bytes); 5: the session facts hold the settings the session
# ran with (RecordedSettings); 7: and the newest answer's context, not yet taken as the largest (.pending)
FORMAT = 7
BLOCK = 1 << 20
KEEP = 4  # checkpoints kept per first line: this run's two, and the previous run's
_MAX_FIRST_LINE = 1 << 20  # a first line longer than this: not checkpointed (the key must be cheap)


def _digest(data: bytes) -> str:
    """A name for a small thing (a first line, a list of block digests)."""
    return hashlib.sha1(data, usedforsecurity=False).hexdigest()


class Checkpoints:
    """The checkpoints of one store for one run: :meth:`resume` before reading, :meth:`save` after writing.

    :attr:`outcome` says what the read did, for the report: ``{"resumed": True, "lines": N, "bytes": B}``,
    or ``{"resumed": False, "reason": ...}``."""

    def __init__(self, store: Store, *, enabled: bool = True, fmt: str = "auto"):
        self.store = store
        self.enabled = enabled and fmt in ("auto", claude_code.NAME)
        self.fmt = fmt
        self.outcome: dict[str, Any] = {"resumed": False, "reason": "disabled (--no-checkpoint)" if not enabled
                                        else f"not kept for --format {fmt}" if not self.enabled
                                        else "no checkpoint of this transcript in the store"}
        self.warnings: list[str] = []
        self._input_digests: list[str] = []  # digests of the input's whole blocks verified by resume

    # -- reading ----------------------------------------------------------------------------------
    def resume(self, source: Source) -> Resume | None:
        """The longest checkpoint the input starts with, as a :class:`Resume` (None: read it all)."""
        if not self.enabled:
            return None
        f = source.file
        size = os.fstat(f.fileno()).st_size
        folder = _head(source)
        if folder is None:
            return None
        names = self._candidates(folder, size)
        if names:
            self.outcome = {"resumed": False, "reason": "the input does not start with the bytes of any "
                            "checkpoint (an edited file): read in full"}
        warned = len(self.warnings)
        for name in names:
            doc = self._load(folder, name)
            if doc is None or doc["size"] > size or (self.fmt == "auto" and not doc["detected_early"]):
                continue  # (a checkpoint of a run told the format: an auto run might decide another)
            if not _starts_with(f, doc["size"], doc["digests"]):
                continue
            try:
                lines = index_from_state(doc["index"])
                lines.facts = claude_code_session.SessionFacts.from_json(doc["facts"])
            except (KeyError, TypeError, ValueError, AttributeError):
                self._warn(folder, name, "its line index is not of its shape")
                continue
            try:
                if doc.get("earlier_prompts") is not None:
                    from ..transcript import prompts  # (the prompts' module loads when a checkpoint holds some)

                    lines.memo[prompts.EARLIER] = prompts.EarlierPrompts.from_json(doc["earlier_prompts"], len(lines))
            except (KeyError, TypeError, ValueError, AttributeError):
                self._warn(folder, name, "its earlier prompts are not of their shape")
                continue
            if len(lines) and lines.starts[0] != 0 or lines.end != doc["size"]:
                self._warn(folder, name, "its line index does not cover its bytes")
                continue
            self._input_digests = doc["digests"][:doc["size"] // BLOCK]
            self.outcome = {"resumed": True, "lines": len(lines), "bytes": doc["size"]}
            return Resume(lines, doc["size"], bool(doc["detected_early"]))
        if len(self.warnings) > warned:
            self.outcome = {"resumed": False, "reason": "a checkpoint of this transcript could not be used (see "
                            "the warnings), and no other matches it: read in full"}
        return None

    def _candidates(self, folder: str, size: int) -> list[str]:
        """Names of the checkpoints under ``folder`` no longer than ``size`` bytes, longest first."""
        try:
            names = os.listdir(self.store.root / FOLDER / folder)
        except OSError:
            return []
        found = []
        for name in names:
            length = _length_of(name)
            if length is not None and 0 < length <= size:
                found.append((length, name))
        return [name for _, name in sorted(found, reverse=True)]

    def _load(self, folder: str, name: str) -> dict[str, Any] | None:
        shown = str(self.store.root / FOLDER / folder / name)
        try:
            data = read_under(self.store.root, [FOLDER, folder, name], shown=shown)
        except (Refused, OSError) as exc:
            self._warn(folder, name, f"cannot be read ({exc})")
            return None
        if data is None:
            return None  # removed since it was listed (another run keeps only the newest)
        try:
            doc = orjson.loads(data)
        except orjson.JSONDecodeError:
            self._warn(folder, name, "not JSON")
            return None
        if isinstance(doc, dict) and isinstance(doc.get("format"), int) and doc["format"] < FORMAT:
            return None  # kept by an earlier ctxkit (its index lacks what this one reads): not a problem
        if isinstance(doc, dict) and doc.get("hash") in block_crc.NAMES and doc["hash"] != block_crc.name():
            return None  # kept by an installation that hashes with the other CRC: not a problem either
        wrong = block_crc.seal_problem(data) or check_checkpoint(doc)
        if wrong is None and _length_of(name) != doc["size"]:
            wrong = f"its name says {_length_of(name)} bytes, it holds {doc['size']}"
        if wrong is not None:
            self._warn(folder, name, wrong)
            return None
        return doc

    def _warn(self, folder: str, name: str, problem_: str) -> None:
        self.warnings.append(f"checkpoint {self.store.root / FOLDER / folder / name}: {problem_}; "
                             "not used (a cache: an older checkpoint, or a full read, serves instead)")

    # -- saving -----------------------------------------------------------------------------------
    def save(self, read: Transcript, written: Transcript | None) -> None:
        """Keep checkpoints of the input ``read`` and of the output, ``written`` in its own format
        (None: the output was another format, or not written). Nothing in a dry run or when disabled."""
        if not self.enabled or self.store.dry_run or read.format != claude_code.NAME:
            return
        if not (self.store.used or is_marked_store(self.store.root)):
            return  # a run that needs no store makes none just for its checkpoints
        if read.info.bad_lines.count or not read.n_lines or not read.ends_with_newline():
            return  # unreadable lines are reported by every run; a last line without its newline may grow
        folder = _head(read.source)
        if folder is None:
            return
        digests = _digests(read.source.file, read.lines.end, self._input_digests)
        from ..transcript import prompts

        earlier = read.lines.memo.get(prompts.EARLIER)  # what the walk of the session's prompts found
        self._put(folder, read.lines, read.lines.end, digests, read.info.detected_early,
                  earlier.to_json() if isinstance(earlier, prompts.EarlierPrompts) else None)
        if written is not None:
            out = _written_index(read, written, digests)
            if out is not None:
                lines, out_digests = out
                # the output holds the same lines up to that boundary (the stages edit the view only)
                carried = isinstance(earlier, prompts.EarlierPrompts) and all(
                    i > earlier.boundary for i in written.overrides)
                self._put(folder, lines, lines.end, out_digests, read.info.detected_early,
                          earlier.to_json() if carried else None)
        self._prune(folder)

    def _put(self, folder: str, lines: LineIndex, size: int, digests: list[str], detected_early: bool,
             earlier: dict | None = None) -> None:
        name = f"{size:016d}-{_digest(''.join(digests).encode())[:16]}.json"
        path = self.store.root / FOLDER / folder / name
        if self.store.has_file([FOLDER, folder, name]):  # the same bytes as an earlier run's: kept, and
            try:                                          # marked as this run's for _prune (not through a link)
                os.utime(path, follow_symlinks=False)
            except OSError:
                pass
            return
        head = {"format": FORMAT, "hash": block_crc.name(), "size": size, "digests": digests, "detected_early": detected_early,
                "facts": lines.facts.to_json(), "earlier_prompts": earlier}

        def chunks():  # the index one field at a time: a million lines' document is never whole in memory
            yield orjson.dumps(head)[:-1] + b',"index":{'
            for k, (key, value) in enumerate(index_state(lines, len(lines)).items()):
                yield (b"," if k else b"") + orjson.dumps(key) + b":" + orjson.dumps(value)
            yield b"}"

        self.store.save_file([FOLDER, folder, name], block_crc.sealed(chunks()))

    def _prune(self, folder: str) -> None:
        """Keep the :data:`KEEP` most recently written checkpoints of this first line."""
        base = self.store.root / FOLDER / folder
        try:
            entries = sorted(((e.stat().st_mtime_ns, e.name) for e in os.scandir(base)
                              if _length_of(e.name) is not None), reverse=True)
        except OSError:
            return
        for _, name in entries[KEEP:]:
            try:
                os.unlink(base / name)
            except OSError:
                pass


def check_checkpoint(doc: Any) -> str | None:
    """What is wrong with a checkpoint document, None when nothing: ``{"format": 5, "hash": "crc32c/1MiB"
    (:func:`ctxkit.store.block_crc.name`), "size": bytes, "digests": [one hex CRC per MiB, the last of the part that is left], "detected_early":
    bool, "earlier_prompts": null or the entries with prompts before the newest boundary, "index": the line
    index (:func:`ctxkit.transcript.lineindex.index_state`), "facts": the session
    facts, "check": see :func:`ctxkit.store.block_crc.sealed`}`` (the index itself is checked as it is rebuilt)."""
    if not isinstance(doc, dict):
        return "the document is not an object"
    if doc.get("format") != FORMAT or doc.get("hash") != block_crc.name():
        return f"format {doc.get('format')!r} / hash {doc.get('hash')!r}, not {FORMAT} / {block_crc.name()}"
    size = doc.get("size")
    if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
        return "size is not a positive number"
    digests = doc.get("digests")
    if (not isinstance(digests, list) or len(digests) != -(-size // BLOCK)
            or not all(isinstance(d, str) and len(d) == 8 for d in digests)):
        return "digests are not one CRC per MiB of its size"
    if not isinstance(doc.get("detected_early"), bool):
        return "detected_early is not a boolean"
    for key in ("index", "facts"):
        if not isinstance(doc.get(key), dict):
            return f"{key} is not an object"
    return None


def _length_of(name: str) -> int | None:
    stem, dot, ext = name.partition(".")
    length, dash, ident = stem.partition("-")
    if ext != "json" or not dash or len(length) != 16 or not length.isdigit() or len(ident) != 16:
        return None
    return int(length)


def _head(source: Source) -> str | None:
    """The folder of this input's checkpoints: a hash of its first line (the same for every version of
    a file that only grows, and for ctxkit's output of it: ctxkit never rewrites a first line in place)."""
    f = source.file
    f.seek(0)
    first = f.readline(_MAX_FIRST_LINE)
    if not first.endswith(b"\n"):
        return None
    return _digest(first)[:32]


def _read_block(f, offset: int, length: int) -> bytes:
    return os.pread(f.fileno(), length, offset)


def _block_digests(f, size: int, first: int) -> list[str]:
    """The digests of the file's blocks from block ``first`` to the end of its first ``size`` bytes."""
    return [block_crc.digest(_read_block(f, k * BLOCK, min(BLOCK, size - k * BLOCK)))
            for k in range(first, -(-size // BLOCK))]


def _starts_with(f, size: int, digests: list[str]) -> bool:
    """Whether the file's first ``size`` bytes hash block by block to ``digests`` (it has that many)."""
    return os.fstat(f.fileno()).st_size >= size and _block_digests(f, size, 0) == digests


def _digests(f, size: int, known: list[str]) -> list[str]:
    """The digests of the file's first ``size`` bytes; ``known``: those of its first whole blocks."""
    out = list(known[:size // BLOCK])
    return out + _block_digests(f, size, len(out))


def output_index(read: Transcript, written: Transcript) -> LineIndex | None:
    """The line index a full read of ``written`` (a run's output over the input ``read``, in its own
    format) would give, without reading it; None when it cannot be told (see :func:`_written_index`).
    ``ctxkit simulate`` resumes each step's read from the previous step's output this way."""
    out = _written_index(read, written, None)
    return out[0] if out is not None else None


def _written_index(read: Transcript, written: Transcript,
                   read_digests: list[str] | None) -> tuple[LineIndex, list[str]] | None:
    """The line index a full read of ``written``'s output would give, and the output's digests (none
    when ``read_digests`` is None); None when it cannot be told without reading it (an entry removed, a
    line ctxkit wrote that a read would refuse)."""
    if written.removed or written.lines is not read.lines:
        return None
    n = read.n_lines
    fmt = written.format
    # what a read checks and indexes (shapes, routing fields) leaves the harness-only fields out: the
    # copies in memory do (no line is parsed again)
    entries = {i: written.entry(i) for i in (*written.overrides, *range(n, written.n_entries))}
    if fmt != read.format or any(problem(fmt, d) is not None for d in entries.values()):
        return None
    if fmt == claude_code.NAME:
        def index_line(lines: LineIndex, i: int, d: dict) -> None:
            claude_code.index_line(lines, i, d, facts=False)
    else:  # (the other formats' routing fields are the line's own: no session facts)
        index_line = handler(fmt).index_line
    src = read.lines
    out = LineIndex()
    out.starts = src.starts[:0]
    out.types, out.flags = bytearray(src.types), bytearray(src.flags)
    out.type_names, out.type_codes = list(src.type_names), dict(src.type_codes)
    out.odd_types, out.sources = dict(src.odd_types), dict(src.sources)
    out.uuids, out.parents, out.msg_ids = list(src.uuids), list(src.parents), list(src.msg_ids)
    pos = 0
    same = None  # output bytes equal to the input's from the start
    pieces = written.write_plan()
    chunks: list[tuple[int, Any]] = []  # (output offset, (input offset, length) or bytes) for hashing
    for piece in pieces:
        if len(piece) == 4:
            first, stop, offset, length = piece
            delta = pos - offset
            out.starts.extend(s + delta for s in src.starts[first:stop]) if delta else \
                out.starts.extend(src.starts[first:stop])
            if delta and same is None:
                same = pos
            chunks.append((pos, (offset, length)))
            pos += length
        else:
            i, data = piece
            if same is None:
                same = pos
            if i >= n:
                out.add(pos)
            else:
                out.starts.append(pos)
                out.flags[i] = 0
                out.sources.pop(i, None)
            index_line(out, i, entries[i] if i in entries else written.entry(i))
            chunks.append((pos, data))
            pos += len(data)
    out.end = pos
    out.facts = claude_code_session.current_facts(written).copy() if fmt == claude_code.NAME else src.facts
    if read_digests is None:
        return out, []
    same = pos if same is None else same
    digests = read_digests[:same // BLOCK]  # whole blocks the output shares with the input
    digests += _hash_from(len(digests) * BLOCK, chunks, read.source.file, pos)
    return out, digests


def _hash_from(start: int, chunks: list[tuple[int, Any]], f, end: int) -> list[str]:
    """Digests of the output's blocks from ``start`` (a block boundary) to ``end``, its bytes made from
    ``chunks`` (input ranges and written bytes) without reading the output back."""
    out: list[str] = []
    crc, filled = 0, 0
    extend = block_crc.extend
    for pos, what in chunks:
        if isinstance(what, tuple):
            offset, length = what
            skip = max(0, start - pos)
            offset, length, pos = offset + skip, length - skip, pos + skip
        else:
            skip = max(0, start - pos)
            what, length, pos = what[skip:], len(what) - skip, pos + skip
        while length > 0:
            take = min(length, BLOCK - filled)
            data = _read_block(f, offset, take) if isinstance(what, tuple) else what[:take]
            crc = extend(crc, data)
            filled += take
            length -= take
            if isinstance(what, tuple):
                offset += take
            else:
                what = what[take:]
            if filled == BLOCK:
                out.append(f"{crc:08x}")
                crc, filled = 0, 0
    if filled:
        out.append(f"{crc:08x}")
    assert len(out) == -(-(end - start) // BLOCK), "hashed bytes do not add up"
    return out
