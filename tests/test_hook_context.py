"""A hook's added context in the view of a Claude Code session, where Claude Code sends it.

Claude Code 2.1.150 records a PostToolUse hook's ``additionalContext`` as an attachment line without the
``rendered`` field the projection renders from; the genuine CLI sends it as a text block after the tool
result within its turn and folds it into the result from the next turn on
(ctxkit/transcript/claude_code/hook_context.py). These transcripts are shaped like 2.1.150's recording
(``bench/cc_turn_after_compaction.py 2.1.150 stream none --post-tool-context``)."""
from __future__ import annotations

import json

from builders import Session

from ctxkit import load_policy
from ctxkit.cli.main import app
from ctxkit.reports import replay
from ctxkit.tokens import make_counter

CONTEXT = "<system-reminder>\nPostToolUse:Bash hook additional context: Captured the call.\n</system-reminder>"


def _two_turns(tmp_path, second_result="turn-two\n", list_result=False):
    s = Session(tmp_path)
    s.prompt("Inspect the app please")
    s.tool("Bash", {"command": "seq 1 3"}, [{"type": "text", "text": "1\n2\n3"}] if list_result else "1\n2\n3\n")
    s.hook_context("Captured the call.")
    s.say("Turn one done.")
    s.prompt("Now the second turn please")
    s.tool("Bash", {"command": "echo turn-two"}, second_result)
    s.hook_context("Captured the call.")
    return s


def _view(runner, path, to="anthropic") -> list[dict]:
    done = runner.invoke(app, ["view", "--to", to, str(path)])
    assert done.exit_code == 0, done.output
    if to == "anthropic-request":
        return json.loads(done.stdout)["messages"]
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_a_hooks_context_is_its_own_block_in_its_turn_and_folded_into_the_result_after(tmp_path, runner):
    path = tmp_path / "s.jsonl"
    _two_turns(tmp_path).write(path)
    for to in ("anthropic", "anthropic-request"):
        msgs = _view(runner, path, to)
        first, last = msgs[2]["content"], msgs[-1]["content"]
        assert [b["type"] for b in first] == ["tool_result"]
        assert first[0]["content"] == "1\n2\n3\n\n" + CONTEXT  # stripped, then a blank line: as 2.1.150 sends it
        assert [b["type"] for b in last] == ["tool_result", "text"]
        assert last[0]["content"] == "turn-two\n" and last[1]["text"] == CONTEXT


def test_a_result_whose_content_is_a_list_keeps_the_context_beside_it(tmp_path, runner):
    path = tmp_path / "s.jsonl"
    _two_turns(tmp_path, list_result=True).write(path)
    first = _view(runner, path)[2]["content"]
    assert [b["type"] for b in first] == ["tool_result", "text"] and first[1]["text"] == CONTEXT


def test_the_replay_sees_the_next_turn_rewrite_the_messages_from_the_folded_result(tmp_path):
    """The cache model compares requests by their pieces' digests: the first request of turn 2 must
    part from the last of turn 1 at the result the context was folded into, not after it."""
    lines = [json.dumps(e).encode() + b"\n" for e in _two_turns(tmp_path).entries]
    prompt2 = next(k for k, line in enumerate(lines) if b"Now the second turn" in line)
    policy, counter = load_policy("default"), make_counter("rough")
    growing, memo = replay.GrowingRead(tmp_path / "grown.jsonl"), {}
    before = replay.request_segments(growing.add(lines[:prompt2]), policy, counter, None, memo)
    after = replay.request_segments(growing.add(lines[prompt2:prompt2 + 1]), policy, counter, None, memo)
    part = next(k for k, (a, b) in enumerate(zip(before, after, strict=False)) if a.digest != b.digest)
    lead = sum(p.lead for p in before)
    assert part == lead + 2  # the prompt and the call are the same; the result is not
    assert len(after) == len(before)  # (the context's own block is gone into it; the prompt added one)


def test_a_view_grown_line_by_line_folds_as_a_view_read_whole(tmp_path, monkeypatch):
    """A grown view folds on from where the earlier view's fold left off (the turns before it are not looked
    at again): after every line, through three turns, its messages are the ones a read of the whole file
    shows, the earlier turns' context folded into their results and the last turn's beside its own."""
    from ctxkit.transcript import read_transcript
    from ctxkit.transcript.claude_code import projection

    went_on: list[int] = []  # the messages each fold was told it had folded before
    fold = projection.fold_earlier_turns
    monkeypatch.setattr(projection, "fold_earlier_turns", lambda msgs, *a: went_on.append(a[0] if a else 0)
                        or fold(msgs, *a))
    s = _two_turns(tmp_path)
    s.say("Turn two done.")
    s.prompt("A third turn please")
    s.tool("Bash", {"command": "echo three"}, "three\n")
    s.hook_context("Captured the call.")
    lines = [json.dumps(e).encode() + b"\n" for e in s.entries]
    answers = [k for k, e in enumerate(s.entries) if e["type"] == "assistant"]
    # line by line, and request by request as simulate reads it (an answer and the prompt after it: a grown
    # view whose new messages open a turn, so the turn before is folded then)
    for cuts in (list(range(1, len(lines) + 1)), [*answers[1:], len(lines)]):
        growing, done = replay.GrowingRead(tmp_path / f"grown-{len(cuts)}.jsonl"), 0
        for k in cuts:
            view = growing.add(lines[done:k]).view()
            done = k
            (tmp_path / "whole.jsonl").write_bytes(b"".join(lines[:k]))
            whole = read_transcript(str(tmp_path / "whole.jsonl")).view()
            assert [m.api() for m in view.messages] == [m.api() for m in whole.messages]
    folded = [m for m in view.messages if m.kind == "tool_results"]
    assert [len(m.content) for m in folded] == [1, 1, 2]  # (the last turn's context is a block of its own)
    assert sum(1 for n in went_on if n) >= 3  # (most lines: the view grew from the one before)
