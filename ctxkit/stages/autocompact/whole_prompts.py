"""The offline summary quotes every prompt the user typed whole, when the compaction still does its job.

A pasted spec, plan or log is the user's request word for word; cut at ten thousand characters, the
agent after the compaction reads the first pages of it and guesses the rest (held-out sessions lost
the last steps of an 11,092-character plan and a 39,247-character workflow that way). So autocompact
asks the extractive summarizer for the prompts whole first (in *6. All user messages*; the other
sections keep their cap). A session made mostly of pastes may then not shrink enough. The compacted
context must come in under a goal: smaller than what it replaces and, for `--force` (Claude Code's
`/compact`), under the autocompact threshold; for an automatic compaction, under half of the threshold
(the room the kept tail and the re-read files get), or the next turns would compact again. When it does not,
the longest prompts are cut, as few as the tokens over the goal call for (counted with the run's
counter, and a margin), the others staying whole (:func:`longest_to_cut`): a session of many pastes keeps
all but its largest ones word for word. When that is not under the goal either, or when it would cut
them all, the summary is written again with every long prompt cut to the share they may take together
(:data:`ctxkit.summarize.extractive_text.TYPED_PROMPTS_SHARE`).
`--report json` says which in the autocompact stage's details: ``prompts_quoted`` is ``whole``, ``partly``
or ``cut``, and ``prompts_cut`` how many were (absent when no prompt was long enough for it to matter, or
when the stage made no compaction); the report line a user reads says it too (:func:`report_note`). A
compaction written more than once warns once (:mod:`ctxkit.stages.autocompact.written`).

A model summarizer is asked once: it writes its own summary, the prompts in its own words.
"""
from __future__ import annotations

import sys
from typing import Any, Callable

from ...summarize import ExtractiveSummarizer
from .compaction import Written

#: How much more the cut prompts must free than the tokens over the goal: the count of the compacted context
#: is calibrated (a scale and an overhead), the prompts' are the counter's alone
CUT_MARGIN = 1.15


def extractive_of(summarizer: Any) -> ExtractiveSummarizer | None:
    """The extractive summarizer behind ``summarizer`` (the redacting wrapper's inner one), else None."""
    inner = getattr(summarizer, "inner", summarizer)
    return inner if isinstance(inner, ExtractiveSummarizer) else None


def _written_with(extractive: ExtractiveSummarizer, whole_chars: int, written_summary: Callable[[], Written]) -> Written:
    extractive.whole_prompt_chars = whole_chars
    try:
        return written_summary()
    finally:
        extractive.whole_prompt_chars = 0


def longest_to_cut(prompts: list[str], limit: int, over: int, count_text: Callable[[str], int]) -> int | None:
    """The length up to which ``prompts`` (those longer than their cut, ``limit`` characters) can stay whole
    while the longest are cut, freeing ``over`` tokens with a margin (:data:`CUT_MARGIN`); None when every
    one of them would have to be cut. Each prompt is counted once, the part its cut leaves out (a request each
    with the ``anthropic`` estimator), and only until enough is freed."""
    by_length = sorted(prompts, key=len, reverse=True)
    need, freed = over * CUT_MARGIN, 0
    for k, text in enumerate(by_length[:-1]):
        freed += count_text(text[limit:])
        if freed >= need and len(by_length[k + 1]) < len(text):
            return len(by_length[k + 1])
    return None


def whole_prompts_first(summarizer: Any, written_summary: Callable[[], Written], goal: int,
                        details: dict[str, Any], count_text: Callable[[str], int]) -> Written:
    """The compaction ``written_summary`` writes with ``summarizer``: with every typed prompt quoted whole
    when that comes in under ``goal`` tokens, else with only the longest cut when that does, else with the
    prompts cut (a second or third summary)."""
    extractive = extractive_of(summarizer)
    if extractive is None:
        return written_summary()
    written = _written_with(extractive, sys.maxsize, written_summary)
    if not extractive.quoted_past_cut:
        return written  # no prompt was longer than its cut: the same summary either way
    if written.post_tokens < goal:
        details["prompts_quoted"] = "whole"
        return written
    long_ones = extractive.past_cut
    whole_up_to = longest_to_cut(long_ones, extractive.prompt_limit, written.post_tokens - goal, count_text)
    if whole_up_to is not None:
        partly = _written_with(extractive, whole_up_to, written_summary)
        if partly.post_tokens < goal:
            details.update(prompts_quoted="partly", prompts_cut=sum(len(p) > whole_up_to for p in long_ones))
            return partly
    details.update(prompts_quoted="cut", prompts_cut=len(long_ones))
    return written_summary()


#: What the stage's report line adds for each ``prompts_quoted``: why a /compact freed less than the
#: cut would have (the paste kept whole), or that the paste was cut to make room.
REPORT_NOTES = {"whole": "every typed prompt quoted whole",
                "partly": "the {n} longest typed prompts cut, the others quoted whole (all whole, the context would "
                          "not have shrunk enough)",
                "cut": "long typed prompts cut (quoted whole, the context would not have shrunk enough)"}


def report_note(details: dict[str, Any]) -> str:
    """``; NOTE`` for the stage's report line when the prompts' quotes were decided here, else ``""``."""
    note = REPORT_NOTES.get(details.get("prompts_quoted", ""))
    if note and details.get("prompts_cut") == 1:
        note = note.replace("the {n} longest typed prompts", "the longest typed prompt")
    return "; " + note.format(n=details.get("prompts_cut", 0)) if note else ""
