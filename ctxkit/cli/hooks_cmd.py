"""``ctxkit hooks``: ctxkit in Claude Code's hooks (install, uninstall, and the two hook commands).

See :mod:`ctxkit.integrations.claude_code_settings` (the settings file) and
:mod:`ctxkit.integrations.claude_code_hooks` (what the hooks print), and docs/hooks.md.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from ..errors import CtxkitError, PolicyError, UsageError
from ..quoting import clip
from .app import PolicyOpt, app, handle_errors, print_warnings, stderr_console
from .conventions import CtxkitApp

hooks_app = CtxkitApp(help="Claude Code hooks: ctxkit steers Claude Code's own compactions (PreCompact's "
                      "instructions, and after it what the summary lost). See docs/hooks.md.",
                      no_args_is_help=True, add_completion=False)
app.add_typer(hooks_app, name="hooks")

ProjectOpt = Annotated[bool, typer.Option("--project", help="The project's .claude/settings.json (the git root "
                                          "above the working folder, else the working folder). The default.")]
UserOpt = Annotated[bool, typer.Option("--user", help="The user's ~/.claude/settings.json (every project).")]


def _settings(project: bool, user: bool) -> Path:
    from ..integrations.claude_code_settings import settings_path

    if project and user:
        raise UsageError("--project and --user name different settings files: give one")
    return settings_path("user" if user else "project", Path.cwd())


@hooks_app.command("install")
@handle_errors
def install(project: ProjectOpt = False, user: UserOpt = False) -> None:
    """Add ctxkit's PreCompact and SessionStart (compact) hooks to Claude Code's settings.

    Everything else in the file stays as it is, byte for byte; installing twice changes nothing. Claude
    Code runs 'ctxkit hooks pre-compact' and 'ctxkit hooks session-start': the ctxkit command must be found
    where Claude Code looks for commands.
    """
    import shutil

    from ..integrations.claude_code_settings import install as install_hooks

    stderr_console().print(install_hooks(_settings(project, user)).message(), markup=False)
    if shutil.which("ctxkit") is None:
        print_warnings(["no 'ctxkit' command on this PATH: Claude Code runs the hooks as 'ctxkit hooks ...', "
                        "so put the folder of ctxkit's command (the virtualenv's bin) on the PATH it starts with"])


@hooks_app.command("uninstall")
@handle_errors
def uninstall(project: ProjectOpt = False, user: UserOpt = False) -> None:
    """Take ctxkit's hooks out of Claude Code's settings: the file is left as it was before install."""
    from ..integrations.claude_code_settings import uninstall as uninstall_hooks

    stderr_console().print(uninstall_hooks(_settings(project, user)).message(), markup=False)


#: The exit code Claude Code reports and goes on after (2 would block the compaction).
NON_BLOCKING = 1


def _answer(command: str, policy: str | None) -> None:
    """Run one hook on the JSON input on stdin: its answer on stdout; on any failure, a line on stderr
    and exit 1, which Claude Code shows and goes on after (a hook never breaks the session)."""
    from ..integrations.claude_code_hooks import answer

    try:
        out = answer(command, sys.stdin.buffer.read(), policy=policy, cwd=Path.cwd())
    except PolicyError as exc:
        message = "; ".join(p.render() for p in exc.problems[:3])
    except CtxkitError as exc:
        message = exc.message
    except Exception as exc:  # noqa: BLE001 - a hook must never break the session
        message = f"internal error: {type(exc).__name__}: {clip(str(exc))} (please report it)"
    else:
        if out:
            sys.stdout.write(out + "\n")
        return
    stderr_console().print(f"ctxkit hooks {command}: {message}; Claude Code goes on without it", markup=False)
    raise typer.Exit(NON_BLOCKING)


@hooks_app.command("pre-compact")
def pre_compact(policy: PolicyOpt = None) -> None:
    """PreCompact hook: print the summary's instructions and what it must keep (Claude Code adds them to its own).

    Reads the hook's JSON input on stdin (transcript_path, cwd, trigger). Any failure: a line on stderr
    and exit 1, so the compaction goes on without it.
    """
    _answer("pre-compact", policy)


@hooks_app.command("session-start")
def session_start(policy: PolicyOpt = None) -> None:
    """SessionStart hook: after a compaction, print what it dropped and how to get each back.

    Reads the hook's JSON input on stdin (source, transcript_path, cwd); with source 'compact', prints
    JSON whose hookSpecificOutput.additionalContext (at most 10,000 characters) Claude Code adds to the
    context; otherwise nothing. Any failure: a line on stderr and exit 1.
    """
    _answer("session-start", policy)
