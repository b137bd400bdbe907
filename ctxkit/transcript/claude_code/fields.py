"""What one Claude Code entry says on its own, read without the chain: its content as blocks, and the
type of ctxkit's own bookkeeping entries.

The bottom of the package's one-way order (``fields`` < ``metas`` < ``records`` < ``carry``, ``grown`` <
``chain`` < ``entries``, ``session``, ``requests`` < ``projection``): every other module reads entries
through these.
"""
from __future__ import annotations

#: the ``type`` of ctxkit's own lines in a Claude Code transcript (:mod:`.records`)
RECORD_TYPE = "ctxkit-record"

def content_blocks(d: dict) -> tuple[list[dict], bool]:
    """An entry's message content as blocks, and whether it was a plain string."""
    msg = d.get("message")
    content = msg.get("content") if isinstance(msg, dict) else None
    if isinstance(content, str):
        return [{"type": "text", "text": content}], True
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)], False
    return [], False
