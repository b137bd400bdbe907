"""``ctxkit memory``: session-memory notes (``memory update``)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

import typer

from ..errors import ExitCode, LLMError
from .app import (
    BadLineOpt,
    FormatOpt,
    InputArg,
    NowOpt,
    PolicyOpt,
    SetOpt,
    StoreOpt,
    app,
    handle_errors,
    print_warnings,
    stderr_console,
)
from .conventions import CtxkitApp, choices_metavar

MemoryReport = Literal["text", "json"]

memory_app = CtxkitApp(help="Session memory: markdown notes kept during a session, used as the summary by "
                         "session-memory compact.", no_args_is_help=True, add_completion=False)
app.add_typer(memory_app, name="memory")


@memory_app.command("update")
@handle_errors
def memory_update(
    source: InputArg = "-",
    session_memory: Annotated[Path, typer.Option("--session-memory", metavar="FILE", help="The notes file to write or refresh.")]
    = Path("session-memory.md"),
    policy: PolicyOpt = None,
    set_: SetOpt = None,
    fmt: FormatOpt = "auto",
    on_bad_line: BadLineOpt = "fail",
    store: StoreOpt = None,
    now: NowOpt = None,
    report: Annotated[MemoryReport, typer.Option("--report", metavar=choices_metavar(MemoryReport),
                                                 help="What to print on stderr: a line, or one JSON "
                                                 "object.")] = "text",
) -> None:
    """Write or refresh the session notes (with the policy's summarizer) and record the last message they cover."""
    from ..stages.autocompact.session_memory import update_in_context
    from ..summarize.redaction_report import describe as describe_redaction
    from .run_setup import open_run

    run = open_run(source, policy=policy, sets=set_, fmt=fmt, on_bad_line=on_bad_line, store=store, now=now,
                   context_window=None, session_memory=session_memory, summarizes=lambda pol: True)
    print_warnings(run.ctx.warnings)
    try:
        result = update_in_context(run.transcript, run.ctx, session_memory)
    except LLMError as exc:
        stderr_console().print(f"ctxkit: error: the summarizer failed: {exc.message}; the notes were left as they "
                               "were", markup=False)
        raise typer.Exit(int(ExitCode.CHECK_FAILED)) from None
    run.save()
    console = stderr_console()
    if report == "json":
        console.print(json.dumps(result.to_json(), indent=2, ensure_ascii=False), markup=False)
    else:
        console.print(f"memory: {result.action} {result.path} ({result.summarized_messages} messages, up to "
                      f"{result.last_id}) by {result.summarizer}", markup=False)
        redacted = describe_redaction(result.details.get("redacted") or {})
        if redacted:
            console.print(redacted, markup=False)
