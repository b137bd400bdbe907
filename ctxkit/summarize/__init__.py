"""Summarizers: turning a stretch of conversation into a summary.

Owns the summarizer protocol, the one factory that picks a summarizer for a
run (``summarizer_for_run``), the Anthropic HTTP client with its retries and
error parsing, the command and extractive summarizers, the summary prompt,
the rendering of messages as plain text for a summarizer, secret redaction
and the deadline of a whole call.

Must not import: stages, pipeline, reports, cli (the stages call into this
package, never the other way round).
"""
from __future__ import annotations

import importlib
from typing import Any

#: each public name -> the module that defines it, imported on first use (PEP 562): a run that
#: summarizes nothing never imports the HTTP client, the command runner or the secret rules
_WHERE = {
    "AnthropicSummarizer": "anthropic", "is_prompt_too_long": "client", "prompt_overflow_tokens": "client",
    "CommandSummarizer": "command", "ExtractiveSummarizer": "extractive", "SessionFacts": "extractive", "StandInSummarizer": "factory",
    "make_summarizer": "factory", "summarizer_for_run": "factory", "summarizer_kind": "factory",
    "summarizer_settings_used": "factory", "DEFAULT_TOTAL_TIMEOUT_SECONDS": "protocol",
    "SUMMARIZER_KINDS": "protocol", "Summarizer": "protocol", "build_summary_request": "protocol",
    "render_transcript": "render", "text_only_messages": "render",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:  # a submodule (``from ctxkit.summarize import redact``) is imported by Python
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    globals()[name] = value
    return value


__all__ = sorted(_WHERE)
