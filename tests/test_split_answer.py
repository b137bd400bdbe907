"""A line written between the streamed fragments of one answer (a ``/rename`` typed while two parallel
Agent calls stream, as in a real Claude Code 2.1.92 session), read the way Claude Code reads it.

Claude Code 2.1.92 (its cli.js: ``recoverOrphanedParallelToolResults``, ``normalizeMessagesForAPI``,
``ensureToolResultPairing``; docs/formats.md) sends such an answer, from the next turn on and after a
resume, as two assistant messages around the command's lines: the calls of the first part answered with
an error result, their real results left out. Those results are genuine lines: the file reads, nothing is
refused, nothing is lost; the view is what Claude Code sends."""
from __future__ import annotations

import json

import pytest
from builders import Session

from ctxkit.cli.main import app
from ctxkit.reports import replay
from ctxkit.transcript import read_transcript

RENAME = "<command-name>/rename</command-name>\n<command-message>rename</command-message>\n<command-args>phase3</command-args>"
RENAMED = "<local-command-stdout>Session renamed to: phase3</local-command-stdout>"


def _fragment(s: Session, mid: str, block: dict) -> str:
    return s._chain("assistant", message={"id": mid, "role": "assistant", "model": "m", "content": [block]})["uuid"]


def _agent(call: str, what: str) -> dict:
    return {"type": "tool_use", "id": call, "name": "Task", "input": {"description": what, "prompt": what}}


def _session(tmp_path, between: str, calls: int = 2, split_after: int = 1) -> Session:
    """A prompt, an answer of ``calls`` parallel Agent calls streamed one fragment a call with ``between``
    (``command``: /rename's two local-command lines and the title it writes; ``system``: a system entry
    Claude Code does not send; ``queue``: a prompt queued meanwhile) written after fragment ``split_after``,
    each result hanging off its call's fragment, then the answer after them and a second turn."""
    s = Session(tmp_path)
    s.prompt("Write the tests with two agents")
    mid, fragments = "msg_split", []
    fragments.append(_fragment(s, mid, {"type": "text", "text": "Delegating to two agents."}))
    for k in range(calls):
        if k == split_after:
            if between == "command":
                s.meta("custom-title", customTitle="phase3")
                s._chain("system", subtype="local_command", content=RENAME, level="info")
                s._chain("system", subtype="local_command", content=RENAMED, level="info")
            elif between == "system":
                s._chain("system", subtype="bridge_status", content="connected", level="info")
            else:
                s.meta("queue-operation", operation="enqueue", content="also check the docs")
        fragments.append(_fragment(s, mid, _agent(f"toolu_agent{k}", f"part {k}")))
    for k in range(calls):
        s.parent = fragments[k + 1]
        s._chain("user", message={"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_agent{k}", "content": [
                {"type": "text", "text": f"Agent {k} wrote 38 failing tests."}]}]},
                 sourceToolAssistantUUID=fragments[k + 1])
    s.say("Both agents are done.")
    s.prompt("Now make them pass")
    s.say("On it.")
    return s


def _write(tmp_path, s: Session):
    path = tmp_path / "session.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in s.entries))
    return path


def _request(runner, path) -> list[dict]:
    done = runner.invoke(app, ["view", "--to", "anthropic-request", str(path)])
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout)["messages"]


def _blocks(m: dict) -> list[dict]:
    return m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]


def _results(msgs: list[dict]) -> dict[str, dict]:
    return {b["tool_use_id"]: b for m in msgs for b in _blocks(m) if b.get("type") == "tool_result"}


def _text(block: dict) -> str:
    c = block.get("content")
    return c if isinstance(c, str) else "".join(x.get("text", "") for x in c)


def test_a_command_run_while_an_answer_streams_reads_and_doctor_finds_nothing(tmp_path, runner):
    path = _write(tmp_path, _session(tmp_path, "command"))
    stats = runner.invoke(app, ["stats", str(path)])
    assert stats.exit_code == 0, stats.output
    doctor = runner.invoke(app, ["doctor", str(path)])
    assert doctor.exit_code == 0, doctor.output
    assert "toolu_agent" not in doctor.output


def test_the_request_splits_the_answer_at_the_command_as_claude_code_sends_it(tmp_path, runner):
    """The call before the command is answered with an error (Claude Code's pairing repair), its real
    result is not sent; the call after it gets its real result; the command's lines go between."""
    msgs = _request(runner, _write(tmp_path, _session(tmp_path, "command")))
    answers = [k for k, m in enumerate(msgs) if m["role"] == "assistant"
               and any(b.get("type") == "tool_use" for b in _blocks(m))]
    assert [[b["id"] for b in _blocks(msgs[k]) if b["type"] == "tool_use"] for k in answers] == \
        [["toolu_agent0"], ["toolu_agent1"]]
    between = _blocks(msgs[answers[0] + 1])
    assert between[0]["type"] == "tool_result" and between[0]["tool_use_id"] == "toolu_agent0"
    assert between[0]["is_error"] is True and "Agent 0" not in _text(between[0])
    assert any("/rename" in b.get("text", "") for b in between)
    results = _results(msgs)
    assert _text(results["toolu_agent1"]) == "Agent 1 wrote 38 failing tests."
    assert not any("Agent 0 wrote" in json.dumps(m) for m in msgs)


@pytest.mark.parametrize("between", ["system", "queue"])
def test_a_line_claude_code_does_not_send_keeps_the_answer_whole(between, tmp_path, runner):
    """A system entry other than a local command, or a queued prompt, between fragments: Claude Code merges
    the fragments across it, and every call is answered with its real result in one message."""
    msgs = _request(runner, _write(tmp_path, _session(tmp_path, between)))
    answer = next(m for m in msgs if any(b.get("type") == "tool_use" for b in _blocks(m)))
    assert [b["id"] for b in _blocks(answer) if b["type"] == "tool_use"] == ["toolu_agent0", "toolu_agent1"]
    after = _blocks(msgs[msgs.index(answer) + 1])
    assert [(b["tool_use_id"], _text(b)) for b in after] == [
        (f"toolu_agent{k}", f"Agent {k} wrote 38 failing tests.") for k in range(2)]


def test_three_calls_split_after_the_second_answer_the_first_two_as_missing(tmp_path, runner):
    msgs = _request(runner, _write(tmp_path, _session(tmp_path, "command", calls=3, split_after=2)))
    results = _results(msgs)
    assert [results[f"toolu_agent{k}"].get("is_error", False) for k in range(3)] == [True, True, False]
    assert _text(results["toolu_agent2"]) == "Agent 2 wrote 38 failing tests."
    assert runner.invoke(app, ["stats", str(tmp_path / "session.jsonl")]).exit_code == 0


def test_compact_then_expand_gives_every_line_back(tmp_path, runner):
    path = _write(tmp_path, _session(tmp_path, "command"))
    original = path.read_bytes()
    out, back, store = tmp_path / "out.jsonl", tmp_path / "back.jsonl", tmp_path / "store"
    done = runner.invoke(app, ["compact", str(path), "--force", "-p", "no-llm", "-o", str(out), "--store", str(store)])
    assert done.exit_code == 0, done.output
    done = runner.invoke(app, ["expand", str(out), "-o", str(back), "--store", str(store)])
    assert done.exit_code == 0, done.output
    # the file as read, byte for byte, then the lines the compaction appended (its boundary and summary)
    assert back.read_bytes()[:len(original)] == original
    assert runner.invoke(app, ["stats", str(back)]).exit_code == 0


def test_a_view_grown_line_by_line_is_the_view_read_whole(tmp_path):
    s = _session(tmp_path, "command")
    lines = [json.dumps(e).encode() + b"\n" for e in s.entries]
    growing, done = replay.GrowingRead(tmp_path / "grown.jsonl"), 0
    for k in range(1, len(lines) + 1):
        t = growing.add(lines[done:k])
        done = k
        (tmp_path / "whole.jsonl").write_bytes(b"".join(lines[:k]))
        whole = read_transcript(str(tmp_path / "whole.jsonl"))
        assert [m.api() for m in t.view().messages] == [m.api() for m in whole.view().messages], k
        assert t.view().unsent == whole.view().unsent, k
