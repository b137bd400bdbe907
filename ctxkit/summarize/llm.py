"""Summarizers: the only place ctxkit talks to a language model.

Autocompact (and the LLM level of collapse) needs one thing from a model:
"here is a conversation, give me back a summary". This module hides how that
happens behind :class:`Summarizer`, so stages never see SDK types and tests can
swap in anything with the same two methods:

* ``complete(messages, *, system, max_tokens) -> str`` — one request, text
  only, no tools; raises :class:`~ctxkit.errors.LLMError`. A prompt the model
  cannot take raises ``LLMError(prompt_too_long=True)`` with
  ``overflow_tokens`` when the error says by how much, so the caller can drop
  the oldest API rounds and try again (Claude Code's PTL retry).
* ``summarize(messages, *, instructions=None) -> str`` — the nine-section
  summary of ``messages`` (see :mod:`ctxkit.summarize.prompt`).

Three implementations:

* :class:`AnthropicSummarizer` — the Messages API through the official SDK,
  with our own counted retries (the SDK's are switched off so that retries are
  visible in reports and bounded by the policy).
* :class:`CommandSummarizer` — any shell command that reads a prompt on stdin
  and prints a summary (``llm``, ``claude -p``, a local model...).
* :class:`~ctxkit.summarize.extractive.ExtractiveSummarizer` — no model at all: a deterministic summary
  assembled from the messages themselves. It is what ``use: auto`` picks
  without an API key, so ctxkit works offline and in CI.

:func:`make_summarizer` builds one from the policy's ``summarizer`` mapping.
"""
from __future__ import annotations

import email.utils
import os
import random
import re
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ..errors import LLMError, UsageError
from .deadline import Deadline
from .extractive import ExtractiveSummarizer
from .prompt import (
    SUMMARY_SYSTEM_PROMPT,
    build_compact_prompt,
    format_summary,
    require_summary_structure,
)
from .render import render_transcript, text_only_messages

DEFAULT_MODEL = "claude-sonnet-4-5"
#: Claude Code reserves 20,000 output tokens for the summary (its p99.99 is ~17,400).
DEFAULT_MAX_OUTPUT_TOKENS = 20_000
DEFAULT_TIMEOUT_SECONDS = 600.0
DEFAULT_MAX_RETRIES = 4
#: The whole summary (every attempt, retry and wait) gives up after this long: a hanging server
#: cannot hold a run for ``timeout_seconds * (max_retries + 1)`` (50 minutes with the defaults above).
DEFAULT_TOTAL_TIMEOUT_SECONDS = 300.0
TOTAL_TIMEOUT_KEY = "summarizer.total_timeout_seconds"
DEFAULT_BASE_URL = "https://api.anthropic.com"
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


def _redact(text: str, secret: str | None) -> str:
    """``text`` with the API key replaced: a key must never reach a log, a report or stderr."""
    if secret and len(secret) >= 4:
        text = text.replace(secret, "[redacted]")
    return text


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
        if client is not None:
            # Our loop does the retrying; an injected client keeps everything else it was given.
            self._client = client.with_options(max_retries=0) if hasattr(client, "with_options") else client
            self._secret = getattr(client, "api_key", None)

    def _get_client(self) -> Any:
        """The SDK client, built on first use so that merely configuring a summarizer needs no key."""
        if self._client is not None:
            return self._client
        key = (self._env.get("ANTHROPIC_API_KEY") or "").strip()
        if not key:
            raise LLMError(
                "the anthropic summarizer needs an API key: set ANTHROPIC_API_KEY in the environment "
                "(or set summarizer.use to 'extractive' or 'command' in the policy)"
            )
        import anthropic  # imported here: the SDK is slow to import and most runs never call a model

        self._secret = key
        self._client = anthropic.Anthropic(
            api_key=key,
            # Explicit, so the SDK does not consult os.environ behind an injected ``env``.
            base_url=self.base_url or DEFAULT_BASE_URL,
            timeout=self.timeout_seconds,
            max_retries=0,
        )
        return self._client

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

    def _status_error(self, exc: Any) -> LLMError:
        """An :class:`LLMError` for an HTTP error response, classified for PTL handling and retrying."""
        status = int(getattr(exc, "status_code", 0) or 0)
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
                return request(client, timeout)
            except anthropic.APIStatusError as exc:
                error = self._status_error(exc)
                retry_after = _retry_after_seconds(getattr(exc.response, "headers", None))
                cause: BaseException = exc
            except anthropic.APITimeoutError as exc:  # before APIConnectionError: it is a subclass
                error = LLMError(f"{what} timed out after {_seconds(timeout)}s", retryable=True)
                cause = exc
            except anthropic.APIConnectionError as exc:
                where = self.base_url or DEFAULT_BASE_URL
                error = LLMError(
                    _redact(f"could not reach the Anthropic API at {where}: {exc}", self._secret), retryable=True
                )
                cause = exc
            except anthropic.AnthropicError as exc:
                error = LLMError(_redact(f"{what} failed: {exc}", self._secret))
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
        usage = getattr(response, "usage", None)
        self.stats.input_tokens += int(getattr(usage, "input_tokens", 0) or 0)
        self.stats.output_tokens += int(getattr(usage, "output_tokens", 0) or 0)
        self.last_stop_reason = getattr(response, "stop_reason", None)
        blocks = list(getattr(response, "content", None) or [])
        text = "".join(str(getattr(b, "text", "") or "") for b in blocks if getattr(b, "type", None) == "text")
        if not text.strip():
            kinds = ", ".join(str(getattr(b, "type", "?")) for b in blocks) or "none"
            raise LLMError(
                f"malformed summary: the model answered with no text (blocks: {kinds}; "
                f"stop_reason: {self.last_stop_reason})"
            )
        return text



def _tail(data: bytes, limit: int = 2000) -> str:
    text = data.decode("utf-8", "replace").strip()
    return text if len(text) <= limit else "…" + text[-limit:]


class CommandSummarizer(_PromptedSummarizer):
    """Summaries from a shell command: the prompt on its stdin, the summary on its stdout.

    Lets a policy plug in any model runner without ctxkit knowing about it.
    The command runs with ``shell=True`` in its own process group, so a timeout
    kills it and everything it started. It gets ``CTXKIT_MAX_TOKENS`` in its
    environment. A non-zero exit raises :class:`LLMError` with the tail of its
    stderr (recognising "prompt is too long" there, for PTL retries); empty
    output raises ``LLMError("malformed summary ...")``.
    """

    name = "command"

    def __init__(
        self,
        command: str,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        *,
        max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        total_timeout_seconds: float | None = DEFAULT_TOTAL_TIMEOUT_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ):
        if not command or not command.strip():
            raise UsageError("summarizer.command is empty: name the command that prints a summary")
        self.command = command
        self.timeout_seconds = float(timeout_seconds)
        self.max_output_tokens = int(max_output_tokens)
        self._env = env
        self._cwd = cwd
        self.deadline = Deadline(total_timeout_seconds, clock=clock)

    def _describe(self) -> str:
        env = os.environ if self._env is None else self._env
        short = self.command if len(self.command) <= 80 else self.command[:77] + "..."
        return _redact(short, env.get("ANTHROPIC_API_KEY"))

    def complete(self, messages: list[dict], *, system: str | None, max_tokens: int) -> str:
        what = f"the summarizer command {self._describe()!r}"
        if self.deadline.expired():  # an earlier call (a prompt-too-long retry) used up the time
            raise LLMError(f"{what} was not started: the summarizer's time limit ran out ({TOTAL_TIMEOUT_KEY}: "
                           f"{self.deadline.total:g}s)")
        timeout = self.deadline.bound(self.timeout_seconds)
        prompt = render_transcript(messages, system=system)
        env = dict(os.environ if self._env is None else self._env)
        env["CTXKIT_MAX_TOKENS"] = str(int(max_tokens))
        secret = env.get("ANTHROPIC_API_KEY")
        try:
            proc = subprocess.Popen(
                self.command,
                shell=True,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                cwd=self._cwd,
                start_new_session=True,
            )
        except OSError as exc:
            raise LLMError(f"could not start the summarizer command {self._describe()!r}: {exc}") from None
        try:
            out, err = proc.communicate(prompt.encode("utf-8"), timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            proc.communicate()
            limit = f" ({TOTAL_TIMEOUT_KEY}: {self.deadline.total:g}s)" if timeout < self.timeout_seconds else ""
            raise LLMError(f"{what} timed out after {_seconds(timeout)}s{limit}", retryable=True) from None
        if proc.returncode != 0:
            tail = _redact(_tail(err), secret)
            raise LLMError(
                f"the summarizer command {self._describe()!r} exited with status {proc.returncode}"
                + (f":\n{tail}" if tail else " (no stderr)"),
                prompt_too_long=is_prompt_too_long(tail),
                overflow_tokens=prompt_overflow_tokens(tail),
            )
        text = out.decode("utf-8", "replace")
        if not text.strip():
            raise LLMError(f"malformed summary: the summarizer command {self._describe()!r} printed nothing")
        return text



def _kill_group(proc: subprocess.Popen) -> None:
    """Kill a timed-out command and its children (``shell=True`` puts a shell in between)."""
    try:
        if hasattr(os, "killpg"):
            os.killpg(proc.pid, signal.SIGKILL)
        else:  # pragma: no cover - Windows
            proc.kill()
    except (ProcessLookupError, PermissionError):
        pass


# --------------------------------------------------------------------------------------------
# Factory
# --------------------------------------------------------------------------------------------


def make_summarizer(
    config: Mapping[str, Any] | None,
    *,
    env: Mapping[str, str] = os.environ,
    client: Any = None,
    sleep: Callable[[float], None] = time.sleep,
    default_model: str = DEFAULT_MODEL,
) -> Summarizer:
    """The summarizer a policy's ``summarizer`` mapping asks for.

    ``use: auto`` (the default) picks Anthropic when ``ANTHROPIC_API_KEY`` is
    set (or a client is injected) and the extractive summarizer otherwise, so
    that ctxkit works offline and in CI without configuration.
    ``ANTHROPIC_BASE_URL`` is honoured when the policy sets no ``base_url``.
    """
    config = dict(config or {})
    use = summarizer_kind(config, env=env, client=client)
    if use == "anthropic":
        return AnthropicSummarizer(
            model=str(config.get("model") or default_model),
            max_output_tokens=int(config.get("max_output_tokens") or DEFAULT_MAX_OUTPUT_TOKENS),
            timeout_seconds=float(config.get("timeout_seconds") or DEFAULT_TIMEOUT_SECONDS),
            max_retries=int(config["max_retries"] if config.get("max_retries") is not None else DEFAULT_MAX_RETRIES),
            base_url=config.get("base_url") or env.get("ANTHROPIC_BASE_URL") or None,
            client=client,
            env=env,
            sleep=sleep,
            total_timeout_seconds=_total_timeout(config),
        )
    if use == "command":
        command = config.get("command")
        if not command:
            raise UsageError("summarizer.use is 'command' but summarizer.command is not set")
        return CommandSummarizer(
            str(command),
            timeout_seconds=float(config.get("timeout_seconds") or DEFAULT_TIMEOUT_SECONDS),
            max_output_tokens=int(config.get("max_output_tokens") or DEFAULT_MAX_OUTPUT_TOKENS),
            env=env,
            total_timeout_seconds=_total_timeout(config),
        )
    return ExtractiveSummarizer()


def summarizer_for_run(ctx: Any) -> Summarizer:
    """The summarizer a run uses: the one choice autocompact, collapse, session memory and ``ctxkit
    stats`` all make through here, so that what stats reports is what compact would do.

    ``ctx`` is the stage Context: its ``summarizer_factory`` (tests, embedders) wins, else the policy's
    ``summarizer`` mapping (:func:`make_summarizer`). When ``ctx.simulate`` is set (``ctxkit stats``),
    no model and no command may be called: a summarizer that would call one is replaced by a
    :class:`StandInSummarizer` that says which one it stands for (the extractive summarizer needs no
    stand-in: it is offline and free, so the simulation runs it for real).
    """
    from .redact import guard  # detect-secrets loads only when a run summarizes

    factory = getattr(ctx, "summarizer_factory", None)
    if factory is not None:
        chosen = factory(ctx.policy, ctx)
    else:
        if not getattr(ctx, "simulate", False):  # a simulation runs nothing: no trust needed
            from ..policy.trust import require_trusted_summarizer

            require_trusted_summarizer(ctx.policy)  # the CLI refused already; this guards library callers
        chosen = make_summarizer(ctx.policy.summarizer, default_model=ctx.policy.model)
    if getattr(ctx, "simulate", False) and not isinstance(chosen, ExtractiveSummarizer):
        chosen = StandInSummarizer(chosen)
    # every summarizer of a run sees no secret and returns none (ctxkit.summarize.redact)
    return guard(chosen, ctx)


class StandInSummarizer:
    """What a simulation runs in place of a summarizer that calls a model or a command.

    Its :attr:`name` names the summarizer it stands for (``anthropic claude-sonnet-4-5, simulated``),
    so reports say what would run. :meth:`summarize` writes the extractive summary, a realistic size
    for the token counts after compaction; :meth:`complete` (collapse's short summaries) answers a
    one-line placeholder. Neither touches the network, a subprocess or a key.
    """

    def __init__(self, stands_for: Summarizer):
        what = getattr(stands_for, "name", type(stands_for).__name__)
        model = getattr(stands_for, "model", None)
        self.stands_for = f"{what} {model}" if isinstance(model, str) and model else what
        self.name = f"{self.stands_for}, simulated"
        self._extractive = ExtractiveSummarizer()

    def complete(self, messages: list[dict], *, system: str | None, max_tokens: int) -> str:
        return f"(a summary by {self.stands_for} would be written here)"

    def summarize(self, messages: list[dict], *, instructions: str | None = None) -> str:
        return self._extractive.summarize(messages, instructions=instructions)
def _total_timeout(config: Mapping[str, Any]) -> float:
    return float(config.get("total_timeout_seconds") or DEFAULT_TOTAL_TIMEOUT_SECONDS)


def summarizer_kind(config: Mapping[str, Any] | None, *, env: Mapping[str, str] = os.environ, client: Any = None
                    ) -> str:
    """Which summarizer :func:`make_summarizer` builds for ``config``: ``use``, with ``auto`` resolved."""
    use = str((config or {}).get("use") or "auto")
    if use not in SUMMARIZER_KINDS:
        raise UsageError(f"summarizer.use must be one of {', '.join(SUMMARIZER_KINDS)}, not {use!r}")
    if use == "auto":
        use = "anthropic" if (env.get("ANTHROPIC_API_KEY") or "").strip() or client is not None else "extractive"
    return use


#: The ``summarizer`` settings each kind of summarizer acts on (what :func:`make_summarizer` reads for it).
SETTINGS_BY_KIND: dict[str, tuple[str, ...]] = {
    "anthropic": ("use", "model", "max_output_tokens", "timeout_seconds", "total_timeout_seconds", "max_retries",
                  "base_url"),
    "command": ("use", "command", "timeout_seconds", "total_timeout_seconds", "max_output_tokens"),
    "extractive": ("use",),
}


def summarizer_settings_used(config: Mapping[str, Any] | None, env: Mapping[str, str] = os.environ,
                             client: Any = None) -> frozenset[str]:
    """The dotted policy keys (``summarizer.command``...) the summarizer built for ``config`` would use:
    what a repository policy must be trusted for before that summarizer runs (see ctxkit.policy.trust)."""
    try:
        kind = summarizer_kind(config, env=env, client=client)
    except UsageError:
        return frozenset()  # make_summarizer reports the bad value; nothing would run
    return frozenset(f"summarizer.{key}" for key in SETTINGS_BY_KIND[kind])
