"""``ctxkit expand``: put back every tool output a stage moved to the store.

Walks every entry of the transcript (not just the view: output behind a
compaction boundary counts too) and restores each tool_result whose content is
a replacement ctxkit recorded in the store's ledger (persisted previews,
microcompact placeholders, empty-output notes). A ``<persisted-output>``
block whose path still exists on disk, including Claude Code's own
``tool-results/`` files, is restored from that file even without a ledger.

Which record: a result is restored only when its current content equals the
recorded ``replacement`` exactly. The transcript's own scope
(:func:`ctxkit.persist.decision_scope`) is looked up first; when it holds no
matching record (a plain transcript whose first line a compaction rewrote, a
ledger from before scopes), the records of other scopes for that tool id whose
replacement equals the content are used, provided they all lead to the same
original: otherwise the result is ambiguous and left as it is. A restored
original that is itself a recorded replacement (cleared after being persisted,
under another scope) is restored in turn.

What could not be restored is listed in :attr:`ExpandReport.missing` with the
reason: a recorded original gone from the store, a ``<persisted-output>``
whose file is not found, an ambiguous match, or a microcompact placeholder
nothing in the store accounts for.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .persist import CLEARED_PLACEHOLDER, PERSISTED_OPEN, decision_scope, load_original, to_openai_content
from .store import Store
from .transcript.formats import handler
from .transcript.model import Transcript, deep_replace

_SAVED_TO = re.compile(r"Full output saved to: (\S+)")
_GONE = object()  # load_original's answer when the blob is not in the store
_MAX_CHAIN = 4  # replacements of replacements followed at most this deep

# reasons in ExpandReport.missing
NO_RECORD = "placeholder with no record in the store"
BLOB_GONE = "stored original not found in the store"
FILE_GONE = "<persisted-output> file not found"
AMBIGUOUS = "ambiguous: records of other sessions with different originals"


@dataclass
class ExpandReport:
    restored: list[str] = field(default_factory=list)
    #: (tool_use_id, reason) of each tool output left unrestored, reasons as the constants above
    missing: list[tuple[str, str]] = field(default_factory=list)

    def missing_by_reason(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for _, reason in self.missing:
            counts[reason] = counts.get(reason, 0) + 1
        return counts


def expand_all(t: Transcript, store: Store, *, search_dirs: list[Path] = ()) -> tuple[Transcript, ExpandReport]:
    """Undo every stage's removals: entries archived before a rewrite (e.g. thinking stripped), snip
    boundaries, collapse commits, then the tool outputs (``expand``). Each step is idempotent."""
    from .stages.collapse import uncollapse
    from .stages.snip import unsnip
    from .transcript.edit import restore_archived

    given = decision_scope(t)
    damaged: list[tuple[str, str]] = []  # archive records whose blob is not an archive
    t = uncollapse(unsnip(restore_archived(t, store, damaged)), store)
    t, report = expand(t, store, search_dirs=search_dirs, scopes=[given])
    report.missing.extend(damaged)
    return t, report


def expand(t: Transcript, store: Store, *, search_dirs: list[Path] = (),
           scopes: list[str] = ()) -> tuple[Transcript, ExpandReport]:
    """Restore the tool outputs recorded in the store's ledger (and findable ``<persisted-output>`` files).

    ``scopes``: ledger scopes to prefer after the transcript's own (e.g. the scope of the transcript
    as it was before archived lines were put back)."""
    report = ExpandReport()
    own = list(dict.fromkeys([decision_scope(t), *scopes]))
    h = handler(t.format)
    edits: dict[int, dict] = {}
    for i in t.live_indexes():
        entry = t.entry(i)
        if t.format == "openai":
            if entry.get("role") == "tool":
                restored = _restore(entry.get("tool_call_id", ""), entry.get("content"), store, own, search_dirs,
                                    report)
                if restored is not _GONE:
                    edits[i] = {**entry, "content": to_openai_content(restored)}
            continue
        container: Any = entry
        for key in h.content_path:
            container = container.get(key) if isinstance(container, dict) else None
        if not isinstance(container, list):
            continue
        new_entry = entry
        for k, block in enumerate(container):
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                continue
            restored = _restore(block.get("tool_use_id", ""), block.get("content"), store, own, search_dirs, report)
            if restored is not _GONE:
                new_entry = deep_replace(new_entry, [*h.content_path, k], {**block, "content": restored})
        if new_entry is not entry:
            edits[i] = new_entry
    return t.with_edits(replace=edits), report


def _restore(tid: str, content: Any, store: Store, own: list[str], search_dirs, report: ExpandReport) -> Any:
    """The original of one tool result, or ``_GONE`` when there is nothing to restore (recording why
    in ``report.missing`` when the content is a replacement ctxkit wrote)."""
    current, restored, problem = content, False, None
    for _ in range(_MAX_CHAIN):
        record, problem = _lookup(store, tid, current, own) if tid else (None, None)
        if record is None:
            break
        original = load_original(store, record, _GONE) if record.get("blob") else record.get("empty", "")
        if original is _GONE:
            problem = BLOB_GONE
            break
        current, restored = original, True
    if not restored:
        # not in the ledger: a <persisted-output> whose file is on disk, or a placeholder nothing explains
        text = content if isinstance(content, str) else None
        if text and text.lstrip().startswith(PERSISTED_OPEN) and (m := _SAVED_TO.search(text)):
            found = _find_file(m.group(1), store, search_dirs)
            if found is not None:
                current, restored = found.read_text(encoding="utf-8", errors="replace"), True
            else:
                problem = problem or FILE_GONE
        elif text == CLEARED_PLACEHOLDER:
            problem = problem or NO_RECORD
    if problem:
        report.missing.append((tid, problem))  # (after a partial restore too: the first step stays)
    if not restored:
        return _GONE
    report.restored.append(tid)
    return current


def _lookup(store: Store, tid: str, content: Any, own: list[str]) -> tuple[dict | None, str | None]:
    """The record whose replacement ``content`` is: (record, None), (None, None) when none is, or
    (None, reason) when records of other scopes match with different originals."""
    for scope in own:
        record = store.decision(tid, scope=scope)
        if _matches(record, content):
            return record, None
    others = [r for scope, r in store.decisions_for(tid) if scope not in own and _matches(r, content)]
    if not others:
        return None, None
    if len({_original_key(r) for r in others}) > 1:
        return None, AMBIGUOUS
    return others[0], None


def _matches(record: dict | None, content: Any) -> bool:
    return bool(record) and record.get("state") in ("replaced", "cleared") and content == record.get("replacement")


def _original_key(record: dict) -> tuple[str, str]:
    """What identifies a record's original: its blob's name (named by hash: the store may have moved),
    or the empty content a note stands for."""
    blob = record.get("blob") or ""
    return (Path(blob).name, "") if blob else ("", repr(record.get("empty", "")))


def _find_file(path_text: str, store: Store, search_dirs) -> Path | None:
    found = store.find_blob(path_text)
    if found is not None:
        return found
    name = Path(path_text).name
    for d in search_dirs:
        for candidate in (Path(d) / name, Path(d) / "tool-results" / name):
            if candidate.exists():
                return candidate
    return None
