"""Google Antigravity's agent log, recognised to be refused clearly.

Antigravity (Google's agent IDE) keeps each conversation's steps in
``~/.gemini/antigravity/brain/<id>/.system_generated/logs/transcript.jsonl``: one JSON object a line
opening with ``step_index``, ``source`` (``USER_EXPLICIT``, ``MODEL``, ``SYSTEM``) and ``type``
(``USER_INPUT``, ``PLANNER_RESPONSE``, ``LIST_DIRECTORY``, ...), tool calls and outputs truncated. Found
committed publicly as ``gemini-session.jsonl``, it was read as a Claude Code session of no message
(its lines have a ``type``): ``stats`` said ``claude-code``. It is no format ctxkit reads (not Gemini CLI's:
:mod:`ctxkit.transcript.gemini`), so it is recognised by its first line and refused, naming what it is.
"""
from __future__ import annotations

import re

_OPENING = re.compile(rb'\A(?:\xef\xbb\xbf)?\s*\{\s*"step_index"\s*:\s*\d+\s*,\s*"source"\s*:\s*"[A-Z_]+"\s*,'
                      rb'\s*"type"\s*:\s*"[A-Z_]+"')
WHAT = ("a Google Antigravity agent log (steps such as USER_INPUT and PLANNER_RESPONSE, from "
        "~/.gemini/antigravity/brain/): not a format ctxkit reads, nor Gemini CLI's session")


def looks_like_log(head: bytes) -> bool:
    return _OPENING.match(head) is not None
