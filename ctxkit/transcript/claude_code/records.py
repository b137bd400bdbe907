"""ctxkit's own lines in a Claude Code transcript: the ``ctxkit-record`` bookkeeping entries.

A record is not part of the conversation chain (it has no uuid): snip, collapse, archive and
compaction append one to say what they did, and the projection replays them through the handler
the owning module registered for the record's kind.
"""
from __future__ import annotations

from collections.abc import Callable

from ..lineindex import BAD
from ..model import Transcript
from ..view import View
from .fields import RECORD_TYPE
from .metas import Metas

# record kind -> function(view, records, transcript) -> view; registered by the modules that own them
RECORD_HANDLERS: dict[str, Callable[[View, list[dict], Transcript], View]] = {}


def register_record_handler(kind: str, fn: Callable[[View, list[dict], Transcript], View]) -> None:
    RECORD_HANDLERS[kind] = fn


def records(t: Transcript, kind: str | None = None) -> list[tuple[int, dict]]:
    """The ctxkit records of the transcript as (entry index, entry), oldest first; only ``kind`` when given."""
    out = []
    idx = t.lines
    code = idx.type_codes.get(RECORD_TYPE)
    found = []
    if code is not None:  # a C-speed scan of the type codes for the (few) record lines
        marker, k = bytes([code]), idx.types.find(bytes([code]))
        while k >= 0:
            found.append(k)
            k = idx.types.find(marker, k + 1)
    # edited or appended entries: their own type (worked out once per version, from the earlier one's)
    found = [i for i in found if i not in t.overrides] + list(Metas.of(t).records)
    for i in sorted(found):
        if i in t.removed or (i < len(idx) and idx.flags[i] & BAD):
            continue
        rec = t.entry(i)
        if kind is None or rec.get("record") == kind:
            out.append((i, rec))
    return out

