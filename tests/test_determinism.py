"""The same input, policy, store and clock give the same bytes: compacting the ORIGINAL transcript a
second time against the store the first run filled replays every decision the first run made, thinking
blocks dropped after cleared results included (DESIGN.md, "Idempotent and deterministic")."""
from __future__ import annotations

import pytest
from conftest import cc_sessions, public_transcripts

from ctxkit.cli.main import app

CORPUS = [p / "session.jsonl" for p in cc_sessions()] + public_transcripts()


@pytest.mark.skipif(not CORPUS, reason="shared corpus not found")
@pytest.mark.parametrize("policy", ["default", "claude-code-full"])
@pytest.mark.parametrize("path", CORPUS, ids=lambda p: f"{p.parent.name}/{p.name[:12]}")
def test_compacting_the_same_input_twice_gives_the_same_bytes(runner, tmp_path, path, policy):
    out = tmp_path / "out.jsonl"  # one output path: the summary names where the full history is
    args = ["compact", str(path), "-o", str(out), "--policy", policy, "--store", str(tmp_path / "store"),
            "--now", "2026-12-01T00:00:00Z", "--context-window", "40000", "--report", "json",
            "--set", "overhead_tokens=0",  # the stand-in API's usage left the system prompt and tools out
            "--set", "thresholds.summary_reserve=5000"]  # a reserve the compactions fit under in that window
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.stderr
    once = out.read_bytes()
    second = runner.invoke(app, args)
    assert second.exit_code == 0, second.stderr
    assert out.read_bytes() == once


def test_microcompact_drops_the_same_thinking_whichever_stage_put_its_placeholder_back(tmp_path, make_context):
    """The thinking after a result this run clears goes, also when an earlier step of the run already
    replayed the placeholder there: what counts is what the model saw (the run's input), not what
    microcompact itself had left to change."""
    from datetime import timedelta

    from builders import Call, Turn, conversation, last_time, write, written

    from ctxkit.stages.microcompact import PLACEHOLDER, Microcompact
    from ctxkit.transcript import read_transcript
    from ctxkit.transcript.edits import replace_blocks

    output = "".join(f"line {i}: output\n" for i in range(40))
    turns = [Turn("look around", [[Call("Read", {"file_path": f"/w/{k}.py"}, output)] for k in range(4)], "Seen.",
                  thinking=True)]
    entries = conversation(turns)
    t = read_transcript(write(tmp_path / "t.jsonl", entries))
    now = last_time(entries) + timedelta(hours=2)
    first = Microcompact("microcompact", {"keep_recent": 1}).run(t, ctx := make_context(now=now))
    ctx.store.flush()
    assert first.report.details["thinking_stripped"] > 0
    # an earlier stage of the second run put the placeholder back where the first run cleared
    cleared = set(first.report.details["cleared"])
    replayed = replace_blocks(t, {ref: {**b, "content": PLACEHOLDER} for m in t.view().messages
                                  for b, ref in zip(m.content, m.refs, strict=True)
                                  if b.get("type") == "tool_result" and b.get("tool_use_id") in cleared})
    second = Microcompact("microcompact", {"keep_recent": 1}).run(replayed, make_context(now=now))
    assert written(second.transcript) == written(first.transcript)
    # while on the first run's output (cleared before this run) the thinking of later turns is kept
    out = read_transcript(write(tmp_path / "out.jsonl", [first.transcript.entry(i)
                                                         for i in first.transcript.live_indexes()]))
    assert Microcompact("microcompact", {"keep_recent": 1}).run(out, make_context(now=now)).transcript is out
