"""The transcript: the lines as read, plus a copy-on-write overlay of edits.

A :class:`Transcript` never changes. Stages make new ones with
:meth:`Transcript.with_edits`, which shares the read lines and the parse cache
and records only what changed (replaced entries, appended entries, and, for
plain message formats only, removed lines). Unchanged lines are written back
byte-for-byte from the input.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO

import orjson

from .jsonl import BadLines, Source, dumps, parse_line
from .lineindex import BAD, LineIndex

if TYPE_CHECKING:
    from .view import View


# Fields of a Claude Code entry that only the harness reads: left out of the parsed copies kept in
# memory, put back whenever the entry is written.
HARNESS_ONLY_KEYS = ("toolUseResult",)


def _with_harness_keys(entry: dict, original: dict) -> dict:
    """``entry`` with the harness-only fields of ``original`` back, in their original place."""
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


@dataclass(frozen=True)
class _Parent:
    """The earlier version a transcript was made from by replacing entries (see ``Transcript.parent``)."""

    memo: dict[str, Any]
    entries: dict[int, dict]  # the replaced entries as they were


@dataclass
class ReadInfo:
    """Facts about reading, for reports."""

    bad_lines: BadLines


class Transcript:
    """An immutable transcript of one format (``claude-code``, ``anthropic`` or ``openai``)."""

    def __init__(self, source: Source, lines: LineIndex, fmt: str, info: ReadInfo, *,
                 cache: dict[int, dict] | None = None, overrides: dict[int, dict] | None = None,
                 appended: tuple[dict, ...] = (), removed: frozenset[int] = frozenset(),
                 keep_all_parsed: bool = False, parent: Transcript | None = None,
                 replaced: frozenset[int] | None = None):
        self.source = source
        self.lines = lines
        self.format = fmt
        self.info = info
        self._cache = cache if cache is not None else {}
        self.overrides = overrides or {}
        self.appended = appended
        self.removed = removed
        self._keep_all_parsed = keep_all_parsed
        self._view: View | None = None
        #: what is known of the transcript this one was edited from (its memo, and its entries where this
        #: edit replaced them: ``replaced``, None when the edit also appended or removed entries), so that
        #: a projection can be carried over instead of computed again. Not the parent itself: a chain of
        #: versions must not keep every earlier view alive.
        self.parent = _Parent(parent.memo, {i: parent.entry(i) for i in replaced}) \
            if parent is not None and replaced is not None else None
        self.replaced = replaced if self.parent is not None else None
        #: what is computed once per transcript version (the active chain, ...): never changes once set
        self.memo: dict[str, Any] = {}

    # -- reading entries ----------------------------------------------------------------------
    @property
    def n_entries(self) -> int:
        return len(self.lines) + len(self.appended)

    def entry(self, i: int) -> dict:
        """The entry at index ``i`` as it is now (edited, appended or as read). Do not mutate it."""
        if i >= len(self.lines):
            return self.appended[i - len(self.lines)]
        if i in self.overrides:
            return self.overrides[i]
        cached = self._cache.get(i)
        if cached is None:
            cached = self._parse(i)
            if not self._keep_all_parsed and any(k in cached for k in HARNESS_ONLY_KEYS):
                # kept without the harness's own copy of the tool output (not model-visible, often as big
                # as the output itself): memory follows the view; full_entry() and write() restore it
                cached = {k: v for k, v in cached.items() if k not in HARNESS_ONLY_KEYS}
            self._cache[i] = cached
        return cached

    def peek(self, i: int) -> dict:
        """Like :meth:`entry`, without keeping a parsed copy (for large entries read once)."""
        if i >= len(self.lines) or i in self.overrides or i in self._cache:
            return self.entry(i)
        return self._parse(i)

    def raw_line(self, i: int) -> tuple[bytes, bool]:
        """Input line ``i`` as read (without its line ending), and whether it had one."""
        raw = self.source.read_at(*self.lines.span(i))
        had_newline = raw.endswith(b"\n")
        body = raw[:-1] if had_newline else raw
        return (body[:-1] if body.endswith(b"\r") else body), had_newline

    def _parse(self, i: int) -> dict:
        return parse_line(self.source.name, i + 1, *self.raw_line(i))

    def input_entry(self, i: int) -> dict | None:
        """The entry as the input had it, before any edit made to this transcript (None for an
        appended one): what the model saw before this run."""
        if i >= len(self.lines):
            return None
        return self._parse(i) if i in self.overrides else self.entry(i)

    def full_entry(self, i: int) -> dict:
        """The entry with every field, including those :meth:`entry` leaves out (``toolUseResult``)."""
        d = self.entry(i)
        if i >= len(self.lines) or self._keep_all_parsed:
            return d
        return _with_harness_keys(d, self._parse(i))

    def line_no(self, i: int) -> int:
        """The input line number of entry ``i`` (0 for an appended entry)."""
        return i + 1 if i < len(self.lines) else 0

    def live_indexes(self) -> Iterator[int]:
        """Indexes of entries present in the output, in output order."""
        flags, removed = self.lines.flags, self.removed
        for i in range(len(flags)):
            if not flags[i] & BAD and i not in removed:
                yield i
        yield from (i for i in range(len(self.lines), self.n_entries) if i not in self.removed)

    # -- editing ------------------------------------------------------------------------------
    def with_edits(self, *, replace: dict[int, dict] | None = None, append: Iterable[dict] = (),
                   remove: Iterable[int] = ()) -> Transcript:
        """A new transcript with entries replaced, appended or (plain formats) removed."""
        overrides = dict(self.overrides)
        appended = list(self.appended)
        for i, value in (replace or {}).items():
            if i >= len(self.lines):
                appended[i - len(self.lines)] = value
            else:
                overrides[i] = value
        appended.extend(append)
        removed = self.removed | frozenset(remove)
        only_replaced = len(appended) == len(self.appended) and removed == self.removed
        return Transcript(self.source, self.lines, self.format, self.info, cache=self._cache,
                          overrides=overrides, appended=tuple(appended), removed=removed,
                          keep_all_parsed=self._keep_all_parsed, parent=self,
                          replaced=frozenset(replace or ()) if only_replaced else None)

    def unchanged(self) -> bool:
        return not self.overrides and not self.appended and not self.removed

    # -- projection -----------------------------------------------------------------------------
    def view(self) -> View:
        """The messages the model is sent next (computed once per transcript object)."""
        if self._view is None:
            from .formats import handler

            self._view = handler(self.format).project(self)
        return self._view

    # -- writing --------------------------------------------------------------------------------
    def write(self, out: BinaryIO, originals: Callable[[bytes], bytes | None] | None = None) -> None:
        """Write the transcript in its own format: unchanged lines byte-for-byte (their line ending
        included), edited ones re-serialized, appended ones last. Every line ends with a newline.

        ``originals``, given the bytes an edited or appended entry serializes to, may return the
        line to write instead, its ending included: the original line an entry was restored to
        (:class:`ctxkit.store.original_lines.OriginalLines`, used by ``ctxkit expand``)."""
        def serialized(entry: dict, ending: bytes) -> bytes:
            data = dumps(entry)
            line = originals(data) if originals is not None else None
            if line is None:
                return data + ending
            return line if line.endswith(b"\n") else line + b"\n"

        n = len(self.lines)
        ending = b"\n"
        f = self.source.file
        f.seek(0)
        for i, raw in enumerate(f):
            if i >= n or i in self.removed:
                continue
            ending = b"\r\n" if raw.endswith(b"\r\n") else b"\n"
            if i in self.overrides:
                override = self.overrides[i]
                if not self._keep_all_parsed and any(k.encode() in raw for k in HARNESS_ONLY_KEYS):
                    # parse the line in hand: seeking the source here would move this loop's position
                    override = _with_harness_keys(override, orjson.loads(raw))
                out.write(serialized(override, ending))
            else:
                out.write(raw if raw.endswith(b"\n") else raw + b"\n")
        for k, entry in enumerate(self.appended):
            if n + k not in self.removed:  # an appended entry removed again (e.g. a record undone)
                out.write(serialized(entry, ending))

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
