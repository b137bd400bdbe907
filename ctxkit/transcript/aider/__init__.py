"""aider chat histories (``.aider.chat.history.md``), read-only: :mod:`.history` turns the Markdown
into messages, :mod:`.projection` gives the view, :mod:`.settings` the model it ran with. No stage edits one (a compaction is refused)."""
from __future__ import annotations

from ..interface import Format
from .history import NAME
from .projection import check, index_line, looks_like, project
from .settings import recorded_settings

FORMAT = Format(NAME, looks_like, index_line, project, ("content",), True, check=check, stages=frozenset(),
                settings=recorded_settings)

__all__ = ["FORMAT", "NAME"]
