"""aider chat histories (``.aider.chat.history.md``), read-only: :mod:`.history` turns the Markdown
into messages, :mod:`.projection` gives the view. No stage edits one (a compaction is refused)."""
from __future__ import annotations

from ..interface import Format
from .history import NAME
from .projection import check, index_line, looks_like, project

FORMAT = Format(NAME, looks_like, index_line, project, ("content",), True, check=check, stages=frozenset())

__all__ = ["FORMAT", "NAME"]
