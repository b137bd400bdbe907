"""The offline summary quotes every prompt the user typed whole, when the compaction still does its job.

A pasted spec, plan or log is the user's request word for word; cut at ten thousand characters, the
agent after the compaction reads the first pages of it and guesses the rest (held-out sessions lost
the last steps of an 11,092-character plan and a 39,247-character workflow that way). So autocompact
asks the extractive summarizer for the prompts whole first (in *6. All user messages*; the other
sections keep their cap). A session made mostly of pastes may then not shrink enough. The compacted
context must come in under a goal: smaller than what it replaces and, for `--force` (Claude Code's
`/compact`), under the autocompact threshold; for an automatic compaction, under half of the threshold
(the room the kept tail and the re-read files get), or the next turns would compact again. When it does not, the summary is written again with the
prompts cut to the share they may take together (:data:`ctxkit.summarize.extractive.TYPED_PROMPTS_SHARE`).
`--report json` says which in the autocompact stage's details: ``prompts_quoted`` is ``whole`` or ``cut``
(absent when no prompt was long enough for it to matter, or when the stage made no compaction), and
the report line a user reads says it too (:func:`report_note`). A compaction written twice warns once
(:mod:`ctxkit.stages.autocompact.written`).

A model summarizer is asked once: it writes its own summary, the prompts in its own words.
"""
from __future__ import annotations

from typing import Any, Callable

from ...summarize import ExtractiveSummarizer
from .compaction import Written


def extractive_of(summarizer: Any) -> ExtractiveSummarizer | None:
    """The extractive summarizer behind ``summarizer`` (the redacting wrapper's inner one), else None."""
    inner = getattr(summarizer, "inner", summarizer)
    return inner if isinstance(inner, ExtractiveSummarizer) else None


def whole_prompts_first(summarizer: Any, written_summary: Callable[[], Written], goal: int,
                        details: dict[str, Any]) -> Written:
    """The compaction ``written_summary`` writes with ``summarizer``: with every typed prompt quoted whole
    when that comes in under ``goal`` tokens, else with the prompts cut (a second summary)."""
    extractive = extractive_of(summarizer)
    if extractive is None:
        return written_summary()
    extractive.whole_prompts = True
    try:
        written = written_summary()
    finally:
        extractive.whole_prompts = False
    if not extractive.quoted_past_cut:
        return written  # no prompt was longer than its cut: the same summary either way
    if written.post_tokens < goal:
        details["prompts_quoted"] = "whole"
        return written
    details["prompts_quoted"] = "cut"
    return written_summary()


#: What the stage's report line adds for each ``prompts_quoted``: why a /compact freed less than the
#: cut would have (the paste kept whole), or that the paste was cut to make room.
REPORT_NOTES = {"whole": "every typed prompt quoted whole",
                "cut": "long typed prompts cut (quoted whole, the context would not have shrunk enough)"}


def report_note(details: dict[str, Any]) -> str:
    """``; NOTE`` for the stage's report line when the prompts' quotes were decided here, else ``""``."""
    note = REPORT_NOTES.get(details.get("prompts_quoted", ""))
    return f"; {note}" if note else ""
