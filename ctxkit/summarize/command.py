"""The ``command`` summarizer: any shell command that reads a prompt on stdin and prints a summary
(``llm``, ``claude -p``, a local model...), killed with its process group when it runs out of time."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping

from ..errors import LLMError, UsageError
from .bounded_io import FLOODED, TIMED_OUT, exchange
from .client import (
    _redact,
    _seconds,
    is_prompt_too_long,
    prompt_overflow_tokens,
)
from .deadline import Deadline
from .protocol import (
    DEFAULT_MAX_OUTPUT_TOKENS,
    DEFAULT_TIMEOUT_SECONDS,
    DEFAULT_TOTAL_TIMEOUT_SECONDS,
    TOTAL_TIMEOUT_KEY,
    _PromptedSummarizer,
)
from .render import render_transcript


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
            got = exchange(proc, prompt.encode("utf-8"), timeout=timeout,
                           out_limit=summary_bytes_limit(max_tokens))
        finally:
            _kill_group(proc)  # whatever it left behind (a child holding its stdout) goes with it
            _reap(proc)
        if got.ending == TIMED_OUT:
            limit = f" ({TOTAL_TIMEOUT_KEY}: {self.deadline.total:g}s)" if timeout < self.timeout_seconds else ""
            raise LLMError(f"{what} timed out after {_seconds(timeout)}s{limit}", retryable=True)
        if got.ending == FLOODED:
            raise LLMError(f"{what} printed more than {len(got.out):,} bytes, more than a summary of "
                           f"{int(max_tokens):,} tokens can be; it was stopped (a summary is read up to "
                           f"{SUMMARY_BYTES_PER_TOKEN} bytes per token of max_output_tokens, at least "
                           f"{MIN_SUMMARY_BYTES // (1 << 20)} MiB)")
        out, err = got.out, got.err_tail
        if got.returncode != 0:
            tail = _redact(_tail(err), secret)
            raise LLMError(
                f"the summarizer command {self._describe()!r} exited with status {got.returncode}"
                + (f":\n{tail}" if tail else " (no stderr)"),
                prompt_too_long=is_prompt_too_long(tail),
                overflow_tokens=prompt_overflow_tokens(tail),
            )
        # exit 0 with a child still holding stdout (``echo summary; sleep 600 &``): what it printed
        # before it exited is the summary (the child was killed with the group, whatever it printed after)
        text = out.decode("utf-8", "replace")
        if not text.strip():
            raise LLMError(f"malformed summary: the summarizer command {self._describe()!r} printed nothing")
        return text



#: a summary is read up to this many bytes per token of ``max_tokens`` (no tokenizer's tokens are
#: longer), and at least :data:`MIN_SUMMARY_BYTES`; a command that prints more is stopped
SUMMARY_BYTES_PER_TOKEN = 16
MIN_SUMMARY_BYTES = 8 << 20


def summary_bytes_limit(max_tokens: int) -> int:
    """The most bytes of stdout read from a summarizer command asked for ``max_tokens`` tokens."""
    return max(MIN_SUMMARY_BYTES, SUMMARY_BYTES_PER_TOKEN * int(max_tokens))


def _reap(proc: subprocess.Popen) -> None:
    """Collect the killed command's status; never wait long (it was killed with its group)."""
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL not delivered yet
        pass


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
