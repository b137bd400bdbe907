"""What the stages took out of the view during a simulation, each item with its original, redacted.

For ``ctxkit report``: every tool result persisted (``tool-result-budget``) or cleared
(``microcompact``), read back from the store's ledger with the original it points at; every user
turn snipped and every run of calls collapsed, from the ``ctxkit-record`` lines of the transcript
(whose entries stay in it). A report is made to be shared, so each original goes through the same
redactor as what goes to a summarizer (:func:`ctxkit.summarize.redact.redactor_for`).
"""
from __future__ import annotations

from typing import Any

from ..store.disk import Store
from ..store.offload import content_text, load_original
from ..transcript.claude_code import records as claude_code_records
from ..transcript.model import Transcript

_ACTIONS = {"replaced": ("persisted", "tool-result-budget"), "cleared": ("cleared", "microcompact")}
_MISSING = object()


def _tool_calls(t: Transcript) -> tuple[dict[str, tuple[str, Any]], dict[str, str], dict[str, str]]:
    """Every tool call of the transcript (id -> (name, input)), every result's text, and the text of
    each entry by uuid (the view only has what is left; the originals are all in the file)."""
    calls: dict[str, tuple[str, Any]] = {}
    results: dict[str, str] = {}
    texts: dict[str, str] = {}
    for i in t.live_indexes():
        e = t.entry(i)
        msg = e.get("message") if isinstance(e.get("message"), dict) else None
        if msg is None:
            continue
        content = msg.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        parts = []
        for b in blocks if isinstance(blocks, list) else []:
            if not isinstance(b, dict):
                continue
            if b.get("type") == "tool_use":
                calls[str(b.get("id"))] = (str(b.get("name", "?")), b.get("input"))
                parts.append(f"[{b.get('name')}] {b.get('input')}")
            elif b.get("type") == "tool_result":
                results[str(b.get("tool_use_id"))] = content_text(b.get("content"))
                parts.append(content_text(b.get("content")))
            elif b.get("type") == "text":
                parts.append(str(b.get("text", "")))
        if isinstance(e.get("uuid"), str):
            texts[e["uuid"]] = f"{msg.get('role', '?')}: " + "\n".join(parts)
    return calls, results, texts


def removed_items(t: Transcript, store: Store, redactor: Any, count_text: Any) -> list[dict[str, Any]]:
    """One dict per removed item: ``stage``, ``action``, ``what``, ``bytes``, ``tokens``, ``original``."""
    calls, results, texts = _tool_calls(t)
    items: list[dict[str, Any]] = []

    def add(stage: str, action: str, what: str, text: str) -> None:
        items.append({"stage": stage, "action": action, "what": what, "bytes": len(text.encode("utf-8")),
                      "tokens": count_text(text), "original": redactor.text(text)})

    for records in store.sessions.values():
        for tid, rec in sorted(records.items()):
            if not isinstance(rec, dict):
                continue
            # a result cleared after it was persisted keeps the earlier decision inside: both are listed
            for step in (rec.get("earlier"), rec):
                if not isinstance(step, dict) or step.get("state") not in _ACTIONS:
                    continue
                action, stage = _ACTIONS[step["state"]]
                original = load_original(store, step, _MISSING) if step.get("blob") else _MISSING
                text = content_text(original) if original is not _MISSING else results.get(tid, "")
                if original is not _MISSING and not isinstance(original, (str, list)):
                    text = str(original)
                add(str(step.get("by") or stage), action, f"{calls.get(tid, ('?', None))[0]} result {tid}", text)
    if t.format == "claude-code":
        for _, rec in claude_code_records.records(t, "snip"):
            removed = [u for u in rec.get("removedUuids") or [] if u in texts]
            if removed:
                add("snip", "snipped", f"{len(removed)} entries (ids {', '.join(rec.get('ids') or [])})",
                    "\n\n".join(texts[u] for u in removed))
        for _, rec in claude_code_records.records(t, "collapse"):
            for run in rec.get("runs") or []:
                ids = [x for x in run.get("toolUseIds") or [] if isinstance(x, str)]
                text = "\n\n".join(f"[{calls.get(x, ('?', None))[0]}] {calls.get(x, ('?', None))[1]}\n"
                                   f"{results.get(x, '')}" for x in ids)
                add("collapse", "collapsed", f"{len(ids)} tool calls", text)
    return items
