"""The transcript commands: compact, view, stats, check, expand."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from ..errors import ExitCode, UsageError
from ..expand import expand_all as expand_transcript
from ..fileio import atomic_output
from ..original_lines import OriginalLines
from ..pipeline import compile_pipeline
from ..stats import view_stats
from ..store import Store, default_store_dir
from ..tokens import budget_for, require_autocompact_room
from ..transcript import OUTPUT_FORMATS, read_transcript
from ..transcript.writer import write_messages, write_transcript
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
    check_choice,
    handle_errors,
    print_warnings,
    stderr_console,
    warn_bad_lines,
)
from .runtime import open_run

# Stage actions that mean "the pipeline did not do what the policy asked": exit code 1.
_FAILED_ACTIONS = ("failed", "breaker-open")


@app.command()
@handle_errors
def compact(
    source: InputArg = "-",
    output: OutputOpt = None,
    policy: PolicyOpt = None,
    set_: SetOpt = None,
    fmt: FormatOpt = "auto",
    to: Annotated[Optional[str], typer.Option("--to", help="Write the view as anthropic or openai messages "
                                              "instead of a transcript in the input's format.")] = None,
    on_bad_line: BadLineOpt = "fail",
    store: StoreOpt = None,
    now: NowOpt = None,
    context_window: WindowOpt = None,
    stage: Annotated[Optional[list[str]], typer.Option("--stage", help="Run only this stage (id or name; "
                                                       "repeatable). Stages compose in a pipe.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Compact now regardless of thresholds (like /compact); "
                                        "also closes an open circuit breaker.")] = False,
    instructions: Annotated[Optional[str], typer.Option("--instructions", help="Focus for the summary.")] = None,
    session_memory: Annotated[Optional[Path], typer.Option("--session-memory", help="Markdown session notes "
                                                           "to use as the summary (session-memory compact).")] = None,
    state: Annotated[Optional[Path], typer.Option("--state", help="JSON of the current tools, agent types and MCP "
                                                  "servers, for the delta attachments.")] = None,
    queued: Annotated[Optional[Path], typer.Option("--queued", help="File of inputs queued while a turn ran, one "
                                                   "per line, delivered as user messages.")] = None,
    plan_mode: Annotated[Optional[bool], typer.Option("--plan-mode/--no-plan-mode", help="The session is (not) in "
                                                      "plan mode (default: from the transcript).")] = None,
    report: Annotated[str, typer.Option("--report", help="What to print on stderr: text, json or none.")] = "text",
) -> None:
    """Run the policy's stages and write the compacted transcript.

    Example: ctxkit compact < session.jsonl > compacted.jsonl
    """
    check_choice(report, ("text", "json", "none"), "--report")
    if to is not None:
        check_choice(to, ("anthropic", "openai"), "--to")
    run = open_run(source, policy=policy, sets=set_, fmt=fmt, on_bad_line=on_bad_line, store=store, now=now,
                   context_window=context_window, force=force, instructions=instructions,
                   session_memory=session_memory, state_file=state, queued_file=queued, plan_mode=plan_mode)
    # where the full history can be read after compaction (the summary tells the model)
    history = output if output is not None and str(output) != "-" else (source if source != "-" else None)
    if history is not None:
        run.ctx.inputs.extra["transcript_path"] = str(Path(history).resolve())
    if session_memory is not None and not session_memory.exists():
        run.ctx.warn(f"--session-memory {session_memory}: no such file yet; autocompact summarizes instead "
                     "(`ctxkit memory update` writes it)")
    pipeline = compile_pipeline(run.policy, only=stage)
    result = pipeline.run(run.transcript, run.ctx)
    with atomic_output(output) as out:
        write_transcript(result.transcript, out, to)
    run.save()
    _print_report(result, report)
    if any(r.action in _FAILED_ACTIONS for r in result.reports):
        raise typer.Exit(int(ExitCode.CHECK_FAILED))


def _print_report(result, mode: str) -> None:
    console = stderr_console()
    if mode == "json":
        console.print(json.dumps(result.to_json(), indent=2, ensure_ascii=False), markup=False)
        return
    if mode == "none":
        return
    for warning in result.warnings:
        console.print(f"ctxkit: warning: {warning}", markup=False)
    for r in result.reports:
        if r.action in ("skipped", "nothing-to-do") and not r.warnings:
            line = f"{r.stage_id}: {r.action}" + (f" ({r.reason})" if r.reason else "")
        else:
            line = (f"{r.stage_id}: {r.action}: {r.reason}" if r.reason else f"{r.stage_id}: {r.action}")
            if r.tokens_before != r.tokens_after:
                line += f" [{r.tokens_before:,} -> {r.tokens_after:,} tokens]"
        console.print(line, markup=False)
        for w in r.warnings:
            if not any(g.endswith(w) for g in result.warnings):  # printed above already
                console.print(f"  warning: {w}", markup=False)
    console.print(f"view: {result.tokens_before:,} -> {result.tokens_after:,} tokens", markup=False)


@app.command()
@handle_errors
def view(
    source: InputArg = "-",
    to: Annotated[str, typer.Option("--to", help="anthropic (messages, one JSON per line), openai, or "
                                    "anthropic-request (one JSON request body for curl or the SDK).")] = "anthropic",
    output: OutputOpt = None,
    policy: PolicyOpt = None,
    set_: SetOpt = None,
    fmt: FormatOpt = "auto",
    on_bad_line: BadLineOpt = "fail",
    tag_ids: Annotated[Optional[bool], typer.Option("--tag-ids/--no-tag-ids", help="Append [id:xxxxxx] to each "
                                                    "real user message, for the snip tool (default: the policy's "
                                                    "snip stage option tag_ids).")] = None,
    now: NowOpt = None,
    max_tokens: Annotated[Optional[int], typer.Option("--max-tokens", help="anthropic-request: max_tokens "
                                                      "(default: the policy's max_output_tokens).", min=1)] = None,
    system: Annotated[Optional[Path], typer.Option("--system", help="anthropic-request: a file whose text is the "
                                                   "system prompt (default: the transcript's own, when it has one).")]
    = None,
    tools: Annotated[Optional[Path], typer.Option("--tools", help="anthropic-request: a JSON file with the list of "
                                                  "tool definitions (default: the transcript's own).")] = None,
    system_messages: Annotated[Optional[str], typer.Option("--system-messages", help="anthropic-request: keep "
                                                           "mid-conversation system messages, fold them into user "
                                                           "messages as reminders, or auto (by model).")] = None,
) -> None:
    """Print the view: the messages the model would be sent next, one JSON per line."""
    from ..policy import load_policy
    from ..stages.snip import tags_enabled
    from ..transcript.plain import to_openai
    from ..transcript.snip_ids import tag_view
    from .runtime import parse_now

    check_choice(to, tuple(f for f in OUTPUT_FORMATS if f != "claude-code"), "--to")
    if system_messages is not None:
        check_choice(system_messages, ("auto", "keep", "fold"), "--system-messages")
    pol = load_policy(policy, list(set_ or []), cwd=Path.cwd())
    instant = parse_now(now)
    t = read_transcript(source, fmt=fmt, on_bad_line=on_bad_line)
    with atomic_output(output) as out:
        if to == "anthropic-request":
            from ..request import build_request, required_betas

            body = build_request(t, pol, max_tokens=max_tokens, now=instant, system_messages=system_messages,
                                 tag_ids=tag_ids,
                                 system=system.read_text(encoding="utf-8") if system else None,
                                 tools=_read_json_list(tools) if tools else None)
            out.write(json.dumps(body, ensure_ascii=False).encode() + b"\n")
            betas = required_betas(body)
            if betas:
                stderr_console().print(f"ctxkit: note: send the header anthropic-beta: {','.join(betas)}",
                                       markup=False)
        else:
            v = t.view()
            if tags_enabled(pol) if tag_ids is None else tag_ids:
                v = tag_view(v)
            msgs = v.api_messages()
            write_messages(to_openai(msgs) if to == "openai" else msgs, out)
    warn_bad_lines(t)
    for note in t.view().notes:
        stderr_console().print(f"ctxkit: note: {note}", markup=False)


def _read_json_list(path: Path) -> list:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"--tools {path}: {exc}") from None
    if not isinstance(value, list):
        raise UsageError(f"--tools {path}: expected a JSON list of tool definitions")
    return value


@app.command()
@handle_errors
def stats(
    source: InputArg = "-",
    policy: PolicyOpt = None,
    set_: SetOpt = None,
    fmt: FormatOpt = "auto",
    on_bad_line: BadLineOpt = "fail",
    store: StoreOpt = None,
    now: NowOpt = None,
    context_window: WindowOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON on stdout instead of tables.")] = False,
) -> None:
    """Where the tokens go, the thresholds, and what each stage of the policy would do (nothing is written)."""
    run = open_run(source, policy=policy, sets=set_, fmt=fmt, on_bad_line=on_bad_line, store=store, now=now,
                   context_window=context_window, dry_run=True)
    print_warnings(run.ctx.warnings)
    data = view_stats(run.transcript, run.ctx)
    if as_json:
        sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        return
    _render_stats(data)


def _render_stats(data: dict) -> None:
    from rich.console import Console

    console = Console(file=sys.stdout, soft_wrap=True, highlight=False)
    b = data["budget"]
    head = Table(title=f"{data['messages']} messages, {data['tokens']:,} tokens ({data['estimator']} estimate), "
                 f"level: {data['level']}", show_header=True)
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
    if "stages" in data:
        table = Table(title="what the policy would do")
        for col in ("stage", "action", "tokens before", "tokens after", "reason"):
            table.add_column(col)
        for s in data["stages"]:
            table.add_row(s["id"], s["action"], f"{s['tokens_before']:,}", f"{s['tokens_after']:,}", s["reason"])
        console.print(table)


@app.command()
@handle_errors
def check(
    source: InputArg = "-",
    level: Annotated[str, typer.Option("--level", help="Fail at this level: warning, autocompact or blocking.")]
    = "autocompact",
    policy: PolicyOpt = None,
    set_: SetOpt = None,
    fmt: FormatOpt = "auto",
    on_bad_line: BadLineOpt = "fail",
    context_window: WindowOpt = None,
) -> None:
    """Exit 1 when the view's tokens reach a threshold (for CI and hooks); prints the numbers."""
    check_choice(level, ("warning", "autocompact", "blocking"), "--level")
    run = open_run(source, policy=policy, sets=set_, fmt=fmt, on_bad_line=on_bad_line, store=None, now=None,
                   context_window=context_window, dry_run=True)
    print_warnings(run.ctx.warnings)
    tokens = run.ctx.tokens.count_messages(run.transcript.view().api_messages())
    budget = budget_for(run.policy, context_window)
    require_autocompact_room(budget, run.policy)
    limit = {"warning": budget.warning_threshold, "autocompact": budget.autocompact_threshold,
             "blocking": budget.blocking_limit}[level]
    state = budget.level(tokens)
    sys.stdout.write(f"{tokens} tokens; {level} threshold {limit}; level {state}\n")
    if tokens >= limit:
        raise typer.Exit(int(ExitCode.CHECK_FAILED))


@app.command()
@handle_errors
def expand(
    source: InputArg = "-",
    output: OutputOpt = None,
    fmt: FormatOpt = "auto",
    on_bad_line: BadLineOpt = "fail",
    store: StoreOpt = None,
) -> None:
    """Put back every tool output a stage moved to the store: nothing was lost.

    Exit 1 when some outputs could not be restored: a placeholder or <persisted-output> whose
    original is not in the store (e.g. the wrong --store); everything else is restored and written.
    """
    t = read_transcript(source, fmt=fmt, on_bad_line=on_bad_line, check_pairing=False)
    st = Store(store or default_store_dir(source), dry_run=True)  # expand only reads the store
    console = stderr_console()
    if not st.root.is_dir():
        print_warnings([f"store folder {st.root} does not exist (--store names the folder compact used)"])
    search = [Path(source).resolve().parent] if source != "-" else []
    new, report = expand_transcript(t, st, search_dirs=search)
    with atomic_output(output) as out:
        write_transcript(new, out, originals=OriginalLines(st, t))  # restored lines: their original bytes
    warn_bad_lines(t)
    print_warnings(st.warnings)
    console.print(f"restored {len(report.restored)} tool output(s)", markup=False)
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
