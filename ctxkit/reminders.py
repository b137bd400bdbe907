"""``<system-reminder>`` blocks: how harness notes and state reach the model, wrapped and unwrapped once.

Claude Code wraps everything the harness (not the user) says in a
``<system-reminder>`` block, and neutralizes a reminder tag inside the text
(a zero-width space after ``<``) so that quoted file content cannot close the
block early. A shared utility: no ctxkit imports.
"""
from __future__ import annotations

import re

REMINDER_OPEN = "<system-reminder>"
REMINDER_CLOSE = "</system-reminder>"
_TAG = re.compile(r"<(/?)system-reminder")


def reminder(text: str) -> str:
    """``text`` as a ``<system-reminder>`` block, reminder tags inside it neutralized."""
    safe = _TAG.sub("<\u200b\\1system-reminder", text)
    return f"{REMINDER_OPEN}\n{safe}\n{REMINDER_CLOSE}"


def as_reminder(text: str) -> str:
    """``text`` (stripped) as a reminder block, unless it already is one."""
    s = text.strip()
    return s if s.startswith(REMINDER_OPEN) else reminder(s)


def unwrap(text: str) -> str | None:
    """The inside of a ``<system-reminder>`` block, or None when ``text`` is not one."""
    s = text.strip()
    if s.startswith(REMINDER_OPEN) and s.endswith(REMINDER_CLOSE):
        return s[len(REMINDER_OPEN):-len(REMINDER_CLOSE)].strip("\n")
    return None
