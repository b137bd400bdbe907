"""``ctxkit expand``: put back every tool output a stage moved to the store.

Walks every entry of the transcript (not just the view: output behind a
compaction boundary counts too) and restores each tool_result whose content is
a replacement ctxkit recorded in the store's ledger (persisted previews,
microcompact placeholders, empty-output notes). A ``<persisted-output>``
block whose path still exists on disk, including Claude Code's own
``tool-results/`` files, is restored from that file even without a ledger.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .persist import PERSISTED_OPEN, load_original
from .store import Store
from .transcript.formats import handler
from .transcript.model import Transcript, deep_replace

_SAVED_TO = re.compile(r"Full output saved to: (\S+)")


@dataclass
class ExpandReport:
    restored: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # replacements whose original could not be found


def expand_all(t: Transcript, store: Store, *, search_dirs: list[Path] = ()) -> tuple[Transcript, ExpandReport]:
    """Undo every stage's removals: entries archived before a rewrite (e.g. thinking stripped), snip
    boundaries, collapse commits, then the tool outputs (``expand``). Each step is idempotent."""
    from .stages.collapse import uncollapse
    from .stages.snip import unsnip
    from .transcript.edit import restore_archived

    t = uncollapse(unsnip(restore_archived(t, store)), store)
    return expand(t, store, search_dirs=search_dirs)


def expand(t: Transcript, store: Store, *, search_dirs: list[Path] = ()) -> tuple[Transcript, ExpandReport]:
    """Restore the tool outputs recorded in the store's ledger (and findable ``<persisted-output>`` files)."""
    report = ExpandReport()
    h = handler(t.format)
    edits: dict[int, dict] = {}
    for i in t.live_indexes():
        entry = t.entry(i)
        if t.format == "openai":
            if entry.get("role") == "tool":
                restored = _restore(entry.get("tool_call_id", ""), entry.get("content"), store, search_dirs, report)
                if restored is not None:
                    edits[i] = {**entry, "content": restored if isinstance(restored, str) else _text(restored)}
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
            restored = _restore(block.get("tool_use_id", ""), block.get("content"), store, search_dirs, report)
            if restored is not None:
                new_entry = deep_replace(new_entry, [*h.content_path, k], {**block, "content": restored})
        if new_entry is not entry:
            edits[i] = new_entry
    return t.with_edits(replace=edits), report


def _restore(tid: str, content: Any, store: Store, search_dirs, report: ExpandReport) -> Any | None:
    record = store.decision(tid) if tid else None
    if record and record.get("state") in ("replaced", "cleared") and content == record.get("replacement"):
        if not record.get("blob"):
            report.restored.append(tid)
            return record.get("empty", "")
        original = load_original(store, record)
        if original is None:
            report.missing.append(tid)
            return None
        report.restored.append(tid)
        return original
    text = content if isinstance(content, str) else None
    if text and text.lstrip().startswith(PERSISTED_OPEN):
        m = _SAVED_TO.search(text)
        if m:
            found = _find_file(m.group(1), store, search_dirs)
            if found is not None:
                report.restored.append(tid)
                return found.read_text(encoding="utf-8", errors="replace")
            report.missing.append(tid)
    return None


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


def _text(blocks: list) -> str:
    return "\n".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")
