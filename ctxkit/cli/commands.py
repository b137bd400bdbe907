"""The transcript commands: compact, view, stats, check, expand.

Over 400 lines because it holds five commands, each with its options declared in its signature (typer's
way); what they share over many inputs is in batch_cli.py and batch_commands.py. The library is imported
inside each command, so that ``ctxkit --help`` loads none of it (docs/benchmarks.md).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, Literal, Optional

import typer

from ..errors import ExitCode, TranscriptError, UsageError
from ..fileio import atomic_output, check_output, names_open_file
from ..side_files import parse_json
from .app import (
    BadLineOpt,
    FormatOpt,
    InputArg,
    NowOpt,
    OutputOpt,
    PolicyOpt,
    SetOpt,
    StoreOpt,
    WindowOpt,
    app,
    fail,
    handle_errors,
    print_warnings,
    stderr_console,
    warn_bad_lines,
)
from .batch_cli import (
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
from .batch_commands import CHECK, COMPACT, EXPAND, STATS
from .compact_report import afresh_input, print_compact_report, run_sources
from .completion import complete_stage
from .conventions import choices_metavar
from .github import annotation, last_line, threshold_annotation

MessagesFormat = Literal["anthropic", "openai"]
ViewFormat = Literal["anthropic", "openai", "anthropic-request"]
CompactReport = Literal["text", "json", "none"]
SystemMessages = Literal["auto", "keep", "fold"]
CheckLevel = Literal["warning", "autocompact", "blocking"]
OutputFormat = Literal["text", "github"]


@app.command()
@handle_errors
def compact(
    sources: SourcesArg = None,
    output: OutputOpt = None,
    policy: PolicyOpt = None,
    set_: SetOpt = None,
    fmt: FormatOpt = "auto",
    to: Annotated[Optional[MessagesFormat], typer.Option("--to", metavar=choices_metavar(MessagesFormat),
                                                         help="Write the view as messages of this API instead of "
                                                         "a transcript in the input's format.")] = None,
    on_bad_line: BadLineOpt = "fail",
    store: StoreOpt = None,
    now: NowOpt = None,
    context_window: WindowOpt = None,
    stage: Annotated[Optional[list[str]], typer.Option("--stage", metavar="STAGE", help="Run only this stage (id or name; "
                                                       "repeatable). Stages compose in a pipe.",
                                                       autocompletion=complete_stage)] = None,
    force: Annotated[bool, typer.Option("--force", help="Compact now regardless of thresholds (like /compact); "
                                        "also closes an open circuit breaker. A view the compaction made smaller "
                                        "but left over the threshold is a warning (exit 0).")] = False,
    instructions: Annotated[Optional[str], typer.Option("--instructions", metavar="FOCUS",
                                                        help="Focus for the summary.")] = None,
    session_memory: Annotated[Optional[Path], typer.Option("--session-memory", metavar="FILE", help="Markdown session notes "
                                                           "to use as the summary (session-memory compact).")] = None,
    state: Annotated[Optional[Path], typer.Option("--state", metavar="FILE", help="JSON of the current tools, agent types and MCP "
                                                  "servers, for the delta attachments.")] = None,
    queued: Annotated[Optional[Path], typer.Option("--queued", metavar="FILE", help="File of inputs queued while a turn ran, one "
                                                   "per line, delivered as user messages.")] = None,
    plan_mode: Annotated[Optional[bool], typer.Option("--plan-mode/--no-plan-mode", help="The session is (not) in "
                                                      "plan mode (default: from the transcript).")] = None,
    report: Annotated[CompactReport, typer.Option("--report", metavar=choices_metavar(CompactReport),
                                                  help="What to print on stderr: a line per stage, one "
                                                  "JSON object, or nothing (with several inputs: a summary, "
                                                  "one JSON object per file, or nothing).")] = "text",
    out_dir: OutDirOpt = None,
    in_place: InPlaceOpt = False,
    jobs: JobsOpt = None,
    scheduler: SchedulerOpt = None,
    report_file: ReportFileOpt = None,
    no_checkpoint: Annotated[bool, typer.Option("--no-checkpoint", help="Read the whole input, and keep no "
                                                "checkpoint of this run (by default a run whose input starts "
                                                "with what an earlier run read or wrote reads only the rest; "
                                                "docs/store.md).")] = False,
    fresh: Annotated[bool, typer.Option("--fresh", help="Decide everything again under the current policy: "
                                        "put back what earlier runs persisted or cleared (as expand does), set "
                                        "their frozen decisions aside (they still restore older outputs) and run "
                                        "on the original content. The bytes the model saw before change, so the "
                                        "next request misses the provider's prompt cache and pays for the whole "
                                        "prompt once (docs/policies.md).")] = False,
) -> None:
    """Run the policy's stages and write the compacted transcript.

    Example: ctxkit compact < session.jsonl > compacted.jsonl; many: ctxkit compact logs/ --out-dir compacted/ -j 4
    """
    if wants_batch(params := dict(locals())):
        return run_many(COMPACT, params)
    from ..pipeline import compile_pipeline
    from ..reports.outcome import failure_message, over_threshold_message
    from ..store.link import refuse_output_in_store
    from .run_setup import name_history, open_run

    source = one_source(sources)
    check_output(output)
    run = open_run(source, policy=policy, sets=set_, fmt=fmt, on_bad_line=on_bad_line, store=store, now=now,
                   context_window=context_window, force=force, instructions=instructions,
                   session_memory=session_memory, state_file=state, queued_file=queued, plan_mode=plan_mode,
                   summarizes=lambda pol: compile_pipeline(pol, only=stage).uses_summarizer(),
                   checkpoint=not (no_checkpoint or fresh), output=output,
                   fits=lambda pol, overhead: _window_fits(pol, context_window, only=stage, overhead=overhead,
                                                            force=force))
    refuse_output_in_store(output, run.ctx.store.root)  # before any work: the output would destroy the store
    if to is None and run.transcript.source.read_only:  # before any work (a summary a model is paid for)
        raise UsageError(f"{run.transcript.source.name}: {run.transcript.source.read_only}")
    start = afresh_input(run, source) if fresh else run.transcript
    name_history(run, output if output is not None and str(output) != "-" else source)
    if session_memory is not None and not session_memory.exists():
        run.ctx.warn(f"--session-memory {session_memory}: no such file yet; autocompact summarizes instead "
                     "(`ctxkit memory update` writes it)")
    pipeline = compile_pipeline(run.policy, only=stage)
    result = pipeline.run(start, run.ctx)
    run.write_output(result.transcript, output, to)
    failure = failure_message(result)
    too_big = None if failure else over_threshold_message(result, lambda: run.ctx.session_overhead(result.transcript))
    if too_big and force and any(r.use == "autocompact" and r.action == "applied" for r in result.reports):
        # compacted as asked (/compact): the view is smaller, if still over the threshold; a warning, exit 0
        result.warnings.append(too_big)
        too_big = None
    print_compact_report(result, report, sources=run_sources(run))
    if failure:
        raise fail(failure, ExitCode.CHECK_FAILED)
    if too_big:
        raise fail(too_big, ExitCode.CHECK_FAILED)


@app.command()
@handle_errors
def view(
    source: InputArg = "-",
    to: Annotated[ViewFormat, typer.Option("--to", metavar=choices_metavar(ViewFormat),
                                           help="anthropic (messages, one JSON per line), openai, or "
                                           "anthropic-request (one JSON request body for curl or the SDK).")]
    = "anthropic",
    output: OutputOpt = None,
    policy: PolicyOpt = None,
    set_: SetOpt = None,
    fmt: FormatOpt = "auto",
    on_bad_line: BadLineOpt = "fail",
    tag_ids: Annotated[Optional[bool], typer.Option("--tag-ids/--no-tag-ids", help="Append [id:xxxxxx] to each "
                                                    "real user message, for the snip tool (default: the policy's "
                                                    "snip stage option tag_ids).")] = None,
    now: Annotated[Optional[str], typer.Option("--now", metavar="TIME", help="anthropic-request: the ISO-8601 instant "
                                               "at which to judge whether the prompt cache is cold (microcompact's "
                                               "context_management edits); default: now.")] = None,
    max_tokens: Annotated[Optional[int], typer.Option("--max-tokens", metavar="TOKENS", help="anthropic-request: max_tokens "
                                                      "(default: the policy's max_output_tokens).", min=1)] = None,
    system: Annotated[Optional[Path], typer.Option("--system", metavar="FILE", help="anthropic-request: a file whose text is the "
                                                   "system prompt (default: the transcript's own, when it has one).")]
    = None,
    tools: Annotated[Optional[Path], typer.Option("--tools", metavar="FILE", help="anthropic-request: a JSON file with the list of "
                                                  "tool definitions (default: the transcript's own).")] = None,
    system_messages: Annotated[Optional[SystemMessages], typer.Option("--system-messages",
                                                                      metavar=choices_metavar(SystemMessages),
                                                                      help="anthropic-request: keep "
                                                           "mid-conversation system messages, fold them into user "
                                                           "messages as reminders, or auto (by model).")] = None,
    store: StoreOpt = None,
) -> None:
    """Print the view: the messages the model would be sent next, one JSON per line.

    With microcompact's mode cached, anthropic-request also deletes old tool results by cache edits,
    pinned in the store so later requests send them again in the same place.
    """
    from .. import load_policy
    from ..policy.layers import CLI_LABELS
    from ..run_context import model_warnings
    from ..side_files import check_side_file, read_side_text
    from ..stages.snip import tags_enabled
    from ..tokens.session import session_policy
    from ..transcript.reader import read_transcript, require_a_readable_line
    from ..transcript.snip_ids import tag_view
    from ..transcript.writer import sendable, write_messages
    from .run_setup import guard_policy, parse_now

    pol = load_policy(policy, list(set_ or []), cwd=Path.cwd(), labels=CLI_LABELS)
    check_side_file(system, "--system")  # refused before the transcript is read
    check_side_file(tools, "--tools")
    guard_policy(pol, summarizes=False)
    instant = parse_now(now)
    t = require_a_readable_line(read_transcript(source, fmt=fmt, on_bad_line=on_bad_line))
    pol = session_policy(pol, t)  # the session's own model and max_tokens, unless the policy names them
    print_warnings(model_warnings(pol))
    with atomic_output(output) as out:
        if to == "anthropic-request":
            from ..reports.cache_edits import store_for_request
            from ..reports.request import build_request, required_betas

            cache_store, note = store_for_request(pol, source, t, store)
            print_warnings([note] if note else [])
            body = build_request(t, pol, max_tokens=max_tokens, now=instant, system_messages=system_messages,
                                 tag_ids=tag_ids,
                                 system=read_side_text(system, "--system") if system else None,
                                 tools=_read_json_list(tools) if tools else None, store=cache_store)
            if cache_store is not None:
                cache_store.flush()  # the pins, saved before the request is written (docs/store.md's order)
            out.write(json.dumps(body, ensure_ascii=False).encode() + b"\n")
            betas = required_betas(body)
            if betas:
                stderr_console().print(f"ctxkit: note: send the header anthropic-beta: {','.join(betas)}",
                                       markup=False)
        else:
            v = t.view()
            if tags_enabled(pol) if tag_ids is None else tag_ids:
                v = tag_view(v)
            write_messages(sendable(v.api_messages(), to), out)
    warn_bad_lines(t)
    for note in t.view().notes:
        stderr_console().print(f"ctxkit: note: {note}", markup=False)


def _read_json_list(path: Path) -> list:
    from ..side_files import read_side_text

    try:
        value = parse_json(read_side_text(path, "--tools") or "")
    except ValueError as exc:
        raise UsageError(f"--tools {path}: {exc}") from None
    if not isinstance(value, list):
        raise UsageError(f"--tools {path}: expected a JSON list of tool definitions")
    return value


@app.command()
@handle_errors
def stats(
    sources: SourcesArg = None,
    policy: PolicyOpt = None,
    set_: SetOpt = None,
    fmt: FormatOpt = "auto",
    on_bad_line: BadLineOpt = "fail",
    store: StoreOpt = None,
    now: NowOpt = None,
    context_window: WindowOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON on stdout instead of tables.")] = False,
    batch_report: BatchReportOpt = None,
    jobs: JobsOpt = None,
    scheduler: SchedulerOpt = None,
    report_file: ReportFileOpt = None,
) -> None:
    """Where the tokens go, the level and thresholds, and what each stage of the policy would do.

    A simulation: nothing is written, and no model or summarizer command is called (the summary is
    the extractive one, reported under the name of the summarizer compact would use). Where compact
    would refuse the session before any work (exit 2: the thresholds do not fit the window or sit below
    the session's system prompt and tools), it says so in compact's words and predicts no stage. Exits 0
    at any level; ctxkit check is the command that fails on a level. With several sessions: their totals,
    tokens by tool and kind, and how their views sit against the thresholds.
    """
    if wants_batch(params := dict(locals())):
        return run_many(STATS, params)
    from ..reports.stats import view_stats
    from .run_setup import name_history, open_run

    source = one_source(sources)
    run = open_run(source, policy=policy, sets=set_, fmt=fmt, on_bad_line=on_bad_line, store=store, now=now,
                   context_window=context_window, dry_run=True)
    name_history(run, source)  # as compact without -o names it: the same summary, the same count
    print_warnings(run.ctx.warnings)
    data = view_stats(run.transcript, run.ctx)
    if as_json:
        sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        return
    _render_stats(data)


def _render_stats(data: dict) -> None:
    from rich.console import Console
    from rich.table import Table  # here, not at start-up: only `ctxkit stats` draws tables

    console = Console(file=sys.stdout, soft_wrap=True, highlight=False, markup=False, emoji=False)  # plain text
    b = data["budget"]
    if data["tokens_source"] == "usage":
        parts = f"{data['tokens_reported']:,} reported by the API + {data['tokens_estimated']:,} {data['estimator']} estimate"
    else:
        scale = data.get("tokens_estimate_scale", 1.0)
        times = f" x {scale:.3f}" if scale != 1.0 else ""
        kind = "calibrated overhead" if data.get("tokens_overhead_source") == "calibrated" else "overhead"
        parts = f"{data['tokens_estimated']:,} {data['estimator']} estimate{times} + {data['tokens_overhead']:,} {kind}"
    head = Table(title=f"{data['messages']} messages, {data['tokens']:,} tokens ({parts}), level: {data['level']}",
                 show_header=True)
    head.add_column("threshold")
    head.add_column("tokens", justify="right")
    for key in ("context_window", "effective_window", "warning_threshold", "autocompact_threshold", "blocking_limit"):
        head.add_row(key.replace("_", " "), f"{b[key]:,}")
    console.print(head)
    for title, key in (("by role", "by_role"), ("by kind", "by_kind"), ("by content block", "by_block"),
                       ("by tool", "by_tool")):
        table = Table(title=title)
        table.add_column(title.split()[-1])
        table.add_column("tokens", justify="right")
        table.add_column("share", justify="right")
        whole = max(1, sum(data[key].values()))  # per-block counts: shares of their own sum
        for name, n in data[key].items():
            table.add_row(str(name), f"{n:,}", f"{100 * n / whole:.1f}%")
        console.print(table)
    if data.get("refused"):
        console.print(f"what the policy would do: nothing; compact refuses this session (exit 2): {data['refused']}",
                      markup=False)
    elif "stages" in data:
        table = Table(title="what the policy would do")
        for col in ("stage", "action", "tokens before", "tokens after", "reason"):
            table.add_column(col)
        for s in data["stages"]:
            table.add_row(s["id"], s["action"], f"{s['tokens_before']:,}", f"{s['tokens_after']:,}", s["reason"])
        console.print(table)


def _window_fits(pol: Any, context_window: int | None, only: list[str] | None = None,
                 overhead: int = 0, force: bool = False) -> None:
    """``policy lint``'s fit check on the policy a run uses, in the run's window, and, without ``--force``, a
    threshold below the session's system prompt and tools (``overhead``) (exit 2 before any work:
    :func:`ctxkit.policy.lint.session_misfits`); not asked when ``--stage`` leaves autocompact out (nothing
    would compact)."""
    from ..pipeline import compile_pipeline
    from ..policy.lint import require_window_fit, session_misfits
    from ..stages.registry import REGISTRY

    if only and not any(s.name == "autocompact" for s in compile_pipeline(pol, only=only).stages):
        return
    require_window_fit(pol, REGISTRY, misfits=session_misfits(pol, REGISTRY, context_window, overhead, force=force))


@app.command()
@handle_errors
def check(
    sources: SourcesArg = None,
    level: Annotated[CheckLevel, typer.Option("--level", metavar=choices_metavar(CheckLevel),
                                              help="Fail (exit 1) when the view's tokens reach this threshold.")]
    = "autocompact",
    policy: PolicyOpt = None,
    set_: SetOpt = None,
    fmt: FormatOpt = "auto",
    on_bad_line: BadLineOpt = "fail",
    context_window: WindowOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout instead of a line.")]
    = False,
    output_format: Annotated[OutputFormat, typer.Option("--output-format", metavar=choices_metavar(OutputFormat),
                                                        help="github: print a GitHub Actions annotation "
                                                        "(::error file=,line=,col=::) per failing transcript "
                                                        "instead of the numbers.")] = "text",
    batch_report: BatchReportOpt = None,
    jobs: JobsOpt = None,
    scheduler: SchedulerOpt = None,
    report_file: ReportFileOpt = None,
) -> None:
    """Exit 1 when the view's tokens reach a threshold (for CI and hooks); prints the numbers."""
    if wants_batch(params := dict(locals())):
        return run_many(CHECK, params)
    from ..tokens import budget_for, require_autocompact_room
    from .run_setup import open_run

    source = one_source(sources)
    try:
        run = open_run(source, policy=policy, sets=set_, fmt=fmt, on_bad_line=on_bad_line, store=None, now=None,
                       context_window=context_window, dry_run=True)
    except TranscriptError as exc:
        if output_format == "github":
            sys.stdout.write(annotation("error", exc.source, exc.line, 1, exc.message))
        raise
    print_warnings(run.ctx.warnings)
    tokens = run.ctx.view_tokens(run.transcript).total
    budget = budget_for(run.policy, context_window)
    require_autocompact_room(budget, run.policy)
    limit = {"warning": budget.warning_threshold, "autocompact": budget.autocompact_threshold,
             "blocking": budget.blocking_limit}[level]
    state = budget.level(tokens)
    flagged = threshold_annotation(source, last_line(source), tokens, level, limit, state) \
        if output_format == "github" and tokens >= limit else None
    if as_json:
        doc = {
            "tokens": tokens, "level": state, "estimator": run.ctx.tokens.name,
            "fail_at": level, "threshold": limit, "failed": tokens >= limit,
            "thresholds": {"warning": budget.warning_threshold, "autocompact": budget.autocompact_threshold,
                           "blocking": budget.blocking_limit},
            "context_window": budget.context_window, "context_window_source": budget.source,
        }
        if output_format == "github":  # (what a batch in that format prints for this file)
            doc["annotation"] = flagged
        sys.stdout.write(json.dumps(doc) + "\n")
    elif output_format == "github":
        if flagged:
            sys.stdout.write(flagged)
    else:
        sys.stdout.write(f"{tokens} tokens; {level} threshold {limit}; level {state}\n")
    if tokens >= limit:
        raise typer.Exit(int(ExitCode.CHECK_FAILED))


@app.command()
@handle_errors
def expand(
    sources: SourcesArg = None,
    output: OutputOpt = None,
    fmt: FormatOpt = "auto",
    on_bad_line: BadLineOpt = "fail",
    store: StoreOpt = None,
    out_dir: OutDirOpt = None,
    in_place: InPlaceOpt = False,
    batch_report: BatchReportOpt = None,
    jobs: JobsOpt = None,
    scheduler: SchedulerOpt = None,
    report_file: ReportFileOpt = None,
    inline_agent_outputs: Annotated[bool, typer.Option(
        "--inline-agent-outputs", help="Also inline the agent's own <persisted-output> previews (Claude Code "
        "saves large tool outputs in tool-results/ beside the session) from those files. The output is then "
        "more than ctxkit took, not the transcript compact read; without it, expand gives back exactly what "
        "ctxkit took.")] = False,
) -> None:
    """Put back every tool output a stage moved to the store: nothing was lost.

    The output is byte for byte the transcript compact read: the agent's own <persisted-output>
    previews stay previews (see --inline-agent-outputs). Exit 1 when some outputs could not be
    restored: a placeholder or <persisted-output> whose original is not in the store (e.g. the wrong
    --store); everything else is restored and written.
    """
    if wants_batch(params := dict(locals())):
        return run_many(EXPAND, params)
    from ..stages.registry import undo_steps
    from ..store.disk import Store
    from ..store.link import find_store, refuse_output_in_store, unlink_store
    from ..store.original_lines import OriginalLines
    from ..transcript.appended import write_over
    from ..transcript.reader import read_transcript, require_a_readable_line
    from ..transcript.writer import write_transcript

    source = one_source(sources)
    from ..store.expand import expand_all as expand_transcript

    check_output(output)
    t = require_a_readable_line(read_transcript(source, fmt=fmt, on_bad_line=on_bad_line, check_pairing=False,
                                                keep=False))
    # whether the output names the input's file now: it may name another by the time the output is written
    onto_input = names_open_file(output, t.source.fd)
    store_dir, note = find_store(source, t, store, writing=False)  # --store, else the store the transcript names
    st = Store(store_dir, dry_run=True)  # expand only reads the store
    refuse_output_in_store(output, st.root)
    console = stderr_console()
    if note:
        print_warnings([note])
    if not st.root.is_dir():
        print_warnings([f"store folder {st.root} does not exist (--store names the folder compact used)"])
    search = [Path(source).resolve().parent] if source != "-" else []
    new, report = expand_transcript(t, st, search_dirs=search, undo=undo_steps(), agent_outputs=inline_agent_outputs)
    new = unlink_store(new)  # the transcript as it was: it depends on no store any more
    # restored lines get their original bytes; onto the session, what the agent appended meanwhile is kept
    write_over(t, new, output, lambda version, out: write_transcript(version, out, originals=OriginalLines(st, t)),
               onto_input=onto_input)
    warn_bad_lines(t)
    print_warnings(st.warnings)
    console.print(f"restored {len(report.restored)} tool output(s)"
                  + (f" and {report.lines} archived line(s)" if report.lines else ""), markup=False)
    print_warnings([f"did not read {path} (named by {what}): {why}" for what, path, why in report.refused])
    if report.missing:
        why = "; ".join(f"{n} {reason}" for reason, n in report.missing_by_reason().items())
        ids = ", ".join(tid or "?" for tid, _ in report.missing[:5]) + (", ..." if len(report.missing) > 5 else "")
        print_warnings([f"{len(report.missing)} tool output(s) could not be restored (store {st.root}): {why} "
                        f"[{ids}]"])
    if report.records:
        print_warnings([f"{len(report.records)} record(s) left in place, their originals not restored "
                        f"(store {st.root}): " + "; ".join(f"{kind} {blob}: {why}" for kind, blob, why in report.records)])
    if not report.complete:
        raise typer.Exit(int(ExitCode.CHECK_FAILED))
