"""OpenCode sessions: ``opencode export`` documents (read a message a line: :mod:`ctxkit.transcript.document`).

The package's modules import one way: ``records`` < ``projection``, ``usage``, ``compaction`` < this
``__init__``, which declares the format (:class:`ctxkit.transcript.interface.Format`).
"""
from __future__ import annotations

from ..interface import Format
from .projection import index_line, project
from .records import NAME, check, looks_like
from .usage import message_usage, recorded_settings

FORMAT = Format(NAME, looks_like, index_line, project, ("parts",), True, check=check, usage=message_usage,
                stages=frozenset({"autocompact"}), settings=recorded_settings)

__all__ = ["FORMAT", "NAME"]
