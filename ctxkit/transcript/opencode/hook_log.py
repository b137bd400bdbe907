"""The hook log OpenCode's Claude Code compatibility writes, recognised to be refused clearly.

Plugins that let OpenCode run Claude Code's hooks (oh-my-opencode's) hand each hook a ``transcript_path``
as Claude Code does, and write that file themselves: ``~/.claude/transcripts/<OpenCode session id>.jsonl``
(``ses_...``), one line per prompt (``{"type": "user", "content": ...}``), per tool call
(``{"type": "tool_use", "tool_name", "tool_input"}``) and per result (``"tool_result"``, with
``tool_output``). The model's answers are not in it and nothing resumes from it: it is no session, and
was read as a Claude Code session of no message (its lines have a ``type``). OpenCode's own sessions are
:mod:`ctxkit.transcript.opencode`'s.
"""
from __future__ import annotations

import orjson

WHAT = ("a hook log of prompts and tool calls (as OpenCode's Claude Code compatibility writes to "
        "~/.claude/transcripts/), not a session: it holds no model answer; OpenCode's own sessions are in "
        "its opencode.db (or `opencode export`), Claude Code's in ~/.claude/projects/")
_TYPES = {"user", "tool_use", "tool_result"}
_FIRST_LINES = 4


def what_it_is(head: bytes) -> str | None:
    """:data:`WHAT` when the first lines of ``head`` (a file's first bytes) are the hook log's; else None."""
    seen = 0
    for line in head.split(b"\n")[:_FIRST_LINES]:
        if not line.strip():
            continue
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            break  # (a line cut by the end of ``head``)
        if not (isinstance(value, dict) and value.get("type") in _TYPES and "message" not in value
                and "uuid" not in value and ("tool_name" in value or isinstance(value.get("content"), str))):
            return None
        seen += 1
    return WHAT if seen else None
