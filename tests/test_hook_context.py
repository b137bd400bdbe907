"""A hook's added context in the view of a Claude Code session, where Claude Code sends it.

Claude Code 2.1.150 records a PostToolUse hook's ``additionalContext`` as an attachment line without the
``rendered`` field the projection renders from; the genuine CLI sends it as a text block after the tool
result within its turn and folds it into the result from the next turn on
(ctxkit/transcript/claude_code/hook_context.py). These transcripts are shaped like 2.1.150's recording
(``bench/cc_turn_after_compaction.py 2.1.150 stream none --post-tool-context``)."""
from __future__ import annotations

import json

import pytest
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


def test_a_turn_a_slash_command_opens_folds_the_turn_befores_context_too(tmp_path, runner):
    """As 2.1.150 sent it (bench/cc_turn_after_compaction.py with turn 2 a custom ``/second`` command,
    recorded with the cc-harness stand-in): the command starts a turn as a typed prompt does."""
    s = Session(tmp_path)
    s.prompt("Inspect the app please")
    s.tool("Bash", {"command": "seq 1 3"}, "1\n2\n3\n")
    s.hook_context("Captured the call.")
    s.say("Turn one done.")
    s.prompt("<command-message>second</command-message>\n<command-name>/second</command-name>")
    s.prompt("Now the second turn please\n", isMeta=True)
    path = tmp_path / "s.jsonl"
    s.write(path)
    for to in ("anthropic", "anthropic-request"):
        assert _view(runner, path, to)[2]["content"][0]["content"] == "1\n2\n3\n\n" + CONTEXT


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
    monkeypatch.setattr(projection, "fold_earlier_turns", lambda msgs, *a: went_on.append(a[1] if len(a) > 1 else 0)
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


def _context(command: str) -> str:
    return f"<system-reminder>\nPostToolUse:Bash hook additional context: Context for {command}\n</system-reminder>"


def _parallel_turn(tmp_path) -> tuple[Session, list[str]]:
    """A turn of two Bash calls made in one answer, each with its hook's context (``beta`` finishes first)."""
    s = Session(tmp_path)
    s.prompt("Inspect the app please")
    return s, s.parallel_with_hooks(["echo alpha", "echo beta"])


def _next_turn(s: Session, tmp_path):
    """The turn ended and the next one's prompt typed; the session written, its path."""
    s.say("Turn one done.")
    s.prompt("Now the second turn please")
    path = tmp_path / "s.jsonl"
    s.write(path)
    return path


def test_parallel_calls_each_fold_their_hooks_context_into_their_own_result(tmp_path, runner):
    """As genuine Claude Code 2.1.150 sent the next turn's request (two parallel Bash calls, a PostToolUse
    hook adding context to each, recorded with the cc-harness stand-in): each result with its own call's
    context, none lost (the first call's result line and its hook's lines are a dead end of the chain)."""
    s, (alpha, beta) = _parallel_turn(tmp_path)
    path = _next_turn(s, tmp_path)
    for to in ("anthropic", "anthropic-request"):
        results = _view(runner, path, to)[2]["content"]
        assert [(b["tool_use_id"], b["content"]) for b in results] == [
            (beta, "beta\n\n" + _context("echo beta")), (alpha, "alpha\n\n" + _context("echo alpha"))]


def test_within_their_turn_parallel_calls_contexts_follow_all_the_results(tmp_path, runner):
    """The same turn's own next request, as 2.1.150 sent it: the results, then each context in the order
    the hooks wrote them, one that another follows ending with a newline."""
    s, (alpha, beta) = _parallel_turn(tmp_path)
    path = tmp_path / "s.jsonl"
    s.write(path)
    for to in ("anthropic", "anthropic-request"):
        blocks = _view(runner, path, to)[2]["content"]
        assert [b.get("tool_use_id") or b["text"] for b in blocks] == [
            beta, alpha, _context("echo beta") + "\n", _context("echo alpha")]


def test_after_a_result_with_a_list_content_no_later_context_folds(tmp_path, runner):
    """As 2.1.150 sent it (a Read of an image and two Bash calls in one answer, the Read first to finish,
    recorded with the cc-harness stand-in): the context after a result whose content is a list stays a
    text, the results merged after it go before it, so no later context of the message folds either;
    from the next turn on they lose the newline their own turn's merge ended them with."""
    s, (alpha, beta) = _parallel_turn(tmp_path)
    first = next(e for e in s.entries if e["type"] == "user" and isinstance(e["message"]["content"], list))
    first["message"]["content"][0]["content"] = [{"type": "text", "text": "beta"}]
    path = _next_turn(s, tmp_path)
    for to in ("anthropic", "anthropic-request"):
        blocks = _view(runner, path, to)[2]["content"]
        assert [b.get("tool_use_id") or b["text"] for b in blocks] == [
            beta, alpha, _context("echo beta"), _context("echo alpha")]
        assert blocks[1]["content"] == "alpha\n"


def test_a_slash_command_the_model_ran_opens_no_turn(tmp_path, runner):
    """The lines of a command the model ran with a tool join its results' message: the turn goes on, and
    its hook context stays a block of its own."""
    s = Session(tmp_path)
    s.prompt("Inspect the app please")
    s.tool("Bash", {"command": "seq 1 3"}, "1\n2\n3\n")
    s.hook_context("Captured the call.")
    s.tool("SlashCommand", {"command": "/lint"}, "Launching command /lint")
    s.prompt("<command-message>lint is running…</command-message>\n<command-name>/lint</command-name>", isMeta=True)
    path = tmp_path / "s.jsonl"
    s.write(path)
    blocks = _view(runner, path, "anthropic-request")[2]["content"]
    assert [b["type"] for b in blocks] == ["tool_result", "text"]
    assert blocks[0]["content"] == "1\n2\n3\n" and blocks[1]["text"] == CONTEXT


def test_clearing_a_result_a_context_was_folded_into_keeps_the_context_as_the_file_written_does(tmp_path):
    """A stage that clears or persists tool results (microcompact, the tool-result budget) replaces the
    results of an earlier turn, the ones a hook's context was folded into: the view the run goes on with
    (what simulate prices, what the next stage sees) is the one the file it writes reads as, the context
    folded into the cleared result; before, the carried view lost the context, the file still held it."""
    from ctxkit.transcript import read_transcript
    from ctxkit.transcript.edits import replace_blocks
    from ctxkit.transcript.writer import write_transcript

    t = _two_turns(tmp_path).write(tmp_path / "s.jsonl")
    cleared = replace_blocks(t, {ref: {**b, "content": "[cleared]"} for m in t.view().messages
                                 for b, ref in zip(m.content, m.refs, strict=True) if b.get("type") == "tool_result"})
    with open(tmp_path / "out.jsonl", "wb") as out:
        write_transcript(cleared, out)
    run = [m.api() for m in cleared.view().messages]
    assert run == [m.api() for m in read_transcript(str(tmp_path / "out.jsonl")).view().messages]
    assert run[2]["content"] == [{"type": "tool_result", "tool_use_id": "toolu_2", "content": "[cleared]\n\n" + CONTEXT}]


def test_a_view_grown_line_by_line_folds_parallel_calls_command_turns_and_images_as_one_read_whole(tmp_path):
    """Four turns (a typed prompt, a typed /review, prompts) of parallel calls with hooks, and a Read of an
    image whose context stays a text: at every line, and request by request, the grown view (the fold
    going on from the turn it left off at) and the request simulate builds from it are those of a read of
    the whole file."""
    from ctxkit.transcript import read_transcript

    s = Session(tmp_path)
    s.prompt("Inspect the app please")
    s.parallel_with_hooks(["echo alpha", "echo beta", "echo gamma"])
    s.say("Turn one done.")
    s.prompt("<command-message>review is running…</command-message>\n<command-name>/review</command-name>", isMeta=True)
    s.prompt("Review the code.", isMeta=True)
    s.parallel_with_hooks(["echo one", "echo two"])
    s.tool("Read", {"file_path": "/w/a.png"}, [{"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                                           "data": "iVBORw0KGgo="}}])
    s.hook_context("Saw an image.", "PostToolUse:Read")
    s.say("Turn two done.")
    for k in (3, 4):
        s.prompt(f"Turn {k} please")
        s.parallel_with_hooks([f"echo x{k}", f"echo y{k}"])
        s.say(f"Turn {k} done.")
    lines = [json.dumps(e).encode() + b"\n" for e in s.entries]
    policy = load_policy(None, [])
    counter = make_counter(policy.estimator, model=policy.model)
    answers = [k for k, e in enumerate(s.entries) if e["type"] == "assistant"]
    for cuts in (list(range(1, len(lines) + 1)), [*answers[1:], len(lines)]):
        growing, done, memo = replay.GrowingRead(tmp_path / f"grown-{len(cuts)}.jsonl"), 0, {}
        for k in cuts:
            t = growing.add(lines[done:k])
            done = k
            (tmp_path / "whole.jsonl").write_bytes(b"".join(lines[:k]))
            whole = read_transcript(str(tmp_path / "whole.jsonl"))
            assert [m.api() for m in t.view().messages] == [m.api() for m in whole.view().messages], k
            assert replay.request_segments(t, policy, counter, None, memo) == \
                replay.request_segments(whole, policy, counter, None, {}), k
    folded = [m.api()["content"] for m in whole.view().messages if m.kind == "tool_results"]
    assert [[b["type"] for b in c] for c in folded] == [["tool_result"] * 3, ["tool_result"] * 2,
                                                        ["tool_result", "text"], ["tool_result"] * 2,
                                                        ["tool_result"] * 2 + ["text"] * 2]


def _hooked_turns(tmp_path):
    """Two turns whose calls each have a hook's context, then, two hours on, a third."""
    from datetime import timedelta

    s = Session(tmp_path)
    for turn, commands in enumerate([["seq 1 1000"], ["seq 1001 2000", "seq 2001 3000"]]):
        s.prompt(f"Turn {turn} please")
        for command in commands:
            first, last = command.split()[1:]
            s.tool("Bash", {"command": command}, "".join(f"{k}\n" for k in range(int(first), int(last) + 1)))
            s.hook_context("Captured the call.")
        s.say("Done.")
    s.clock += timedelta(hours=2)
    s.prompt("A third turn please")
    return s


@pytest.mark.parametrize("stage, sets, did", [
    ("microcompact", ["stages.microcompact.enabled=true", "stages.microcompact.options.mode=time-based",
                      "stages.microcompact.options.keep_recent=1"], "cleared 2 old tool result(s)"),
    ("tool-result-budget", ["stages.tool-result-budget.options.per_tool.Bash=1000"], "persisted 3 result(s)")])
def test_a_result_a_context_was_folded_into_is_stored_and_put_back_as_written(stage, sets, did, tmp_path, runner):
    """A stage that clears (microcompact) or persists (the tool-result budget) results, among them those a
    hook's context was folded into (from the next turn on), stores each output as its entry holds it, not
    with the context, and a second run on its output finds them done already: expand gives back the
    session as it was. Before, the store kept the context as part of the output (expand wrote it into the
    result, and the view then showed it twice); a second microcompact run, finding the folded placeholder
    unlike its own, cleared the placeholder over the output (expand gave back no output at all)."""
    path = tmp_path / "s.jsonl"
    _hooked_turns(tmp_path).write(path)
    store = ["--store", str(tmp_path / "store"), *(x for kv in sets for x in ("--set", kv))]
    first = runner.invoke(app, ["compact", str(path), "-o", str(tmp_path / "once.jsonl"), *store])
    assert first.exit_code == 0, first.output
    assert f"{stage}: applied: {did}" in first.output
    again = runner.invoke(app, ["compact", str(tmp_path / "once.jsonl"), "-o", str(tmp_path / "twice.jsonl"), *store])
    assert again.exit_code == 0, again.output
    assert f"{stage}: nothing-to-do" in again.output
    assert (tmp_path / "twice.jsonl").read_bytes() == (tmp_path / "once.jsonl").read_bytes()
    for out in ("once.jsonl", "twice.jsonl"):
        done = runner.invoke(app, ["expand", str(tmp_path / out), "--store", str(tmp_path / "store"), "-o",
                                   str(tmp_path / "back.jsonl")])
        assert done.exit_code == 0, done.output
        assert (tmp_path / "back.jsonl").read_bytes() == path.read_bytes(), out
