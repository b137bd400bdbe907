"""Session-memory compact and re-injection as the seeds describe them (issue 11, item 6).

* notes without a recorded last-summarized message: the conservative path (the notes taken to
  cover the whole view, only the minimum tail kept), never a fallback to a summary;
* the 10,000-token / 5-message minimum tail is not cut short by the half-the-threshold share;
* a re-read file over its budget is dropped and leaves its slot to the next file.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders import write as write_lines
from helpers import bash_rounds, never_called

from ctxkit.stages.autocompact.session_memory import memory_state, update_in_context
from ctxkit.stages.autocompact.stage import Autocompact
from ctxkit.tokens import make_counter
from ctxkit.transcript import pairing_problems, read_transcript
from ctxkit.transcript.view import SUMMARY

pytestmark = pytest.mark.usefixtures("no_overhead")  # sized against small windows, before counts had an overhead

EXTRACTIVE = {"summarizer": {"use": "extractive"}, "overhead_tokens": 0}  # the sessions here stand for whole requests: no system prompt or tools beside them
NOTES = "# Session notes\n\n## Task\nPort the invoice exporter to CSV; add a header row.\n"


SESSION = [{"role": "user", "content": "Port the invoice exporter to CSV"}, *bash_rounds(0, 6),
           {"role": "assistant", "content": [{"type": "text", "text": "The exporter now writes CSV."}]}]


def write(path: Path, lines: list[dict]):
    return read_transcript(write_lines(path, lines))


def reread(tmp_path, t):
    p = tmp_path / "out.jsonl"
    with p.open("wb") as f:
        t.write(f)
    return read_transcript(p)


def kept(view) -> list[str]:
    """The kept tail after the summary: 'text:...', 'use:ID', 'result:ID' per block, in order."""
    out = []
    for m in view.messages[1:]:
        for b in m.content:
            kind = b.get("type")
            out.append(f"use:{b['id']}" if kind == "tool_use" else f"result:{b['tool_use_id']}"
                       if kind == "tool_result" else f"text:{b.get('text', '')}")
    return out


# -- (a) the conservative path -------------------------------------------------------------------------
def test_notes_without_a_recorded_message_keep_only_the_minimum_tail(tmp_path, make_context):
    notes = tmp_path / "notes.md"
    notes.write_text(NOTES)  # written by hand: the store records no last-summarized message
    t = write(tmp_path / "s.jsonl", SESSION)
    ctx = make_context(EXTRACTIVE, force=True, session_memory=notes)
    ctx.summarizer_factory = never_called
    opts = {"session_memory": {"min_tokens": 0, "min_text_messages": 2}}
    r = Autocompact("autocompact", opts).run(t, ctx)
    assert r.report.action == "applied", r.report.details
    d = r.report.details
    assert d["method"] == "session-memory" and d["last_summarized_id"] is None
    assert d["session_memory"].startswith("conservative: no last-summarized message recorded")
    view = reread(tmp_path, r.transcript).view()
    assert view.messages[0].kind == SUMMARY and "Port the invoice exporter to CSV; add a header row." in \
        view.messages[0].text()
    # two messages with text, grown back from the end without splitting the last tool call from its result
    assert kept(view) == ["text:Step 5.", "use:toolu_05", "result:toolu_05", "text:The exporter now writes CSV."]
    assert pairing_problems(view.api_messages()) == []


def test_after_a_compaction_the_same_notes_are_not_used_again_until_updated(tmp_path, make_context):
    notes = tmp_path / "notes.md"
    notes.write_text(NOTES)
    store = tmp_path / "store"
    t = write(tmp_path / "s.jsonl", SESSION)
    opts = {"session_memory": {"min_tokens": 0, "min_text_messages": 2}}
    ctx = make_context(EXTRACTIVE, force=True, session_memory=notes, store_dir=store)
    r = Autocompact("autocompact", opts).run(t, ctx)
    assert r.report.details["method"] == "session-memory"
    ctx.store.flush()
    compacted = reread(tmp_path, r.transcript)
    more = [{"role": "user", "content": "Also add a header row"}, *bash_rounds(6, 2),
            {"role": "assistant", "content": [{"type": "text", "text": "Header row added."}]}]
    (tmp_path / "grown.jsonl").write_text((tmp_path / "out.jsonl").read_text() + "".join(json.dumps(x) + "\n"
                                                                                         for x in more))
    grown = read_transcript(tmp_path / "grown.jsonl")
    assert memory_state(make_context(store_dir=store).store, compacted) != {}
    r = Autocompact("autocompact", opts).run(grown, make_context(EXTRACTIVE, force=True, session_memory=notes,
                                                                  store_dir=store))
    assert r.report.details["method"] == "summary"
    assert r.report.details["session_memory"] == ("not used: the notes are unchanged since the last compaction, "
                                                  "which they do not cover (run `ctxkit memory update` first)")
    # once `memory update` refreshed them, they are used again, from the message they now cover
    update_ctx = make_context(EXTRACTIVE, session_memory=notes, store_dir=store)
    assert update_in_context(grown, update_ctx).action == "written"
    update_ctx.store.flush()
    ctx = make_context(EXTRACTIVE, force=True, session_memory=notes, store_dir=store)
    ctx.summarizer_factory = never_called
    r = Autocompact("autocompact", opts).run(grown, ctx)
    assert r.report.details["method"] == "session-memory" and r.report.details["last_summarized_id"]


# -- (b) the minimum tail on a small window ----------------------------------------------------------
def test_the_minimum_tail_is_not_cut_by_half_the_threshold(tmp_path, make_context):
    notes = tmp_path / "notes.md"
    early = write(tmp_path / "early.jsonl", SESSION[:9])  # the prompt and four rounds
    ctx = make_context(EXTRACTIVE, session_memory=notes)
    update_in_context(early, ctx)
    ctx.store.flush()
    t = write(tmp_path / "s.jsonl", SESSION)
    window = 52_000  # threshold 19,000, half of it 9,500; the default minimum tail: 10,000 tokens, 5 texts
    ctx = make_context(EXTRACTIVE, force=True, session_memory=notes, context_window=window)
    ctx.summarizer_factory = never_called
    r = Autocompact("autocompact", {}).run(t, ctx)
    assert r.report.action == "applied", r.report.details
    d = r.report.details
    assert d["method"] == "session-memory"
    count = make_counter("rough").count_messages
    view = t.view()
    tail = [m.api() for m in view.messages[len(view.messages) - d["kept_messages"]:]]
    # after the notes: rounds 4, 5 and the reply (3 texts, about 5,500 tokens); the tail grows back over
    # rounds 3 and 2 to the minimums (5 texts, 10,000 tokens), although that is more than half the threshold
    assert d["kept_messages"] == 9 and d["kept_tokens"] == count(tail) >= 10_000
    assert kept(reread(tmp_path, r.transcript).view())[:2] == ["text:Step 2.", "use:toolu_02"]


def test_a_minimum_tail_too_big_for_the_window_means_a_summary(tmp_path, make_context):
    notes = tmp_path / "notes.md"
    notes.write_text(NOTES)
    t = write(tmp_path / "s.jsonl", SESSION)
    ctx = make_context(EXTRACTIVE, force=True, session_memory=notes, context_window=40_000)  # threshold 7,000
    r = Autocompact("autocompact", {}).run(t, ctx)
    assert r.report.details["method"] == "summary"
    assert r.report.details["session_memory"].startswith("not used: still over the threshold after it")


# -- (c) re-injected files over budget ---------------------------------------------------------------
def test_a_file_over_its_budget_is_dropped_and_leaves_its_slot(tmp_path, make_context):
    files = [tmp_path / f"f{k}.py" for k in range(7)]
    for k, f in enumerate(files):
        f.write_text(f"VALUE_{k} = 'as read'\n")
    files[4].write_text("\n".join(" ".join(f"big{i}_{j}" for j in range(40)) for i in range(200)))
    lines: list[dict] = [{"role": "user", "content": "Refactor the billing module"}]
    for k, f in enumerate(files):
        tid = f"toolu_{k:02d}"
        lines.append({"role": "assistant", "content": [{"type": "text", "text": f"Step {k}."}, {
            "type": "tool_use", "id": tid, "name": "Read", "input": {"file_path": str(f)}}]})
        lines.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid,
                                                   "content": " ".join(f"r{k}_{i}" for i in range(1_500))}]})
    lines.append({"role": "assistant", "content": [{"type": "text", "text": "Done."}]})
    t = write(tmp_path / "s.jsonl", lines)
    r = Autocompact("autocompact", {}).run(t, make_context(EXTRACTIVE, context_window=40_000))
    d = r.report.details["reinjected"]
    # most recent first, five slots: f6, f5, (f4 over budget: dropped), f3, f2, f1
    assert d["files"] == [str(files[k]) for k in (6, 5, 3, 2, 1)]
    assert d["files_over_budget"] == [str(files[4])]
    text = "\n".join(b.get("text", "") for m in reread(tmp_path, r.transcript).view().messages for b in m.content)
    assert "big0_0" not in text and f"Note: {files[4]}" not in text  # neither its text nor a reference to it
    assert f'Called the Read tool with the following input: {{"file_path":"{files[1]}"}}' in text
    assert "compact_file_reference" not in (tmp_path / "out.jsonl").read_text()
