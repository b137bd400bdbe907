"""Commands beyond the transcript basics: snip, tools, memory."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Literal

import typer

from ..errors import ExitCode, LLMError, UsageError
from ..quoting import quote
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
from .conventions import CtxkitApp, choices_metavar
from .run_setup import open_run

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
    from ..summarize.redact import describe as describe_redaction

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

    wanted = tuple(x.strip() for x in ids.split(",") if x.strip())
    if not wanted:
        raise UsageError("--ids needs at least one id (the [id:xxxxxx] tags shown by `ctxkit view --tag-ids`)")
    run = open_run(source, policy=policy, sets=set_, fmt=fmt, on_bad_line=on_bad_line, store=store, now=now,
                   context_window=None, snip_ids=wanted)
    print_warnings(run.ctx.warnings)
    result = compile_pipeline(run.policy, only=["snip"]).run(run.transcript, run.ctx)
    run.write_output(result.transcript, output)
    for r in result.reports:
        stderr_console().print(f"{r.stage_id}: {r.action}" + (f": {r.reason}" if r.reason else ""), markup=False)


tools_app = CtxkitApp(help="Tool definitions an agent can offer its model.", no_args_is_help=True,
                        add_completion=False)
app.add_typer(tools_app, name="tools")


@tools_app.command("snip")
@handle_errors
def tools_snip(as_json: Annotated[bool, typer.Option("--json", help="Print the definition as JSON.")] = False
               ) -> None:
    """The `snip` tool's definition (Messages API tool schema): offer it to a model so it can remove turns."""
    from ..reports.tool_definitions import snip_tool

    tool = snip_tool()
    if as_json:
        sys.stdout.write(json.dumps(tool, indent=2) + "\n")
    else:
        sys.stdout.write(f"{tool['name']}: {tool['description']}\n")



@app.command("stages")
@handle_errors
def stages_cmd(name: Annotated[str, typer.Argument(metavar="STAGE", help="A stage's name, to print its documentation.")] = "") -> None:
    """List the stages a policy can use, with their options and defaults; or document one stage."""
    import inspect

    from ..policy.hints import did_you_mean
    from ..stages import REGISTRY

    if name:
        cls = REGISTRY.get(name)
        if cls is None:
            hint = did_you_mean(name, REGISTRY)
            raise UsageError(f"unknown stage {quote(name)}{f' ({hint})' if hint else ''}; known: {', '.join(sorted(REGISTRY))}")
        # a stage documents itself in its class docstring, or (a longer text) in its module's
        doc = cls.__doc__ or ""
        module_doc = inspect.getmodule(cls).__doc__ or ""
        if len(module_doc) > len(doc):
            doc = module_doc
        sys.stdout.write(inspect.cleandoc(doc or cls.summary) + "\n\noptions (defaults):\n")
        sys.stdout.write(_options_text(cls))
        return
    for stage_name in sorted(REGISTRY):
        cls = REGISTRY[stage_name]
        sys.stdout.write(f"{stage_name}: {cls.summary}\n{_options_text(cls)}\n")


def _default_of(spec: dict):
    """A property's default, or the defaults of its own properties for a nested object."""
    if "default" in spec:
        return spec["default"]
    nested = {k: _default_of(v) for k, v in spec.get("properties", {}).items()}
    nested = {k: v for k, v in nested.items() if v is not None}
    return nested or None


def _options_text(cls) -> str:
    lines = []
    for key, spec in cls.options_schema.get("properties", {}).items():
        default = json.dumps(_default_of(spec)) if _default_of(spec) is not None else "(none)"
        lines.append(f"  {key} = {default}" + (f"  # {spec['description']}" if spec.get("description") else ""))
    return "\n".join(lines) + "\n"
