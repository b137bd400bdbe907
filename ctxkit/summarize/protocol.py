"""What a summarizer is (:class:`Summarizer`), the defaults every kind shares, and the request a
summary is asked with. Prompted summarizers implement ``complete``; ``summarize`` builds the prompt."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from .. import anthropic_client
from ..policy.model import SCHEMA_DEFAULTS
from .prompt import (
    SUMMARY_SYSTEM_PROMPT,
    build_compact_prompt,
    format_summary,
    require_summary_structure,
)
from .render import text_only_messages

DEFAULT_MODEL = "claude-sonnet-4-5"
#: The policy schema states the summarizer's defaults once; these names are read from it for library
#: callers that hand a summarizer a bare mapping. Claude Code reserves 20,000 output tokens for the
#: summary (its p99.99 is ~17,400).
_SCHEMA_SUMMARIZER = SCHEMA_DEFAULTS["summarizer"]
DEFAULT_MAX_OUTPUT_TOKENS = int(_SCHEMA_SUMMARIZER["max_output_tokens"])
DEFAULT_TIMEOUT_SECONDS = 600.0
DEFAULT_MAX_RETRIES = 4
#: The whole summary (every attempt, retry and wait) gives up after this long: a hanging server
#: cannot hold a run for ``timeout_seconds * (max_retries + 1)`` (50 minutes with the defaults above).
DEFAULT_TOTAL_TIMEOUT_SECONDS = float(_SCHEMA_SUMMARIZER["total_timeout_seconds"])
TOTAL_TIMEOUT_KEY = "summarizer.total_timeout_seconds"
DEFAULT_BASE_URL = anthropic_client.DEFAULT_BASE_URL
SUMMARIZER_KINDS = ("auto", "anthropic", "command", "extractive")


@runtime_checkable
class Summarizer(Protocol):
    """What autocompact needs from a summarizer. Every method raises :class:`LLMError` on failure."""

    name: str

    def complete(self, messages: list[dict], *, system: str | None, max_tokens: int) -> str:
        """Send ``messages`` as one text-only request (no tools) and return the answer's text."""
        ...

    def summarize(self, messages: list[dict], *, instructions: str | None = None) -> str:
        """The nine-section summary of ``messages``; ``instructions`` is an optional focus."""
        ...


# --------------------------------------------------------------------------------------------
# The summarizing request
# --------------------------------------------------------------------------------------------


def build_summary_request(messages: Sequence[dict], instructions: str | None = None) -> list[dict]:
    """The messages of a summarizing request: the history as text, then the compaction prompt."""
    request = text_only_messages(messages)
    prompt = {"type": "text", "text": build_compact_prompt(instructions)}
    if request and request[-1]["role"] == "user":
        request[-1]["content"].append(prompt)
    else:
        request.append({"role": "user", "content": [prompt]})
    return request



# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------

class _PromptedSummarizer:
    """What the model-backed summarizers share: the compaction prompt in, the nine sections out."""

    max_output_tokens: int

    def complete(self, messages: list[dict], *, system: str | None, max_tokens: int) -> str:  # pragma: no cover
        raise NotImplementedError

    def summarize(self, messages: list[dict], *, instructions: str | None = None) -> str:
        raw = self.complete(
            build_summary_request(messages, instructions),
            system=SUMMARY_SYSTEM_PROMPT,
            max_tokens=self.max_output_tokens,
        )
        return require_summary_structure(format_summary(raw))
