"""``ctxkit policy``: validate, show and describe policies."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Literal, Optional

import typer

from .. import load_policy, policy_schema, validate_policy_file
from ..errors import ExitCode, UsageError
from ..policy.layers import CLI_LABELS, Labels
from ..quoting import quote
from .app import PolicyOpt, SetOpt, WindowOpt, app, handle_errors, print_warnings, stderr_console
from .completion import complete_policy
from .conventions import CtxkitApp, choices_metavar
from .github import annotation

OutputFormat = Literal["text", "github"]

policy_app = CtxkitApp(help="Validate, show and describe policies.", no_args_is_help=True, add_completion=False)
app.add_typer(policy_app, name="policy")


@policy_app.command("validate")
@handle_errors
def validate(files: Annotated[list[str], typer.Argument(metavar="FILE|NAME", help="Policy files to check (e.g. "
                                                        ".ctxkit.yaml), or built-in policies' names.",
                                                        autocompletion=complete_policy)],
             output_format: Annotated[OutputFormat, typer.Option(
                 "--output-format", metavar=choices_metavar(OutputFormat), help="github: also print each problem "
                 "as a GitHub Actions annotation (::error file=,line=,col=::) on stdout.")] = "text") -> None:
    """Check policy files: every problem as file:line:col, all at once; exit 2 when any."""
    console = stderr_console()
    problems = []
    for f in files:
        problems.extend(validate_policy_file(f))
    if output_format == "github":
        for p in problems:
            sys.stdout.write(annotation(p.level, p.file, p.line, p.col,
                                        p.message + (f" ({p.hint})" if p.hint else "")))
    for p in problems:
        console.print(p.render(), markup=False)
    if problems:
        console.print(f"ctxkit: {len(problems)} problem{'s' if len(problems) != 1 else ''} in the policy",
                      markup=False)
        raise typer.Exit(int(ExitCode.USAGE))
    console.print(f"{', '.join(str(f) for f in files)}: ok", markup=False)


@policy_app.command("lint")
@handle_errors
def lint(file: Annotated[Optional[str], typer.Argument(
        metavar="FILE|NAME", help="A policy file or a built-in policy's name; default: the policy files a run "
                                    "here reads (your user policy and the repository's .ctxkit.yaml).",
        autocompletion=complete_policy)] = None,
         set_: SetOpt = None, context_window: WindowOpt = None) -> None:
    """Find settings that are valid but would not work as meant: a threshold a compaction cannot get under,
    a microcompact that breaks a warm cache, two proactive compactors, stages that undo each other. Each
    finding as file:line:col: level: message; exit 1 when any is an error, 2 when the policy is invalid."""
    from ..policy.lint import lint_policy
    from ..stages import REGISTRY

    console = stderr_console()
    result = lint_policy(file, list(set_ or []), stages=REGISTRY, cwd=Path.cwd(), context_window=context_window)
    for p in result.problems or result.findings:
        console.print(p.render(), markup=False)
    if result.problems:
        console.print(f"ctxkit: {len(result.problems)} problem{'s' if len(result.problems) != 1 else ''} in the "
                      "policy", markup=False)
        raise typer.Exit(int(ExitCode.USAGE))
    if not result.findings:
        console.print(f"{result.label}: ok", markup=False)
        return
    errors, warnings = result.errors, len(result.findings) - result.errors
    console.print(f"ctxkit: {errors} error{'s' if errors != 1 else ''}, {warnings} warning"
                  f"{'s' if warnings != 1 else ''} in {result.label}", markup=False)
    if errors:
        raise typer.Exit(int(ExitCode.CHECK_FAILED))


@policy_app.command("show")
@handle_errors
def show(name: Annotated[Optional[str], typer.Argument(
        metavar="FILE|NAME", help="A policy file or a built-in policy's name, as --policy takes it.",
        autocompletion=complete_policy)] = None,
         policy: PolicyOpt = None, set_: SetOpt = None) -> None:
    """Print the merged policy and, for each value, which file set it."""
    from ..policy import render_policy
    from ..run_context import model_warnings
    from .run_setup import guard_policy

    if name is not None and policy is not None:
        raise UsageError(f"name the policy once: {quote(name)} or --policy {quote(policy)}")
    # the argument is --policy given without the option: the same layers, named by itself in problems
    labels = CLI_LABELS if name is None else Labels(name, CLI_LABELS.setting)
    loaded = load_policy(name if name is not None else policy, list(set_ or []), cwd=Path.cwd(), labels=labels)
    print_warnings(model_warnings(loaded))
    guard_policy(loaded, summarizes=False, counts_tokens=False)
    sys.stdout.write(render_policy(loaded))


@policy_app.command("schema")
@handle_errors
def schema() -> None:
    """Print the policy JSON Schema (Draft 2020-12), with every stage's options, for editors."""
    sys.stdout.write(json.dumps(policy_schema(), indent=2) + "\n")
