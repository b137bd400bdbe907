"""Errors that reach the user, each with the exit code the CLI maps it to.

One place (``ctxkit.cli.main``) turns these into messages and exit codes, so
library code raises; it never prints or exits.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


class ExitCode(IntEnum):
    """Named exit codes, documented in ``ctxkit --help`` and the README."""

    OK = 0
    CHECK_FAILED = 1  # a check failed: threshold, autocompact failed / breaker open / view still over, expand
    USAGE = 2  # bad command line or bad policy
    BAD_TRANSCRIPT = 3  # the transcript could not be read
    INTERNAL = 4  # a bug in ctxkit


class CtxkitError(Exception):
    """Base class: a problem ctxkit reports with a message and an exit code."""

    exit_code: ExitCode = ExitCode.INTERNAL

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class UsageError(CtxkitError):
    """The command line asks for something impossible (a clear, one-line message)."""

    exit_code = ExitCode.USAGE


@dataclass(frozen=True)
class Problem:
    """One policy problem, rendered as ``file:line:col: error: message`` plus an optional hint."""

    file: str
    line: int
    col: int
    message: str
    hint: str | None = None
    level: str = "error"

    def render(self) -> str:
        text = f"{self.file}:{self.line}:{self.col}: {self.level}: {self.message}"
        if self.hint:
            text += f" ({self.hint})"
        return text


class WriteError(CtxkitError):
    """The disk refused a write (no space, file too large, permission denied, read-only...): names the
    file. An environment problem for the user to fix, with the usage exit code; nothing half-written
    is left behind (:mod:`ctxkit.fileio`)."""

    exit_code = ExitCode.USAGE

    def __init__(self, path: str, exc: OSError):
        self.path = path
        self.errno = exc.errno
        super().__init__(f"cannot write {path}: {exc.strerror or exc}")


class PolicyError(CtxkitError):
    """Every problem found in the policy layers, reported all at once."""

    exit_code = ExitCode.USAGE

    def __init__(self, problems: list[Problem]):
        self.problems = list(problems)
        super().__init__("\n".join(p.render() for p in self.problems))


class TranscriptError(CtxkitError):
    """A transcript line that cannot be read; names the file and the line."""

    exit_code = ExitCode.BAD_TRANSCRIPT

    def __init__(self, source: str, line: int, message: str):
        self.source = source
        self.line = line
        super().__init__(f"{source}:{line}: {message}")


class NoReadableLine(TranscriptError):
    """A transcript none of whose lines could be read, under ``--on-bad-line skip``: there is nothing to
    work on, so nothing is done (a row, a view or a compacted file of no line would say the session was
    empty). Names the file (line 0: the whole file) and its first unreadable line."""

    def __init__(self, source: str, count: int, first: str):
        self.source = source
        self.line = 0
        CtxkitError.__init__(self, f"{source}: no line of it is readable ({count} unreadable line(s); first: {first})")


class InputError(TranscriptError):
    """A transcript that cannot be opened at all (no such file, a folder, permission denied): the command
    line names something that is not a readable file. A usage error (exit 2), the same whether it is the
    only input or one of many (a batch says ``no such file or folder`` before any work); exit 3 is kept for
    a file that was read and is not a transcript. Still a :class:`TranscriptError` naming the file (line 0:
    the whole file), so that callers catching those and annotations naming the file see it."""

    exit_code = ExitCode.USAGE


class LLMError(CtxkitError):
    """A summarizer failed (network, API error, malformed answer)."""

    exit_code = ExitCode.INTERNAL

    def __init__(self, message: str, *, prompt_too_long: bool = False, overflow_tokens: int | None = None,
                 retryable: bool = False):
        super().__init__(message)
        self.prompt_too_long = prompt_too_long
        self.overflow_tokens = overflow_tokens
        self.retryable = retryable
