"""OpenCode sessions: ``opencode export`` documents (read a message a line: :mod:`ctxkit.transcript.document`).

The package's modules import one way: ``records`` < ``projection``, ``usage``, ``compaction`` < ``outputs`` < this
``__init__``, which declares the format (:class:`ctxkit.transcript.interface.Format`).
"""
from __future__ import annotations

from ..interface import Format
from .outputs import OUTPUTS
from .projection import index_line, project
from .records import NAME, check, looks_like
from .usage import USAGE_WRITER, message_usage, recorded_settings, request_usage

#: why snip is skipped (docs/formats.md, "OpenCode sessions", says it in full, with the sources)
_SNIP = ("OpenCode records no turns taken out of the middle of a session (it deletes a removed message's rows), and "
         "`opencode import` never deletes a message it holds: a snip could only leave the turns out of the export, "
         "which an import into the session's database ignores, and which ctxkit expand could not put back")
FORMAT = Format(NAME, looks_like, index_line, project, ("parts",), True, check=check, usage=message_usage, request_usage=request_usage, usage_writer=USAGE_WRITER,
                stages=frozenset({"tool-result-budget", "microcompact", "autocompact"}), settings=recorded_settings,
                tool_outputs=OUTPUTS,
                skip_reasons={"snip": _SNIP})

__all__ = ["FORMAT", "NAME"]
