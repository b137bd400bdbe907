"""tool-result-budget: persisted previews, the aggregate budget, frozen decisions, replay, expand."""
from __future__ import annotations

import io
import json

from ctxkit.stages.tool_result_budget import ToolResultBudget
from ctxkit.store.expand import expand
from ctxkit.transcript import pairing_problems, read_transcript


def _session(tmp_path, results, name="t.jsonl", extra_turns=()):
    """A plain Anthropic transcript: one assistant turn calling tools, then their results."""
    calls = [{"type": "tool_use", "id": tid, "name": tool, "input": {}} for tid, tool, _ in results]
    lines = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": calls},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid, "content": c} for tid, _, c in results]},
        *extra_turns,
    ]
    p = tmp_path / name
    p.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return p


def _results(t):
    return {b["tool_use_id"]: b["content"] for m in t.view().messages for b in m.content if b.get("type") == "tool_result"}


def test_oversized_result_is_persisted_with_a_preview(tmp_path, make_context):
    big = "".join(f"line {i}\n" for i in range(20_000))
    t = read_transcript(_session(tmp_path, [("t1", "Bash", big), ("t2", "Bash", "small")]))
    ctx = make_context()
    out = ToolResultBudget("budget", {}).run(t, ctx)
    shown = _results(out.transcript)
    assert shown["t2"] == "small"
    text = shown["t1"]
    assert text.startswith("<persisted-output>\nOutput too large (")
    assert "Full output saved to: " in text and text.endswith("</persisted-output>")
    preview = text.split("Preview (first 2KB):\n", 1)[1]
    assert preview.startswith("line 0\nline 1\n")
    assert len(preview.split("\n...\n")[0].encode()) <= 2000
    assert preview.split("\n...\n")[0].endswith("line " + preview.split("\n...\n")[0].rsplit("line ", 1)[1])  # line end
    saved = text.split("Full output saved to: ", 1)[1].split("\n", 1)[0]
    assert open(saved).read() == big
    assert out.report.details["persisted"] == ["t1"]
    assert pairing_problems(out.transcript.view().api_messages()) == []


def test_exempt_tools_and_images_are_never_persisted(tmp_path, make_context):
    big = "x" * 60_000
    image = [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "A" * 90_000}},
             {"type": "text", "text": "y" * 60_000}]
    t = read_transcript(_session(tmp_path, [("t1", "Read", big), ("t2", "Bash", image)]))
    out = ToolResultBudget("budget", {}).run(t, make_context())
    assert _results(out.transcript) == {"t1": big, "t2": image}


def test_per_tool_limit(tmp_path, make_context):
    t = read_transcript(_session(tmp_path, [("t1", "Bash", "x" * 31_000), ("t2", "Grep", "x" * 31_000)]))
    out = ToolResultBudget("budget", {"per_tool": {"Bash": 30_000}}).run(t, make_context())
    shown = _results(out.transcript)
    assert shown["t1"].startswith("<persisted-output>") and shown["t2"] == "x" * 31_000


def test_empty_result_becomes_a_completion_note(tmp_path, make_context):
    t = read_transcript(_session(tmp_path, [("t1", "Bash", "")]))
    out = ToolResultBudget("budget", {}).run(t, make_context())
    assert _results(out.transcript) == {"t1": "(Bash completed with no output)"}


def test_aggregate_budget_persists_the_largest_fresh_results(tmp_path, make_context):
    # the seeds' example: 120k + 90k + 20k against a 200k budget: only A goes
    t = read_transcript(_session(tmp_path, [("A", "Grep", "a" * 120_000), ("B", "Grep", "b" * 90_000),
                                            ("C", "Grep", "c" * 20_000)]))
    out = ToolResultBudget("budget", {"max_result_chars": 150_000}).run(t, make_context())
    shown = _results(out.transcript)
    assert shown["A"].startswith("<persisted-output>")
    assert shown["B"] == "b" * 90_000 and shown["C"] == "c" * 20_000


def test_decisions_are_frozen_and_replayed_byte_for_byte(tmp_path, make_context):
    """Run on the original transcript twice (as when an agent keeps writing full outputs): the second run
    replays the same replacement, and a result seen in full stays full even under a stricter policy."""
    path = _session(tmp_path, [("t1", "Bash", "x" * 60_000), ("t2", "Bash", "y" * 40_000)])
    store_dir = tmp_path / "store"
    ctx = make_context(store_dir=store_dir)
    first = ToolResultBudget("budget", {}).run(read_transcript(path), ctx)
    ctx.store.flush()  # as the CLI does once the output is safely written
    first_view = first.transcript.view().api_messages()
    # a stricter limit later must not touch t2, which the model has already seen in full
    second = ToolResultBudget("budget", {"max_result_chars": 10_000}).run(read_transcript(path),
                                                                           make_context(store_dir=store_dir))
    assert second.transcript.view().api_messages() == first_view
    assert "t1" in second.report.details["replayed"]


def test_compacting_the_output_again_changes_nothing(tmp_path, make_context):
    path = _session(tmp_path, [("t1", "Bash", "x" * 60_000)])
    ctx = make_context()
    out = ToolResultBudget("budget", {}).run(read_transcript(path), ctx)
    ctx.store.flush()
    buf = io.BytesIO()
    out.transcript.write(buf)
    again_path = tmp_path / "again.jsonl"
    again_path.write_bytes(buf.getvalue())
    again = ToolResultBudget("budget", {}).run(read_transcript(again_path), make_context())
    assert again.transcript.unchanged()


def test_expand_restores_what_was_persisted(tmp_path, make_context):
    path = _session(tmp_path, [("t1", "Bash", "x" * 60_000), ("t2", "Bash", "")])
    ctx = make_context()
    out = ToolResultBudget("budget", {}).run(read_transcript(path), ctx)
    restored, report = expand(out.transcript, ctx.store)
    assert sorted(report.restored) == ["t1", "t2"]
    buf = io.BytesIO()
    restored.write(buf)
    assert [json.loads(x) for x in buf.getvalue().splitlines()] == [json.loads(x) for x in path.read_text().splitlines()]


def test_corpus_big_outputs(corpus_session, make_context):
    t = read_transcript(corpus_session("big-outputs"))
    ctx = make_context()
    out = ToolResultBudget("budget", {"max_result_chars": 20_000}).run(t, ctx)
    # the 24 KB inlined output is now persisted; Claude Code's own 223 KB preview is left as it is
    assert len(out.report.details["persisted"]) == 1
    assert ctx.tokens.count_messages(out.transcript.view().api_messages()) < ctx.tokens.count_messages(
        t.view().api_messages())
    assert pairing_problems(out.transcript.view().api_messages()) == []
