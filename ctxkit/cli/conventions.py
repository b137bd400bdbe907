"""What a user expects of any command line tool, in one place: one error style, quiet pipes, help that names values.

- **One error style.** Typer's option parser reports a bad command line its own way
  (``Usage: … Try … Error: Invalid value …``). :class:`CtxkitGroup` runs the parser in
  non-standalone mode and prints those errors like every other ctxkit error: the first line
  on stderr is ``ctxkit: error: …``, then a hint (``Try 'ctxkit compact -h' for help.``);
  exit 2.
- **A closed pipe is not a failure.** ``ctxkit stats FILE | head -1``: the reader goes away,
  the next write raises ``EPIPE``; typer and rich both turn that into exit 1. Here it exits
  0, silently, as ``cat`` does.
- **Help names what a value is, not its Python type.** Typer prints an argument as
  ``FILE <str>`` even when it has a metavar; :class:`CtxkitCommand` prints just the metavar.
  Options name their value with ``metavar=`` where they are declared (see ``app.py``).

Typer bundles its own Click and exports none of its exception classes but ``BadParameter``;
every one of them derives from the public :class:`typer.TyperException`, which is what is
caught here (never ``import click``).
"""
from __future__ import annotations

import os
import re
import sys
from typing import Any, get_args

import typer
import typer.main
from typer.core import TyperCommand, TyperGroup

from ..errors import ExitCode
from ..quoting import QUOTE_LIMIT, quote
from .quick_values import install as install_quick_values


def choices_metavar(choices: Any) -> str:
    """``[a|b|c]`` for a ``Literal["a", "b", "c"]``: the help shows the choices, not ``<str>``."""
    return "[" + "|".join(get_args(choices)) + "]"


class CtxkitCommand(TyperCommand):
    """A command whose help lists an argument by its metavar (``FILE``), without typer's ``<str>``,
    and whose plainly valid values are converted without pydantic (:mod:`.quick_values`)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        install_quick_values(self, ctx)
        return super().parse_args(ctx, args)

    def format_options(self, ctx: Any, formatter: Any) -> None:
        arguments, options = [], []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if param.param_type_name == "argument":
                arguments.append((param.metavar or param.name.upper(), record[1]))
            else:
                options.append(record)
        for title, rows in (("Arguments", arguments), ("Options", options)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


class CtxkitApp(typer.Typer):
    """A :class:`typer.Typer` whose commands are :class:`CtxkitCommand` unless told otherwise, and
    that builds only the command it runs."""

    def command(self, name: str | None = None, *, cls: Any = None, **kwargs: Any) -> Any:
        return super().command(name, cls=cls or CtxkitCommand, **kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run the command line. Typer turns every registered command into a Click command before it
        parses anything (a third of the start-up of ``ctxkit compact``, docs/benchmarks.md): when
        the first argument names a command, only that one is built. Anything else (``--help``, a
        mistyped name, which needs the others for its "did you mean", shell completion) builds
        them all."""
        argv = kwargs.get("args", sys.argv[1:])
        name = argv[0] if argv and not any(k.endswith("_COMPLETE") for k in os.environ) else None
        commands = [c for c in self.registered_commands
                    if (c.name or typer.main.get_command_name(getattr(c.callback, "__name__", ""))) == name]
        groups = [g for g in self.registered_groups if g.name == name]
        if len(commands) + len(groups) != 1:
            return super().__call__(*args, **kwargs)
        everything = self.registered_commands, self.registered_groups
        self.registered_commands, self.registered_groups = commands, groups
        try:
            return super().__call__(*args, **kwargs)
        finally:
            self.registered_commands, self.registered_groups = everything


class CtxkitGroup(TyperGroup):
    """The root command: parses and runs like typer's, but reports usage errors in ctxkit's style
    and treats a reader that closed the pipe as success. ``CliRunner`` goes through here too."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        install_quick_values(self, ctx)  # --version: its value is converted like a command's
        return super().parse_args(ctx, args)

    def main(self, args: Any = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
            code = code if isinstance(code, int) else 0  # typer returns the code of a typer.Exit
            sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's last flush
        except typer.TyperException as exc:
            code = report_usage_error(exc)
        except typer.Abort:
            print("ctxkit: error: aborted", file=sys.stderr)
            code = int(ExitCode.USAGE)
        except BrokenPipeError:
            code = closed_pipe()
        except SystemExit as exc:
            # typer (for --help) and rich (for tables) exit 1 on EPIPE, from inside its handler
            if not isinstance(exc.__context__, BrokenPipeError):
                raise
            code = closed_pipe()
        if standalone_mode:
            sys.exit(code)
        return code


def closed_pipe() -> int:
    """The reader of stdout went away (``| head``): not ctxkit's failure. Point stdout at the null
    device so that the interpreter's final flush does not complain, and exit 0."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # not a real file (a test runner's buffer)
        pass
    return int(ExitCode.OK)


def report_usage_error(exc: typer.TyperException) -> int:
    """Print a parser error as ``ctxkit: error: …`` plus a hint; return its exit code."""
    ctx = getattr(exc, "ctx", None)
    if type(exc).__name__ == "NoArgsIsHelpError":  # `ctxkit` or `ctxkit policy` alone: the help
        print(ctx.get_help() if ctx is not None else exc.format_message(), file=sys.stderr)
        return int(ExitCode.USAGE)
    print(f"ctxkit: error: {usage_message(exc.format_message())}", file=sys.stderr)
    if ctx is not None and ctx.help_option_names:
        print(f"Try '{ctx.command_path} {ctx.help_option_names[0]}' for help.", file=sys.stderr)
    return int(getattr(exc, "exit_code", ExitCode.USAGE))


def usage_message(text: str) -> str:
    """Click's sentence in ctxkit's voice: lower case, no final period, hints in parentheses.

    ``Invalid value for '--to': Value error, 'x' is not one of 'a', 'b'.`` becomes
    ``invalid value for '--to': 'x' is not one of 'a', 'b'``;
    ``No such command 'compac'. Did you mean 'compact'?`` becomes
    ``no such command 'compac' (did you mean 'compact'?)``.
    """
    text = text.strip().replace("Value error, ", "")  # pydantic's prefix on a validator's message
    # the parser echoes a bad value whole: a 1 MB argument must still give a short line
    text = re.sub(r"'([^']{%d,})'" % (QUOTE_LIMIT + 1), lambda m: quote(m[1]), text)
    text = re.sub(r"\. Did you mean (.+\?)$", r" (did you mean \1)", text)
    text = re.sub(r"\(Possible options: ([^)]*)\)$", r"(possible options: \1)", text)
    text = re.sub(r"(^|: )([A-Z])(?=[a-z ])", lambda m: m[1] + m[2].lower(), text)
    return text[:-1] if text.endswith(".") else text
