"""Cline's and Roo Code's ``ui_messages.json``, recognised to be refused clearly.

Beside a task's history (``api_conversation_history.json``: :mod:`ctxkit.transcript.cline`) both keep
what the chat panel shows: one JSON array of ``ClineMessage`` (``ts``, ``type``: ``say`` or ``ask``, and
``say``/``ask``, ``text``, ...; cline/cline ``src/shared/ExtensionMessage.ts``, written by
``saveClineMessages`` in ``src/core/storage/disk.ts``). It is not what the model is sent. Read as a
session it was taken for Claude Code entries (they have a ``type``): ``stats`` said ``claude-code``, 0
messages, on the real ones found committed publicly. So it is recognised by its first element and
refused, naming the history beside it.
"""
from __future__ import annotations

import re

#: the array's first element (or the copy of it, one element a line, the reader takes a document into): a ``ts``
#: number and a ``type`` of ``say`` or ``ask`` among its first keys
_OPENING = re.compile(rb'\A(?:\xef\xbb\xbf)?\s*\[?\s*\{(?=.{0,400}?"ts"\s*:\s*\d)(?=.{0,400}?"type"\s*:\s*"(?:say|ask)")',
                      re.DOTALL)
WHAT = ("the chat panel's log of a Cline or Roo Code task (ui_messages.json: what the panel shows), not what the "
        "model is sent: the task's history is api_conversation_history.json beside it")


def what_it_is(head: bytes) -> str | None:
    return WHAT if _OPENING.match(head) else None
