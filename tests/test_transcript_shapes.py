"""Transcript shapes Claude Code 2.1.x writes and how it sends them, each as a small synthetic transcript.

Each shape was found by recording the real CLI (../shared/tools/cc-harness) and comparing the
transcript with the request it sent next. Set CTXKIT_EXTRA_CORPUS to a folder of such recordings
(session.jsonl + requests.jsonl.gz per session) to compare the view with them as well.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from builders import assistant_message, user_message, write
from helpers import core, last_main_request

from ctxkit.transcript import pairing_problems, read_transcript
from ctxkit.transcript.claude_code.projection import TASK_NOTIFICATION_WRAPPER, TOOL_LOADED_TEXT
from ctxkit.transcript.writer import view_messages


def _view(tmp_path, entries):
    chained, parent = [], None
    for k, e in enumerate(entries):
        e = dict(e)
        e.setdefault("uuid", f"e{k}")
        e.setdefault("parentUuid", parent)
        parent = e["uuid"]
        chained.append(e)
    t = read_transcript(write(tmp_path / "t.jsonl", chained))
    msgs = view_messages(t, "anthropic")
    assert pairing_problems(msgs) == []
    return msgs


def _user(content, **kw):
    return {"type": "user", "message": user_message(content), **kw}


def _asst(mid, block):
    return {"type": "assistant", "message": assistant_message([block], mid)}


def _tool_use(tid, name="Bash", **inp):
    return {"type": "tool_use", "id": tid, "name": name, "input": inp}


def _result(tid, content="ok"):
    return _user([{"type": "tool_result", "tool_use_id": tid, "content": content}])


def _types(m):
    return [b["type"] for b in m["content"]] if isinstance(m["content"], list) else ["str"]


def test_text_streamed_after_a_tool_use_is_sent_before_the_tool_calls(tmp_path):
    # recorded: the model streamed [text, Read, text, Bash]; Claude Code sent [text, text, Read, Bash]
    msgs = _view(tmp_path, [
        _user("look"),
        _asst("m1", {"type": "text", "text": "Looking again."}),
        _asst("m1", _tool_use("t1", "Read", file_path="/x.png")),
        _asst("m1", {"type": "text", "text": "And listing."}),
        _asst("m1", _tool_use("t2", command="ls")),
        _result("t1"),
        _result("t2"),
        _asst("m2", {"type": "text", "text": "done"}),
    ])
    a = msgs[1]["content"]
    assert [(b["type"], b.get("text") or b.get("id")) for b in a] == [
        ("text", "Looking again."), ("text", "And listing."), ("tool_use", "t1"), ("tool_use", "t2")]
    assert [b["tool_use_id"] for b in msgs[2]["content"]] == ["t1", "t2"]


def test_a_result_written_above_the_answer_that_called_it_follows_it_along_the_chain(tmp_path):
    """Claude Code 2.1.121 wrote a tool's result two lines above the answer that called it (its
    ``parentUuid`` that answer's, the chain intact): Claude Code reads along the chain, so the view has
    the call, then its result; it was a broken file ("answers no tool_use before it", exit 3)."""
    entries = [
        {**_user("look"), "uuid": "u1", "parentUuid": None},
        {**_asst("m1", _tool_use("t1", command="ls")), "uuid": "a1", "parentUuid": "u1"},
        {**_result("t1"), "uuid": "r1", "parentUuid": "a1"},
        {**_result("t2", "listed"), "uuid": "r2", "parentUuid": "a3"},  # written before its parents
        {**_asst("m2", {"type": "text", "text": "Listing again."}), "uuid": "a2", "parentUuid": "r1"},
        {**_asst("m2", _tool_use("t2", command="ls -l")), "uuid": "a3", "parentUuid": "a2"},
        {**_asst("m3", {"type": "text", "text": "done"}), "uuid": "a4", "parentUuid": "r2"},
    ]
    msgs = _view(tmp_path, entries)
    assert [_types(m) for m in msgs] == [["str"], ["tool_use"], ["tool_result"], ["text", "tool_use"],
                                         ["tool_result"], ["text"]]
    assert msgs[4]["content"][0]["content"] == "listed"
    done = subprocess.run([sys.executable, "-m", "ctxkit.cli.main", "stats", "--json", str(tmp_path / "t.jsonl")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_thinking_after_a_tool_use_keeps_its_place(tmp_path):
    # recorded: [thinking, tool_use, thinking, text, tool_use] was sent unchanged
    msgs = _view(tmp_path, [
        _user("go"),
        _asst("m1", {"type": "thinking", "thinking": "a", "signature": "s1"}),
        _asst("m1", _tool_use("t1", command="echo 2")),
        _asst("m1", {"type": "thinking", "thinking": "b", "signature": "s2"}),
        _asst("m1", {"type": "text", "text": "Mid text."}),
        _asst("m1", _tool_use("t2", command="echo 3")),
        _result("t1"),
        _result("t2"),
        _asst("m2", {"type": "text", "text": "done"}),
    ])
    assert _types(msgs[1]) == ["thinking", "tool_use", "thinking", "text", "tool_use"]


def test_a_thinking_only_response_is_left_out(tmp_path):
    # recorded: the response had only thinking; Claude Code appended an isMeta nudge and never sent
    # the thinking-only message again (the nudge joins the tool results)
    nudge = "[Your previous response had no visible output. Please continue and produce a user-visible response.]"
    msgs = _view(tmp_path, [
        _user("tests?"),
        _asst("m1", {"type": "thinking", "thinking": "check", "signature": "s1"}),
        _asst("m1", _tool_use("t1", "Grep", pattern="def test")),
        _result("t1", "tests/test_models.py:4"),
        _asst("m2", {"type": "thinking", "thinking": "only one", "signature": "s2"}),
        _user(nudge, isMeta=True),
        _asst("m3", {"type": "text", "text": "Done."}),
    ])
    assert [m["role"] for m in msgs] == ["user", "assistant", "user", "assistant"]
    assert _types(msgs[2]) == ["tool_result", "text"] and msgs[2]["content"][1]["text"] == nudge
    assert msgs[3]["content"] == [{"type": "text", "text": "Done."}]


def test_whitespace_text_is_dropped_anywhere_and_a_whitespace_only_response_is_left_out(tmp_path):
    msgs = _view(tmp_path, [
        _user("go"),
        _asst("m1", {"type": "text", "text": "   "}),
        _asst("m1", _tool_use("t1", command="echo four")),
        _result("t1", "four"),
        _asst("m2", {"type": "text", "text": "Done."}),
        _user("Next"),
        _asst("m3", {"type": "text", "text": "\n"}),
        _user("[Your previous response had no visible output.]", isMeta=True),
        _asst("m4", {"type": "text", "text": "Really next."}),
    ])
    assert _types(msgs[1]) == ["tool_use"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "user", "assistant", "user", "assistant"]
    assert [b["text"] for b in msgs[4]["content"]] == ["Next", "[Your previous response had no visible output.]"]


def test_a_tool_result_that_loads_deferred_tools_is_followed_by_tool_loaded(tmp_path):
    # recorded: ToolSearch results are tool_reference blocks; Claude Code adds "Tool loaded." after the
    # results of the round, once per such result
    refs = [{"type": "tool_reference", "tool_name": "WebFetch"}]
    msgs = _view(tmp_path, [
        _user("load"),
        _asst("m1", {"type": "text", "text": "Loading tools."}),
        _asst("m1", _tool_use("t1", "ToolSearch", query="select:WebFetch")),
        _asst("m1", _tool_use("t2", "ToolSearch", query="select:NotebookEdit")),
        _result("t1", refs),
        _result("t2", [{"type": "tool_reference", "tool_name": "NotebookEdit"}]),
        _asst("m2", _tool_use("t3", "ToolSearch", query="select:Nothing")),
        _result("t3", "No matching deferred tools found"),
        _asst("m3", {"type": "text", "text": "done"}),
    ])
    assert [(b["type"], b.get("text")) for b in msgs[2]["content"]] == [
        ("tool_result", None), ("tool_result", None), ("text", TOOL_LOADED_TEXT), ("text", TOOL_LOADED_TEXT)]
    assert _types(msgs[4]) == ["tool_result"]


def test_a_task_notification_prompt_is_sent_inside_its_system_notice(tmp_path):
    note = ("<task-notification>\n<task-id>a7cd</task-id>\n<status>completed</status>\n"
            "<result>The subagent found User and Order.</result>\n</task-notification>")
    msgs = _view(tmp_path, [
        _user("Delegate"),
        _asst("m1", {"type": "text", "text": "Classes: User, Order."}),
        _user("<system-reminder>\n<tools-used-before-summary>Bash</tools-used-before-summary>\n</system-reminder>",
              isMeta=True),
        _user(note, origin={"kind": "task-notification", "producer": "session-task"}, promptSource="system"),
        _asst("m2", {"type": "text", "text": "Done."}),
    ])
    sent = msgs[2]["content"][-1]["text"]
    assert sent == TASK_NOTIFICATION_WRAPPER.format(note)
    assert sent.startswith("<system-reminder>\n[SYSTEM NOTIFICATION - NOT USER INPUT]\n") and note in sent
    # a user typing the same XML is not wrapped
    plain = _view(tmp_path, [_user(note)])
    assert plain == [{"role": "user", "content": note}]


def test_task_notification_wrapping_is_idempotent(tmp_path):
    wrapped = TASK_NOTIFICATION_WRAPPER.format("<task-notification>\n<task-id>x</task-id>\n</task-notification>")
    msgs = _view(tmp_path, [_user(wrapped, origin={"kind": "task-notification"})])
    assert msgs == [{"role": "user", "content": wrapped}]


# -- recordings outside the repo ------------------------------------------------------------------------
def _extra_sessions() -> list[Path]:
    root = os.environ.get("CTXKIT_EXTRA_CORPUS")
    if not root or not Path(root).is_dir():
        return []
    return sorted(p for p in Path(root).iterdir() if (p / "session.jsonl").exists() and (p / "requests.jsonl.gz").exists())


@pytest.mark.skipif(not _extra_sessions(), reason="CTXKIT_EXTRA_CORPUS not set (a folder of recorded sessions)")
@pytest.mark.parametrize("session", _extra_sessions(), ids=lambda p: p.name)
def test_view_reproduces_extra_recordings(session):
    last = last_main_request(session)
    assert last is not None
    got = view_messages(read_transcript(session / "session.jsonl"), "anthropic")
    cg, cw = core(got), core(last["messages"])
    assert cg[: len(cw)] == cw
    assert all(x[0] == "assistant" and x[1] in ("text", "thinking") for x in cg[len(cw):])
