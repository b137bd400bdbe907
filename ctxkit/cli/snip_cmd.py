"""``ctxkit snip``: remove user-turn ranges named by their short message ids."""
from __future__ import annotations

from typing import Annotated

import typer

from ..errors import UsageError
from .app import (
    BadLineOpt,
    FormatOpt,
    InputArg,
    NowOpt,
    OutputOpt,
    PolicyOpt,
    SetOpt,
    StoreOpt,
    app,
    handle_errors,
    print_warnings,
    stderr_console,
)


@app.command()
@handle_errors
def snip(
    source: InputArg = "-",
    ids: Annotated[str, typer.Option("--ids", metavar="ID,...", help="Comma-separated short message ids ([id:xxxxxx] tags in the "
                                     "view) of the user turns to remove.")] = "",
    output: OutputOpt = None,
    policy: PolicyOpt = None,
    set_: SetOpt = None,
    fmt: FormatOpt = "auto",
    on_bad_line: BadLineOpt = "fail",
    store: StoreOpt = None,
    now: NowOpt = None,
) -> None:
    """Remove whole user turns named by their short ids; the removal is recorded so that a resumed session sees it."""
    from ..pipeline import compile_pipeline
    from .run_setup import open_run

    wanted = tuple(x.strip() for x in ids.split(",") if x.strip())
    if not wanted:
        raise UsageError("--ids needs at least one id (the [id:xxxxxx] tags shown by `ctxkit view --tag-ids`)")
    run = open_run(source, policy=policy, sets=set_, fmt=fmt, on_bad_line=on_bad_line, store=store, now=now,
                   context_window=None, snip_ids=wanted, output=output)
    print_warnings(run.ctx.warnings)
    result = compile_pipeline(run.policy, only=["snip"]).run(run.transcript, run.ctx)
    run.write_output(result.transcript, output)
    for r in result.reports:
        stderr_console().print(f"{r.stage_id}: {r.action}" + (f": {r.reason}" if r.reason else ""), markup=False)
