"""Claude Code session transcripts (JSONL): reading, the projection into a view, the entries ctxkit writes.

The package's modules import one another in one direction only: ``fields`` < ``metas`` < ``records``
< ``carry`` < ``chain`` < ``entries``, ``session``, ``requests`` < ``projection``, ``usage`` (on its own), and this
``__init__`` on top, which declares the format (:class:`ctxkit.transcript.interface.Format`).
"""
from __future__ import annotations

from ..interface import Format
from .projection import NAME, index_line, keep_while_reading, looks_like, project
from .records import records as ctxkit_records  # (``records`` stays the module)
from .usage import USAGE_WRITER

FORMAT = Format(NAME, looks_like, index_line, project, ("message", "content"), False, keep_while_reading,
                records=ctxkit_records, usage_writer=USAGE_WRITER)

__all__ = ["FORMAT", "NAME"]
