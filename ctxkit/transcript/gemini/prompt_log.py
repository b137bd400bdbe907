"""Gemini CLI's prompt log (``~/.gemini/tmp/<project>/logs.json``), recognised to be refused clearly.

Gemini CLI's logger (google-gemini/gemini-cli ``packages/core/src/core/logger.ts``) keeps, beside the
chats, one JSON array of what the user typed — ``{sessionId, messageId, type: "user", message,
timestamp}``, by its ``LogEntry`` — for the prompt history of its input box. It holds no answer, call or result: not a
session. Read as one, it was taken for Claude Code entries and refused with "message must be an
object" (found so on real files): it is recognised by its content and refused naming what it is and
where the session is.
"""
from __future__ import annotations

import re

#: the array, or the copy holding one element a line the reader takes a JSON document into
_OPENING = re.compile(rb'\A(?:\xef\xbb\xbf)?\s*\[?\s*\{\s*"sessionId"\s*:\s*"[^"]*"\s*,\s*"messageId"\s*:\s*\d+\s*,')
WHAT = ("a Gemini CLI prompt log (what was typed, for its input history): it holds no session; the sessions "
        "are the chats/session-* files beside it")


def looks_like_prompt_log(head: bytes) -> bool:
    return _OPENING.match(head) is not None
