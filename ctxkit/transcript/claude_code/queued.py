"""What the user (or a background task) queued while a turn ran, as Claude Code sends it to the model.

Why a module of its own: the projection renders attachments from the ``rendered`` field Claude Code
2.1.3xx writes, and Claude Code 2.1.114 to 2.1.148 write a ``queued_command`` attachment without one
(``{"type": "queued_command", "prompt": ..., "commandMode": "prompt" | "task-notification"}``), so the
view would leave out what the model read. A plugin that feeds its observations to a session as queued
prompts (claude-mem's observer sessions in LeoDChen/claude-config) sent 260,000 characters that way
between two compactions, and the usage the session recorded grew by them; without them, a compaction
of that view was counted as larger than the context it replaced.

The wording is the one the ``queued_commands`` attachment stage writes (what Claude Code 2.1.328 sends:
:func:`wrap_command_text`), wrapped in a ``<system-reminder>``, as a user message.
"""
from __future__ import annotations

from ...reminders import reminder
from ..view import content_text

KIND = "queued_command"


def wrap_command_text(raw: str, kind: str | None) -> str:
    """How Claude Code words a queued input, by where it came from."""
    if kind == "task-notification":
        return f"A background agent completed a task:\n{raw}"
    if kind == "coordinator":
        return f"The coordinator sent a message while you were working:\n{raw}\n\nAddress this before completing your current task."
    return (f"The user sent a new message while you were working:\n{raw}\n\nIMPORTANT: After completing your current "
            "task, you MUST address the user's message above. Do not ignore it.")


def unrendered_queued_texts(attachment: object) -> tuple[str, ...]:
    """The text Claude Code sends for a ``queued_command`` attachment written without ``rendered``; () for
    any other attachment, or one with no text."""
    if not isinstance(attachment, dict) or attachment.get("type") != KIND:
        return ()
    raw = content_text(attachment.get("prompt"))
    if not raw.strip():
        return ()
    origin = attachment.get("origin")
    kind = origin.get("kind") if isinstance(origin, dict) and isinstance(origin.get("kind"), str) else None
    return (reminder(wrap_command_text(raw, kind or attachment.get("commandMode"))),)
