"""The routing fields of a Claude Code transcript's entries, by index: what the chain walk reads.

An unedited line's come from the line index (never parsed again); an edited or appended entry's are
read from the entry once (:class:`Meta`, kept by :meth:`ctxkit.transcript.model.Transcript.extract`).
"""
from __future__ import annotations

from collections.abc import Iterable

from ..lineindex import BAD, SIDECHAIN
from ..model import Transcript
from .fields import RECORD_TYPE


class Meta:
    """The routing fields of one entry (an edited or appended one: unedited lines are in the index)."""

    __slots__ = ("type", "uuid", "parent", "sidechain", "msg_id", "source_assistant")

    def __init__(self, d: dict):
        self.type = d.get("type")
        self.uuid = d.get("uuid")
        self.parent = d.get("parentUuid")
        self.sidechain = bool(d.get("isSidechain"))
        msg = d.get("message")
        self.msg_id = ((msg.get("id") if isinstance(msg, dict) else None) or d.get("requestId")
                       if self.type == "assistant" else None)
        self.source_assistant = d.get("sourceToolAssistantUUID")


class Metas:
    """Routing fields by entry index: from the line index, or from the entry when it was edited or appended.

    ``main``: treat every entry as on the main chain (a subagent's own transcript, all sidechain).

    A version made by an edit starts from the metas of the version it was edited from, when those were
    worked out (``Transcript.earlier``): only the entries the edit changed are looked at again. A
    compaction makes several versions that keep a thousand edited results each; each used to look at
    every one of them again."""

    def __init__(self, t: Transcript, main: bool = False, base: Metas | None = None,
                 changed: Iterable[int] = ()):
        self.idx = t.lines
        self.main = main
        if base is None:
            n = t.n_lines
            self.edited = {i: t.extract(i, Meta) for i in (*t.overrides, *range(n, t.n_entries))}
            self._rerouted: set[int] | None = None
            self._renamed: set[int] | None = None
            self.records = {i for i, m in self.edited.items() if m.type == RECORD_TYPE}
            return
        changed = set(changed)
        self.edited = dict(base.edited)
        for i in changed:
            if i < t.n_lines and i not in t.overrides:  # as read again (Transcript.without_edits): the index's
                self.edited.pop(i, None)
            else:
                self.edited[i] = t.extract(i, Meta)
        edited = {i for i in changed if i in self.edited}
        self._rerouted = None if base._rerouted is None else \
            (base._rerouted - changed) | {i for i in edited if self._moved(i)}
        self._renamed = None if base._renamed is None else \
            (base._renamed - changed) | {i for i in edited if self._uuid_moved(i)}
        self.records = (base.records - changed) | {i for i in edited if self.edited[i].type == RECORD_TYPE}

    @classmethod
    def of(cls, t: Transcript, main: bool = False) -> Metas:
        """The routing fields of transcript ``t``, worked out once per version (kept in ``t.memo``)."""
        key = "metas-main" if main else "metas"
        found = t.memo.get(key)
        if found is None:
            memo, changed = t.earlier if t.earlier is not None else ({}, ())
            base = memo.get(key)
            found = t.memo[key] = cls(t, main, base, changed) if base is not None else cls(t, main)
        return found

    def type(self, i: int) -> str | None:
        m = self.edited.get(i)
        return m.type if m is not None else self.idx.type(i)

    def uuid(self, i: int) -> str | None:
        m = self.edited.get(i)
        return m.uuid if m is not None else self.idx.uuids[i]

    def parent(self, i: int) -> str | None:
        m = self.edited.get(i)
        return m.parent if m is not None else self.idx.parents[i]

    def sidechain(self, i: int) -> bool:
        if self.main:
            return False
        m = self.edited.get(i)
        return m.sidechain if m is not None else self.idx.sidechain(i)

    def msg_id(self, i: int) -> str | None:
        m = self.edited.get(i)
        return m.msg_id if m is not None else self.idx.msg_ids[i]

    def source_assistant(self, i: int) -> str | None:
        m = self.edited.get(i)
        return m.source_assistant if m is not None else self.idx.sources.get(i)

    def rerouted(self) -> set[int]:
        """The edited entries whose routing fields are not the line's (and the appended ones): the only
        ones the line index's maps cannot find (:func:`_stitch`). Stage edits keep them: usually none
        but the appended entries."""
        if self._rerouted is None:
            self._rerouted = {i for i in self.edited if self._moved(i)}
        return self._rerouted

    def renamed(self) -> set[int]:
        """The edited lines whose uuid or side is not the line's, or that are bad lines (:func:`_uuid_map`
        cannot start from the index's map of uuids then)."""
        if self._renamed is None:
            self._renamed = {i for i in self.edited if self._uuid_moved(i)}
        return self._renamed

    def _moved(self, i: int) -> bool:
        idx, m = self.idx, self.edited[i]
        return (i >= len(idx) or m.type != idx.type(i) or m.uuid != idx.uuids[i] or m.parent != idx.parents[i]
                or m.msg_id != idx.msg_ids[i] or m.source_assistant != idx.sources.get(i)
                or m.sidechain != idx.sidechain(i))

    def _uuid_moved(self, i: int) -> bool:
        idx, m = self.idx, self.edited[i]
        if i >= len(idx):
            return False  # appended: added to the map on their own
        return (m.uuid != idx.uuids[i] or bool(idx.flags[i] & BAD)
                or (not self.main and m.sidechain != bool(idx.flags[i] & SIDECHAIN)))
