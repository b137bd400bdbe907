"""A compaction written out: the summary and the kept tail, the state re-injected after them, measured.

Both ways of compacting (session-memory notes, a summary) end here, so they re-inject and count alike;
autocompact may write a summary twice (:mod:`ctxkit.stages.autocompact.whole_prompts`) and keeps the one
whose count comes in under its goal.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from ...transcript.model import Transcript
from ...transcript.view import View
from ..base import Context
from . import min_retention, reinject
from .compaction import Compaction, Written, write_compaction


def written_with_reinjection(t: Transcript, view: View, ctx: Context, c: Compaction, share: int,
                             details: dict[str, Any], reinject_options: dict[str, Any] | None) -> Written:
    """``c`` written into ``t`` with the files, skills and tools re-injected in at most ``share`` tokens
    beside the kept tail; ``details`` get what was kept and re-injected, and the retention measures.
    ``post_tokens`` is the new view's count on the same basis as the count before (estimate + overhead).
    A warning an earlier write of the same compaction gave (a file re-injection skipped) is not given again."""
    said = len(ctx.warnings)
    tail_tokens = ctx.tokens.count_messages([m.api() for m in view.messages[c.keep_from:]])
    last = view.messages[-1] if view.messages else None
    if last is not None and last.role == "assistant" and any(last.tool_uses()):
        # a turn in progress: its tool results must come next, nothing may be appended before them
        re = reinject.Reinjection(details={"skipped": "the last assistant message still waits for tool results"})
        options = {**dict(reinject_options or {}), "deltas": False}
    else:
        options = reinject_options
        re = reinject.build(t, view, c.keep_from, ctx, options, share - tail_tokens)
    c.reinjected = re.messages
    c.transcript_hint = ctx.inputs.transcript_path if t.format == "claude-code" else None
    written = write_compaction(t, view, c, count=ctx.tokens.count_messages, store=ctx.store,
                               timestamp=ctx.timestamp())
    if reinject.option(options, "deltas"):
        deltas, facts = reinject.delta_attachments(t, view, written.transcript, ctx)
        re.details.update(facts)
        if deltas:
            c.reinjected = [*re.messages, *deltas]
            written = write_compaction(t, view, c, count=ctx.tokens.count_messages, store=ctx.store,
                                       timestamp=ctx.timestamp())
    details.update(summarized_messages=c.keep_from, kept_messages=len(view.messages) - c.keep_from,
                   kept_tokens=tail_tokens, reinjected=re.details, reinjected_tokens=re.tokens)
    from ...summarize.redact import redactor_for  # the secret rules: loaded when a compaction is written

    # written again (the prompts cut after whole ones, the extractive summary after a rejected model's): the
    # same files are skipped, and the user reads of each once
    ctx.warnings[said:] = [w for w in ctx.warnings[said:] if w not in ctx.warnings[:said]]
    min_retention.measure(view, c.keep_from, written.transcript.view().api_messages(), details,
                          redactor_for(ctx))
    return dataclasses.replace(written, post_tokens=ctx.view_tokens(written.transcript).total)
