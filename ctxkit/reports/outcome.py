"""Whether a compaction run did its job: the view it leaves fits under the autocompact threshold.

Autocompact can succeed and still leave a view that does not fit: a kept tail
or re-injected files larger than the threshold, a single huge message, a
summary that did not shrink anything, or a later stage that added more than
was freed. The pipeline then hands on a view the next turn would compact again
(or the model would refuse). That is not a summarizer failure, so the circuit
breaker does not count it; ``ctxkit compact`` reports it and exits 1
(``ExitCode.CHECK_FAILED``) with the output written, like a failed check. After
``--force`` (the user asked for this compaction, and got it) it is a warning, and
the exit status 0.
"""
from __future__ import annotations

from collections.abc import Callable

from ..pipeline import PipelineResult

#: Autocompact actions after which the run already fails with its own message (or did not try).
_NOT_ASSESSED = ("failed", "breaker-open", "skipped")
#: The stage actions that make ``ctxkit compact`` exit 1 (the output is written all the same).
FAILED_ACTIONS = ("failed", "breaker-open")


def failure_message(result: PipelineResult) -> str | None:
    """When a stage failed (or its breaker is open): which, and what the output written holds, decided from
    the transcript written, not from the failed stage (which only knows that it changed nothing: the
    stages before it may have cleared, persisted or snipped). None when no stage failed."""
    failed = [r.stage_id for r in result.reports if r.action in FAILED_ACTIONS]
    if not failed:
        return None
    changed = [r.stage_id for r in result.reports if r.action == "applied"]
    if result.transcript.unchanged() or not changed:
        written = "the output was written with no change (no stage changed the transcript)"
    else:
        written = (f"the output was written with the changes of {', '.join(changed)} "
                   f"({result.tokens_before:,} -> {result.tokens_after:,} tokens)")
    return f"{', '.join(failed)} failed; {written}"


def over_threshold_message(result: PipelineResult, overhead_of: Callable[[], int] | None = None) -> str | None:
    """The error to report when autocompact ran and the view is still at or over its threshold
    after every stage; None when it fits, or when no autocompact stage ran to make it fit.

    Autocompact that failed or found its breaker open has said so already; one skipped on
    purpose (``proactive: collapse`` under the blocking limit) is not asked to fit the view.
    ``overhead_of()``: the system prompt and tools the output's count holds (its calibrated overhead),
    which no compaction frees (asked only when over): the message says how much of the view they are.
    """
    report = next((r for r in reversed(result.reports) if r.use == "autocompact"), None)
    if report is None or report.action in _NOT_ASSESSED:
        return None
    threshold = report.details.get("threshold")
    if not isinstance(threshold, int) or result.tokens_after < threshold:
        return None
    overhead = overhead_of() if overhead_of is not None else 0
    head = (f"the view is still {result.tokens_after:,} tokens after every stage, over the autocompact threshold "
            f"({threshold:,}) ({report.stage_id}: {report.action}: {report.reason}); the output was written")
    if overhead >= threshold:
        return (f"{head}. The system prompt and tools alone take about {overhead:,} tokens (from the session's "
                "usage), which no compaction frees; use a model with a larger context window, or fewer tools")
    why = f", besides about {overhead:,} tokens of system prompt and tools (from the session's usage)" if overhead else ""
    return (f"{head}. The summary, the kept tail and the re-injected files do not fit{why}: lower "
            "summarizer.max_output_tokens or the autocompact keep_tail / reinject budgets, or use a model with a "
            "larger context window")
