"""Session memory: `ctxkit memory update` writes the notes; autocompact uses them instead of a summarizer."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from helpers import bash_rounds, never_called

from ctxkit.errors import LLMError, UsageError
from ctxkit.stages.autocompact.session_memory import (
    NOTES_TEMPLATE,
    is_empty_notes,
    memory_state,
    message_id,
    update_in_context,
)
from ctxkit.stages.autocompact.stage import Autocompact
from ctxkit.transcript import pairing_problems, read_transcript
from ctxkit.transcript.view import SUMMARY

EXTRACTIVE = {"summarizer": {"use": "extractive"}, "overhead_tokens": 0}  # the sessions here stand for whole requests: no system prompt or tools beside them
WINDOW = 40_000  # autocompact threshold 7,000
SMALL_TAIL = {"session_memory": {"min_tokens": 0, "min_text_messages": 0}}


EARLY = [{"role": "user", "content": "Port the invoice exporter to CSV"}, *bash_rounds(0, 4),
         {"role": "assistant", "content": [{"type": "text", "text": "The exporter now writes CSV."}]}]
LATER = [{"role": "user", "content": "Also add a header row"}, *bash_rounds(4, 2),
         {"role": "assistant", "content": [{"type": "text", "text": "Header row added."}]}]


def write(path: Path, lines: list[dict]):
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return read_transcript(path)


def blocks(line: dict) -> list[dict]:
    c = line["content"]
    return [{"type": "text", "text": c}] if isinstance(c, str) else c


def after_summary(view) -> list[dict]:
    """The view's blocks after the summary text, in order."""
    return [b for m in view.messages for b in m.content][1:]


def reread(tmp_path, t):
    buf = io.BytesIO()
    t.write(buf)
    p = tmp_path / "out.jsonl"
    p.write_bytes(buf.getvalue())
    return read_transcript(p)


@pytest.fixture
def notes_ready(tmp_path, make_context):
    """The early session with notes written by `ctxkit memory update`, then the session grown."""
    notes = tmp_path / "notes.md"
    early = write(tmp_path / "early.jsonl", EARLY)
    ctx = make_context(EXTRACTIVE, session_memory=notes)
    update = update_in_context(early, ctx)
    ctx.store.flush()
    grown = write(tmp_path / "grown.jsonl", EARLY + LATER)
    return notes, update, grown


# -- the notes file ---------------------------------------------------------------------------------
@pytest.mark.parametrize("text,empty", [
    (NOTES_TEMPLATE, True),
    ("", True),
    ("# Notes\n<!-- nothing yet -->\n\n## Task\n_What the user asked._\n- \n", True),
    ("# Notes\n\n## Task\nPort the exporter to CSV.\n", False),
])
def test_an_empty_template_is_not_notes(text, empty):
    assert is_empty_notes(text) is empty


def test_memory_update_writes_the_notes_and_records_the_last_message(tmp_path, make_context, notes_ready):
    notes, update, _ = notes_ready
    assert update.action == "written" and update.summarized_messages == 10
    text = notes.read_text()
    assert text.startswith("# Session notes\n\n<!-- ctxkit session memory: covers the conversation up to message ")
    assert "6. All user messages:\n- Port the invoice exporter to CSV" in text
    early = read_transcript(tmp_path / "early.jsonl")
    last = message_id(early, early.view().messages[-1])
    assert update.last_id == last
    assert memory_state(make_context(EXTRACTIVE).store, early)["last_summarized_id"] == last


def test_memory_update_refreshes_with_only_the_new_messages(tmp_path, make_context, notes_ready):
    notes, _, grown = notes_ready
    seen = []

    def recording(policy, ctx):
        from ctxkit.summarize import ExtractiveSummarizer

        class Recording(ExtractiveSummarizer):
            def summarize(self, messages, *, instructions=None):
                seen.append(messages)
                return super().summarize(messages, instructions=instructions)

        return Recording()

    ctx = make_context(EXTRACTIVE, session_memory=notes)
    ctx.summarizer_factory = recording
    update = update_in_context(grown, ctx)
    assert update.action == "refreshed" and update.summarized_messages == len(LATER)
    first = seen[0][0]["content"]
    assert first.startswith("This session is being continued") and "Port the invoice exporter to CSV" in first
    text = notes.read_text()
    assert "- Port the invoice exporter to CSV" in text and "- Also add a header row" in text
    ctx.store.flush()
    again = update_in_context(grown, make_context(EXTRACTIVE, session_memory=notes))
    assert again.action == "unchanged"


def test_memory_update_needs_a_file_and_keeps_old_notes_when_the_summarizer_fails(tmp_path, make_context, notes_ready):
    notes, _, grown = notes_ready
    with pytest.raises(UsageError, match="--session-memory FILE"):
        update_in_context(grown, make_context(EXTRACTIVE))
    before = notes.read_bytes()
    ctx = make_context(EXTRACTIVE, session_memory=notes)

    def failing(policy, c):
        class Failing:
            name = "failing"

            def summarize(self, messages, *, instructions=None):
                raise LLMError("Anthropic API 529 overloaded: Overloaded")

        return Failing()

    ctx.summarizer_factory = failing
    with pytest.raises(LLMError):
        update_in_context(grown, ctx)
    assert notes.read_bytes() == before


# -- compaction from the notes ----------------------------------------------------------------------
def test_compaction_uses_the_notes_and_keeps_what_they_do_not_cover(tmp_path, make_context, notes_ready):
    notes, _, grown = notes_ready
    ctx = make_context(EXTRACTIVE, context_window=WINDOW, session_memory=notes)
    ctx.summarizer_factory = never_called
    r = Autocompact("autocompact", SMALL_TAIL).run(grown, ctx)
    assert r.report.action == "applied", r.report.details
    assert r.report.details["method"] == "session-memory"
    assert r.report.reason.startswith("auto compaction (session memory)")
    view = reread(tmp_path, r.transcript).view()
    assert pairing_problems(view.api_messages()) == []
    summary = view.messages[0]
    assert summary.kind == SUMMARY
    assert "6. All user messages:\n- Port the invoice exporter to CSV" in summary.text()
    assert "<!--" not in summary.text()  # the bookkeeping comment is not for the model
    # every message after the last one the notes cover is kept verbatim, and nothing before it
    # (the kept prompt follows the summary's text in the same user turn)
    assert after_summary(view) == [b for x in LATER for b in blocks(x)]


def test_the_tail_grows_back_to_the_minimums_without_splitting_a_tool_pair(tmp_path, make_context, notes_ready):
    notes, _, grown = notes_ready
    ctx = make_context(EXTRACTIVE, force=True, session_memory=notes)
    ctx.summarizer_factory = never_called
    opts = {"session_memory": {"min_tokens": 0, "min_text_messages": 5, "max_tokens": 40_000}}
    r = Autocompact("autocompact", opts).run(grown, ctx)
    assert r.report.action == "applied"
    view = reread(tmp_path, r.transcript).view()
    # LATER has 4 messages with text (prompt, 2 steps, reply): the fifth is the early final reply
    first_kept = view.messages[1]
    assert first_kept.role == "assistant" and first_kept.text() == "The exporter now writes CSV."
    assert r.report.details["kept_messages"] == len(LATER) + 1
    opts["session_memory"]["min_text_messages"] = 6  # one more: a whole round (tool call and result)
    r = Autocompact("autocompact", opts).run(grown, make_context(EXTRACTIVE, force=True, session_memory=notes))
    view = reread(tmp_path, r.transcript).view()
    assert view.messages[1].role == "assistant" and [b["id"] for b in view.messages[1].tool_uses()] == ["toolu_03"]
    assert pairing_problems(view.api_messages()) == []


@pytest.mark.parametrize("case", ["no-file", "empty-template", "id-gone", "still-over", "instructions"])
def test_falls_back_to_the_summarizer(case, tmp_path, make_context, notes_ready):
    notes, _, grown = notes_ready
    inputs = {"session_memory": notes}
    opts = SMALL_TAIL
    if case == "no-file":
        inputs["session_memory"] = tmp_path / "missing.md"
        why = "does not exist"
    elif case == "empty-template":
        notes.write_text(NOTES_TEMPLATE)
        why = "is an empty template"
    elif case == "id-gone":  # the same session, rewritten since: the message the notes end at is gone
        edited = [*EARLY[:-1], {"role": "assistant", "content": [{"type": "text", "text": "Rewritten."}]}, *LATER]
        grown = write(tmp_path / "edited.jsonl", edited)
        why = "is no longer in the view"
    elif case == "still-over":
        inputs["context_window"] = 36_000  # threshold 3,000: the messages after the notes alone exceed it
        why = "still over the threshold after it"
    else:
        inputs["instructions"] = "focus on the CSV header"
        why = "skipped: --instructions asks for a fresh summary"
    inputs.setdefault("context_window", WINDOW)
    ctx = make_context(EXTRACTIVE, **inputs)
    r = Autocompact("autocompact", opts).run(grown, ctx)
    assert r.report.action == "applied"
    assert r.report.details["method"] == "summary" and r.report.details["summarizer"] == "extractive"
    assert why in r.report.details["session_memory"]


def test_after_a_compaction_the_notes_need_a_fresh_update(tmp_path, make_context, notes_ready):
    notes, _, grown = notes_ready
    ctx = make_context(EXTRACTIVE, context_window=WINDOW, session_memory=notes)
    ctx.summarizer_factory = never_called
    r = Autocompact("autocompact", SMALL_TAIL).run(grown, ctx)
    assert r.report.details["method"] == "session-memory"
    ctx.store.flush()
    assert list(memory_state(ctx.store, grown)) == ["stale_notes_sha256"]  # the id is forgotten
    # the next `memory update` covers the compacted view (its summary carries the old notes)
    compacted = reread(tmp_path, r.transcript)
    update = update_in_context(compacted, make_context(EXTRACTIVE, session_memory=notes))
    assert update.action == "written"
    assert "Port the invoice exporter to CSV" in notes.read_text()


def test_claude_code_session_memory_compaction(corpus_session, tmp_path, make_context):
    src = corpus_session("multi-prompt")
    lines = src.read_bytes().splitlines(keepends=True)
    full = read_transcript(src)
    prompts = [i for i in full.live_indexes() if full.entry(i).get("type") == "user"
               and isinstance(full.entry(i)["message"]["content"], str) and not full.entry(i).get("isMeta")]
    early = tmp_path / "early.jsonl"
    early.write_bytes(b"".join(lines[:prompts[-1]]))  # everything before the last prompt
    notes = tmp_path / "notes.md"
    ctx = make_context(EXTRACTIVE, session_memory=notes)
    update = update_in_context(read_transcript(early), ctx)
    ctx.store.flush()
    ctx = make_context(EXTRACTIVE, force=True, session_memory=notes, cwd=src.parent / "workdir")
    ctx.summarizer_factory = never_called
    r = Autocompact("autocompact", SMALL_TAIL).run(full, ctx)
    assert r.report.details["method"] == "session-memory", r.report.details
    view = reread(tmp_path, r.transcript).view()
    assert pairing_problems(view.api_messages()) == []
    assert view.messages[0].kind == SUMMARY
    last_prompt = full.entry(prompts[-1])["message"]["content"]
    assert {"type": "text", "text": last_prompt} in after_summary(view)  # kept verbatim, not summarized
    assert r.report.details["last_summarized_id"] == update.last_id
