"""The writes a stage holds for the edit of one transcript line until it is known that the output needs
them: a part of :class:`ctxkit.store.disk.Store` (its base class), kept apart so that disk.py stays
about the store's files. It works on the store's own fields (``_held*``, ``sessions``,
``_changed_decisions``) and writes through ``Store._put``."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterable, Iterator


class HeldWrites:
    """Blobs and decisions held per transcript line (:meth:`held_for`); see the methods for why."""

    _holding: int | None
    _held: dict[int, list[str]]
    _held_blobs: dict[str, list[Any]]
    _held_keys: dict[tuple[str, str], list[tuple[int, Any, Any, bool]]]
    _held_bytes: int
    _changed_decisions: set[tuple[str, str]]
    _present: set[str]
    dry_run: bool
    sessions: Any

    def _put(self, path: str, data: bytes, parts: Any = None) -> None:  # pragma: no cover - Store's
        raise NotImplementedError

    # -- writes held for the edit of one line (microcompact's originals) ---------------------------
    @contextmanager
    def held_for(self, line: int) -> Iterator[None]:
        """Hold the blobs stored and the decisions recorded in the block, made for the edit of the
        transcript's line ``line``: :meth:`flush` writes them, unless :meth:`drop_held` dropped them
        first. Meanwhile the run sees them as made (a held blob is read from memory).

        Why: the pipeline writes a line a later stage took out of the view (behind a new compact
        boundary) as it was read (:func:`ctxkit.transcript.edits.history_as_read`). Nothing then names
        the original microcompact stored for its edit, nor needs its decision; storing them was half
        of microcompact's time on a session it clears and then summarizes whole. At most
        :data:`HELD_AT_MOST` bytes of blobs are held; past that they are written at once."""
        self._holding = line
        try:
            yield
        finally:
            self._holding = None

    def drop_held(self, lines: Iterable[int]) -> None:
        """Forget the writes held for the edits of ``lines`` (their edits were dropped): a held blob no
        other line holds is never written; a held decision gives way to the last one a kept line
        holds (a tool id may be on two lines), else to the record there was before the first."""
        dropped = set(lines)
        for key, holds in list(self._held_keys.items()):
            kept = [h for h in holds if h[0] not in dropped]
            if len(kept) == len(holds):
                continue
            records = self.sessions[key[0]]
            if kept:
                if holds[-1][0] in dropped:  # the record in force was a dropped line's
                    records[key[1]] = kept[-1][1]
                kept[0] = (*kept[0][:2], *holds[0][2:])  # what there was before any of them, for a later drop
                self._held_keys[key] = kept
                continue
            _, _, before, was_changed = holds[0]
            del self._held_keys[key]
            if before is None:
                records.pop(key[1], None)
            else:
                records[key[1]] = before
            if not was_changed:
                self._changed_decisions.discard(key)
        for line in dropped:
            for path in self._held.pop(line, []):
                held = self._held_blobs.get(path)
                if held is not None:
                    held[1] -= 1
                    if held[1] <= 0:
                        del self._held_blobs[path]
                        self._held_bytes -= len(held[0])

    def write_held(self) -> None:
        """Write the blobs still held (their lines' edits are in the output), then hold nothing: what is
        held is one run's (:meth:`flush` calls this; so does ``Pipeline.run`` before it starts)."""
        for path, (data, _) in sorted(self._held_blobs.items()) if not self.dry_run else ():
            self._put(path, data)
            self._present.add(path)
        self._held_blobs.clear()
        self._held.clear()
        self._held_keys.clear()
        self._held_bytes = 0
