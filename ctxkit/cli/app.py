"""The typer application, the options commands share, and the one place errors become exit codes.

Commands stay thin: parse, call one library function, render on stderr with
rich, write data to stdout (or ``-o FILE``, atomically).
"""
from __future__ import annotations

import functools
import gc
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Literal, Optional

import typer

from .. import __version__
from ..errors import CtxkitError, ExitCode, PolicyError, UsageError
from ..fileio import Terminated, terminate_cleanly
from ..quoting import clip, quote
from .completion import complete_policy
from .conventions import CtxkitApp, CtxkitGroup, choices_metavar

EXIT_CODES_HELP = (
    "Exit codes: 0 ok; 1 a threshold check failed (ctxkit check), a stage failed, autocompact's circuit breaker "
    "is open or the compacted view is still over the autocompact threshold (ctxkit compact; after --force, which "
    "made it smaller, a warning), the summarizer "
    "failed (ctxkit memory update), or ctxkit expand could not restore some output; "
    "2 usage or policy error, or an input that does not exist or cannot be opened (one input or many); "
    "3 bad transcript (a file read that is not one); 4 internal error."
)

app = CtxkitApp(
    name="ctxkit",
    cls=CtxkitGroup,
    help="Manage the context window of LLM agent sessions: read a transcript, run the policy's stages, "
    "write a transcript whose view fits the budget.\n\n" + EXIT_CODES_HELP,
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _print_version(value: bool) -> None:
    if value:
        sys.stdout.write(f"ctxkit {__version__}\n")
        raise typer.Exit()


@app.callback()
def _root(version: Annotated[Optional[bool], typer.Option("--version", callback=_print_version, is_eager=True,
                                                          help="Print ctxkit's version and exit.")] = None) -> None:
    pass


class PlainConsole:
    """Where ctxkit's messages go: standard error, plain text, a line per ``print``. Never wrapped at 80
    columns (exact-text tests read it); no markup and no emoji codes, so a message prints the text it
    holds (``<stdin>:100:`` stays ``:100:``, a ``[red]`` in a value stays ``[red]``).

    What rich's console, so set up, printed, without loading rich (a tenth of a run's start-up, and
    most runs print a few lines): the control codes it removes are removed (bell, backspace, vertical
    tab, form feed, carriage return), tabs are expanded to 8 columns. Progress bars and tables take
    rich's own console (:func:`rich_stderr_console`)."""

    def print(self, *objects: object, markup: bool = False, sep: str = " ", end: str = "\n") -> None:
        text = sep.join(map(str, objects)).translate(_REMOVED_CONTROL_CODES)
        if "\t" in text:
            text = "\n".join(_expand_tabs(line) for line in text.split("\n"))
        sys.stderr.write(text + end)
        sys.stderr.flush()


_REMOVED_CONTROL_CODES = dict.fromkeys((7, 8, 11, 12, 13))


def _expand_tabs(line: str, size: int = 8) -> str:
    """Tabs to spaces up to the next stop, counting terminal cells (a wide character takes two)."""
    import unicodedata

    out, column = [], 0
    for ch in line:
        if ch == "\t":
            pad = size - column % size
            out.append(" " * pad)
            column += pad
            continue
        out.append(ch)
        column += 0 if unicodedata.combining(ch) else 2 if unicodedata.east_asian_width(ch) in "WF" else 1
    return "".join(out)


def stderr_console() -> PlainConsole:
    """The diagnostics console (see :class:`PlainConsole`)."""
    return PlainConsole()


def rich_stderr_console() -> Any:
    """rich's console on standard error, set up as :class:`PlainConsole` prints: for progress and tables."""
    from rich.console import Console

    return Console(file=sys.stderr, soft_wrap=True, highlight=False, markup=False, emoji=False)


def fail(message: str, code: ExitCode) -> typer.Exit:
    stderr_console().print(f"ctxkit: error: {message}", markup=False)
    return typer.Exit(int(code))


#: Set while a batch runs a command on one of its files (:func:`ctxkit.cli.batch_cli.run_file`): Ctrl-C or
#: SIGTERM then stops the whole batch instead of being reported as that one file's failure.
_interrupts_propagate = threading.local()


@contextmanager
def interrupts_propagate() -> Iterator[None]:
    """While the block runs, a command interrupted by Ctrl-C or SIGTERM re-raises the interruption (its
    temporary files already removed) instead of exiting 4 with a message."""
    before = getattr(_interrupts_propagate, "on", False)
    _interrupts_propagate.on = True
    try:
        yield
    finally:
        _interrupts_propagate.on = before


@contextmanager
def cycle_collector(on: bool) -> Iterator[None]:
    """Python's cycle collector on or off while the block runs (then as it was).

    A command runs off: reading a transcript allocates millions of containers that live to the end of
    the run (the parsed entries), and the collector scans them again and again to find nothing (they
    hold no cycles; a whole 50 MB compaction leaves ~500 objects in cycles). That was a fifth of the
    CPU time of a large compaction (docs/benchmarks.md). Reference counting frees everything else as
    usual. A batch turns it back on around its engine (:func:`ctxkit.cli.batch_cli.run_many`): it runs
    for long, with Dask's machinery; each file's command turns it off again for that file."""
    before = gc.isenabled()
    gc.enable() if on else gc.disable()
    try:
        yield
    finally:
        gc.enable() if before else gc.disable()


def handle_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Map ctxkit's errors to messages and exit codes; never show a traceback to a user."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            # SIGTERM unwinds like Ctrl-C: no temporary file is left behind
            with terminate_cleanly(), cycle_collector(on=False):
                return fn(*args, **kwargs)
        except typer.Exit:
            raise
        except PolicyError as exc:
            console = stderr_console()
            for problem in exc.problems:
                console.print(problem.render(), markup=False)
            n = len(exc.problems)
            console.print(f"ctxkit: {n} problem{'s' if n != 1 else ''} in the policy", markup=False)
            raise typer.Exit(int(ExitCode.USAGE)) from None
        except CtxkitError as exc:
            raise fail(exc.message, exc.exit_code) from None
        except BrokenPipeError:
            # the reader went away (e.g. `| head`): not ctxkit's failure; silence the final flush too
            try:
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            except (OSError, ValueError, AttributeError):
                pass
            raise typer.Exit(0) from None
        except OSError as exc:
            # a folder or file named on the command line that cannot be read or written (the store, -o,
            # --state...): the user's to fix, not a bug; nothing half-written is left behind
            where = f": {quote(str(exc.filename))}" if getattr(exc, "filename", None) else ""
            raise fail(f"{exc.strerror or exc}{where}", ExitCode.USAGE) from None
        except KeyboardInterrupt as exc:
            if getattr(_interrupts_propagate, "on", False):
                raise  # one file of a batch: the batch stops, and says so once
            # every file is either as it was or whole (docs/store.md): the output is replaced last
            how = "terminated" if isinstance(exc, Terminated) else "interrupted"
            raise fail(f"{how}; no file was left half-written", ExitCode.INTERNAL) from None
        except Exception as exc:  # noqa: BLE001 - the last line of defence
            if os.environ.get("CTXKIT_DEBUG"):
                raise
            raise fail(f"internal error: {type(exc).__name__}: {clip(str(exc))} (set CTXKIT_DEBUG=1 for a traceback; "
                       "please report it)", ExitCode.INTERNAL) from None

    return wrapper


# -- shared options ---------------------------------------------------------------------------------
# Every option names what it holds (metavar) or lists its choices; tests/test_cli_conventions.py checks
# that no help shows a Python type.
InputFormat = Literal["auto", "claude-code", "anthropic", "openai", "codex", "gemini"]
BadLine = Literal["fail", "skip"]

InputArg = Annotated[str, typer.Argument(metavar="FILE", help="Transcript file, or - for standard input.",
                                         show_default=True)]
OutputOpt = Annotated[Optional[Path], typer.Option("--output", "-o", metavar="FILE",
                                                   help="Write here (atomically) instead of stdout.")]
PolicyOpt = Annotated[Optional[str], typer.Option("--policy", "-p", metavar="FILE|NAME", help="A policy file, or a "
                                                  "built-in policy's name (default, no-llm, claude-code-full).",
                                                  autocompletion=complete_policy)]
SetOpt = Annotated[Optional[list[str]], typer.Option("--set", metavar="KEY=VALUE", help="Override one policy value "
                                                     "(e.g. thresholds.autocompact_buffer=20000). Repeatable.")]
FormatOpt = Annotated[InputFormat, typer.Option("--format", "-f", metavar=choices_metavar(InputFormat),
                                                help="Input format (auto: detected from the first lines).")]
BadLineOpt = Annotated[BadLine, typer.Option("--on-bad-line", metavar=choices_metavar(BadLine),
                                             help="fail: stop at the first unreadable line (exit 3); skip: keep it "
                                             "untouched in the output, leave it out of the view, warn.")]
StoreOpt = Annotated[Optional[Path], typer.Option("--store", metavar="DIR", help="Store folder for persisted outputs "
                                                  "and decisions (default: .ctxkit/ beside the transcript file, or in "
                                                  "the working directory for stdin).")]
NowOpt = Annotated[Optional[str], typer.Option("--now", metavar="TIME", help="Pretend the time is this ISO-8601 "
                                               "instant (microcompact's cache gap, dates, timestamps).")]
WindowOpt = Annotated[Optional[int], typer.Option("--context-window", metavar="TOKENS", help="Context window in "
                                                  "tokens; overrides the policy and the model table.", min=1000)]


def print_warnings(warnings: list[str]) -> None:
    console = stderr_console()
    for warning in warnings:
        console.print(f"ctxkit: warning: {warning}", markup=False)


def warn_bad_lines(t) -> None:
    """Under ``--on-bad-line skip``: say how many lines were left out, and the first ones."""
    bad = t.info.bad_lines
    if bad.count:
        print_warnings([f"skipped {bad.count} unreadable line(s); first: {bad.first[0]}"])


def check_choice(value: str, choices: tuple[str, ...], option: str) -> str:
    if value not in choices:
        raise UsageError(f"{option} must be one of {', '.join(choices)}, got {quote(value)}")
    return value
