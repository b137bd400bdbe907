"""Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``, and ``.jsonl.zst``).

The package's modules import one way: ``items`` < ``projection``, ``usage`` < ``outputs`` < this ``__init__``,
which declares the format (:class:`ctxkit.transcript.interface.Format`).
"""
from __future__ import annotations

from ..interface import Format
from .items import NAME, check, looks_like
from .outputs import OUTPUTS
from .projection import index_line, project
from .turns import drop_turns
from .usage import USAGE_WRITER, message_usage, recorded_settings, request_usage

FORMAT = Format(NAME, looks_like, index_line, project, ("payload", "content"), True, check=check,
                usage=message_usage, request_usage=request_usage, usage_writer=USAGE_WRITER, stages=frozenset({"tool-result-budget", "snip", "microcompact", "autocompact"}),
                settings=recorded_settings, tool_outputs=OUTPUTS, drop_turns=drop_turns)

__all__ = ["FORMAT", "NAME"]
