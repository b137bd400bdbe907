"""``ctxkit sessions``: the agent sessions on this machine (:mod:`ctxkit.reports.sessions`)."""
from __future__ import annotations

import json
import sys
from typing import Annotated, Optional

import typer

from .app import app, handle_errors


@app.command("sessions")
@handle_errors
def sessions_cmd(
    agent: Annotated[Optional[str], typer.Option(
        "--agent", metavar="NAME",
        help="Only this agent's sessions: claude-code, codex, gemini, opencode, cline, cursor or aider.")] = None,
    since: Annotated[Optional[str], typer.Option(
        "--since", metavar="DATE", help="Only sessions used since DATE (2026-03-01, or a time; UTC).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list (each path an input of batch).")] = False,
) -> None:
    """List the agent sessions on this machine where each agent keeps them, newest first: last use, agent,
    size, tokens and path, one line each."""
    from ..reports.sessions import find_sessions, parse_since

    found = find_sessions(agent=agent, since=parse_since(since) if since else None)
    if as_json:
        sys.stdout.write(json.dumps([s.to_json() for s in found], indent=2, ensure_ascii=False) + "\n")
        return
    for s in found:
        tokens = f"{s.tokens:,}" if s.tokens is not None else "?"
        sys.stdout.write(f"{s.last_used}  {s.agent:<11}  {s.size:>12,}  {tokens:>10}  {s.path}\n")
    for s in found:
        if s.error:
            sys.stderr.write(f"ctxkit: warning: {s.path}: {s.error}\n")
