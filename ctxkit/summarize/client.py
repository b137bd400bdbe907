"""The Anthropic HTTP client of the summarizers: counted retries with backoff (the SDK's own are
switched off so retries are visible and bounded by the policy), ``retry-after``, and the parsing of
API errors (prompt too long, and by how much; keys redacted from messages)."""
from __future__ import annotations

import email.utils
import functools
import os
import random
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .. import anthropic_client
from ..errors import LLMError
from ..quoting import quote
from .deadline import Deadline, OutOfTime, call_within
from .protocol import (
    DEFAULT_BASE_URL,
    TOTAL_TIMEOUT_KEY,
)

#: how long past the deadline the wait for an answer lasts: when the SDK's own timeout falls at the
#: deadline, its error is the clearer
_GRACE_SECONDS = 0.25

_PTL_FIGURES = re.compile(r"prompt is too long:\s*([\d,]+)\s*tokens?\s*>\s*([\d,]+)", re.IGNORECASE)
_CONTEXT_FIGURES = re.compile(
    r"exceed context limit:\s*([\d,]+)\s*\+\s*([\d,]+)\s*>\s*([\d,]+)", re.IGNORECASE
)


def _int(text: str) -> int:
    return int(text.replace(",", ""))


def is_prompt_too_long(message: str) -> bool:
    """Whether an API error message says the prompt does not fit the model's context."""
    lowered = message.lower()
    return "prompt is too long" in lowered or "exceed context limit" in lowered


def prompt_overflow_tokens(message: str) -> int | None:
    """By how many tokens the prompt is too long, when the error message says.

    ``"prompt is too long: 210000 tokens > 200000 maximum"`` gives 10000;
    ``"input length and `max_tokens` exceed context limit: 190000 + 20000 > 200000"``
    gives 10000 too (dropping that much input makes it fit).
    """
    match = _PTL_FIGURES.search(message)
    if match:
        return max(0, _int(match.group(1)) - _int(match.group(2))) or None
    match = _CONTEXT_FIGURES.search(message)
    if match:
        return max(0, _int(match.group(1)) + _int(match.group(2)) - _int(match.group(3))) or None
    return None


#: the key's redaction is the shared client builder's (the command summarizer uses it too)
_redact = anthropic_client.redact_key


def _error_fields(body: Any) -> tuple[str | None, str | None]:
    """``(error.type, error.message)`` of an Anthropic-shaped error body, if it is one."""
    if isinstance(body, Mapping):
        error = body.get("error")
        if isinstance(error, Mapping):
            kind, message = error.get("type"), error.get("message")
            return (str(kind) if kind else None, str(message) if message else None)
    return None, None


def _retry_after_seconds(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """The wait a response asks for: ``retry-after-ms``, else ``retry-after`` (seconds or an HTTP date)."""
    if not headers:
        return None
    value = headers.get("retry-after-ms")
    if value:
        try:
            return max(0.0, float(value) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


# --------------------------------------------------------------------------------------------
# Anthropic
# --------------------------------------------------------------------------------------------


def _cause(exc: BaseException) -> str:
    """What caused a connection error, for the message after the SDK's own: its type always, its text only
    where the SDK did not already say it (anthropic 2.x puts the cause's text in its message; 0.x says only
    "Connection error.")."""
    cause = exc.__cause__
    if cause is None:
        return ""
    text = str(cause)
    return f" ({type(cause).__name__})" if text and text in str(exc) else f" ({type(cause).__name__}: {text})"


def _seconds(value: float) -> str:
    """Seconds for a message: ``1.5``, ``600`` (a timeout cut to what was left is 1.49999...)."""
    return f"{round(value, 1):g}"


def _out_of_time(what: str, deadline: Deadline, attempts: int, last: LLMError | None, *,
                 waiting: float | None = None) -> LLMError:
    """The error of a summarizer whose time limit (:data:`TOTAL_TIMEOUT_KEY`) ran out; not retryable."""
    why = (f"waiting {_seconds(waiting)}s more would pass its time limit" if waiting is not None else
           "its time limit ran out")
    return LLMError(f"{what} gave up after {attempts} attempt(s): {why} ({TOTAL_TIMEOUT_KEY}: "
                    f"{deadline.total:g}s)" + (f"; last error: {last.message}" if last else ""))


@dataclass
class CallStats:
    """What a model-backed summarizer did, for the stage's report."""

    requests: int = 0  # HTTP attempts, retries included
    retries: int = 0  # attempts after the first, over all calls
    waited_seconds: float = 0.0  # total backoff asked of the sleep function
    input_tokens: int = 0
    output_tokens: int = 0


class _AnthropicAPI:
    """The SDK client, the API key and the retry loop shared by the summarizer and the token counter."""

    def __init__(
        self,
        *,
        timeout_seconds: float,
        max_retries: int,
        base_url: str | None,
        client: Any,
        env: Mapping[str, str] | None,
        sleep: Callable[[float], None],
        rng: random.Random | None,
        backoff_base_seconds: float,
        backoff_max_seconds: float,
        retry_after_max_seconds: float,
        total_timeout_seconds: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self._env = os.environ if env is None else env
        self.deadline = Deadline(total_timeout_seconds, clock=clock)
        self.timeout_seconds = float(timeout_seconds)
        self.max_retries = max(0, int(max_retries))
        self.base_url = base_url or self._env.get("ANTHROPIC_BASE_URL") or None
        self._sleep = sleep
        self._rng = rng or random.Random()
        self.backoff_base_seconds = backoff_base_seconds
        self.backoff_max_seconds = backoff_max_seconds
        self.retry_after_max_seconds = retry_after_max_seconds
        self.stats = CallStats()
        self._secret: str | None = None
        self._client = None
        self._injected = client is not None
        if client is not None:
            # Our loop does the retrying; an injected client keeps everything else it was given.
            self._client = client.with_options(max_retries=0) if hasattr(client, "with_options") else client
            self._secret = getattr(client, "api_key", None)

    def _get_client(self) -> Any:
        """The SDK client, built on first use so that merely configuring a summarizer needs no key."""
        if self._client is not None:
            return self._client
        try:
            # the one builder shared with the token counter: key from the environment only, base_url,
            # timeout, the SDK's retries off (ours count them)
            self._client = anthropic_client.build_client(env=self._env, configured_base_url=self.base_url,
                                                         timeout_seconds=self.timeout_seconds)
        except anthropic_client.NoAPIKey:
            raise LLMError(
                "the anthropic summarizer needs an API key: set ANTHROPIC_API_KEY in the environment "
                "(or set summarizer.use to 'extractive' or 'command' in the policy)"
            ) from None
        self._secret = anthropic_client.api_key(self._env)
        return self._client

    def _abandon_client(self) -> None:
        """After giving up on a call still running: close the client we built, so the abandoned request's
        connection closes and its thread ends (an injected client is the caller's to close)."""
        if self._client is not None and not self._injected:
            try:
                self._client.close()
            except Exception:  # noqa: BLE001 - closing is best effort; the run has failed already
                pass
            self._client = None

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before attempt ``attempt + 1``.

        The server's ``retry-after`` wins when present (it knows when capacity
        returns), capped so a bogus header cannot stall a run. Otherwise
        exponential backoff with up to 25% jitter (so many clients throttled at
        once do not come back in lockstep), capped.
        """
        if retry_after is not None:
            return min(retry_after, self.retry_after_max_seconds)
        delay = self.backoff_base_seconds * (2 ** (attempt - 1))
        return min(self.backoff_max_seconds, delay * (1.0 + 0.25 * self._rng.random()))

    def _status_error(self, exc: Any, what: str = "the request") -> LLMError:
        """An :class:`LLMError` for an HTTP error response, classified for PTL handling and retrying."""
        status = int(getattr(exc, "status_code", 0) or 0)
        if 300 <= status < 400:  # the client follows no redirect: the conversation goes where configured only
            headers = getattr(getattr(exc, "response", None), "headers", None) or {}
            location = quote(headers.get("location") or "(no location)")
            where = self.base_url or DEFAULT_BASE_URL
            return LLMError(_redact(f"the API at {where} answered {what} with a redirect ({status}) to {location}; "
                                    "ctxkit does not follow redirects: set the API's own address as base_url",
                                    self._secret))
        kind, api_message = _error_fields(getattr(exc, "body", None))
        message = _redact(api_message or str(getattr(exc, "message", "") or exc), self._secret)
        if status in (400, 413) and (status == 413 or is_prompt_too_long(message)):
            return LLMError(
                f"the conversation is too long for the summarizing model: {message}",
                prompt_too_long=True,
                overflow_tokens=prompt_overflow_tokens(message),
            )
        label = {429: "rate limited", 529: "overloaded"}.get(status, kind or "error")
        retryable = status in (408, 409, 429) or status >= 500
        return LLMError(f"Anthropic API {status} {label}: {message}", retryable=retryable)

    def _call(self, what: str, request: Callable[[Any, float], Any]) -> Any:
        """Run ``request(client, timeout)`` with counted retries on 408/409/429/5xx/529, timeouts and
        connection errors, all within :attr:`deadline` (each attempt's timeout is what is left of it)."""
        client = self._get_client()
        import anthropic

        attempts = self.max_retries + 1
        self.deadline.start()
        error: LLMError | None = None
        for attempt in range(1, attempts + 1):
            if self.deadline.expired():  # the last attempt (or an earlier call: a prompt-too-long retry) used it up
                raise _out_of_time(what, self.deadline, attempt - 1, error)
            timeout = self.deadline.bound(self.timeout_seconds)
            self.stats.requests += 1
            retry_after: float | None = None
            try:
                # the SDK's timeout bounds each read, not the whole answer: a server trickling bytes would
                # pass it forever, so the wait itself stops at the deadline
                # (a moment of grace: when the SDK's own timeout falls at the deadline, its error is the clearer)
                left = self.deadline.remaining()
                return call_within(None if left is None else left + _GRACE_SECONDS, functools.partial(request, client, timeout))
            except OutOfTime:
                self._abandon_client()
                raise _out_of_time(what, self.deadline, attempt, error) from None
            except anthropic.APIStatusError as exc:
                error = self._status_error(exc, what)
                retry_after = _retry_after_seconds(getattr(exc.response, "headers", None))
                cause: BaseException = exc
            except anthropic.APITimeoutError as exc:  # before APIConnectionError: it is a subclass
                error = LLMError(f"{what} timed out after {_seconds(timeout)}s", retryable=True)
                cause = exc
            except anthropic.APIConnectionError as exc:
                where = self.base_url or DEFAULT_BASE_URL
                if isinstance(exc.__cause__, anthropic_client.ResponseTooLarge):
                    # the same server would send it again: not retried
                    error = LLMError(_redact(f"malformed response: the API at {where} answered {what} with "
                                             f"{exc.__cause__}", self._secret))
                else:  # refused, reset, closed mid-answer: the SDK's message and what caused it, said once
                    why = _cause(exc)
                    error = LLMError(_redact(f"could not reach the Anthropic API at {where}: {exc}{why}",
                                             self._secret), retryable=True)
                cause = exc
            except anthropic.AnthropicError as exc:
                error = LLMError(_redact(f"{what} failed: {exc}", self._secret))
                cause = exc
            except anthropic_client.AnswerTooComplex as exc:  # a ValueError: before the branch below
                where = self.base_url or DEFAULT_BASE_URL
                error = LLMError(_redact(f"malformed response: the API at {where} answered {what} with {exc}",
                                         self._secret))
                cause = exc
            except ValueError as exc:
                # a 200 whose body is not JSON (cut short, an HTML page from a proxy): the SDK's parser
                # raises json's error. A malformed answer, not a bug: the same server would send it again.
                where = self.base_url or DEFAULT_BASE_URL
                error = LLMError(_redact(f"malformed response: the API at {where} answered {what} with a body "
                                         f"that is not valid JSON ({exc})", self._secret))
                cause = exc
            if not error.retryable or attempt == attempts:
                if error.retryable and attempt > 1:
                    error = LLMError(f"{error.message} (gave up after {attempt} attempts)", retryable=True)
                error.__cause__ = cause
                raise error
            delay = self._backoff(attempt, retry_after)
            if not self.deadline.allows_wait(delay):
                out = _out_of_time(what, self.deadline, attempt, error, waiting=delay)
                out.__cause__ = cause
                raise out
            self.stats.retries += 1
            self.stats.waited_seconds += delay
            self._sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover
