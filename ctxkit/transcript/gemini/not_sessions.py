"""Files Google's agents write beside their sessions, or for them, that are no session, recognised to be
refused clearly.

Recognised by their first lines and refused naming what they are (exit 3), instead of being read as a
Claude Code session of no message (their lines have a ``type``: ``stats`` said ``claude-code``). Both
were found committed publicly, one as ``gemini-session.jsonl``, the other as ``transcript.jsonl``.

- **Antigravity's agent log** (Google's agent IDE):
  ``~/.gemini/antigravity/brain/<id>/.system_generated/logs/transcript.jsonl``, one JSON object a line
  opening with ``step_index``, ``source`` (``USER_EXPLICIT``, ``MODEL``, ``SYSTEM``) and ``type``
  (``USER_INPUT``, ``PLANNER_RESPONSE``, ``LIST_DIRECTORY``, ...), tool calls and outputs truncated.
- **Gemini CLI's headless output**, ``gemini --output-format stream-json``: the events of one run
  (``init`` with ``session_id`` and ``model``, then ``message``, ``tool_use``, ``tool_result``, ``error``,
  ``result``: ``JsonStreamEventType`` in google-gemini/gemini-cli ``packages/core/src/output/types.ts``),
  what a harness captured, not what Gemini CLI resumes (:mod:`ctxkit.transcript.gemini`).
"""
from __future__ import annotations

import re

import orjson

_ANTIGRAVITY = re.compile(rb'\A(?:\xef\xbb\xbf)?\s*\{\s*"step_index"\s*:\s*\d+\s*,\s*"source"\s*:\s*"[A-Z_]+"\s*,'
                          rb'\s*"type"\s*:\s*"[A-Z_]+"')
ANTIGRAVITY = ("a Google Antigravity agent log (steps such as USER_INPUT and PLANNER_RESPONSE, from "
               "~/.gemini/antigravity/brain/): not a format ctxkit reads, nor Gemini CLI's session")
STREAM_JSON = ("the output of a headless Gemini CLI run (`--output-format stream-json`: init, message, tool_use, "
               "tool_result and result events), not its session: the session Gemini CLI resumes is "
               "~/.gemini/tmp/<project>/chats/session-*")
_STREAM_EVENTS = {"init", "message", "tool_use", "tool_result", "error", "result"}
_FIRST_LINES = 4
#: how much of the file the first lines are looked for in (a harness may put a long prompt first)
HEAD = 64 * 1024


def what_it_is(head: bytes) -> str | None:
    """What the file whose first bytes are ``head`` is, when it is one of these; else None."""
    if _ANTIGRAVITY.match(head):
        return ANTIGRAVITY
    events = []
    for line in head.split(b"\n")[:_FIRST_LINES]:
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            break
        if not isinstance(value, dict) or not isinstance(value.get("type"), str) or value["type"] not in _STREAM_EVENTS:
            return None
        events.append(value)
    if any(e["type"] == "init" and isinstance(e.get("session_id"), str) and "model" in e for e in events):
        return STREAM_JSON
    return None
