"""Summarizers: turning a stretch of conversation into a summary.

Owns the summarizer protocol, the one factory that picks a summarizer for a
run (``summarizer_for_run``), the Anthropic HTTP client with its retries and
error parsing, the command and extractive summarizers, the summary prompt,
the rendering of messages as plain text for a summarizer, secret redaction
and the deadline of a whole call.

Must not import: stages, pipeline, reports, cli (the stages call into this
package, never the other way round).
"""
from .anthropic import AnthropicSummarizer
from .client import is_prompt_too_long, prompt_overflow_tokens
from .command import CommandSummarizer
from .extractive import ExtractiveSummarizer, SessionFacts
from .factory import StandInSummarizer, make_summarizer, summarizer_for_run, summarizer_kind, summarizer_settings_used
from .protocol import DEFAULT_TOTAL_TIMEOUT_SECONDS, SUMMARIZER_KINDS, Summarizer, build_summary_request
from .render import render_transcript, text_only_messages

__all__ = [
    "DEFAULT_TOTAL_TIMEOUT_SECONDS", "SUMMARIZER_KINDS", "AnthropicSummarizer", "CommandSummarizer",
    "ExtractiveSummarizer", "SessionFacts", "StandInSummarizer", "Summarizer", "build_summary_request", "is_prompt_too_long",
    "make_summarizer", "prompt_overflow_tokens", "render_transcript", "summarizer_for_run", "summarizer_kind",
    "summarizer_settings_used", "text_only_messages",
]
