"""``ctxkit doctor``: find (and with ``--fix``, repair) what stops an agent from resuming a session."""
from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer

from ..batch.results import FileResult
from ..errors import ExitCode, UsageError
from ..fileio import check_output
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
    fix: Annotated[bool, typer.Option("--fix", help="Repair what would make the next request fail, and write the "
                                      "repaired session (stdout, -o FILE, --in-place or --out-dir); every rewritten "
                                      "entry is archived in the store, so ctxkit expand gives the input back.")] = False,
    slim: Annotated[bool, typer.Option("--slim", help="With --fix: also move what the agent reads on --resume and "
                                       "never sends again (toolUseResult copies, file-history-snapshot lines, history "
                                       "behind the last compact boundary) into the store.")] = False,
    output: OutputOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help='Print {"findings": [...]} instead of a line per finding '
                                          "(on stdout; with --fix on stderr, the session going to stdout).")] = False,
    policy: PolicyOpt = None,
    set_: SetOpt = None,
    fmt: FormatOpt = "auto",
    store: StoreOpt = None,
    context_window: WindowOpt = None,
    batch_report: BatchReportOpt = None,
    out_dir: OutDirOpt = None,
    in_place: InPlaceOpt = False,
    jobs: JobsOpt = None,
    scheduler: SchedulerOpt = None,
    report_file: ReportFileOpt = None,
) -> None:
    """Find what would make the agent's next request fail, or its resume fail or crawl; --fix repairs it.

    Each finding: FILE:LINE, the problem, what the API would answer, and the fix. Exit 1 when something
    would break the next request or the resume (with --fix: when something is left unrepaired); bloat and
    other notes are reported and exit 0.
    """
    if wants_batch(params := dict(locals())):
        return run_many(DOCTOR_FIX if fix else DOCTOR, params)
    from ..reports.doctor import diagnose
    from ..tokens import budget_for
    from .run_setup import open_run

    source = one_source(sources)
    if output is not None and not fix:
        raise UsageError("-o writes the repaired session: it goes with --fix")
    if slim and not fix:
        raise UsageError("--slim rewrites the session: it goes with --fix")
    if fix:
        check_output(output)
    run = open_run(source, policy=policy, sets=set_, fmt=fmt, on_bad_line="skip", store=store, now=None,
                   context_window=context_window, dry_run=not fix, check_pairing=False, unreadable=True,
                   output=output if fix else None)
    print_warnings(run.ctx.warnings)
    budget = budget_for(run.policy, context_window)

    tokens: list[int] = []  # the view's tokens: of the session, then of the repaired one

    def examine(t):
        tokens.append(run.ctx.view_tokens(t).total)
        return diagnose(t, view_tokens=tokens[-1], context_window=budget.context_window,
                        effective_window=budget.effective_window)

    found = examine(run.transcript)
    name = run.transcript.source.name
    left = found
    repaired: list = []
    unreadable = [f for f in found.errors if f.rule == "unparseable-line"]
    if fix and unreadable and run.transcript.format != "claude-code":
        # a repaired session must expand back to the input byte for byte: a plain message list has no place
        # for the record that names where an unreadable line went, so nothing is written (docs/doctor.md)
        report = sys.stderr
        if as_json:
            data = found.to_json()
            data.update(repaired=[], left=[f.to_json() for f in found.errors], tokens=tokens[0], tokens_after=tokens[0])
            report.write(json.dumps(data, ensure_ascii=False) + "\n")
            report.flush()
        else:
            write_findings(name, found.findings, report)
        stderr_console().print(summary(name, found), markup=False)
        stderr_console().print(f"{name}: repaired 0 problem(s); {len(found.errors)} left; nothing written: "
                               f"{len(unreadable)} line(s) the agent cannot read"
                               + "".join(f"\n  {name}:{f.line}: not repaired: {f.problem}" for f in unreadable),
                               markup=False)
        raise typer.Exit(int(ExitCode.CHECK_FAILED))
    if fix:
        from ..pipeline import compile_pipeline
        from ..store.link import refuse_output_in_store
        from ..transcript.appended import onto_its_input, partial_last_line

        refuse_output_in_store(output, run.ctx.store.root)
        result = compile_pipeline(run.policy, only=["repair", *(["slim"] if slim else [])]).run(run.transcript, run.ctx)
        fixed, partial = result.transcript, partial_last_line(run.transcript)
        kept = partial is not None and onto_its_input(run.transcript, output, run.onto_input)
        if kept:  # an unended last line may be one the agent is still writing: onto the session, it stays
            fixed = fixed.without_edits([partial])  # as it is (docs/doctor.md), and is reported as left
        repaired = [d for r in result.reports for d in r.details.get("repaired", [])
                    if not (kept and d["rule"] == "unparseable-line" and d["line"] == partial + 1)]
        print_warnings([f"{r.stage_id}: {r.reason}" for r in result.reports if r.action == "skipped" and r.reason])
        left = examine(fixed)
        run.write_output(fixed, output)
        slimmed = sum(r.details.get("lines", 0) for r in result.reports if r.use == "slim")
    report = sys.stderr if fix else sys.stdout  # with --fix, stdout may carry the repaired session
    if as_json:
        data = found.to_json()
        data["tokens"] = tokens[0]
        if fix:
            data.update(repaired=repaired, left=[f.to_json() for f in left.errors], tokens_after=tokens[-1])
        report.write(json.dumps(data, ensure_ascii=False) + "\n")
        report.flush()
    else:
        write_findings(name, found.findings, report)
    stderr_console().print(summary(name, found), markup=False)
    if fix:
        stderr_console().print(f"{name}: repaired {len(repaired)} problem(s); {len(left.errors)} left"
                               + (f"; {slimmed:,} line(s) slimmed" if slim else "")
                               + "".join(f"\n  {name}:{f.line}: not repaired: {f.problem}" for f in left.errors),
                               markup=False)
    if left.errors:
        raise typer.Exit(int(ExitCode.CHECK_FAILED))


def write_findings(name: str, findings: list, out=None) -> None:
    out = out or sys.stdout
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
        line += (f"; --slim would move about {result.slim_bytes:,} of {result.size:,} bytes to the store "
                 f"({100 * result.slim_bytes / max(1, result.size):.0f}%)")
    return line


# -- many sessions ----------------------------------------------------------------------------------------
def _figures(r: FileResult) -> dict[str, Any]:
    try:
        data = json.loads(r.stdout)
    except ValueError:
        return {}
    return _with_tokens(data) if isinstance(data, dict) else {}


def _with_tokens(data: dict[str, Any]) -> dict[str, Any]:
    """The summary's figures: the view's tokens before and after (the repair), and the findings."""
    before = data.get("tokens") or 0
    return {"tokens_before": before, "tokens_after": data.get("tokens_after", before), "_doctor": data}


def _fix_figures(r: FileResult) -> dict[str, Any]:
    from .batch_commands import json_in

    data = json_in(r.stderr)
    return _with_tokens(data) if isinstance(data, dict) else {}


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
        if "repaired" in data:  # --fix: what was repaired and what is left, as for one file with -o
            left = data.get("left") or []
            stderr_console().print(f"{r.source}: repaired {len(data['repaired'])} problem(s); {len(left)} left"
                                   + "".join(f"\n  {r.source}:{f['line']}: not repaired: {f['problem']}" for f in left),
                                   markup=False)
    sys.stdout.flush()


DOCTOR = BatchCommand("doctor", "ctxkit.cli.doctor_cmd:doctor", writes=False, per_file=lambda params: {"as_json": True},
                      figures=_figures, render=_render)
DOCTOR_FIX = BatchCommand("doctor", "ctxkit.cli.doctor_cmd:doctor", writes=True,
                          per_file=lambda params: {"as_json": True}, figures=_fix_figures, render=_render)
