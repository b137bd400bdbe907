"""An image the user mentioned in a prompt (``@img/chart.png explain``), as Claude Code sends it.

Why a module of its own: the projection renders attachments from the ``rendered`` texts Claude Code
writes, and for a mentioned image it writes none (``{"type": "file", "filename": ..., "content": {"type":
"image", "file": {"base64": ..., "type": "image/png"}}}``, ``renderedRole: "user"``): the view left the
image out, so the model's context lacked it and every request record that holds it looked stale (the
requests after such a prompt were rebuilt from the view, not as sent). Claude Code 2.1.328 and 2.1.336
send it as they send a mentioned text file's Read: the call's reminder, ``<system-reminder>\\nCalled the
Read tool with the following input: {"file_path":"..."}\\n</system-reminder>`` (the input as compact
JSON), then the image block (read in the bodies they sent: ``bench/cc_scenarios/mentions.json``).
"""
from __future__ import annotations

import json

from ...reminders import reminder


def mentioned_image(attachment: object) -> tuple[tuple[str, ...], tuple[dict, ...]]:
    """(the texts, the other blocks) Claude Code sends for a ``file`` attachment holding an image; ((), ())
    for any other attachment or one without the image's data."""
    if not isinstance(attachment, dict) or attachment.get("type") != "file":
        return (), ()
    content = attachment.get("content")
    image = content.get("file") if isinstance(content, dict) and content.get("type") == "image" else None
    path = attachment.get("filename")
    if not isinstance(image, dict) or not isinstance(path, str) or not isinstance(image.get("base64"), str) \
            or not isinstance(image.get("type"), str):
        return (), ()
    call = json.dumps({"file_path": path}, ensure_ascii=False, separators=(",", ":"))
    block = {"type": "image", "source": {"type": "base64", "data": image["base64"], "media_type": image["type"]}}
    return (reminder(f"Called the Read tool with the following input: {call}"),), (block,)
