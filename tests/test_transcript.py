"""The transcript core: formats, the view against what Claude Code really sent, lossless writing, bad input."""
from __future__ import annotations

import io
import json

import pytest
from conftest import cc_sessions, public_transcripts
from helpers import _blocks, core, last_main_request

from ctxkit.errors import TranscriptError
from ctxkit.transcript import pairing_problems, read_transcript
from ctxkit.transcript.writer import view_messages


@pytest.mark.parametrize("session", cc_sessions(), ids=lambda p: p.name)
def test_view_reproduces_what_claude_code_sent(session):
    """The view of each recorded session starts with the messages of the last request Claude Code sent,
    followed only by the final assistant reply."""
    got = view_messages(read_transcript(session / "session.jsonl"), "anthropic")
    want = last_main_request(session)["messages"]
    cg, cw = core(got), core(want)
    assert cg[: len(cw)] == cw
    assert all(x[0] == "assistant" and x[1] in ("text", "thinking") for x in cg[len(cw):])


@pytest.mark.parametrize("session", cc_sessions(), ids=lambda p: p.name)
def test_view_differences_from_claude_code_are_only_the_known_ones(session):
    """Where the view is not byte-identical to Claude Code's request, it differs only in these ways:

    1. ``cache_control`` markers (Claude Code adds them when it sends; transcripts have none);
    2. where harness text sits: Claude Code hoists user-role attachment reminders to the front of the
       turn's user message, and folds the turn's system-role attachments into one system message placed
       after it; ctxkit keeps transcript order (same text, same roles, other positions);
    3. trailing newlines Claude Code adds to local-command output when it sends it.
    Everything else (every text, tool call, tool result and their order) is equal: see the test above.
    """
    got = view_messages(read_transcript(session / "session.jsonl"), "anthropic")
    want = last_main_request(session)["messages"]

    def texts(msgs, role):
        out = []
        for m in msgs:
            if m["role"] != role:
                continue
            for b in _blocks(m):
                if b.get("type") == "text":
                    out.extend(x.strip() for x in b["text"].split("\n\n") if x.strip())
        return sorted(out)

    # system-role and reminder texts are all present, in some position
    assert texts(got[: len(want) + 1], "system") == texts(want, "system")
    got_user = texts(got, "user")
    for text in texts(want, "user"):
        assert text in got_user


@pytest.mark.parametrize("path", public_transcripts() + [p / "session.jsonl" for p in cc_sessions()],
                         ids=lambda p: f"{p.parent.name}/{p.name[:12]}")
def test_every_corpus_transcript_reads_round_trips_and_projects_validly(path):
    t = read_transcript(path)
    assert t.format == "claude-code"
    out = io.BytesIO()
    t.write(out)
    original = path.read_bytes()
    assert out.getvalue() == (original if original.endswith(b"\n") else original + b"\n")
    assert pairing_problems(t.view().api_messages()) == []


def test_sidechain_entries_are_not_in_the_main_view(tmp_path):
    lines = [
        {"type": "user", "uuid": "u1", "parentUuid": None, "message": {"role": "user", "content": "main prompt"}},
        {"type": "user", "uuid": "s1", "parentUuid": None, "isSidechain": True,
         "message": {"role": "user", "content": "subagent prompt"}},
        {"type": "assistant", "uuid": "s2", "parentUuid": "s1", "isSidechain": True,
         "message": {"id": "m9", "role": "assistant", "content": [{"type": "text", "text": "sub answer"}]}},
    ]
    p = tmp_path / "t.jsonl"
    p.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    msgs = view_messages(read_transcript(p), "anthropic")
    assert msgs == [{"role": "user", "content": "main prompt"}]


def test_a_subagent_file_is_its_own_conversation(tmp_path):
    lines = [
        {"type": "user", "uuid": "s1", "parentUuid": None, "isSidechain": True,
         "message": {"role": "user", "content": "find the bug"}},
        {"type": "assistant", "uuid": "s2", "parentUuid": "s1", "isSidechain": True,
         "message": {"id": "m9", "role": "assistant", "content": [{"type": "text", "text": "found it"}]}},
    ]
    p = tmp_path / "agent.jsonl"
    p.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    assert [m["role"] for m in view_messages(read_transcript(p), "anthropic")] == ["user", "assistant"]


def test_rewind_keeps_only_the_active_branch(tmp_path):
    lines = [
        {"type": "user", "uuid": "u1", "parentUuid": None, "message": {"role": "user", "content": "start"}},
        {"type": "assistant", "uuid": "a1", "parentUuid": "u1",
         "message": {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": "ok"}]}},
        {"type": "user", "uuid": "u2", "parentUuid": "a1", "message": {"role": "user", "content": "abandoned"}},
        {"type": "user", "uuid": "u3", "parentUuid": "a1", "message": {"role": "user", "content": "rewritten"}},
    ]
    p = tmp_path / "t.jsonl"
    p.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    texts = [m["content"] for m in view_messages(read_transcript(p), "anthropic")]
    assert "abandoned" not in json.dumps(texts) and texts[-1] == "rewritten"


def test_synthetic_and_api_error_assistant_lines_are_dropped(tmp_path):
    lines = [
        {"type": "user", "uuid": "u1", "parentUuid": None, "message": {"role": "user", "content": "hi"}},
        {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "isApiErrorMessage": True,
         "message": {"id": "x", "model": "<synthetic>", "role": "assistant",
                     "content": [{"type": "text", "text": "API Error: 500"}]}},
    ]
    p = tmp_path / "t.jsonl"
    p.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    assert view_messages(read_transcript(p), "anthropic") == [{"role": "user", "content": "hi"}]


def test_whitespace_text_before_thinking_is_dropped(tmp_path):
    lines = [
        {"type": "user", "uuid": "u1", "parentUuid": None, "message": {"role": "user", "content": "hi"}},
        {"type": "assistant", "uuid": "a1", "parentUuid": "u1",
         "message": {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": "\n\n"}]}},
        {"type": "assistant", "uuid": "a2", "parentUuid": "a1",
         "message": {"id": "m1", "role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": "s"}]}},
        {"type": "assistant", "uuid": "a3", "parentUuid": "a2",
         "message": {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": "hello"}]}},
    ]
    p = tmp_path / "t.jsonl"
    p.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    msgs = view_messages(read_transcript(p), "anthropic")
    assert [b["type"] for b in msgs[1]["content"]] == ["thinking", "text"]


# -- plain formats ------------------------------------------------------------------------------------
ANTHROPIC_LINES = [
    {"role": "user", "content": "list the files"},
    {"role": "assistant", "content": [{"type": "text", "text": "Listing."},
                                      {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.py\nb.py"}]},
    {"role": "assistant", "content": [{"type": "text", "text": "Two files."}]},
]
OPENAI_LINES = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "list the files"},
    {"role": "assistant", "content": "Listing.", "tool_calls": [
        {"id": "t1", "type": "function", "function": {"name": "Bash", "arguments": "{\"command\": \"ls\"}"}}]},
    {"role": "tool", "tool_call_id": "t1", "content": "a.py\nb.py"},
    {"role": "assistant", "content": "Two files."},
]


def _write(tmp_path, lines, name="t.jsonl"):
    p = tmp_path / name
    p.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return p


def test_anthropic_messages_are_detected_and_round_trip(tmp_path):
    p = _write(tmp_path, ANTHROPIC_LINES)
    t = read_transcript(p)
    assert t.format == "anthropic"
    out = io.BytesIO()
    t.write(out)
    assert out.getvalue() == p.read_bytes()
    assert view_messages(t, "anthropic") == ANTHROPIC_LINES


def test_openai_messages_convert_to_anthropic_and_back(tmp_path):
    p = _write(tmp_path, OPENAI_LINES)
    t = read_transcript(p)
    assert t.format == "openai"
    msgs = view_messages(t, "anthropic")
    assert msgs[0] == {"role": "system", "content": "You are terse."}
    assert msgs[2]["content"][1] == {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}
    assert msgs[3]["content"][0]["type"] == "tool_result"
    back = view_messages(t, "openai")
    assert json.loads(back[2]["tool_calls"][0]["function"]["arguments"]) == {"command": "ls"}
    back[2]["tool_calls"][0]["function"]["arguments"] = OPENAI_LINES[2]["tool_calls"][0]["function"]["arguments"]
    assert back == OPENAI_LINES


def test_anthropic_to_openai(tmp_path):
    t = read_transcript(_write(tmp_path, ANTHROPIC_LINES))
    out = view_messages(t, "openai")
    assert out[1]["tool_calls"][0]["function"] == {"name": "Bash", "arguments": "{\"command\":\"ls\"}"}
    assert out[2] == {"role": "tool", "tool_call_id": "t1", "content": "a.py\nb.py"}


def test_format_can_be_forced(tmp_path):
    t = read_transcript(_write(tmp_path, ANTHROPIC_LINES), fmt="anthropic")
    assert t.format == "anthropic"


# -- bad input ------------------------------------------------------------------------------------------
def test_bad_json_line_names_the_line(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text(json.dumps(ANTHROPIC_LINES[0]) + "\n{not json\n" + json.dumps(ANTHROPIC_LINES[1]) + "\n")
    with pytest.raises(TranscriptError) as e:
        read_transcript(p)
    assert e.value.line == 2
    assert str(e.value).startswith(f"{p}:2: not valid JSON")


def test_truncated_last_line_is_called_that(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text(json.dumps(ANTHROPIC_LINES[0]) + "\n" + '{"role": "assistant", "cont')
    with pytest.raises(TranscriptError, match=r":2: truncated last line"):
        read_transcript(p)


def test_invalid_utf8_is_reported_with_its_line(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_bytes(json.dumps(ANTHROPIC_LINES[0]).encode() + b"\n" + b'{"role": "user", "content": "\xff\xfe"}\n')
    with pytest.raises(TranscriptError, match=r":2: invalid UTF-8"):
        read_transcript(p)


def test_orphan_tool_result_is_a_bad_line(tmp_path):
    p = _write(tmp_path, [ANTHROPIC_LINES[0], ANTHROPIC_LINES[2]])
    with pytest.raises(TranscriptError, match=r":2: tool_result 't1' answers no tool_use"):
        read_transcript(p)


def test_skip_keeps_bad_lines_in_the_output_and_counts_them(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text(json.dumps(ANTHROPIC_LINES[0]) + "\n{oops\n")
    t = read_transcript(p, on_bad_line="skip")
    assert t.info.bad_lines.count == 1
    assert view_messages(t, "anthropic") == [ANTHROPIC_LINES[0]]
    out = io.BytesIO()
    t.write(out)
    assert out.getvalue() == p.read_bytes()  # nothing is lost: the unreadable line stays, untouched


def test_a_scalar_line_is_rejected(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text("[1, 2]\n")
    with pytest.raises(TranscriptError, match=r":1: expected a JSON object, got list"):
        read_transcript(p)


def test_missing_file(tmp_path):
    with pytest.raises(TranscriptError, match="no such file"):
        read_transcript(tmp_path / "nope.jsonl")


def test_openai_parallel_tool_messages_become_one_user_message(tmp_path):
    lines = [
        {"role": "user", "content": "look"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "Read", "arguments": "{}"}},
            {"id": "b", "type": "function", "function": {"name": "Grep", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "A"},
        {"role": "tool", "tool_call_id": "b", "content": "B"},
        {"role": "user", "content": "and?"},
    ]
    msgs = view_messages(read_transcript(_write(tmp_path, lines)), "anthropic")
    assert [m["role"] for m in msgs] == ["user", "assistant", "user"]
    assert [b.get("tool_use_id") for b in msgs[2]["content"]] == ["a", "b", None]
    assert pairing_problems(msgs) == []


def test_a_skills_text_written_between_the_results_of_one_round_stays_in_that_round(tmp_path):
    """Claude Code 2.1 writes a Skill call's loaded text (``isMeta``, ``sourceToolUseID``) as its own user line
    right after the Skill's result, before the result of a Task called beside it: the Task's result still
    answers the round (it was read as answering nothing, and the whole file refused)."""
    def line(uuid, parent, typ, content, **extra):
        message = {"role": typ, "content": content}
        if typ == "assistant":
            message = {"id": "msg_1", "model": "claude-opus-4-6", "type": "message", **message}
        return {"parentUuid": parent, "isSidechain": False, "sessionId": "s", "version": "2.1.63", "type": typ,
                "uuid": uuid, "timestamp": "2026-02-26T01:44:47.000Z", "message": message, **extra}
    lines = [line("u1", None, "user", "address the review"),
             line("a1", "u1", "assistant", [{"type": "tool_use", "id": "toolu_skill", "name": "Skill",
                                             "input": {"skill": "pr-operations"}}]),
             line("a2", "a1", "assistant", [{"type": "tool_use", "id": "toolu_task", "name": "Task",
                                             "input": {"prompt": "classify"}}]),
             line("r1", "a2", "user", [{"type": "tool_result", "tool_use_id": "toolu_skill",
                                        "content": "Launching skill: pr-operations"}]),
             line("m1", "r1", "user", [{"type": "text", "text": "# PR Operations Skill"}], isMeta=True,
                  sourceToolUseID="toolu_skill"),
             line("r2", "m1", "user", [{"type": "tool_result", "tool_use_id": "toolu_task", "content": "1 thread"}])]
    p = tmp_path / "skill.jsonl"
    p.write_text("".join(json.dumps(x) + "\n" for x in lines))
    msgs = view_messages(read_transcript(p), "anthropic")
    assert [m["role"] for m in msgs] == ["user", "assistant", "user"]
    assert [(b["type"], b.get("tool_use_id"), b.get("content", b.get("text"))) for b in msgs[2]["content"]] == [
        ("tool_result", "toolu_skill", "Launching skill: pr-operations"), ("tool_result", "toolu_task", "1 thread"),
        ("text", None, "# PR Operations Skill")]
