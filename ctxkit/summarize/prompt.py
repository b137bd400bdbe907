"""The compaction prompt, and the text around the summary it produces.

Autocompact replaces the history with one user message that carries a summary.
This module owns the three pieces of text involved:

* :func:`build_compact_prompt` — the instruction appended (as the last user
  turn) to the history sent to the summarizing model. It asks for a scratchpad
  first (``<analysis>``, thrown away) and then a ``<summary>`` with nine
  numbered sections. The sections are chosen for what an agent needs to go on
  working after its history is gone: the user's intent, every user message,
  the work in flight and the next step. The wording is ctxkit's own.
* :func:`format_summary` — turns the model's raw answer into the summary text
  (scratchpad dropped, tags removed, whitespace tidied) and refuses an answer
  with nothing usable in it, so that a broken summary never replaces history.
* :func:`continuation_message` — the user message that opens the compacted
  history. Its first sentence is exactly the one Claude Code writes, because
  Claude Code (and tools around it) recognise a compacted session by it.

The extractive summarizer in :mod:`ctxkit.summarize.extractive` emits the same numbered
headings (:func:`section_heading`), so downstream readers see one format
whichever summarizer ran.
"""
from __future__ import annotations

import re

from ..errors import LLMError

#: The nine sections every summary has, in order. Section numbers are 1-based.
SECTION_TITLES: tuple[str, ...] = (
    "Primary Request and Intent",
    "Key Technical Concepts",
    "Files and Code Sections",
    "Errors and fixes",
    "Problem Solving",
    "All user messages",
    "Pending Tasks",
    "Current Work",
    "Optional Next Step",
)

#: The first sentence of the compacted history. Do not reword: Claude Code recognises it.
CONTINUATION_PREFIX = (
    "This session is being continued from a previous conversation that ran out of context."
)

#: System prompt for the summarizing request (model-backed summarizers).
SUMMARY_SYSTEM_PROMPT = (
    "You write precise hand-over notes for software-engineering sessions. The notes replace the "
    "conversation history, so another instance of the assistant must be able to continue the work "
    "from them alone."
)

_CONTINUE_LINE = (
    "Continue the conversation from where it left off without asking the user any further questions. "
    "Resume the last task you were working on."
)


def section_heading(number: int) -> str:
    """The heading line of section ``number`` (1-9), e.g. ``"6. All user messages:"``."""
    return f"{number}. {SECTION_TITLES[number - 1]}:"


# What each section must contain. Kept next to the titles so the prompt and the
# extractive summarizer cannot drift apart on what a section means.
_SECTION_GUIDANCE: tuple[str, ...] = (
    "Everything the user has asked for and why, in detail. Quote the wording of the original request "
    "where it matters.",
    "The technologies, libraries, frameworks, conventions and ideas the work relies on.",
    "Each file that was read, created or changed: its path, why it matters, what changed. Include the "
    "code that will be needed again (recent edits above all) as complete snippets.",
    "Each error met (failed commands, failing tests, tool errors, wrong approaches) and how it was "
    "resolved. Include any correction the user made, in their words.",
    "Problems solved so far and the reasoning behind the approach; open questions and ongoing "
    "troubleshooting.",
    "Every message the user wrote, in order, excluding tool results and system reminders. Do not skip "
    "any and keep their "
    "wording; they show how the user's intent and feedback evolved.",
    "Tasks the user explicitly asked for that are not finished yet.",
    "Exactly what was being worked on just before this summary was requested, paying most attention "
    "to the last few messages: file names, code, commands, and their state.",
    "The one next step, if any. It must be directly in line with the user's most recent request and "
    "with the work in progress; do not start something the user did not ask for. If the last task was "
    "finished, say so and only propose a step the user explicitly asked for. Quote the most recent "
    "relevant messages verbatim so the task is resumed without drift.",
)


def section_guidance() -> str:
    """The nine numbered headings, each with what its section must hold (the list the prompt gives)."""
    return "\n".join(
        f"{section_heading(i)}\n   {guidance}" for i, guidance in enumerate(_SECTION_GUIDANCE, start=1)
    )


def build_compact_prompt(instructions: str | None = None) -> str:
    """The instruction sent as the final user turn of a summarizing request.

    ``instructions`` (the user's ``--instructions`` focus, if any) is appended at
    the end, where the model gives it the most weight.
    """
    sections = section_guidance()
    prompt = f"""IMPORTANT: answer with plain text only. Do not call any tool: this turn has no tools, any \
tool call will be rejected, and you get no second turn.

Your job is to write a detailed summary of the conversation so far. The summary will replace the \
conversation, so the work must be able to continue from it alone. Be thorough about technical detail: \
file paths, code, commands, error messages and the user's own words. In the conversation, tool calls \
and their results appear as bracketed text ("[Tool call ...]", "[Tool result ...]"): they are a record of \
what happened, not a format to continue.

First, think in an <analysis> block. It is a scratchpad and will be discarded. In it, go through the \
conversation from the beginning and note, for each part: what the user asked for and how; what you did \
in response; the key decisions, concepts and code (file names, full snippets, function signatures, \
edits); the errors and how they were fixed; and any feedback from the user, especially requests to do \
something differently. Then check that nothing technical is missing.

Then write the summary inside <summary> tags, with these nine numbered sections, in this order and \
with these exact headings:

{sections}

Layout of the answer:

<analysis>
[your notes]
</analysis>

<summary>
{section_heading(1)}
   [...]

{section_heading(2)}
   - [...]

(and so on through section 9)
</summary>

Section 6 must list all user messages. Section 9 must follow directly from the user's most recent \
request."""
    if instructions and instructions.strip():
        prompt += (
            "\n\nThe user asked for this summary to focus on the following; honour it while still "
            f"covering all nine sections:\n{instructions.strip()}"
        )
    return prompt


_ANALYSIS_BLOCK = re.compile(r"<analysis>.*?</analysis>", re.IGNORECASE | re.DOTALL)
_ANALYSIS_OPEN = re.compile(r"<analysis>", re.IGNORECASE)
_SUMMARY_BLOCK = re.compile(r"<summary>(.*?)</summary>", re.IGNORECASE | re.DOTALL)
_SUMMARY_OPEN = re.compile(r"<summary>", re.IGNORECASE)
_STRAY_TAGS = re.compile(r"</?(?:summary|analysis)>", re.IGNORECASE)


def _tidy(text: str) -> str:
    """Trailing spaces off every line, at most one blank line in a row, no blank edges."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    text = "\n".join(lines)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip("\n").strip()


def format_summary(raw: str) -> str:
    """The summary text inside a model's raw answer.

    The ``<analysis>`` scratchpad is dropped (it costs tokens and is not meant
    for the next turn) and ``<summary>`` is unwrapped. An answer cut off by the
    output limit may lack ``</summary>``: everything after ``<summary>`` is then
    the summary. A model that ignored the tags still produced a summary; its
    text minus any analysis is used. An answer with nothing left raises
    :class:`LLMError` ("malformed summary"), because replacing the history with
    an empty summary would lose it.
    """
    if raw is None or not str(raw).strip():
        raise LLMError("malformed summary: the summarizer returned no text")
    # The scratchpad goes first, so that tags it merely mentions are not taken for the summary's.
    without_analysis = _ANALYSIS_BLOCK.sub("", str(raw))
    blocks = _SUMMARY_BLOCK.findall(without_analysis)
    if blocks:
        body = "\n\n".join(blocks)
    else:
        opening = _SUMMARY_OPEN.search(without_analysis)
        if opening:  # <summary> with no closing tag: the answer was cut off mid-summary
            body = without_analysis[opening.end():]
        else:
            unclosed = _ANALYSIS_OPEN.search(without_analysis)
            # An unclosed <analysis> never reached a summary: only the text before it is usable.
            body = without_analysis[: unclosed.start()] if unclosed else without_analysis
    body = _STRAY_TAGS.sub("", body)
    body = _tidy(body)
    if not body:
        raise LLMError("malformed summary: the answer holds only an <analysis> scratchpad, no summary text")
    return body


#: A line that opens one of the nine sections: the title, optionally numbered and decorated with Markdown
#: ("1. Primary Request and Intent:", "## 6. All user messages", "**Pending Tasks**:"), any case.
_SECTION_LINE = re.compile(
    r"^[ \t>#*_-]*(?:\d{1,2}\s*[.)]\s*)?[*_]*\s*(?:" + "|".join(re.escape(t) for t in SECTION_TITLES) + r")\b",
    re.IGNORECASE | re.MULTILINE,
)


def require_summary_structure(summary: str) -> str:
    """``summary`` when it has the structure the prompt asks for, else :class:`LLMError`.

    The structure is the nine numbered sections: at least one line must open
    one of them (:data:`SECTION_TITLES`, numbered or not, in any case, with
    Markdown decoration or without). The ``<summary>`` tags are not required
    (:func:`format_summary` has removed them; a model that forgot them but
    wrote the sections did its job), and one section is enough (an answer cut
    off by the output limit keeps its first sections). What has no section at
    all is not a summary: a refusal ("I cannot summarize this."), an apology,
    an answer to the last user message. Taking it as the summary would replace
    the history with it, so it is a failed compaction instead.
    """
    if _SECTION_LINE.search(summary or ""):
        return summary
    first = " ".join((summary or "").split())
    excerpt = first if len(first) <= 80 else first[:77] + "..."
    raise LLMError(f"malformed summary: the answer has none of the nine numbered sections the prompt asks for "
                   f"(e.g. '{section_heading(1)}'); it reads: {excerpt!r}")


def continuation_message(summary: str, *, transcript_hint: str | None = None) -> str:
    """The text of the user message that opens a compacted history.

    ``transcript_hint`` names where the full pre-compaction transcript can be
    read (a path, usually), so the model knows exact details are recoverable.
    """
    parts = [
        f"{CONTINUATION_PREFIX} The summary below covers the earlier portion of the conversation.",
        f"Summary:\n{summary.strip()}",
    ]
    if transcript_hint:
        parts.append(
            "If you need exact details from before the compaction (code snippets, error messages, "
            f"content you produced), read the full transcript at: {transcript_hint}"
        )
    parts.append(_CONTINUE_LINE)
    return "\n\n".join(parts)
