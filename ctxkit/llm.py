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
  summary of ``messages`` (see :mod:`ctxkit.summary_prompt`).

Three implementations:

* :class:`AnthropicSummarizer` — the Messages API through the official SDK,
  with our own counted retries (the SDK's are switched off so that retries are
  visible in reports and bounded by the policy).
* :class:`CommandSummarizer` — any shell command that reads a prompt on stdin
  and prints a summary (``llm``, ``claude -p``, a local model...).
* :class:`ExtractiveSummarizer` — no model at all: a deterministic summary
  assembled from the messages themselves. It is what ``use: auto`` picks
  without an API key, so ctxkit works offline and in CI.

:func:`make_summarizer` builds one from the policy's ``summarizer`` mapping.
"""
from __future__ import annotations

import email.utils
import json
import os
import random
import re
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from .errors import LLMError, UsageError
from .summary_prompt import (
    CONTINUATION_PREFIX,
    SECTION_TITLES,
    SUMMARY_SYSTEM_PROMPT,
    build_compact_prompt,
    format_summary,
    section_heading,
)

DEFAULT_MODEL = "claude-sonnet-4-5"
#: Claude Code reserves 20,000 output tokens for the summary (its p99.99 is ~17,400).
DEFAULT_MAX_OUTPUT_TOKENS = 20_000
DEFAULT_TIMEOUT_SECONDS = 600.0
DEFAULT_MAX_RETRIES = 4
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
# Messages as text
# --------------------------------------------------------------------------------------------


def content_blocks(content: Any) -> list[dict]:
    """A message's ``content`` as a list of block dicts (a plain string is one text block)."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if isinstance(content, dict):
        return [content]
    if isinstance(content, (list, tuple)):
        return [b if isinstance(b, dict) else {"type": "text", "text": str(b)} for b in content]
    return [{"type": "text", "text": str(content)}]


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)


def tool_result_text(block: dict) -> str:
    """The text of a ``tool_result`` block's content (images and documents become placeholders)."""
    parts = []
    for inner in content_blocks(block.get("content")):
        rendered = render_block(inner)
        if rendered:
            parts.append(rendered)
    return "\n".join(parts)


def render_block(block: dict) -> str:
    """One content block as plain text, for a request that has no tools and no images.

    The summarizing request defines no tools (so the model cannot call any), and
    the API rejects ``tool_use`` / ``tool_result`` blocks in a request without
    tools; so calls and results travel as text, tagged with their ids so
    parallel calls stay matched. Images and documents are replaced by
    placeholders (a summary does not need their pixels, and they cost many
    tokens). Thinking is dropped: it is the model's scratch work, and its
    signatures are only valid for the model that wrote them.
    """
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text") or "")
    if kind in ("thinking", "redacted_thinking"):
        return ""
    if kind in ("tool_use", "server_tool_use", "mcp_tool_use"):
        return f"[Tool call {block.get('name', '?')} id={block.get('id', '?')}] {_json(block.get('input', {}))}"
    if kind == "tool_result":
        flag = " (error)" if block.get("is_error") else ""
        body = tool_result_text(block)
        return f"[Tool result{flag} id={block.get('tool_use_id', '?')}] {body}".rstrip()
    if kind == "image":
        return "[image]"
    if kind == "document":
        title = block.get("title")
        return f"[document: {title}]" if title else "[document]"
    if kind and kind.endswith("_tool_result"):  # web_search_tool_result and friends
        return f"[{kind} id={block.get('tool_use_id', '?')}]"
    return f"[{kind or 'unknown'} block]"


def text_only_messages(messages: Sequence[dict]) -> list[dict]:
    """The history as a valid text-only Messages API conversation.

    Roles alternate (consecutive turns of one role are merged), no block is
    empty, the first turn is the user's, and only ``role`` and ``content`` are
    kept (transcripts carry extra keys the API refuses). Idempotent.
    """
    out: list[dict] = []
    for message in messages:
        role = "assistant" if message.get("role") == "assistant" else "user"
        texts = [render_block(b) for b in content_blocks(message.get("content"))]
        blocks = [{"type": "text", "text": t} for t in texts if t.strip()]
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    if out and out[0]["role"] == "assistant":
        out.insert(0, {"role": "user", "content": [{"type": "text", "text": "[earlier conversation omitted]"}]})
    return out


def build_summary_request(messages: Sequence[dict], instructions: str | None = None) -> list[dict]:
    """The messages of a summarizing request: the history as text, then the compaction prompt."""
    request = text_only_messages(messages)
    prompt = {"type": "text", "text": build_compact_prompt(instructions)}
    if request and request[-1]["role"] == "user":
        request[-1]["content"].append(prompt)
    else:
        request.append({"role": "user", "content": [prompt]})
    return request


def render_transcript(messages: Sequence[dict], *, system: str | None = None) -> str:
    """A plain-text rendering of a conversation, for summarizers that read text (a command's stdin)."""
    parts = []
    if system:
        parts.append(f"System:\n{system.strip()}")
    for message in text_only_messages(messages):
        speaker = "Assistant" if message["role"] == "assistant" else "User"
        body = "\n\n".join(b["text"].strip("\n") for b in message["content"])
        parts.append(f"{speaker}:\n{body}")
    return "\n\n".join(parts) + "\n"


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
    ):
        self._env = os.environ if env is None else env
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

    def _call(self, what: str, request: Callable[[Any], Any]) -> Any:
        """Run ``request(client)`` with counted retries on 408/409/429/5xx/529, timeouts and connection errors."""
        client = self._get_client()
        import anthropic

        attempts = self.max_retries + 1
        for attempt in range(1, attempts + 1):
            self.stats.requests += 1
            retry_after: float | None = None
            try:
                return request(client)
            except anthropic.APIStatusError as exc:
                error = self._status_error(exc)
                retry_after = _retry_after_seconds(getattr(exc.response, "headers", None))
                cause: BaseException = exc
            except anthropic.APITimeoutError as exc:  # before APIConnectionError: it is a subclass
                error = LLMError(f"{what} timed out after {self.timeout_seconds:g}s", retryable=True)
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
            if not error.retryable or attempt == attempts:
                if error.retryable and attempt > 1:
                    error = LLMError(f"{error.message} (gave up after {attempt} attempts)", retryable=True)
                error.__cause__ = cause
                raise error
            delay = self._backoff(attempt, retry_after)
            self.stats.retries += 1
            self.stats.waited_seconds += delay
            self._sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover


class AnthropicSummarizer(_AnthropicAPI):
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
            lambda client: client.messages.create(**params, timeout=self.timeout_seconds),
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

    def summarize(self, messages: list[dict], *, instructions: str | None = None) -> str:
        raw = self.complete(
            build_summary_request(messages, instructions),
            system=SUMMARY_SYSTEM_PROMPT,
            max_tokens=self.max_output_tokens,
        )
        return format_summary(raw)


def _tail(data: bytes, limit: int = 2000) -> str:
    text = data.decode("utf-8", "replace").strip()
    return text if len(text) <= limit else "…" + text[-limit:]


class CommandSummarizer:
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
    ):
        if not command or not command.strip():
            raise UsageError("summarizer.command is empty: name the command that prints a summary")
        self.command = command
        self.timeout_seconds = float(timeout_seconds)
        self.max_output_tokens = int(max_output_tokens)
        self._env = env
        self._cwd = cwd

    def _describe(self) -> str:
        env = os.environ if self._env is None else self._env
        short = self.command if len(self.command) <= 80 else self.command[:77] + "..."
        return _redact(short, env.get("ANTHROPIC_API_KEY"))

    def complete(self, messages: list[dict], *, system: str | None, max_tokens: int) -> str:
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
            out, err = proc.communicate(prompt.encode("utf-8"), timeout=self.timeout_seconds)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            proc.communicate()
            raise LLMError(
                f"the summarizer command {self._describe()!r} timed out after {self.timeout_seconds:g}s",
                retryable=True,
            ) from None
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

    def summarize(self, messages: list[dict], *, instructions: str | None = None) -> str:
        raw = self.complete(
            build_summary_request(messages, instructions),
            system=SUMMARY_SYSTEM_PROMPT,
            max_tokens=self.max_output_tokens,
        )
        return format_summary(raw)


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
# Extractive
# --------------------------------------------------------------------------------------------

_REMINDER = re.compile(r"<system-reminder>.*?(?:</system-reminder>|\Z)", re.DOTALL)
# A section heading of a summary in our format ("6. All user messages:"), tolerating markdown decoration;
# only the nine known titles count, so numbered lists inside a section are not mistaken for headings.
# Claude Code's own summaries put the text on the heading's line ("1. Primary Request and Intent: ...").
_SECTION_LINE = re.compile(
    r"^[#*\t ]*([1-9])\.[\t ]*(?:" + "|".join(re.escape(t) for t in SECTION_TITLES) + r")[\t ]*:?[*\t ]*",
    re.MULTILINE | re.IGNORECASE,
)
# Harness text in user messages that the user did not type: left out of "All user messages".
_HARNESS_TEXT = ("<local-command-caveat>", "<local-command-stdout>", "<local-command-stderr>",
                 "Caveat: The messages below were generated by the user while running local commands")
_COMMAND = re.compile(r"<command-name>(.*?)</command-name>", re.DOTALL)
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.DOTALL)
_FENCE_LANG = re.compile(r"^```([A-Za-z0-9_+#-]+)", re.MULTILINE)
_TODO_LINE = re.compile(r"^\s*(?:[-*]\s*)?(?:\[[ xX]\]\s*)?(TODO\b.*)$", re.MULTILINE)
_PATH_KEYS = ("file_path", "path", "notebook_path")

_LANGUAGES = {
    ".py": "Python", ".pyi": "Python", ".ipynb": "Jupyter notebook", ".js": "JavaScript", ".mjs": "JavaScript",
    ".cjs": "JavaScript", ".jsx": "JavaScript (JSX)", ".ts": "TypeScript", ".tsx": "TypeScript (TSX)",
    ".go": "Go", ".rs": "Rust", ".java": "Java", ".kt": "Kotlin", ".swift": "Swift", ".c": "C", ".h": "C/C++ header",
    ".cc": "C++", ".cpp": "C++", ".hpp": "C++", ".cs": "C#", ".rb": "Ruby", ".php": "PHP", ".scala": "Scala",
    ".sh": "shell", ".bash": "shell", ".zsh": "shell", ".sql": "SQL", ".html": "HTML", ".css": "CSS",
    ".scss": "SCSS", ".vue": "Vue", ".svelte": "Svelte", ".md": "Markdown", ".rst": "reStructuredText",
    ".json": "JSON", ".jsonl": "JSON Lines", ".yaml": "YAML", ".yml": "YAML", ".toml": "TOML", ".ini": "INI",
    ".xml": "XML", ".proto": "Protocol Buffers", ".tf": "Terraform", ".lua": "Lua", ".r": "R", ".dart": "Dart",
    ".ex": "Elixir", ".exs": "Elixir", ".erl": "Erlang", ".hs": "Haskell", ".ml": "OCaml", ".zig": "Zig",
}
_ACTION_ORDER = ("edited", "written", "read", "searched", "used")


@dataclass
class _Call:
    """One tool call and, once seen, its result."""

    name: str
    input: dict
    position: int  # index of the assistant message that made it
    result: str | None = None
    is_error: bool = False
    answered: bool = False


def _squash(text: str, limit: int) -> str:
    """One line, whitespace collapsed, at most ``limit`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters (at a line break when one is near), saying how much was cut."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    newline = cut.rfind("\n")
    if newline > limit // 2:
        cut = cut[:newline]
    return f"{cut.rstrip()}\n[… {len(text) - len(cut)} more characters omitted]"


def _path_of(tool_input: dict) -> str | None:
    for key in _PATH_KEYS:
        value = tool_input.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _file_action(name: str, tool_input: dict) -> str:
    """What a tool call did to the file it names: edited, written, read, searched or used."""
    lowered = name.lower()
    command = tool_input.get("command")
    if isinstance(command, str) and ("editor" in lowered or "edit_tool" in lowered):
        # The text-editor tool family: one tool, the action in ``command``.
        return {"view": "read", "create": "written"}.get(command, "edited")
    if any(word in lowered for word in ("edit", "patch", "replace")):
        return "edited"
    if any(word in lowered for word in ("write", "create", "save")):
        return "written"
    if any(word in lowered for word in ("read", "view", "cat", "open")):
        return "read"
    if any(word in lowered for word in ("grep", "glob", "search", "find")) or lowered in ("ls", "list"):
        return "searched"
    return "used"


def _change_snippet(tool_input: dict) -> str | None:
    """The new text an edit or write put in a file, if the call says."""
    for key in ("new_string", "new_str", "content", "file_text", "new_source"):
        value = tool_input.get(key)
        if isinstance(value, str) and value.strip():
            return value
    edits = tool_input.get("edits")
    if isinstance(edits, list) and edits and isinstance(edits[-1], dict):
        return _change_snippet(edits[-1])
    return None


def _describe_call(name: str, tool_input: dict, limit: int = 160) -> str:
    """A tool call in one short line: its name and the argument that identifies it."""
    for key in (*_PATH_KEYS, "command", "pattern", "query", "url", "description", "prompt"):
        value = tool_input.get(key)
        if isinstance(value, str) and value.strip():
            return f"{name} `{_squash(value, limit)}`"
    if tool_input:
        return f"{name} {_squash(_json(tool_input), limit)}"
    return name


def _user_words(text: str) -> str:
    """What the user typed: harness echoes dropped, a slash command shown as the command itself."""
    stripped = text.lstrip()
    if stripped.startswith(_HARNESS_TEXT):
        return ""
    command = _COMMAND.search(stripped)
    if command and stripped.startswith(("<command-name>", "<command-message>")):
        args = _COMMAND_ARGS.search(stripped)
        return " ".join(x for x in (command.group(1).strip(), args.group(1).strip() if args else "") if x)
    return text


def _split_sections(summary: str) -> dict[int, str]:
    """The numbered sections of an earlier summary (our format), keyed by number."""
    sections: dict[int, str] = {}
    matches = list(_SECTION_LINE.finditer(summary))
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(summary)
        number = int(match.group(1))
        body = summary[match.end():end].strip("\n")
        if 1 <= number <= 9 and number not in sections:
            sections[number] = body.strip()
    return sections


class ExtractiveSummarizer:
    """A summary assembled from the messages themselves: no model, no network, deterministic.

    It fills the same nine sections a model would, from facts it can read off
    the transcript: the user's messages verbatim (all of them, each up to at
    least 2,000 characters), the tools used, the files touched (edited first,
    with the last change made), failed calls and what fixed them, the
    assistant's remarks shortened, the to-do list, and where the work stopped.
    Each section except the user messages is capped at ``section_chars``.
    The same messages always give the same bytes.

    It has no model, so :meth:`complete` raises :class:`LLMError`.
    """

    name = "extractive"

    def __init__(self, *, section_chars: int = 6000, user_message_chars: int = 2000, max_files: int = 60,
                 max_errors: int = 25, max_remarks: int = 40):
        self.section_chars = max(500, int(section_chars))
        # Section 6 is the one a summary must never starve: each message keeps at least 2,000 characters.
        self.user_message_chars = max(2000, int(user_message_chars))
        self.max_files = max_files
        self.max_errors = max_errors
        self.max_remarks = max_remarks

    def complete(self, messages: list[dict], *, system: str | None, max_tokens: int) -> str:
        raise LLMError("the extractive summarizer has no model to complete a prompt; call summarize() instead")

    def summarize(self, messages: list[dict], *, instructions: str | None = None) -> str:
        return _Extraction(self, messages).render(instructions)


class _Extraction:
    """One extractive summary in the making: the facts read off the messages, then the nine sections."""

    def __init__(self, settings: ExtractiveSummarizer, messages: Sequence[dict]):
        self.settings = settings
        self.messages = list(messages)
        self.user: list[tuple[int, str]] = []  # (message index, verbatim text)
        self.remarks: list[tuple[int, str]] = []  # (message index, assistant text)
        self.calls: list[_Call] = []
        self.carried: dict[int, str] = {}  # sections of an earlier compaction's summary
        self.fence_langs: dict[str, int] = {}
        self._read()

    # -- reading the history --------------------------------------------------------------

    def _read(self) -> None:
        by_id: dict[str, _Call] = {}
        for index, message in enumerate(self.messages):
            blocks = content_blocks(message.get("content"))
            if message.get("role") == "assistant":
                for block in blocks:
                    kind = block.get("type")
                    if kind == "text" and str(block.get("text") or "").strip():
                        self.remarks.append((index, str(block["text"]).strip()))
                    elif kind in ("tool_use", "server_tool_use", "mcp_tool_use"):
                        tool_input = block.get("input") if isinstance(block.get("input"), dict) else {}
                        call = _Call(name=str(block.get("name") or "?"), input=tool_input, position=index)
                        self.calls.append(call)
                        if block.get("id"):
                            by_id[str(block["id"])] = call
                continue
            texts = []
            for block in blocks:
                kind = block.get("type")
                if kind == "tool_result":
                    call = by_id.get(str(block.get("tool_use_id")))
                    if call is not None:
                        call.answered = True
                        call.is_error = bool(block.get("is_error"))
                        call.result = tool_result_text(block)
                elif kind == "text":
                    text = str(block.get("text") or "")
                    if "<system-reminder>" in text:
                        text = _REMINDER.sub("", text)
                    text = _user_words(text)
                    if text.strip():
                        texts.append(text.strip())
            if not texts:
                continue
            joined = "\n\n".join(texts)
            if joined.startswith(CONTINUATION_PREFIX):
                # An earlier compaction's summary: carry its record of the user's words forward.
                for number, body in _split_sections(joined).items():
                    self.carried.setdefault(number, body)
                continue
            self.user.append((index, joined))
        for _, text in self.remarks:
            for lang in _FENCE_LANG.findall(text):
                self.fence_langs[lang.lower()] = self.fence_langs.get(lang.lower(), 0) + 1

    def verbatim(self, text: str) -> str:
        limit = self.settings.user_message_chars
        if len(text) <= limit:
            return text
        return f"{text[:limit]} [… {len(text) - limit} more characters]"

    # -- the sections ---------------------------------------------------------------------

    def primary_request(self) -> str:
        parts = []
        if self.carried.get(1):
            parts.append(f"From the earlier summary:\n{self.carried[1]}")
        if self.user:
            label = "First request since then" if parts else "The user's first request"
            parts.append(f"{label}:\n{self.verbatim(self.user[0][1])}")
            if len(self.user) > 1:
                parts.append(f"Most recent request:\n{self.verbatim(self.user[-1][1])}")
        return "\n\n".join(parts) or "No user request was found in the summarized messages."

    def concepts(self) -> str:
        lines = []
        tools: dict[str, int] = {}
        for call in self.calls:
            tools[call.name] = tools.get(call.name, 0) + 1
        if tools:
            ranked = sorted(tools.items(), key=lambda item: (-item[1], item[0]))
            lines.append("- Tools used: " + ", ".join(f"{name} ({count})" for name, count in ranked))
        extensions: dict[str, int] = {}
        seen_paths: set[str] = set()
        for call in self.calls:
            path = _path_of(call.input)
            if not path or path in seen_paths:
                continue
            seen_paths.add(path)
            ext = os.path.splitext(path)[1].lower()
            if ext:
                extensions[ext] = extensions.get(ext, 0) + 1
        if extensions:
            ranked = sorted(extensions.items(), key=lambda item: (-item[1], item[0]))
            described = []
            for ext, count in ranked:
                language = _LANGUAGES.get(ext)
                files = f"{count} file" + ("s" if count != 1 else "")
                described.append(f"{ext} ({language}, {files})" if language else f"{ext} ({files})")
            lines.append("- File types: " + ", ".join(described))
        if self.fence_langs:
            ranked = sorted(self.fence_langs.items(), key=lambda item: (-item[1], item[0]))
            lines.append("- Code blocks in replies: " + ", ".join(lang for lang, _ in ranked))
        return "\n".join(lines) or "None recorded."

    def files(self) -> str:
        files: dict[str, dict[str, Any]] = {}
        for call in self.calls:
            path = _path_of(call.input)
            if not path:
                continue
            entry = files.setdefault(path, {"rank": len(_ACTION_ORDER), "tools": {}, "change": None})
            action = _file_action(call.name, call.input)
            entry["rank"] = min(entry["rank"], _ACTION_ORDER.index(action))
            entry["tools"][call.name] = entry["tools"].get(call.name, 0) + 1
            if action in ("edited", "written"):
                snippet = _change_snippet(call.input)
                if snippet:
                    entry["change"] = (call.name, snippet)
        if not files:
            return "No files were read or changed."
        # Edited files first, then written, read, searched; first-seen order within each (sort is stable).
        ordered = sorted(files.items(), key=lambda item: item[1]["rank"])
        limit = self.settings.max_files
        lines = []
        for path, entry in ordered[:limit]:
            tools = ", ".join(f"{name} ×{count}" for name, count in entry["tools"].items())
            lines.append(f"- {path} ({_ACTION_ORDER[entry['rank']]}; {tools})")
            if entry["change"]:
                name, snippet = entry["change"]
                body = _clip(snippet, 400).replace("\n", "\n    ")
                lines.append(f"  last change ({name}):\n    {body}")
        if len(ordered) > limit:
            lines.append(f"- … and {len(ordered) - limit} more files")
        return "\n".join(lines)

    def errors(self) -> str:
        lines = []
        failures = [i for i, call in enumerate(self.calls) if call.is_error]
        limit = self.settings.max_errors
        for i in failures[:limit]:
            call = self.calls[i]
            message = _squash(call.result or "(no error text)", 300)
            lines.append(f"- {_describe_call(call.name, call.input)} failed: {message}")
            fix = next(
                (later for later in self.calls[i + 1:]
                 if later.name == call.name and later.answered and not later.is_error),
                None,
            )
            if fix is not None:
                lines.append(f"  then succeeded: {_describe_call(fix.name, fix.input)}")
        if len(failures) > limit:
            lines.append(f"- … and {len(failures) - limit} more failed calls")
        return "\n".join(lines) or "No tool errors were recorded."

    def problem_solving(self) -> str:
        remarks = self.remarks[:-1]  # the last one is the current work (section 8)
        if not remarks:
            return "No earlier assistant remarks."
        lines = [f"- {_squash(text, 300)}" for _, text in remarks]
        limit = self.settings.max_remarks
        if len(lines) > limit:
            head = limit // 4
            tail = limit - head
            omitted = len(lines) - head - tail
            lines = [*lines[:head], f"- … {omitted} more remarks …", *lines[-tail:]]
        return "\n".join(lines)

    def user_messages(self) -> str:
        parts = []
        if self.carried.get(6):
            parts.append(f"(Before the earlier summary:)\n{self.carried[6]}")
        parts.extend(f"- {self.verbatim(text)}" for _, text in self.user)
        return "\n".join(parts) or "No user messages."

    def pending(self) -> list[tuple[str, str]]:
        """The open tasks, as ``(status, text)``: from the last to-do list if any, else TODO lines."""
        todos: list[dict[str, str]] | None = None
        for call in self.calls:
            lowered = call.name.lower()
            items = call.input.get("todos")
            if isinstance(items, list):  # TodoWrite: each call replaces the whole list
                todos = [
                    {"id": str(item.get("id", n + 1)), "status": str(item.get("status", "pending")),
                     "text": str(item.get("content") or item.get("subject") or item.get("activeForm") or "")}
                    for n, item in enumerate(items) if isinstance(item, dict)
                ]
            elif "task" in lowered and "create" in lowered:  # TaskCreate: one task per call
                todos = todos or []
                text = call.input.get("subject") or call.input.get("title") or call.input.get("description") or ""
                todos.append({"id": str(len(todos) + 1), "status": "pending", "text": str(text)})
            elif "task" in lowered and "update" in lowered and todos:
                target = str(call.input.get("taskId") or call.input.get("task_id") or call.input.get("id") or "")
                for todo in todos:
                    if todo["id"] == target and call.input.get("status"):
                        todo["status"] = str(call.input["status"])
        if todos is not None:
            return [(t["status"], t["text"]) for t in todos
                    if t["status"] not in ("completed", "deleted") and t["text"]]
        found: list[tuple[str, str]] = []
        for text in [t for _, t in self.user] + [t for _, t in self.remarks]:
            for line in _TODO_LINE.findall(text):
                item = ("todo", _squash(line, 300))
                if item not in found:
                    found.append(item)
        return found[-20:]

    def current_work(self) -> str:
        parts = []
        if self.remarks:
            parts.append(f"Last assistant message:\n{_clip(self.remarks[-1][1], 1500)}")
        if self.calls:
            last = self.calls[-1].position
            recent = [call for call in self.calls if call.position == last][-8:]
            lines = []
            for call in recent:
                if not call.answered:
                    state = "no result yet"
                elif call.is_error:
                    state = f"error: {_squash(call.result or '', 200)}"
                else:
                    state = "ok"
                lines.append(f"- {_describe_call(call.name, call.input)} ({state})")
            parts.append("Last tool calls:\n" + "\n".join(lines))
        return "\n\n".join(parts) or "Nothing in progress was recorded."

    def next_step(self, pending: list[tuple[str, str]]) -> str:
        if not self.user:
            return "No user request to continue."
        index, text = self.user[-1]
        latest = _squash(text, 500)
        if not any(m.get("role") == "assistant" for m in self.messages[index + 1:]):
            return f'Respond to the user\'s most recent message, which has not been answered yet: "{latest}"'
        active = next((task for status, task in pending if status == "in_progress"), None)
        if active is None and pending:
            active = pending[0][1]
        if active:
            return f'Continue with "{_squash(active, 300)}", in line with the user\'s most recent request: "{latest}"'
        return f'Continue the current work, in line with the user\'s most recent request: "{latest}"'

    def render(self, instructions: str | None) -> str:
        pending = self.pending()
        cap = self.settings.section_chars
        open_tasks = "\n".join(f"- [{status}] {task}" for status, task in pending) or "None recorded."
        bodies = {
            1: _clip(self.primary_request(), cap),
            2: _clip(self.concepts(), cap),
            3: _clip(self.files(), cap),
            4: _clip(self.errors(), cap),
            5: _clip(self.problem_solving(), cap),
            6: self.user_messages(),  # never capped as a whole
            7: _clip(open_tasks, cap),
            8: _clip(self.current_work(), cap),
            9: _clip(self.next_step(pending), cap),
        }
        header = "[Extractive summary: assembled by ctxkit from the transcript without a model; quotes are verbatim.]"
        if instructions and instructions.strip():
            header += f"\n[Focus requested: {_squash(instructions, 500)}]"
        sections = [f"{section_heading(n)}\n{bodies[n]}" for n in range(1, 10)]
        return "\n\n".join([header, *sections])


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
    use = str(config.get("use") or "auto")
    if use not in SUMMARIZER_KINDS:
        raise UsageError(f"summarizer.use must be one of {', '.join(SUMMARIZER_KINDS)}, not {use!r}")
    if use == "auto":
        use = "anthropic" if (env.get("ANTHROPIC_API_KEY") or "").strip() or client is not None else "extractive"
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
        )
    return ExtractiveSummarizer()
