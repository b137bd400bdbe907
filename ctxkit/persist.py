"""Moving tool output to the store and back: the ``<persisted-output>`` replacement and its ledger records.

Shared by the stages that take tool output out of the view (tool-result-budget
persists it with a preview, microcompact clears it) and by ``ctxkit expand``,
which puts it back. A ledger record (``Store.record_decision``) has the shape::

    {"state": "replaced" | "cleared", "replacement": <the exact text the model saw>,
     "blob": <path of the stored original>, "original": "text" | "json", "by": <stage id>}

or ``{"state": "seen"}`` for a result the model has seen in full (frozen: never replaced later).
"""
from __future__ import annotations

from typing import Any

import orjson

from .store import Store

PERSISTED_OPEN = "<persisted-output>"
PERSISTED_CLOSE = "</persisted-output>"
PREVIEW_BYTES = 2_000


def content_text(content: Any) -> str:
    """The text of a tool_result's content (a string, or the text blocks of a list)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def content_size(content: Any) -> int:
    """Characters of text in a tool_result's content (images and documents do not count here)."""
    return len(content_text(content))


def has_media(content: Any) -> bool:
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") in ("image", "document") for b in content)


def is_empty(content: Any) -> bool:
    if content is None:
        return True
    if isinstance(content, str):
        return not content.strip()
    if isinstance(content, list):
        return not content or all(isinstance(b, dict) and b.get("type") == "text" and not b.get("text", "").strip()
                                  for b in content)
    return False


def human_size(n_bytes: int) -> str:
    """Sizes as Claude Code prints them: 812 bytes, 43.9KB, 1.2MB."""
    if n_bytes < 1024:
        return f"{n_bytes} bytes"
    if n_bytes < 1024 * 1024:
        return f"{n_bytes / 1024:.1f}KB"
    return f"{n_bytes / (1024 * 1024):.1f}MB"


def preview(text: str, limit_bytes: int = PREVIEW_BYTES) -> tuple[str, bool]:
    """The first ``limit_bytes`` of ``text``, cut at the last line end inside them; (preview, truncated)."""
    data = text.encode("utf-8")
    if len(data) <= limit_bytes:
        return text, False
    head = data[:limit_bytes]
    cut = head.rfind(b"\n")
    if cut > 0:
        head = head[:cut]
    return head.decode("utf-8", errors="ignore"), True


def original_bytes(content: Any) -> tuple[bytes, str, str]:
    """How a tool_result's original content is stored: (bytes, file suffix, "text"|"json")."""
    if isinstance(content, str):
        return content.encode("utf-8"), ".txt", "text"
    return orjson.dumps(content), ".json", "json"


def store_original(store: Store, content: Any) -> tuple[str, str]:
    """Save a tool_result's original content; returns (blob path, "text"|"json")."""
    data, suffix, kind = original_bytes(content)
    return str(store.put_blob(data, suffix)), kind


def persisted_message(text: str, blob_path: str, preview_bytes: int = PREVIEW_BYTES) -> str:
    """The replacement the model sees for a persisted output (the shape Claude Code uses)."""
    shown, truncated = preview(text, preview_bytes)
    size = human_size(len(text.encode("utf-8")))
    body = (f"{PERSISTED_OPEN}\nOutput too large ({size}). Full output saved to: {blob_path}\n\n"
            f"Preview (first {human_size(preview_bytes)}):\n{shown}\n")
    if truncated:
        body += "...\n"
    return body + PERSISTED_CLOSE


def load_original(store: Store, record: dict[str, Any]) -> Any | None:
    """The original content a ledger record points at, or None when the blob is gone."""
    data = store.read_blob(record.get("blob", ""))
    if data is None:
        return None
    if record.get("original") == "json":
        return orjson.loads(data)
    return data.decode("utf-8")
