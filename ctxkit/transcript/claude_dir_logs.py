"""Files in ``~/.claude`` beside the sessions that are no session, recognised to be refused clearly.

Both end in ``.jsonl`` and sit where a user looks for sessions, so they are what ctxkit is pointed at
by mistake; each is refused on its first line naming what it is and where the sessions are (exit 3):

- **Claude Code's prompt history**, ``~/.claude/history.jsonl``: every prompt typed, in every project,
  for the up-arrow, a line each: ``{"display": ..., "pastedContents": {...}, "timestamp": <ms>,
  "project": <dir>}``. It was refused with "role is missing" (read as a message list).
- **The hook log OpenCode's Claude Code compatibility writes**: plugins that let OpenCode run Claude
  Code's hooks (oh-my-opencode's) hand each hook a ``transcript_path`` as Claude Code does, and write
  that file themselves, ``~/.claude/transcripts/<OpenCode session id>.jsonl`` (``ses_...``): a line
  per prompt (``{"type": "user", "content": ...}``), per tool call (``"tool_use"``, ``tool_name``,
  ``tool_input``) and per result (``"tool_result"``, with ``tool_output``). The model's answers are
  not in it and nothing resumes from it. Its lines have a ``type``: it was read as a Claude Code
  session of no message, and ``doctor`` said the resume would work.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

PROMPT_HISTORY = ("Claude Code's prompt history (~/.claude/history.jsonl: the prompts typed, for the up-arrow), "
                  "not a session: Claude Code's sessions are ~/.claude/projects/PROJECT/SESSION.jsonl")
HOOK_LOG = ("a hook log of prompts and tool calls (as OpenCode's Claude Code compatibility writes to "
            "~/.claude/transcripts/), not a session: it holds no model answer; OpenCode's own sessions are in "
            "its opencode.db (or `opencode export`), Claude Code's in ~/.claude/projects/")
_FIRST_LINES = 4


def _is_prompt(value: dict) -> bool:
    return isinstance(value.get("display"), str) and "timestamp" in value and "type" not in value and \
        "role" not in value


#: every key a line of the hook log has: a line with another (a Gemini CLI record's ``id``, a Claude Code
#: line's ``uuid`` or ``message``) is some other agent's
_HOOK_LOG_KEYS = frozenset({"type", "timestamp", "content", "tool_name", "tool_input", "tool_output"})


def is_hook_log_line(value: dict) -> bool:
    """Whether an entry is a line of the hook log (its keys and nothing else)."""
    return value.get("type") in ("user", "tool_use", "tool_result") and value.keys() <= _HOOK_LOG_KEYS and \
        ("tool_name" in value or isinstance(value.get("content"), str))


def _first_lines_are(head: bytes, test: Callable[[dict[str, Any]], bool]) -> bool:
    """Whether the first lines of ``head`` (a file's first bytes; a line the end of ``head`` cut is not
    looked at) are objects ``test`` accepts, at least one."""
    seen = 0
    for line in head.split(b"\n")[:_FIRST_LINES]:
        if not line.strip():
            continue
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            break
        if not (isinstance(value, dict) and test(value)):
            return False
        seen += 1
    return seen > 0


def what_it_is(head: bytes) -> str | None:
    """What the file whose first bytes are ``head`` is, when it is one of these; else None."""
    if _first_lines_are(head, _is_prompt):
        return PROMPT_HISTORY
    if _first_lines_are(head, is_hook_log_line):
        return HOOK_LOG
    return None
