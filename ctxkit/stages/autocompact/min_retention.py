"""``min_retention``: a summary by a model must keep the user's prompts and files, or it is not used.

After every compaction autocompact measures what the view still holds of the history it replaced
(:mod:`ctxkit.summarize.retention`: user prompts, file paths, commands, error lines, identifiers).
With ``min_retention: 0.8`` a summary written by a model or a command that keeps less than 80% of
the replaced user prompts, or of the replaced file paths, is rejected: autocompact writes the
extractive summary instead (it quotes every prompt and lists every file, so it keeps them), says
so in its report and in a warning, and counts the rejection as a failure of the summarizer for the
circuit breaker (``max_consecutive_failures`` rejections in a row stop autocompact until a summary
passes or ``--force``). A kind the history did not have (no file was read) passes. The extractive
summary itself is never rejected: it is the fallback. Session-memory notes are not held to it
(they are written ahead of time by ``ctxkit memory update``, not at compaction time).
"""
from __future__ import annotations

from typing import Any

from ...summarize import retention
from ...transcript.view import View

#: The kinds ``min_retention`` holds a model summary to, and what messages call them.
GUARDED_KINDS = {"user_prompts": "user prompts", "file_paths": "file paths"}

# the option's schema: options.MIN_RETENTION_SCHEMA (the stage's schema loads without this module)


def measure(view: View, keep_from: int, after: list[dict], details: dict[str, Any], redactor: Any = None) -> None:
    """Put the retention of the compaction of ``view.messages[:keep_from]`` (leaving the view ``after``)
    in ``details``: ``retention`` (fractions) and ``retention_counts`` (kept and total per kind).
    ``redactor``: the run's (the summary was written from the redacted history: that is what it is
    measured against)."""
    kept = retention.measure([m.api() for m in view.messages[:keep_from]], after, redactor=redactor)
    details.update(retention=kept.fractions(), retention_counts=kept.counts())


def rejection(details: dict[str, Any], minimum: float | None) -> dict[str, Any] | None:
    """Why the summary just measured into ``details`` falls short of ``minimum``, or None when it does
    not (or there is no minimum). The record goes into the report as ``rejected_summary``."""
    if minimum is None:
        return None
    kept = retention.Retention.from_counts(details["retention_counts"])
    low = kept.below(float(minimum), GUARDED_KINDS)
    if not low:
        return None
    what = " and ".join(f"{kept.kept[k]} of {kept.total[k]} {GUARDED_KINDS[k]}" for k in low)
    return {"summarizer": details["summarizer"], "min_retention": minimum, "below": low,
            "retention": kept.fractions(), "retention_counts": kept.counts(),
            "why": f"the {details['summarizer']} summary was rejected: it kept {what} (min_retention {minimum})"}


def short(details: dict[str, Any]) -> str:
    """The report line's retention part (``retained prompts 2/2, paths 3/5``)."""
    return retention.Retention.from_counts(details["retention_counts"]).short()
