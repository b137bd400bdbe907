"""Where a view's tokens go: by role, by tool, by kind of content, against the policy's thresholds."""
from __future__ import annotations

from collections import Counter
from typing import Any

from ..pipeline import compile_pipeline
from ..stages.base import Context
from ..tokens import budget_for
from ..transcript.model import Transcript


def view_stats(t: Transcript, ctx: Context, *, simulate: bool = True) -> dict[str, Any]:
    """Token breakdown of the view, the budget, and (``simulate``) what each stage of the policy would do.

    The simulation runs the pipeline against a dry-run store with ``ctx.simulate`` set: the
    summarizer is chosen as compact would choose it (:func:`ctxkit.summarize.factory.summarizer_for_run`), and one
    that would call a model or a command is replaced by a stand-in that names it, so ``stats`` is free
    and offline and still says what autocompact would do, with which summarizer.
    """
    view = t.view()
    counter = ctx.tokens
    by_role: Counter[str] = Counter()
    by_kind: Counter[str] = Counter()
    by_tool: Counter[str] = Counter()
    by_block: Counter[str] = Counter()
    names = view.tool_names()
    for m in view.messages:
        for block in m.content:
            n = counter.count_message({"role": m.role, "content": [block]})
            by_role[m.role] += n
            by_kind[m.kind] += n
            btype = block.get("type", "?")
            by_block[btype] += n
            if btype == "tool_use":
                by_tool[block.get("name", "?")] += n
            elif btype == "tool_result":
                by_tool[names.get(block.get("tool_use_id", ""), "?")] += n
    count = ctx.view_tokens(t)
    total = count.total
    budget = budget_for(ctx.policy, ctx.inputs.context_window)
    out: dict[str, Any] = {
        "format": t.format,
        "messages": len(view.messages),
        "tokens": total,
        **count.to_json(),
        "estimator": counter.name,
        "level": budget.level(total),
        "budget": budget.to_json(),
        "by_role": dict(by_role.most_common()),
        "by_kind": dict(by_kind.most_common()),
        "by_block": dict(by_block.most_common()),
        "by_tool": dict(by_tool.most_common()),
        "notes": view.notes,
    }
    if simulate:
        refused = _refusal(t, ctx)
        if refused:  # what compact says before any work (exit 2): no stage would run
            out.update(refused=refused, stages=[], tokens_after=total)
            return out
        pipeline = compile_pipeline(ctx.policy)
        ctx.simulate = True  # summarizer_for_run gives a stand-in for a model or a command
        result = pipeline.run(t, ctx)
        out["stages"] = [r.to_json() for r in result.reports]
        out["tokens_after"] = result.tokens_after
    return out


def _refusal(t: Transcript, ctx: Context) -> str | None:
    """Why ``ctxkit compact`` would refuse this session in this window before any work (its exit 2), as
    compact's own check words it: the policy does not fit the window, or the autocompact threshold is
    below the session's system prompt and tools (without ``--force``). None when it would run."""
    from ..policy.lint import session_misfits
    from ..stages.registry import REGISTRY

    misfits = session_misfits(ctx.policy, REGISTRY, ctx.inputs.context_window, ctx.session_overhead(t),
                              force=bool(ctx.inputs.force))
    return "; ".join(m.render() for m in misfits) or None
