"""The caller's message list as ctxkit reads it: checked, its format detected, serialized one line per message.

A :class:`~ctxkit.ContextManager` is given Python dicts, not a file: each message becomes the JSONL line
``ctxkit compact`` would read for it (the same bytes the plain readers hash for message ids and decision
scopes), and the format is detected from them as the reader detects a file's
(:func:`ctxkit.transcript.formats.detect`): Anthropic Messages dicts or OpenAI chat dicts.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from ..errors import UsageError
from ..transcript.formats import detect
from ..transcript.plain import ANTHROPIC, OPENAI

#: what a message list is called in errors (the reader names its source so)
SOURCE_NAME = "<messages>"
DETECT_WINDOW = 50  # as many messages as the reader looks at to decide a file's format


def checked_list(messages: Any, what: str) -> Sequence[dict]:
    """``messages`` if it is a list (or tuple), else a :class:`UsageError`. Its items are checked as they
    are first read (:func:`line_of`): a call does not look again at the messages an earlier one read."""
    if not isinstance(messages, (list, tuple)):
        raise UsageError(f"{what}: messages must be a list of message dicts, got {type(messages).__name__}")
    return messages


def line_of(message: dict, index: int, what: str) -> bytes:
    """The JSONL line (without its newline) ctxkit reads for one message (a :class:`UsageError` for an item
    that is not a dict, or not JSON)."""
    if not isinstance(message, dict):
        raise UsageError(f"{what}: message {index + 1} must be a dict, got {type(message).__name__}")
    try:
        return orjson.dumps(message)
    except TypeError as exc:  # a value JSON cannot hold (a datetime, an SDK object)
        raise UsageError(f"{what}: message {index + 1} is not JSON: {exc}") from None


def detect_format(lines: Sequence[dict], what: str = "prepare") -> str:
    """``anthropic`` or ``openai``, decided as the reader decides a file's format (Anthropic when the
    messages say nothing either way). A Claude Code transcript's entries are refused: the ContextManager
    manages the messages sent to an API, not a session file (``ctxkit compact`` reads those)."""
    window = list(lines[:DETECT_WINDOW])
    for i, m in enumerate(window):
        if not isinstance(m, dict):
            raise UsageError(f"{what}: message {i + 1} must be a dict, got {type(m).__name__}")
    found = detect(window)
    if found not in (None, ANTHROPIC, OPENAI):
        raise UsageError(f"prepare takes Anthropic Messages or OpenAI chat messages; these look like {found} "
                         "transcript entries (use ctxkit compact or read_transcript for a session file)")
    return found or ANTHROPIC


def parse_lines(lines: Sequence[bytes]) -> list[dict]:
    """Fresh dicts for the caller (nothing it is given shares objects with what the manager keeps)."""
    loads = orjson.loads
    return [loads(line) for line in lines]
