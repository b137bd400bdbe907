"""Conversations as plain text, for summarizers: a model request without tools, or a command's stdin."""
from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any


def content_blocks(content: Any) -> list[dict]:
    """A message's ``content`` as a list of block dicts (a plain string is one text block)."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if isinstance(content, dict):
        return [content]
    if isinstance(content, (list, tuple)):
        return [b if isinstance(b, dict) else {"type": "text", "text": str(b)} for b in content]
    return [{"type": "text", "text": str(content)}]


def json_text(value: Any) -> str:
    """Compact, readable JSON for tool inputs shown as text."""
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)


def tool_result_text(block: dict) -> str:
    """The text of a ``tool_result`` block's content (images and documents become placeholders)."""
    parts = []
    for inner in content_blocks(block.get("content")):
        rendered = render_block(inner)
        if rendered:
            parts.append(rendered)
    return "\n".join(parts)


def text_chars(messages: Sequence[dict]) -> int:
    """The characters of text ``messages`` hold: their texts, tool results and tool inputs (images and
    documents aside): how much a summary of them replaces."""
    total = 0
    for message in messages:
        for block in content_blocks(message.get("content")):
            kind = block.get("type")
            if kind == "text":
                total += len(str(block.get("text") or ""))
            elif kind == "tool_result":
                total += len(tool_result_text(block))
            elif kind == "tool_use":
                total += len(json_text(block.get("input")))
    return total


def render_block(block: dict) -> str:
    """One content block as plain text, for a request that has no tools and no images.

    The summarizing request defines no tools (so the model cannot call any), and
    the API rejects ``tool_use`` / ``tool_result`` blocks in a request without
    tools; so calls and results travel as text, tagged with their ids so
    parallel calls stay matched. Images and documents are replaced by
    placeholders (a summary does not need their pixels, and they cost many
    tokens). Thinking is dropped: it is the model's scratch work, and its
    signatures are only valid for the model that wrote them.
    """
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text") or "")
    if kind in ("thinking", "redacted_thinking"):
        return ""
    if kind in ("tool_use", "server_tool_use", "mcp_tool_use"):
        return f"[Tool call {block.get('name', '?')} id={block.get('id', '?')}] {json_text(block.get('input', {}))}"
    if kind == "tool_result":
        flag = " (error)" if block.get("is_error") else ""
        body = tool_result_text(block)
        return f"[Tool result{flag} id={block.get('tool_use_id', '?')}] {body}".rstrip()
    if kind == "image":
        return "[image]"
    if kind == "document":
        title = block.get("title")
        return f"[document: {title}]" if title else "[document]"
    if kind and kind.endswith("_tool_result"):  # web_search_tool_result and friends
        return f"[{kind} id={block.get('tool_use_id', '?')}]"
    return f"[{kind or 'unknown'} block]"


def text_only_messages(messages: Sequence[dict]) -> list[dict]:
    """The history as a valid text-only Messages API conversation.

    Roles alternate (consecutive turns of one role are merged), no block is
    empty, the first turn is the user's, and only ``role`` and ``content`` are
    kept (transcripts carry extra keys the API refuses). Idempotent.
    """
    out: list[dict] = []
    for message in messages:
        role = "assistant" if message.get("role") == "assistant" else "user"
        texts = [render_block(b) for b in content_blocks(message.get("content"))]
        blocks = [{"type": "text", "text": t} for t in texts if t.strip()]
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    if out and out[0]["role"] == "assistant":
        out.insert(0, {"role": "user", "content": [{"type": "text", "text": "[earlier conversation omitted]"}]})
    return out


def render_transcript(messages: Sequence[dict], *, system: str | None = None) -> str:
    """A plain-text rendering of a conversation, for summarizers that read text (a command's stdin)."""
    parts = []
    if system:
        parts.append(f"System:\n{system.strip()}")
    for message in text_only_messages(messages):
        speaker = "Assistant" if message["role"] == "assistant" else "User"
        body = "\n\n".join(b["text"].strip("\n") for b in message["content"])
        parts.append(f"{speaker}:\n{body}")
    return "\n\n".join(parts) + "\n"
