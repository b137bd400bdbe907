"""Format-neutral edits stages make, each returning a new transcript.

Stages decide on the view and edit through these functions, which know where
each format keeps things: a block's content list, how a reminder is written
(an ``attachment`` entry for Claude Code, a user message for plain formats).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import claude_code
from .formats import handler
from .model import Transcript, deep_replace
from .view import BlockRef


@dataclass
class NewMessage:
    """A message to append after the last one: a reminder or attachment the model should read."""

    texts: list[str]
    role: str = "user"  # "user" or "system" (Claude Code renders some state as mid-conversation system text)
    attachment: dict[str, Any] | None = None  # the Claude Code attachment record, when it is one
    flags: dict[str, Any] = field(default_factory=dict)  # extra entry fields for a Claude Code user entry


def replace_blocks(t: Transcript, changes: dict[BlockRef, dict]) -> Transcript:
    """Replace content blocks (e.g. a tool_result) in the entries that hold them."""
    if not changes:
        return t
    h = handler(t.format)
    edited: dict[int, dict] = {}
    for ref, block in changes.items():
        entry = edited.get(ref.entry, t.entry(ref.entry))
        if t.format == "openai":
            edited[ref.entry] = _openai_replace(entry, ref, block)
            continue
        if ref.block < 0:
            edited[ref.entry] = deep_replace(entry, list(h.content_path), [block])
        else:
            edited[ref.entry] = deep_replace(entry, [*h.content_path, ref.block], block)
    return t.with_edits(replace=edited)


def _openai_replace(entry: dict, ref: BlockRef, block: dict) -> dict:
    if block.get("type") == "tool_result":
        c = block.get("content")
        text = c if isinstance(c, str) else "\n\n".join(b.get("text", "") for b in c or [] if b.get("type") == "text")
        return {**entry, "content": text}
    if block.get("type") == "text":
        content = entry.get("content")
        if isinstance(content, str) or ref.block < 0:
            return {**entry, "content": block["text"]}
        new = list(content)
        new[ref.block] = {"type": "text", "text": block["text"]}
        return {**entry, "content": new}
    return entry


def append_messages(t: Transcript, items: list[NewMessage], timestamp: str) -> Transcript:
    """Append messages after the last entry: never inserted earlier, never touching an earlier byte."""
    if not items:
        return t
    if t.format == "claude-code":
        makers = []
        for item in items:
            if item.attachment is not None:
                makers.append(lambda parent, it=item: claude_code.attachment_entry(
                    t, parent, timestamp, it.attachment, it.texts, it.role))
            else:
                makers.append(lambda parent, it=item: claude_code.user_entry(
                    t, parent, timestamp, "\n\n".join(it.texts), **({"isMeta": True} | it.flags)))
        return claude_code.append_chain(t, makers)
    lines = []
    for item in items:
        texts = item.texts if item.role == "user" else [_as_reminder(x) for x in item.texts]
        if t.format == "openai":
            lines.append({"role": "user", "content": "\n\n".join(texts)})
        else:
            lines.append({"role": "user", "content": [{"type": "text", "text": x} for x in texts]})
    return t.with_edits(append=lines)


def _as_reminder(text: str) -> str:
    s = text.strip()
    return s if s.startswith("<system-reminder>") else f"<system-reminder>\n{s}\n</system-reminder>"


def plain_message(t: Transcript, role: str, text: str) -> dict:
    """One line of a plain transcript holding a text message."""
    if t.format == "openai":
        return {"role": role, "content": text}
    return {"role": role, "content": [{"type": "text", "text": text}]}


def replace_plain_range(t: Transcript, entries: list[int], new_line: dict | None) -> Transcript:
    """Plain formats: remove the lines ``entries``, putting ``new_line`` (if any) where the first one was.

    (Removed lines are the caller's to archive in the store first: nothing may be lost.)
    """
    if not entries:
        return t
    first, *rest = sorted(entries)
    if new_line is None:
        return t.with_edits(remove=[first, *rest])
    return t.with_edits(replace={first: new_line}, remove=rest)
