"""A call that costs what its new messages cost: the pipeline run on the tail of the conversation.

A full call runs the policy's stages on the last answer plus the new messages: every message, every
call. Most calls cross no threshold, and then what the stages do is local: the tool-result budget
decides about the new results (its decisions about older ones are frozen in the ledger), nothing else
acts. So the manager runs the stages on a short transcript instead: the conversation's first message
(it names the session, the ledger's decision scope), the last answer from its last assistant message
on (what the new tool results answer), and the new messages; the threshold checks count the messages
left out as well (:class:`LiveContext`: their estimate, which the last call knows). The answer is the
last one plus the new lines that run wrote.

That is the same answer a full call gives only when the run stayed local. So the incremental run is
used only for policies whose enabled stages are ones that can be judged from the tail
(:data:`LOCAL_STAGES`), and its answer is taken only when, in that run, no stage but the tool-result
budget changed anything, the lines of the earlier answer came out as they went in, and the count
including the left-out messages stayed under the autocompact threshold (checked before autocompact
runs, so that a compaction never starts on the tail: :class:`_Threshold`). Otherwise the call runs in
full. ``tests/test_context_manager.py`` checks, call by call on long conversations, that both give the
same bytes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import TranscriptError
from ..stages.base import Context, Report, StageResult
from ..tokens.budget import budget_for
from ..tokens.view_count import ViewTokens, count_view

#: the stages whose work on a growing list can be judged from its tail (the others run every call in full)
LOCAL_STAGES = frozenset({"tool-result-budget", "microcompact", "autocompact"})
#: the stage whose changes an incremental answer may hold (the others must have done nothing)
_MAY_APPLY = "tool-result-budget"
_QUIET = ("nothing-to-do", "skipped")
#: the most lines of the last answer after its last assistant message carried into an incremental run
_MAX_CARRIED = 64


@dataclass
class LiveContext(Context):
    """A stage Context whose token counts include ``hidden``: the estimate of the messages of the view that
    the transcript the stages are given leaves out (an incremental run's tail)."""

    hidden: int = 0

    def view_tokens(self, t) -> ViewTokens:
        counted = super().view_tokens(t)
        if not self.hidden:
            return counted
        return counted._replace(total=counted.total + self.hidden, estimated=counted.estimated + self.hidden)


class _Crossed(Exception):
    """The tail's count, with what it leaves out, reached the autocompact threshold: run in full."""


@dataclass
class _Threshold:
    """Put before autocompact in an incremental run: stops the run when autocompact would compact (which it
    must do on the whole conversation), else hands the transcript on unchanged. Its report is dropped."""

    threshold: int
    id: str = "(threshold check)"
    reports: list[Report] = field(default_factory=list)

    def uses_summarizer(self) -> bool:
        return False

    def run(self, t, ctx: Context) -> StageResult:
        if ctx.inputs.force or ctx.view_tokens(t).total >= self.threshold:
            raise _Crossed()
        report = Report(self.id, "threshold-check", action="nothing-to-do")
        self.reports.append(report)
        return StageResult(t, report)


def can_run_incrementally(policy, counter) -> bool:
    """Whether a policy's calls may run on the tail: only local stages, the proactive mechanism not
    collapse, and a counter that counts a list as the sum of its messages (so the left-out part adds up)."""
    enabled = {s.use for s in policy.enabled_stages()}
    return enabled <= LOCAL_STAGES and counter.additive


def carried_from(out_msgs: list[dict]) -> list[int] | None:
    """The indexes of the last answer's lines an incremental run carries: the first, and the ones from
    the last assistant message on. None when there is none to start from (or too many after it), or when
    the first two messages would merge in the view (its count would not add up)."""
    n = len(out_msgs)
    last = next((k for k in range(n - 1, 0, -1) if out_msgs[k].get("role") == "assistant"), None)
    if last is None or n - last > _MAX_CARRIED:
        return None
    if n > 1 and out_msgs[0].get("role") == out_msgs[1].get("role") and out_msgs[0].get("role") in ("user", "system"):
        return None
    return [0, *range(last, n)]


def tail_run(pipeline, stages_threshold: int, read, ctx: LiveContext, out: list[bytes], out_msgs: list[dict],
             new: list[bytes], sent_estimate: int) -> Any:
    """Run ``pipeline``'s stages on the tail; returns (the new answer's lines after the carried ones,
    the pipeline's result, the estimate of the whole answer), or None: run in full instead.

    ``read`` makes a transcript of lines; ``sent_estimate`` is the estimate of the last answer's view."""
    from ..pipeline import Pipeline

    carried = carried_from(out_msgs)
    if carried is None:
        return None
    carried_lines = [out[k] for k in carried]
    try:
        alone = read(carried_lines)
        t = read(carried_lines + new)
    except TranscriptError:
        return None  # a full run names the message
    ctx.hidden = sent_estimate - count_view(alone, ctx.tokens, 0, None).estimated
    guard = _Threshold(stages_threshold)
    stages = []
    for stage in pipeline.stages:
        if stage.name == "autocompact":
            stages.append(guard)
        stages.append(stage)
    try:
        result = Pipeline(stages).run(t, ctx)
    except _Crossed:
        return None
    result.reports = [r for r in result.reports if all(r is not g for g in guard.reports)]
    if any(r.action not in _QUIET and not (r.use == _MAY_APPLY and r.action == "applied") for r in result.reports):
        return None
    lines = written_lines(result.transcript)
    if lines[:len(carried_lines)] != carried_lines:
        return None
    estimate = ctx.hidden + count_view(result.transcript, ctx.tokens, 0, None).estimated
    return lines[len(carried_lines):], result, estimate


def autocompact_threshold(policy, context_window: int | None) -> int:
    return budget_for(policy, context_window).autocompact_threshold


def written_lines(t) -> list[bytes]:
    """The lines (without their newlines) ``t`` writes: JSON never holds a raw newline."""
    import io

    buf = io.BytesIO()
    t.write(buf)
    return buf.getvalue().split(b"\n")[:-1]
