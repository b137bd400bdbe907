"""The ``anthropic`` summarizer: the Messages API through the official SDK, within a deadline for the
whole call."""
from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import LLMError
from .client import (
    _AnthropicAPI,
)
from .protocol import (
    DEFAULT_BASE_URL,
    DEFAULT_MAX_OUTPUT_TOKENS,
    DEFAULT_MAX_RETRIES,
    DEFAULT_MODEL,
    DEFAULT_TIMEOUT_SECONDS,
    DEFAULT_TOTAL_TIMEOUT_SECONDS,
    _PromptedSummarizer,
)
from .render import text_only_messages


class AnthropicSummarizer(_AnthropicAPI, _PromptedSummarizer):
    """Summaries from Claude through the Messages API.

    The API key comes from ``ANTHROPIC_API_KEY`` only (never from a policy
    file, never written anywhere, redacted from every error). The SDK's own
    retries are off: ours retry 408/409/429/5xx/529, timeouts and connection
    failures up to ``max_retries`` times, count them in :attr:`stats`, honour
    ``retry-after`` and sleep through ``sleep`` (tests pass a no-op). A 400 is
    never retried: the same request would fail the same way.
    """

    name = "anthropic"

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        max_retries: int = DEFAULT_MAX_RETRIES,
        base_url: str | None = None,
        client: Any = None,
        *,
        env: Mapping[str, str] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
        backoff_base_seconds: float = 0.5,
        backoff_max_seconds: float = 32.0,
        retry_after_max_seconds: float = 60.0,
        total_timeout_seconds: float | None = DEFAULT_TOTAL_TIMEOUT_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ):
        super().__init__(
            timeout_seconds=timeout_seconds,
            max_retries=max_retries,
            base_url=base_url,
            client=client,
            env=env,
            sleep=sleep,
            rng=rng,
            backoff_base_seconds=backoff_base_seconds,
            backoff_max_seconds=backoff_max_seconds,
            retry_after_max_seconds=retry_after_max_seconds,
            total_timeout_seconds=total_timeout_seconds,
            clock=clock,
        )
        self.model = model
        self.max_output_tokens = int(max_output_tokens)
        self.last_stop_reason: str | None = None

    def complete(self, messages: list[dict], *, system: str | None, max_tokens: int) -> str:
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": int(max_tokens),
            "messages": text_only_messages(messages),
        }
        if system:
            params["system"] = system
        response = self._call(
            "the summary request",
            lambda client, timeout: client.messages.create(**params, timeout=timeout),
        )
        kind = getattr(response, "type", None)
        if kind != "message":
            # a 200 that is not a Messages API answer: an event stream where JSON was asked, another API's
            # JSON, a proxy's page parsed as text. Said as such (not as a model that wrote nothing).
            what = f'"type": {kind!r}' if isinstance(kind, str) else f"{type(response).__name__}, no \"type\""
            raise LLMError(f"malformed response: the API at {self.base_url or DEFAULT_BASE_URL} answered the summary "
                           f"request with something that is not a Messages API message ({what})")
        usage = getattr(response, "usage", None)
        self.stats.input_tokens += int(getattr(usage, "input_tokens", 0) or 0)
        self.stats.output_tokens += int(getattr(usage, "output_tokens", 0) or 0)
        self.last_stop_reason = getattr(response, "stop_reason", None)
        content = getattr(response, "content", None)
        if isinstance(content, (str, bytes)):
            # a server that is not the Messages API (or a proxy rewriting it) can answer a bare string; taken as
            # a list of blocks it would read as one "?" block per character
            raise LLMError(f"malformed summary: the answer's content is a string, not a list of content blocks "
                           f"(stop_reason: {self.last_stop_reason})")
        blocks = list(content or [])
        text = "".join(str(getattr(b, "text", "") or "") for b in blocks if getattr(b, "type", None) == "text")
        if not text.strip():
            kinds = ", ".join(str(getattr(b, "type", "?")) for b in blocks) or "none"
            raise LLMError(
                f"malformed summary: the model answered with no text (blocks: {kinds}; "
                f"stop_reason: {self.last_stop_reason})"
            )
        return text
