"""What ``ctxkit compact`` says about a run (its report on stderr, as text or JSON) and how ``--fresh``
starts it over: kept apart from the command itself so that commands.py stays a list of commands."""
from __future__ import annotations

import json
import os
from pathlib import Path

from .app import stderr_console


def afresh_input(run, source: str):
    """``compact --fresh``: the input as expand gives it back, its store's decisions about it set aside
    (ctxkit.store.expand.afresh); what could not be put back stays as it is, with a warning."""
    from ..stages.registry import undo_steps
    from ..store.expand import afresh

    search = [Path(source).resolve().parent] if source != "-" else []
    back, restored, aside = afresh(run.transcript, run.ctx.store, search_dirs=search, undo=undo_steps())
    put_back = f"{len(restored.restored)} tool output(s) put back as they were, " if restored.restored else ""
    if aside is not None or put_back:
        where = f" (ledger scope {aside})" if aside is not None else ""
        run.ctx.warn(f"--fresh: {put_back}earlier decisions set aside{where}; every decision is made again under "
                     "this policy")
    if not restored.complete:
        run.ctx.warn(f"--fresh: {len(restored.missing) + len(restored.records)} earlier replacement(s) could not be "
                     "put back (their originals are not in the store) and stay as they are")
    return back


def run_sources(run) -> dict:
    """What a run read its settings from and kept its state in: the policy layers and the store; and
    whether its read resumed from a checkpoint (docs/store.md#checkpoints)."""
    return {"policy": list(run.policy.layers), "store": os.path.abspath(run.ctx.store.root),
            "checkpoint": run.checkpoints.outcome}


def print_compact_report(result, mode: str, sources: dict) -> None:
    """What ``compact`` prints on stderr: each stage's line, the view's tokens, the policy and store."""
    from ..summarize.redaction_report import describe as describe_redaction

    console = stderr_console()
    if mode == "json":
        console.print(json.dumps({**result.to_json(), **sources}, indent=2, ensure_ascii=False), markup=False)
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
    redacted = describe_redaction(result.redacted)
    if redacted:
        console.print(redacted, markup=False)
    if result.lines_kept_as_read:
        console.print(f"history: {result.lines_kept_as_read:,} edited line(s) out of the view (behind a boundary, "
                      "snipped) written as read", markup=False)
    console.print(f"view: {result.tokens_before:,} -> {result.tokens_after:,} tokens", markup=False)
    console.print(f"policy: {' < '.join(sources['policy'])}; store: {sources['store']}", markup=False)
    resumed = sources["checkpoint"]
    if resumed["resumed"]:
        console.print(f"read: resumed from a checkpoint, {resumed['lines']:,} lines ({resumed['bytes']:,} bytes) "
                      "not read again", markup=False)
