"""``ctxkit doctor``: find (and with ``--fix``, repair) what stops an agent from resuming a session."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from ..batch.results import FileResult
from ..errors import ExitCode
from .app import (
    FormatOpt,
    OutputOpt,
    PolicyOpt,
    SetOpt,
    StoreOpt,
    WindowOpt,
    app,
    handle_errors,
    print_warnings,
    stderr_console,
)
from .batch_cli import (
    BatchCommand,
    BatchReportOpt,
    InPlaceOpt,
    JobsOpt,
    OutDirOpt,
    ReportFileOpt,
    SchedulerOpt,
    SourcesArg,
    one_source,
    run_many,
    wants_batch,
)


@app.command()
@handle_errors
def doctor(
    sources: SourcesArg = None,
    as_json: Annotated[bool, typer.Option("--json", help='Print {"findings": [...]} on stdout instead of a line '
                                          "per finding.")] = False,
    policy: PolicyOpt = None,
    set_: SetOpt = None,
    fmt: FormatOpt = "auto",
    store: StoreOpt = None,
    context_window: WindowOpt = None,
    batch_report: BatchReportOpt = None,
    jobs: JobsOpt = None,
    scheduler: SchedulerOpt = None,
    report_file: ReportFileOpt = None,
) -> None:
    """Find what would make the agent's next request fail, or its resume fail or crawl.

    Each finding: FILE:LINE, the problem, what the API would answer, and the fix. Exit 1 when something
    would break the next request or the resume; bloat and other notes are reported and exit 0.
    """
    if wants_batch(params := dict(locals())):
        return run_many(DOCTOR, params)
    from ..reports.doctor import diagnose
    from ..tokens import budget_for
    from .run_setup import open_run

    source = one_source(sources)
    run = open_run(source, policy=policy, sets=set_, fmt=fmt, on_bad_line="skip", store=store, now=None,
                   context_window=context_window, dry_run=True, check_pairing=False)
    print_warnings(run.ctx.warnings)
    budget = budget_for(run.policy, context_window)
    result = diagnose(run.transcript, view_tokens=run.ctx.view_tokens(run.transcript).total,
                      context_window=budget.context_window, effective_window=budget.effective_window)
    name = run.transcript.source.name
    if as_json:
        sys.stdout.write(json.dumps(result.to_json(), ensure_ascii=False) + "\n")
    else:
        write_findings(name, result.findings)
    stderr_console().print(summary(name, result), markup=False)
    if result.errors:
        raise typer.Exit(int(ExitCode.CHECK_FAILED))


def write_findings(name: str, findings: list) -> None:
    out = sys.stdout
    for f in findings:
        out.write(f"{name}:{f.line}: {f.severity}: {f.problem}\n")
        if f.api_error:
            out.write(f"  api: {f.api_error}\n")
        out.write(f"  fix: {f.fix}\n")
    out.flush()


def summary(name: str, result) -> str:
    errors = len(result.errors)
    notes = len(result.findings) - errors
    line = (f"{name}: {errors} error{'s' if errors != 1 else ''}, {notes} note{'s' if notes != 1 else ''}"
            + ("" if errors else "; the next request and the resume should work"))
    if result.slim_bytes:
        line += (f"; --slim would move {result.slim_bytes:,} of {result.size:,} bytes to the store "
                 f"({100 * result.slim_bytes / max(1, result.size):.0f}%)")
    return line


# -- many sessions ----------------------------------------------------------------------------------------
def _figures(r: FileResult) -> dict[str, Any]:
    try:
        data = json.loads(r.stdout)
    except ValueError:
        return {}
    return {"_doctor": data} if isinstance(data, dict) else {}


def _render(results: list[FileResult], params: dict[str, Any]) -> None:
    from ..reports.doctor import Finding

    for r in results:
        data = r.figures.get("_doctor")
        if data is None:
            continue
        if params.get("as_json"):
            sys.stdout.write(json.dumps({"file": r.source, **data}, ensure_ascii=False) + "\n")
        else:
            write_findings(r.source, [Finding(f["line"], f["rule"], f["severity"], f["problem"], f["api_error"],
                                              f["fix"]) for f in data["findings"]])
    sys.stdout.flush()


DOCTOR = BatchCommand("doctor", "ctxkit.cli.doctor_cmd:doctor", writes=False, per_file=lambda params: {"as_json": True},
                      figures=_figures, render=_render)


_ = (Path, OutputOpt, InPlaceOpt, OutDirOpt)
