"""The transcript: the lines as read, plus a copy-on-write overlay of edits.

A :class:`Transcript` never changes. Stages make new ones with
:meth:`Transcript.with_edits`, which shares the read lines and the parse cache
and records only what changed (replaced entries, appended entries, and, for
plain message formats only, removed lines). Unchanged lines are written back
byte-for-byte from the input.

Over 400 lines: reading, editing and writing a transcript all work on the same overlay (the parse
cache, the set-aside fields, the write plan); split apart, each part would reach into the others'.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple

import orjson

from .interface import handler
from .jsonl import BadLines, Source, dumps, parse_line, split_ending
from .lineindex import BAD, LineIndex

if TYPE_CHECKING:
    from .view import View


# Fields of a Claude Code entry that only the harness reads: left out of the parsed copies kept in
# memory, put back whenever the entry is written.
HARNESS_ONLY_KEYS = ("toolUseResult",)


def without_harness_keys(entry: dict) -> dict:
    """The copy of an entry kept in memory: without the harness's own copy of a tool's output (not
    model-visible, often as big as the output itself), so memory follows the view; full_entry() and
    write() put it back."""
    if any(k in entry for k in HARNESS_ONLY_KEYS):
        return {k: v for k, v in entry.items() if k not in HARNESS_ONLY_KEYS}
    return entry


class _Dropped:
    __slots__ = ()

    def __repr__(self) -> str:
        return "DROPPED"


#: An edited entry's value for a harness-only field it drops (``ctxkit doctor --slim``): the field is left
#: out when the entry is written, instead of being put back from the input line.
DROPPED = _Dropped()


def _with_harness_keys(entry: dict, original: dict) -> dict:
    """``entry`` with the harness-only fields of ``original`` back, in their original place (those ``entry``
    sets to :data:`DROPPED` left out)."""
    if any(entry.get(k) is DROPPED for k in HARNESS_ONLY_KEYS):
        return {k: v for k, v in entry.items() if v is not DROPPED}
    missing = [k for k in HARNESS_ONLY_KEYS if k in original and k not in entry]
    if not missing:
        return entry
    out = {}
    for k in original:
        if k in entry:
            out[k] = entry[k]
        elif k in missing:
            out[k] = original[k]
    out.update((k, v) for k, v in entry.items() if k not in out)
    return out


class RawLine(dict):
    """An edit that writes a line's exact bytes (``data``, its line ending included, if it had one): a
    line the agent could not read, put back by ``ctxkit expand`` as it was. As an entry it is empty (no
    type), so whatever reads entries passes over it."""

    def __init__(self, data: bytes):
        super().__init__()
        self.data = data


def _raw_line(source: Source, lines: LineIndex, i: int) -> tuple[bytes, bool]:
    return split_ending(source.read_at(*lines.span(i)))


def set_aside(d: dict) -> tuple[tuple[str, ...], dict[str, Any]]:
    """What writing an edit of an entry needs of its input line: the line's keys in order and its
    harness-only fields. Kept per line under ``(SET_ASIDE, i)`` in :meth:`Transcript.extract`'s table,
    shared by every version, for a line parsed whole anyway (:meth:`Transcript.remember_input_line`)."""
    if not any(k in d for k in HARNESS_ONLY_KEYS):
        return _NOTHING_ASIDE
    return tuple(d), {k: d[k] for k in HARNESS_ONLY_KEYS if k in d}


SET_ASIDE = "input-line"
#: ``memo`` key of a version made by replacing content blocks in place (edits.replace_blocks): the
#: blocks, by BlockRef; the entries differ from the earlier version's in those blocks only
REPLACED_BLOCKS = "replaced-blocks"
_NOTHING_ASIDE: tuple = ((), {})


class _Parent(NamedTuple):
    """The earlier version a transcript was made from by replacing entries (see ``Transcript.parent``;
    its memo is ``Transcript.earlier``'s)."""

    entries: dict[int, dict]  # the replaced entries as they were
    view: View | None  # its view, when it had been computed (the projection may carry it over)


@dataclass
class ReadInfo:
    """Facts about reading, for reports."""

    bad_lines: BadLines
    #: whether auto-detection chose Claude Code (a later run with ``--format auto`` may then resume a read)
    detected_early: bool = False
    #: (lines, bytes) read from a checkpoint instead of the file (:class:`ctxkit.transcript.reader.Resume`)
    resumed: tuple[int, int] | None = None
    #: whether auto-detection decided the format from lines every longer file starting with these has too
    #: (Claude Code chosen early, or a whole detection window of another format's lines): a read of such a
    #: file grown by more lines may resume from this one (``ctxkit simulate``'s steps)
    settled: bool = False


class Transcript:
    """An immutable transcript of one format (``claude-code``, ``anthropic`` or ``openai``)."""

    def __init__(self, source: Source, lines: LineIndex, fmt: str, info: ReadInfo, *,
                 cache: dict[int, dict] | None = None, overrides: dict[int, dict] | None = None,
                 appended: tuple[dict, ...] = (), removed: frozenset[int] = frozenset(),
                 keep_all_parsed: bool = False, parent: Transcript | None = None,
                 replaced: frozenset[int] | None = None, extracts: dict[tuple, Any] | None = None,
                 changed: frozenset[int] = frozenset()):
        self.source = source
        self.lines = lines
        #: ``len(lines)``, the number of input lines (asked on every entry read: a plain attribute is cheaper)
        self.n_lines = len(lines)
        self.format = fmt
        self.info = info
        self._cache = cache if cache is not None else {}
        self._extracts = extracts if extracts is not None else {}  # see extract(); shared by every version
        self.overrides = overrides or {}
        self.appended = appended
        self.removed = removed
        self._keep_all_parsed = keep_all_parsed
        self._view: View | None = None
        #: what is known of the transcript this one was edited from by replacing entries only (its view if
        #: computed, and its entries where this edit replaced them: ``replaced``; None when the edit also
        #: appended or removed entries), so that a projection can be carried over instead of computed
        #: again. Not the parent itself: a chain of versions must not keep every earlier view alive.
        self.parent = _Parent({i: parent.entry(i) for i in replaced}, parent._view) \
            if parent is not None and replaced is not None else None
        self.replaced = replaced if self.parent is not None else None
        #: the memo of the version this one was edited from (any edit), and the entries the edit replaced
        #: or appended: what is worked out per version starts from the earlier version's (``carried``,
        #: ``claude_code_metas.Metas``). One level only, like ``parent``.
        self.earlier: tuple[dict[str, Any], frozenset[int]] | None = (parent.memo, changed) \
            if parent is not None else None
        #: what is computed once per transcript version (the active chain, ...): never changes once set
        self.memo: dict[str, Any] = {}

    # -- reading entries ----------------------------------------------------------------------
    @property
    def n_entries(self) -> int:
        return self.n_lines + len(self.appended)

    def entry(self, i: int) -> dict:
        """The entry at index ``i`` as it is now (edited, appended or as read). Do not mutate it."""
        if i >= self.n_lines:
            return self.appended[i - self.n_lines]
        if i in self.overrides:
            return self.overrides[i]
        cached = self._cache.get(i)
        if cached is None:
            cached = self._parse(i)
            if not self._keep_all_parsed:
                cached = without_harness_keys(cached)
            self._cache[i] = cached
        return cached

    def peek(self, i: int) -> dict:
        """Like :meth:`entry`, without keeping a parsed copy (for large entries read once)."""
        if i >= self.n_lines or i in self.overrides or i in self._cache:
            return self.entry(i)
        return self._parse(i)

    def raw_line(self, i: int) -> tuple[bytes, bool]:
        """Input line ``i`` as read (without its line ending), and whether it had one."""
        return _raw_line(self.source, self.lines, i)

    def _parse(self, i: int) -> dict:
        return parse_line(self.source.name, i + 1, *self.raw_line(i))

    def input_entry(self, i: int) -> dict | None:
        """The entry as the input had it, before any edit made to this transcript (None for an
        appended one): what the model saw before this run. Like :meth:`entry`, without the
        harness-only fields; do not mutate it."""
        if i >= self.n_lines:
            return None
        if i not in self.overrides:
            return self.entry(i)
        kept = self._cache.get(i)  # the parsed copies kept are of the input, never of an edit
        if kept is None:
            kept = self._parse(i) if self._keep_all_parsed else without_harness_keys(self._parse(i))
        return kept

    def parsed_input_lines(self) -> dict[int, dict]:
        """The parsed copies of input lines this transcript keeps (of the input, never of an edit; without
        the harness-only fields): what a read of a longer file with these lines first may start from
        (:class:`ctxkit.transcript.reader.Resume`). Do not mutate them."""
        return self._cache

    def full_entry(self, i: int) -> dict:
        """The entry with every field, including those :meth:`entry` leaves out (``toolUseResult``)."""
        d = self.entry(i)
        if i >= self.n_lines or self._keep_all_parsed:
            return d
        original = self._set_aside_shape(i)  # what was set aside, when the line was parsed whole
        return _with_harness_keys(d, original if original is not None else self._parse(i))

    def replaced_blocks_only(self) -> bool:
        """Whether this version only replaced content blocks of some entries (what
        :func:`ctxkit.transcript.edits.replace_blocks` records as :data:`REPLACED_BLOCKS`): whatever is
        worked out from an entry's other fields is the earlier version's."""
        known = self.memo.get(REPLACED_BLOCKS)
        return known is not None and self.replaced is not None and self.replaced == {ref.entry for ref in known}

    def carried(self, name: str, key: Callable[[int, dict], Any]) -> Any:
        """What the version this one was edited from computed under ``name`` (in its memo), when this edit
        only replaced entries and ``key(i, entry)`` is the same before and after for each of them (what
        the computation reads of an entry did not change); None otherwise."""
        parent = self.parent
        if parent is None or self.replaced is None:
            return None
        value = self.earlier[0].get(name)
        if value is None:
            return None
        for i in self.replaced:
            if key(i, parent.entries[i]) != key(i, self.entry(i)):
                return None
        return value

    def extract(self, i: int, make: Callable[[dict], Any]) -> Any:
        """``make(entry)`` for entry ``i``, remembered for every version of this transcript while the entry
        is the same: what a projection needs of a large entry it does not keep parsed (an attachment's
        rendered text), or of an edited one (its routing fields), so that the next version's projection
        does not work it out again. ``make`` must depend on the entry alone; do not change its result.

        Kept as ``(entry, value)``: the entry object an edited or appended entry had (versions share
        their entries, so ``is`` tells it is the same one), None for a line as read."""
        key = (make, i)
        found = self._extracts.get(key)
        if i >= self.n_lines or i in self.overrides:
            d = self.entry(i)
            if found is None or found[0] is not d:
                found = self._extracts[key] = (d, make(d))
        elif found is None or found[0] is not None:
            found = self._extracts[key] = (None, make(self.peek(i)))
        return found[1]

    def parsed_input_line(self, i: int) -> dict | None:
        """Input line ``i`` as a parse of the whole line gives it, when both its parsed entry and its
        harness-only fields are in memory (:meth:`remember_input_line`); None otherwise. Do not mutate it."""
        entry = self._cache.get(i)
        if entry is None:
            return None
        if self._keep_all_parsed:
            return entry
        original = self._set_aside_shape(i)
        # None: parsed later, without its harness-only fields, so what they were is not known
        return _with_harness_keys(entry, original) if original is not None else None

    def remember_input_line(self, i: int, parsed: dict) -> None:
        """Keep what writing an edit of input line ``i`` needs of it (:func:`set_aside`), from a reader that
        parsed the whole line anyway (the bytes kept for ``expand``, :mod:`ctxkit.store.original_lines`):
        the writer then does not parse it again."""
        self._extracts[(SET_ASIDE, i)] = set_aside(parsed)

    def _set_aside_shape(self, i: int) -> dict | None:
        """The input line's keys in order with its harness-only fields (:func:`set_aside`), as an entry
        :func:`_with_harness_keys` reads them from; None when nothing was set aside for line ``i``."""
        known = self._extracts.get((SET_ASIDE, i))
        return {**dict.fromkeys(known[0]), **known[1]} if known is not None else None

    def field_reader(self, i: int, key: str) -> Callable[[], Any]:
        """A function that reads field ``key`` of :meth:`full_entry` ``(i)`` when called: a field that may
        be large and is rarely needed (``toolUseResult``, an attachment's data) is parsed from the line
        only then. It holds the input, not this transcript: keeping it keeps no version's view alive."""
        if i >= self.n_lines or self._keep_all_parsed:
            value = self.full_entry(i).get(key)  # every field is in memory already
            return lambda: value
        here = self.overrides.get(i) or self._cache.get(i)
        if here is not None and (key in here or key not in HARNESS_ONLY_KEYS):
            value = here.get(key)
            return lambda: value
        known = self._extracts.get((SET_ASIDE, i)) if key in HARNESS_ONLY_KEYS else None
        if known is not None:  # set aside when the line was parsed whole (remember_input_line)
            value = known[1].get(key)
            return lambda: value
        source, lines = self.source, self.lines
        return lambda: parse_line(source.name, i + 1, *_raw_line(source, lines, i)).get(key)

    def line_no(self, i: int) -> int:
        """The input line number of entry ``i`` (0 for an appended entry)."""
        return i + 1 if i < self.n_lines else 0

    def live_indexes(self) -> Iterator[int]:
        """Indexes of entries present in the output, in output order."""
        flags, removed = self.lines.flags, self.removed
        for i in range(len(flags)):
            if not flags[i] & BAD and i not in removed:
                yield i
        yield from (i for i in range(self.n_lines, self.n_entries) if i not in self.removed)

    # -- editing ------------------------------------------------------------------------------
    def with_edits(self, *, replace: dict[int, dict] | None = None, append: Iterable[dict] = (),
                   remove: Iterable[int] = ()) -> Transcript:
        """A new transcript with entries replaced, appended or (plain formats) removed."""
        overrides = dict(self.overrides)
        appended = list(self.appended)
        n = self.n_lines
        for i, value in (replace or {}).items():
            if i >= n:
                appended[i - n] = value
            else:
                overrides[i] = value
        appended.extend(append)
        removed = self.removed | frozenset(remove)
        only_replaced = len(appended) == len(self.appended) and removed == self.removed \
            and not any(i < n and self.lines.bad(i) for i in replace or ())  # (a line not read: nothing to carry)
        return self._version(overrides, tuple(appended), removed,
                             replaced=frozenset(replace or ()) if only_replaced else None,
                             changed=frozenset(replace or ()) | frozenset(range(self.n_entries, n + len(appended))))

    def without_edits(self, indexes: Iterable[int]) -> Transcript:
        """A new transcript whose input lines ``indexes`` are as read again (their edits dropped)."""
        drop = frozenset(i for i in indexes if i in self.overrides)
        if not drop:
            return self
        overrides = {i: d for i, d in self.overrides.items() if i not in drop}
        unread = any(self.lines.bad(i) for i in drop if i < self.n_lines)  # (nothing to carry: see with_edits)
        return self._version(overrides, self.appended, self.removed, replaced=None if unread else drop, changed=drop)

    def _version(self, overrides: dict[int, dict], appended: tuple[dict, ...], removed: frozenset[int], *,
                 replaced: frozenset[int] | None, changed: frozenset[int]) -> Transcript:
        """The next version: these edits over the same read lines, parse cache and extracts."""
        return Transcript(self.source, self.lines, self.format, self.info, cache=self._cache, extracts=self._extracts,
                          overrides=overrides, appended=appended, removed=removed,
                          keep_all_parsed=self._keep_all_parsed, parent=self, replaced=replaced, changed=changed)

    def as_format(self, fmt: str) -> Transcript:
        """The same lines and edits read as another format: a compacted OpenAI list whose remaining lines
        alone read as Anthropic's, once ``ctxkit expand`` has put its history back."""
        if fmt == self.format:
            return self
        return Transcript(self.source, self.lines, fmt, self.info, overrides=self.overrides, appended=self.appended,
                          removed=self.removed, keep_all_parsed=self._keep_all_parsed)

    def unchanged(self) -> bool:
        return not self.overrides and not self.appended and not self.removed

    # -- projection -----------------------------------------------------------------------------
    def view(self) -> View:
        """The messages the model is sent next (computed once per transcript object)."""
        if self._view is None:
            self._view = handler(self.format).project(self)
        return self._view

    def computed_view(self) -> View | None:
        """The view, if it was computed already (None otherwise: nothing is projected)."""
        return self._view

    # -- writing --------------------------------------------------------------------------------
    def write(self, out: BinaryIO, originals: Callable[[bytes], bytes | None] | None = None, start: int = 0) -> None:
        """Write the transcript in its own format: unchanged lines byte-for-byte (their line ending
        included), edited ones re-serialized, appended ones last. Every line ends with a newline.

        Runs of unchanged lines are copied as byte ranges of the input: by the kernel when ``out``
        has a ``copy_from`` (:class:`ctxkit.fileio` streams), else through a buffer.

        ``originals``, given the bytes an edited or appended entry serializes to, may return the
        line to write instead, its ending included: the original line an entry was restored to
        (:class:`ctxkit.store.original_lines.OriginalLines`, used by ``ctxkit expand``). ``start``: the
        first bytes of the output are not written (``out`` holds them already: ``ctxkit simulate``'s steps)."""
        copy_from = getattr(out, "copy_from", None)
        pos = 0
        for piece in self.write_plan(originals):
            size = len(piece[1]) if len(piece) == 2 else piece[3]
            cut, pos = max(0, start - pos), pos + size
            if cut >= size:
                continue
            if len(piece) == 2:
                out.write(piece[1][cut:] if cut else piece[1])
            elif copy_from is not None:
                copy_from(self.source.file, piece[2] + cut, piece[3] - cut)
            else:
                offset, left = piece[2] + cut, piece[3] - cut
                while left > 0:
                    chunk = self.source.read_at(offset, min(left, 1 << 20))
                    if not chunk:
                        raise OSError(f"{self.source.name} shrank while it was being read")
                    out.write(chunk)
                    offset, left = offset + len(chunk), left - len(chunk)

    def write_plan(self, originals: Callable[[bytes], bytes | None] | None = None) -> list[tuple]:
        """What :meth:`write` writes, as pieces in order: ``(first, stop, offset, length)`` is input lines
        ``first`` to ``stop - 1`` copied as they are (``length`` bytes from ``offset``); ``(i, data)`` is
        entry ``i`` written as ``data`` (its line ending included)."""
        if originals is None and "write_plan" in self.memo:
            return self.memo["write_plan"]  # written, then hashed for a checkpoint: planned once
        pieces = self._write_plan(originals)
        if originals is None:
            self.memo["write_plan"] = pieces
        return pieces

    def _write_plan(self, originals: Callable[[bytes], bytes | None] | None) -> list[tuple]:
        def serialized(entry: dict, ending: bytes) -> bytes:
            if originals is None and ending == b"\n":
                return orjson.dumps(entry, option=orjson.OPT_APPEND_NEWLINE)  # dumps(entry) + ending, one copy
            data = dumps(entry)
            line = originals(data) if originals is not None else None
            if line is None:
                return data + ending
            return line if line.endswith(b"\n") else line + b"\n"

        n, lines = self.n_lines, self.lines
        pieces: list[tuple] = []

        def run_of(first: int, stop: int) -> tuple:  # lines first..stop-1 as they are: a byte range
            offset = lines.starts[first]
            last, length = lines.span(stop - 1)
            return first, stop, offset, last + length - offset

        last_live = max((i for i in range(n - 1, -1, -1) if i not in self.removed), default=None) \
            if self.removed else (n - 1 if n else None)
        # only the lines written otherwise than as they are are visited: a long session's runs between
        # them are one piece each, whatever their number of lines
        unterminated = {n - 1} if n and not self.ends_with_newline() else set()
        pos = 0
        for i in sorted({i for i in (*self.overrides, *self.removed) if i < n} | unterminated):
            if pos < i:
                pieces.append(run_of(pos, i))
            pos = i + 1
            if i in self.removed:
                continue
            if isinstance(self.overrides.get(i), RawLine):  # its bytes; a newline added only where a line follows
                data = self.overrides[i].data
                follows = i != last_live or any(n + k not in self.removed for k in range(len(self.appended)))
                pieces.append((i, data + b"\n" if follows and not data.endswith(b"\n") else data))
            elif i in self.overrides:
                start, length = lines.span(i)
                override = self.overrides[i]
                original = self._set_aside_shape(i) if not self._keep_all_parsed else None
                if original is not None:  # see set_aside
                    override = _with_harness_keys(override, original)
                elif not self._keep_all_parsed and not lines.bad(i):  # (a line not read: nothing set aside)
                    raw = self.source.read_at(start, length)
                    if any(k.encode() in raw for k in HARNESS_ONLY_KEYS):
                        override = _with_harness_keys(override, orjson.loads(raw))
                pieces.append((i, serialized(override, self._ending(i))))
            else:  # the last line, without its newline
                pieces.append((i, self.source.read_at(*lines.span(i)) + b"\n"))
        if pos < n:
            pieces.append(run_of(pos, n))
        ending = self._ending(last_live) if last_live is not None else b"\n"
        for k, entry in enumerate(self.appended):
            if n + k not in self.removed:  # an appended entry removed again (e.g. a record undone)
                pieces.append((n + k, serialized(entry, ending)))
        return pieces

    def _ending(self, i: int) -> bytes:
        """Input line ``i``'s line ending as an edit of it is written: ``\r\n`` where it had one, else
        ``\n`` (its last two bytes are read, not the line)."""
        start, length = self.lines.span(i)
        return b"\r\n" if length >= 2 and self.source.read_at(start + length - 2, 2) == b"\r\n" else b"\n"

    def ends_with_newline(self) -> bool:
        end = self.lines.end
        return end == 0 or self.source.read_at(end - 1, 1) == b"\n"

    def close(self) -> None:
        self.source.close()


def deep_replace(entry: dict, path: list[Any], value: Any) -> dict:
    """A copy of ``entry`` with the value at ``path`` replaced, copying only the containers on the path."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(entry, list):
        new_list = list(entry)
        new_list[head] = deep_replace(entry[head], rest, value)
        return new_list
    new = dict(entry)
    new[head] = deep_replace(entry[head], rest, value) if rest else value
    return new
