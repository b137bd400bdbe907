"""Cline and Roo Code task histories (``tasks/<id>/api_conversation_history.json``).

One JSON array of Anthropic-shaped messages (read a line per message: :mod:`ctxkit.transcript.document`).
Like the plain message lists, they have no room for ctxkit's records: lines a stage removes are
saved to the store first, and the replacement names where; ``expand`` puts them back, byte for byte.
The package's modules import one way: ``records`` < ``projection``, ``usage`` < this ``__init__``.
"""
from __future__ import annotations

from ..interface import Format
from ..shapes import CHECKS
from .projection import index_line, project
from .records import NAME, looks_like
from .usage import USAGE_WRITER, message_usage, recorded_settings, request_usage

FORMAT = Format(NAME, looks_like, index_line, project, ("content",), True, check=CHECKS["anthropic"],
                usage=message_usage, request_usage=request_usage, usage_writer=USAGE_WRITER, settings=recorded_settings)

__all__ = ["FORMAT", "NAME"]
