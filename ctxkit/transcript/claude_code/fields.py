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


def hook_tool_id(d: dict) -> str | None:
    """The tool call an attachment entry's hook ran for (``attachment.toolUseID``: a PostToolUse hook's
    success and added context name it), or None."""
    a = d.get("attachment")
    tool = a.get("toolUseID") if isinstance(a, dict) else None
    return tool if isinstance(tool, str) else None


#: The first Claude Code version that sends a local command's system entry (``subtype: local_command``:
#: a ``/cost`` output, and before 2.1.1xx the command's own lines too) to the model, as user text. Up to
#: 2.1.62 its request builder dropped every system entry (checked in the CLIs of 2.0.67, 2.1.38, 2.1.59,
#: 2.1.62 against 2.1.63, 2.1.64, 2.1.70, 2.1.150, 2.1.328).
LOCAL_COMMAND_SENT_FROM = (2, 1, 63)


def local_command_text(d: dict) -> str | None:
    """The text a local command's system entry is sent as, or None when Claude Code does not send it: a
    version before :data:`LOCAL_COMMAND_SENT_FROM`, or an output it marked ``isDisplayOnly`` (shown,
    never sent). An entry without a readable version is taken as sent (the newer behaviour)."""
    if d.get("type") != "system" or d.get("subtype") != "local_command" or not isinstance(d.get("content"), str):
        return None
    if d.get("isDisplayOnly") is True or version_key(d.get("version")) < LOCAL_COMMAND_SENT_FROM:
        return None
    return d["content"]


def version_key(value: object) -> tuple[int, ...]:
    """``"2.1.59"`` as ``(2, 1, 59)``; a missing or unreadable version as newer than any."""
    parts = value.split(".")[:3] if isinstance(value, str) else []
    numbers = tuple(int(p) for p in parts if p.isdigit())
    return numbers if len(numbers) == 3 and len(parts) == 3 else (1 << 30,)
