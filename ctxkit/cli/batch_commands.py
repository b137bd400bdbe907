"""How compact, stats, check and expand run over many files: what each file's run is asked for, what is read
back from it, and what the batch prints on stdout (the ``BatchCommand`` s given to :func:`run_many`)."""
from __future__ import annotations

import json
import re
import sys
from typing import Any

from ..batch.inputs import is_url
from ..batch.results import FileResult
from .batch_cli import BatchCommand
from .github import renamed


def json_in(text: str) -> dict[str, Any] | None:
    """The first JSON object a run printed (its report), or None."""
    start = text.find("{")
    while start != -1:
        try:
            value, _ = json.JSONDecoder().raw_decode(text[start:])
            return value if isinstance(value, dict) else None
        except ValueError:
            start = text.find("\n{", start + 1)
            start = start + 1 if start != -1 else -1
    return None


def _compact_figures(r: FileResult) -> dict[str, Any]:
    report = json_in(r.stderr)
    if report is None:
        return {}
    # in a file's own run these are `ctxkit: warning:` lines; the JSON report holds them instead
    r.stderr += "".join(f"ctxkit: warning: {w}\n" for w in report.get("warnings") or [])
    return {"tokens_before": report.get("tokens_before"), "tokens_after": report.get("tokens_after"),
            "stages": [{k: s.get(k) for k in ("id", "action", "tokens_before", "tokens_after")}
                       for s in report.get("stages") or []]}


COMPACT = BatchCommand("compact", "ctxkit.cli.commands:compact", writes=True,
                       per_file=lambda params: {"report": "json"}, figures=_compact_figures)


def _expand_figures(r: FileResult) -> dict[str, Any]:
    found = re.search(r"^restored (\d+) tool output", r.stderr, re.M)
    return {"restored": int(found.group(1))} if found else {}


EXPAND = BatchCommand("expand", "ctxkit.cli.commands:expand", writes=True, per_file=lambda params: {},
                      figures=_expand_figures)


def _stdout_json(r: FileResult) -> dict[str, Any] | None:
    try:
        value = json.loads(r.stdout)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _check_figures(r: FileResult) -> dict[str, Any]:
    data = _stdout_json(r)
    if data is None:
        return {}
    return {"tokens_before": data["tokens"], "tokens_after": data["tokens"], "level": data["level"],
            "threshold": data["threshold"], "_check": data}


def _check_render(results: list[FileResult], params: dict[str, Any]) -> None:
    out = sys.stdout
    for r in results:
        data = r.figures.get("_check")
        if params.get("output_format") == "github":
            # each run printed its figures (the summary's tokens) with its annotation, or the annotation of
            # the error that stopped it
            text = r.stdout.decode("utf-8") if data is None else data.pop("annotation", None) or ""
            if is_url(r.source):  # the run read a local copy of the URL: say which file it is
                from ..batch.remote import mirror

                text = renamed(text, str(mirror(r.source)), r.source)
            out.write(text)
            continue
        if data is None:
            continue
        if params.get("as_json"):
            out.write(json.dumps({"file": r.source, **data}) + "\n")
        else:
            out.write(f"{r.source}: {data['tokens']} tokens; {data['fail_at']} threshold {data['threshold']}; "
                      f"level {data['level']}\n")
    out.flush()


CHECK = BatchCommand("check", "ctxkit.cli.commands:check", writes=False, per_file=lambda params: {"as_json": True},
                     figures=_check_figures, render=_check_render)


def _stats_figures(r: FileResult) -> dict[str, Any]:
    data = _stdout_json(r) if r.exit_code == 0 else None
    if data is None:
        return {}
    return {"tokens_before": data["tokens"], "tokens_after": data.get("tokens_after", data["tokens"]), "_stats": data}


def _stats_render(results: list[FileResult], params: dict[str, Any]) -> None:
    from ..batch.aggregate import aggregate_stats  # loaded by stats over many sessions only

    agg = aggregate_stats([(r.source, r.figures["_stats"]) for r in results if "_stats" in r.figures])
    if params.get("as_json"):
        sys.stdout.write(json.dumps(agg, indent=2, ensure_ascii=False) + "\n")
        return
    render_fleet_stats(agg)


STATS = BatchCommand("stats", "ctxkit.cli.commands:stats", writes=False, per_file=lambda params: {"as_json": True},
                     figures=_stats_figures, render=_stats_render)


def _table(title: str, rows: dict[str, int], first: str, total: int | None = None) -> Any:
    from rich.table import Table  # tables load for the fleet summary only

    table = Table(title=title)
    table.add_column(first)
    table.add_column("tokens" if total is not None else "sessions", justify="right")
    if total is not None:
        table.add_column("share", justify="right")
    for name, n in rows.items():
        cells = [str(name), f"{n:,}"] + ([f"{100 * n / max(1, total):.1f}%"] if total is not None else [])
        table.add_row(*cells)
    return table


def render_fleet_stats(agg: dict[str, Any]) -> None:
    """``ctxkit stats`` over many sessions, as tables on stdout (``--json`` prints the document)."""
    from rich.console import Console  # (rich loads for the tables only)

    console = Console(file=sys.stdout, soft_wrap=True, highlight=False, markup=False, emoji=False)
    v = agg["view_tokens"]
    console.print(f"{agg['sessions']} sessions, {agg['messages']:,} messages, {agg['tokens']:,} tokens in their "
                  f"views ({agg['estimator']} estimate); the policy would leave {agg['tokens_after']:,}")
    console.print(f"view tokens: min {v['min']:,}, median {v['p50']:,}, p90 {v['p90']:,}, p99 {v['p99']:,}, "
                  f"max {v['max']:,}, mean {v['mean']:,}")
    console.print(_table("sessions by level", agg["levels"], "level"))
    console.print(_table("view size against the autocompact threshold", agg["share_of_autocompact"], "share"))
    for title, key in (("by kind", "by_kind"), ("by tool", "by_tool")):
        console.print(_table(title, agg[key], title.split()[-1], sum(agg[key].values())))
    if agg["stages"]:
        from rich.table import Table

        table = Table(title="what the policy would do")
        for col in ("stage", "actions", "tokens freed"):
            table.add_column(col)
        for sid, row in agg["stages"].items():
            table.add_row(sid, ", ".join(f"{a} {n}" for a, n in row["actions"].items()), f"{row['tokens_freed']:,}")
        console.print(table)
    if agg.get("refused"):
        console.print(f"{agg['refused']} sessions compact would refuse before any work (exit 2: the thresholds do "
                      "not fit the window or the session's system prompt and tools); `ctxkit stats FILE` says why")
