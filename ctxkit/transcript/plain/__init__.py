"""Plain message lists: one Anthropic Messages API or OpenAI chat message per line.

They have no room for ctxkit's records: lines a stage removes are saved to the store first, and the
replacement names where.
"""
from __future__ import annotations

from ..interface import Format
from .messages import (
    ANTHROPIC,
    OPENAI,
    index_line,
    looks_like_anthropic,
    looks_like_openai,
    project_anthropic,
    project_openai,
)

ANTHROPIC_FORMAT = Format(ANTHROPIC, looks_like_anthropic, index_line, project_anthropic, ("content",), True)
OPENAI_FORMAT = Format(OPENAI, looks_like_openai, index_line, project_openai, ("content",), True)

__all__ = ["ANTHROPIC_FORMAT", "OPENAI_FORMAT"]
