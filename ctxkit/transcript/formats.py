"""The transcript formats ctxkit reads, and format detection: the registry's one list.

Each format is a sub-package declaring a :class:`ctxkit.transcript.interface.Format`; this list is
the order detection tries them in (the most specific shape first: a Codex rollout line, whose ``type`` a Claude Code
entry could have, is never taken for one; a Claude Code entry never for a message; an OpenAI
``tool`` message never for an Anthropic one).
"""
from __future__ import annotations

from . import aider, claude_code, cline, codex, cursor, gemini, opencode, plain
from .interface import Format, handler, register, registered

for _format in (aider.FORMAT, codex.FORMAT, gemini.FORMAT, gemini.CHECKPOINT_FORMAT, opencode.FORMAT, cursor.FORMAT, claude_code.FORMAT, cline.FORMAT, plain.OPENAI_FORMAT,
                plain.ANTHROPIC_FORMAT):
    register(_format)

FORMATS = ("claude-code", "anthropic", "openai", "codex", "gemini", "gemini-checkpoint", "cline", "opencode", "cursor",
           "aider")
OUTPUT_FORMATS = FORMATS + ("anthropic-request",)


def detect(entries: list[dict]) -> str | None:
    """Guess the format from the first parsed entries; None when they say nothing. Each format in turn
    looks at every entry: the first that recognises any wins."""
    for fmt in registered():
        if any(fmt.detect(d) for d in entries):
            return fmt.name
    return None


__all__ = ["FORMATS", "OUTPUT_FORMATS", "Format", "detect", "handler"]
