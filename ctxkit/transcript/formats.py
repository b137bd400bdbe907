"""The three transcript formats behind one small interface, and format detection."""
from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from .claude_code import projection as claude_code
from .lineindex import LineIndex
from .model import Transcript
from .plain import messages as plain
from .view import View

FORMATS = ("claude-code", "anthropic", "openai")
OUTPUT_FORMATS = FORMATS + ("anthropic-request",)


class Handler(NamedTuple):
    name: str
    index_line: Callable[[LineIndex, int, dict], None]
    project: Callable[[Transcript], View]
    content_path: tuple[str, ...]  # where an entry keeps its content list
    keep_parsed: bool  # plain formats are small enough (a context window) to keep parsed
    #: otherwise, what the reader keeps of a parsed entry: ``(i, entry, line size, kept entries, extracts)``
    keep_while_reading: Callable[[int, dict, int, dict, dict], None] | None = None


_HANDLERS = {
    "claude-code": Handler("claude-code", claude_code.index_line, claude_code.project, ("message", "content"), False,
                           claude_code.keep_while_reading),
    "anthropic": Handler("anthropic", plain.index_line, plain.project_anthropic, ("content",), True),
    "openai": Handler("openai", plain.index_line, plain.project_openai, ("content",), True),
}


def handler(name: str) -> Handler:
    return _HANDLERS[name]


def detect(entries: list[dict]) -> str | None:
    """Guess the format from the first parsed entries; None when they say nothing."""
    if any(claude_code.looks_like(d) for d in entries):
        return "claude-code"
    if any(plain.looks_like_openai(d) for d in entries):
        return "openai"
    if any(plain.looks_like_anthropic(d) for d in entries):
        return "anthropic"
    return None
