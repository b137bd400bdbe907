"""Gemini CLI session recordings (``~/.gemini/tmp/<project>/chats/session-*.jsonl``).

The package's modules import one way: ``records`` < ``projection``, ``usage``, ``compaction`` < ``outputs`` < this
``__init__``, which declares the format (:class:`ctxkit.transcript.interface.Format`).
"""
from __future__ import annotations

from ..interface import Format
from . import contents
from .outputs import OUTPUTS
from .projection import index_line, project
from .records import NAME, check, looks_like
from .turns import drop_turns
from .usage import USAGE_WRITER, message_usage, recorded_settings, request_usage

FORMAT = Format(NAME, looks_like, index_line, project, ("content",), True, check=check, usage=message_usage, request_usage=request_usage, usage_writer=USAGE_WRITER,
                stages=frozenset({"tool-result-budget", "snip", "microcompact", "autocompact"}),
                settings=recorded_settings, tool_outputs=OUTPUTS, drop_turns=drop_turns)

#: ``/chat save`` checkpoints (:mod:`.contents`): the history as the API takes it
CHECKPOINT_FORMAT = Format(contents.NAME, contents.looks_like, contents.index_line, contents.project, ("parts",), True,
                           check=contents.check, stages=frozenset({"tool-result-budget", "microcompact", "autocompact"}),
                           tool_outputs=contents.OUTPUTS,
                           skip_reasons={"snip": "a checkpoint is the history itself, with no room for a record of "
                                                 "a snip: the turns could only be deleted, and ctxkit expand could "
                                                 "not put them back"})

__all__ = ["CHECKPOINT_FORMAT", "FORMAT", "NAME"]
