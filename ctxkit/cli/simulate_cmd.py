"""``ctxkit simulate`` and ``ctxkit report``: what policies would have done to recorded sessions, and cost."""
from __future__ import annotations

import io
import json
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from ..errors import CtxkitError, UsageError
from ..fileio import atomic_output, check_output
from ..quoting import quote
from .app import BadLineOpt, OutputOpt, SetOpt, WindowOpt, app, handle_errors, print_warnings, stderr_console
from .completion import complete_policy

if TYPE_CHECKING:
    from ..policy.model import Policy

SessionsArg = Annotated[list[str], typer.Argument(metavar="SESSION", help="Sessions to replay (any agent ctxkit reads): files, "
                                                  "folders (every session file below, by its content; hidden folders skipped) or globs; "
                                                  "a ctxkit proxy's store: each conversation it served.")]


def _session_files(args: list[str]) -> list[str]:
    """The transcripts the arguments name, expanded the way every batch command expands them."""
    from ..batch.inputs import expand_inputs, is_url
    if "-" in args:  # a replay reads its session more than once: it needs a file
        raise UsageError("simulate replays transcript files, not standard input; save it to a file first")
    items = expand_inputs(args)
    remote = [i.source for i in items if is_url(i.source)]
    if remote:
        raise UsageError(f"simulate reads local files only; copy {quote(remote[0])} here first")
    return [i.source for i in items]


def _proxy_logs(args: list[str], tmp: Path) -> tuple[list[str], dict[str, str]]:
    """:func:`ctxkit.proxy.request_log.as_sessions`, each warning printed as it comes."""
    from ..proxy.request_log import as_sessions
    return as_sessions(args, tmp, lambda w: print_warnings([w]))


def _relabel(doc: dict[str, Any], results: list[dict[str, Any]], labels: dict[str, str]) -> None:
    for s in [*doc["sessions"], *results]:
        s["session"] = labels.get(s["session"], s["session"])


PoliciesOpt = Annotated[Optional[list[str]], typer.Option(
    "--policy", "-p", metavar="FILE|NAME", help="A policy to simulate (file or built-in name); repeat to compare "
    "several side by side (default: the policy compact would use).", autocompletion=complete_policy)]
PricingOpt = Annotated[Optional[Path], typer.Option("--pricing", metavar="FILE", help="A JSON pricing table to use "
                                                    "instead of the shipped one (same shape; see docs/simulate.md).")]
SummariesAsOpt = Annotated[Optional[str], typer.Option(
    "--price-summaries-as", metavar="MODEL", help="Price each offline (extractive) summary as a request to MODEL, "
    "made as Claude Code makes one, so masking and summarizing policies compare fairly.")]


def _policies(names: list[str] | None, sets: list[str] | None, sweep: str | None, context_window: int | None = None
              ) -> tuple[list[tuple[str, Policy]], tuple[str, list[str]] | None]:
    """The rows to simulate: each --policy, or one row per --sweep value of the first policy; each must fit
    the window (``policy lint``'s fit check: a row that cannot is a usage error before any replay)."""
    from ..pipeline import compile_pipeline
    from ..policy.lint import require_window_fit
    from ..stages.registry import REGISTRY
    from .run_setup import guard_policy, make_policy
    names = list(names or [None])  # type: ignore[list-item]
    if sweep is None:
        rows = [(name or _label(make_policy(None, sets)), make_policy(name, sets)) for name in names]
        parsed = None
    else:
        setting, sep, values = sweep.partition("=")
        choices = list(dict.fromkeys(v.strip() for v in values.split(",") if v.strip()))  # each value once
        if not sep or not setting.strip() or not choices:
            raise UsageError(f"--sweep must look like SETTING=V1,V2,... (e.g. thresholds.autocompact_buffer=13000,40000), "
                             f"got {quote(sweep)}")
        base = names[0]
        label = base or _label(make_policy(None, sets))
        rows = [(f"{label} {setting.strip()}={v}", make_policy(base, [*(sets or []), f"{setting.strip()}={v}"]))
                for v in choices]
        parsed = (setting.strip(), choices)
    for label, pol in rows:
        guard_policy(pol, summarizes=compile_pipeline(pol).uses_summarizer())
        require_window_fit(pol, REGISTRY, context_window, label=label if len(rows) > 1 else None)
    return rows, parsed


def _label(pol: Policy) -> str:
    layers = [name for name in pol.layers if name != "--set"]
    return Path(layers[-1]).stem if layers else "default"


@app.command("simulate")
@handle_errors
def simulate_cmd(
    sessions: SessionsArg,
    policy: PoliciesOpt = None,
    set_: SetOpt = None,
    context_window: WindowOpt = None,
    pricing: PricingOpt = None,
    sweep: Annotated[Optional[str], typer.Option("--sweep", metavar="SETTING=V1,V2,...", help="One row per value of one "
                                                 "policy setting (of the first --policy); the cheapest that never "
                                                 "went over the window is marked.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout instead of tables.")] = False,
    summaries_as: SummariesAsOpt = None,
    on_bad_line: BadLineOpt = "fail",
) -> None:
    """Replay sessions request by request under policies: context, compactions, tokens and cost.

    Rows: recorded (what the session was billed), replayed (the same session through the cost model,
    to check it), none (no context management, the whole history; requests over the window are
    failures) and each policy, compared with none and replayed. Nothing is written; with no API key
    the summaries are extractive. Example: ctxkit simulate session.jsonl -p default -p no-llm
    """
    # the replay machinery and rich's tables load when this command runs, not with every ctxkit command
    from ..reports.pricing import load_pricing
    from ..reports.simulate import simulate

    rows, parsed = _policies(policy, set_, sweep, context_window)
    prices = load_pricing(pricing)
    failed: list[int] = []

    def skip(path: str, exc: CtxkitError) -> None:  # one bad session does not stop the others (docs/batch.md)
        stderr_console().print(f"ctxkit: error: {exc.message}", markup=False)
        failed.append(int(exc.exit_code))

    with tempfile.TemporaryDirectory(prefix="ctxkit-proxy-sessions-") as tmp:
        args, labels = _proxy_logs(sessions, Path(tmp))
        doc, results = simulate(_session_files(args), rows, prices, context_window=context_window, cwd=Path.cwd(),
                                sweep=parsed, on_error=skip, summaries_as=summaries_as, on_bad_line=on_bad_line)
    _relabel(doc, results, labels)
    if failed and not doc["sessions"]:
        raise typer.Exit(max(failed))
    for s in doc["sessions"]:
        print_warnings([f"{s['session']}: {w}" for w in s["warnings"]])
    _print_simulation(doc, parsed, as_json)
    if failed:
        raise typer.Exit(max(failed))


def _print_simulation(doc: dict[str, Any], parsed: tuple[str, list[str]] | None, as_json: bool) -> None:
    """The tables (or the JSON document) on stdout."""
    from rich.console import Console

    if as_json:
        sys.stdout.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
        return
    tables = [_table(s, f"{s['session']} ({s['model'] or 'model unknown'}, window {s['context_window']:,}, cache {s['cache_ttl']})")
              for s in doc["sessions"]]
    if len(doc["sessions"]) > 1:
        tables.append(_table(doc["total"], f"total ({doc['total']['sessions']} sessions)"))
    # data on stdout: plain text, as wide as it needs when piped (rich would squeeze it into 80 columns),
    # no padding at the ends of lines
    console = Console(file=io.StringIO(), highlight=False, markup=False, emoji=False,
                      width=None if sys.stdout.isatty() else 220)
    for table in tables:
        console.print(table)
    lines = [line.rstrip() for line in console.file.getvalue().splitlines()]
    if parsed:
        best = doc["total"]["sweep"]["cheapest"]
        lines.append(f"cheapest {parsed[0]} that never went over the window: {best}" if best is not None else
                     f"every {parsed[0]} went over the window at least once")
    sys.stdout.write("\n".join(lines) + "\n")


def _table(s: dict[str, Any], title: str) -> Any:
    """One session's rows (or the total's) as a table; * marks the sweep's cheapest row."""
    from rich import box
    from rich.table import Table

    from ..reports.simulate import ROW_KEYS

    table = Table(title=title, box=box.SIMPLE, title_justify="left")
    for head in ("row", "requests", "peak", "compactions", "failures", "input", "cache write", "cache read",
                 "output", "USD", "vs none", "vs replayed"):
        table.add_column(head, justify="left" if head == "row" else "right")
    best = (s.get("sweep") or {}).get("cheapest")
    values = (s.get("sweep") or {}).get("values") or []

    def change(r: dict[str, Any], base: dict[str, Any]) -> str:
        # a policy is compared with the modelled rows only: the recorded one carries the model's error
        return "" if r is base or not base["cost_usd"] else f"{(r['cost_usd'] - base['cost_usd']) / base['cost_usd']:+.0%}"

    for k, r in enumerate([s["recorded"], s["replayed"], s["none"], *s["policies"]]):
        mark = " *" if best is not None and k >= 3 and values[k - 3] == best else ""
        versus = (change(r, s["none"]), change(r, s["replayed"])) if k >= 2 else ("", "")
        table.add_row(r["policy"] + mark, *(f"{r[key]:,}" for key in ROW_KEYS[1:4]), f"{r['failures']:,}",
                      *(f"{r[key]:,}" for key in ROW_KEYS[4:8]), f"{r['cost_usd']:.4f}", *versus)
    if s["sidechain"]["requests"]:
        r = s["sidechain"]
        table.add_row("sidechain", *(f"{r[key]:,}" for key in ROW_KEYS[1:4]), "", *(f"{r[key]:,}" for key in ROW_KEYS[4:8]),
                      f"{r['cost_usd']:.4f}", "", "")
    return table


@app.command("report")
@handle_errors
def report_cmd(
    session: Annotated[str, typer.Argument(metavar="SESSION", help="A session (any agent ctxkit reads), "
                                     "or one conversation's folder in a ctxkit proxy's store.")],
    output: OutputOpt = None,
    policy: PoliciesOpt = None,
    set_: SetOpt = None,
    context_window: WindowOpt = None,
    pricing: PricingOpt = None,
    summaries_as: SummariesAsOpt = None,
    on_bad_line: BadLineOpt = "fail",
) -> None:
    """Write one self-contained HTML page about a session under policies (what simulate computes).

    Context per request with the window, thresholds and compactions; cumulative cost; where the
    tokens go; compactions and their retention; every item a stage removed, with its original
    (redacted). Nothing in the page loads from the network.
    Example: ctxkit report session.jsonl -p default -p no-llm -o report.html
    """
    from ..reports.html_report import render_report
    from ..reports.pricing import load_pricing
    from ..reports.simulate import simulate

    check_output(output)
    rows, _ = _policies(policy, set_, None, context_window)
    prices = load_pricing(pricing)
    with tempfile.TemporaryDirectory(prefix="ctxkit-proxy-sessions-") as tmp:
        args, labels = _proxy_logs([session], Path(tmp))
        if len(args) != 1 or Path(args[0]).is_dir():
            what = f"holds {len(args)} proxied conversations" if labels else "is a folder"
            raise UsageError(f"{quote(session)} {what}: report draws one session (simulate takes folders; "
                             "give report one conversation's folder, STORE/proxy/<name>)")
        doc, results = simulate(args, rows, prices, context_window=context_window, cwd=Path.cwd(),
                                summaries_as=summaries_as, on_bad_line=on_bad_line)
    _relabel(doc, results, labels)
    session = doc["sessions"][0]["session"]
    print_warnings([f"{session}: {w}" for w in doc["sessions"][0]["warnings"]])
    page = render_report(doc["sessions"][0], results[0], prices)
    with atomic_output(output) as out:
        out.write(page.encode("utf-8"))
