"""Lines whose fields have the wrong type are bad lines, named where they are read (ctxkit/transcript/shapes.py).

Each case below crashed a command (exit 4, "internal error") before the shapes were checked
at the edge: now the line is reported with its file, line number, field and value (exit 3), or
kept byte for byte and left out of the view under ``--on-bad-line skip``. Every real transcript
of the shared corpus (Claude Code 1.0.17 to 2.1.x) still reads without a single bad line.
"""
from __future__ import annotations

import hashlib
import json

import orjson
import pytest
from builders import entry, user_message
from conftest import CORPUS, public_transcripts

from ctxkit.cli.main import app
from ctxkit.transcript import read_transcript

U1, U2, U3, U4 = "11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222", \
    "33333333-3333-4333-8333-333333333333", "44444444-4444-4444-8444-444444444444"


def _cc(*entries: dict) -> str:
    return "".join(json.dumps(e) + "\n" for e in entries)


def _user(content, **extra) -> dict:
    return {**entry("user", user_message(content), uuid=U1, session="s1", timestamp="2026-11-29T09:00:00Z",
                    cwd=None, version=None), **extra}  # extra may replace a routing field with a bad value


def _assistant(content, **extra) -> dict:
    return entry("assistant", {"role": "assistant", "id": "msg_1", "content": content}, uuid=U2, parent=U1,
                 session="s1", timestamp="2026-11-29T09:00:05Z", cwd=None, version=None) | extra


def _result(content, **extra) -> dict:
    return entry("user", user_message(content), uuid=U3, parent=U2, session="s1", timestamp="2026-11-29T09:00:09Z",
                 cwd=None, version=None) | extra


_CALL = {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "a.py"}}
_ANSWER = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "print(1)"}

# (transcript text, the line that is bad, the message after "file:line: ")
_HOOK_LOG = ("a line of a hook log of prompts and tool calls (as OpenCode's Claude Code compatibility writes to "
             "~/.claude/transcripts/), not a session: it holds no model answer; OpenCode's own sessions are in its "
             "opencode.db (or `opencode export`), Claude Code's in ~/.claude/projects/")

CASES = {
    "message is true": (_cc(_user("hi"), {**_assistant([]), "message": True}), 2,
                        "message must be an object or null, got true"),
    "text is a list": (_cc(_user([{"type": "text", "text": ["a", "b"]}])), 1,
                       'message.content[0].text must be a string, got a list of 2 items'),
    "tool_use id null": (_cc(_user("hi"), _assistant([{**_CALL, "id": None}])), 2,
                         "message.content[0].id must be a string, got null"),
    "tool_use id missing": (_cc(_user("hi"), _assistant([{k: v for k, v in _CALL.items() if k != "id"}])), 2,
                            "message.content[0].id is missing"),
    "tool_use id a list": (_cc(_user("hi"), _assistant([{**_CALL, "id": ["toolu_1"]}])), 2,
                           'message.content[0].id must be a string, got a list of 1 item'),
    "tool_use id an object": (_cc(_user("hi"), _assistant([{**_CALL, "id": {"x": 1}}])), 2,
                              'message.content[0].id must be a string, got an object with 1 key'),
    "tool_use_id a list": (_cc(_user("hi"), _assistant([_CALL]), _result([{**_ANSWER, "tool_use_id": ["toolu_1"]}])),
                           3, 'message.content[0].tool_use_id must be a string, got a list of 1 item'),
    "content a number": (_cc(_user(5)), 1, "message.content must be a string or a list of content blocks, got 5"),
    "sessionId a list": (_cc(_user("hi", sessionId=["s"])), 1, 'sessionId must be a string or null, got a list of 1 item'),
    "timestamp a number": (_cc(_user("hi", timestamp=17)), 1, "timestamp must be a string or null, got 17"),
    "rendered a number": (_cc(_user("hi"), {"type": "attachment", "uuid": U2, "parentUuid": U1, "rendered": 3,
                                            "attachment": {"type": "date_change"}}), 2,
                          "rendered must be a list or null, got 3"),
    "block not an object": (_cc(_user(["hi"])), 1,
                            'message.content[0] must be a content block (an object with a string type), got "hi"'),
    "uuid a number": (_cc(_user("hi", uuid=7)), 1, "uuid must be a string or null, got 7"),
    "snip record": (_cc(_user("hi"), {"type": "ctxkit-record", "record": "snip", "removedUuids": "u1"}), 2,
                    'removedUuids must be a list or null, got a string of 2 characters'),
    "archive record": (_cc(_user("hi"), {"type": "ctxkit-record", "record": "archive", "blob": 12}), 2,
                       "blob must be a string, got 12"),
    "collapse record": (_cc(_user("hi"), {"type": "ctxkit-record", "record": "collapse",
                                          "runs": [{"key": "k", "toolUseIds": [1]}]}), 2,
                        "runs[0].toolUseIds[0] must be a string, got 1"),
    "record without a kind": (_cc(_user("hi"), {"type": "ctxkit-record"}), 2, "record is missing"),
    # a user or assistant line with nothing to show read as an empty session before, without a word
    "assistant without a message": (_cc(_user("hi"), {"type": "assistant", "uuid": U2, "parentUuid": U1}), 2,
                                    "message is missing"),
    "a hook log's tool call": (_cc(_user("hi"), {"type": "tool_use", "timestamp": "2026-11-29T09:00:04Z",
                                                 "tool_name": "bash", "tool_input": {"command": "pytest"}}), 2,
                               _HOOK_LOG),
    "api-request-shape system a string": (_cc(_user("hi"), {"type": "api-request-shape", "shape": {"system": "x"}}), 2,
                                          'shape.system must be a list or null, got "x"'),
    "prompt_snapshot systemPrompt": (_cc(_user("hi"), {"type": "attachment", "uuid": U2, "parentUuid": U1,
                                                      "attachment": {"type": "prompt_snapshot", "systemPrompt": [None]}}),
                                     2, "attachment.systemPrompt[0] must be a string, got null"),
    "delta attachment addedLines an object": (
        _cc(_user("hi"), {"type": "attachment", "uuid": U2, "parentUuid": U1,
                          "attachment": {"type": "deferred_tools_delta", "addedNames": ["A"], "addedLines": {"x": 1}}}),
        2, 'attachment.addedLines must be a list or null, got an object with 1 key'),
    "openai tool_calls id a list": (
        '{"role":"user","content":"hi"}\n{"role":"assistant","content":null,"tool_calls":[{"id":["c1"],'
        '"type":"function","function":{"name":"f","arguments":"{}"}}]}\n', 2,
        'tool_calls[0].id must be a string, got a list of 1 item'),
    "anthropic tool_result content a number": (
        '{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":5}]}\n', 1,
        "content[0].content must be a string, a list of content blocks or null, got 5"),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("command", [["view"], ["stats"], ["compact", "--policy", "no-llm"]])
def test_a_field_of_the_wrong_type_is_a_bad_line(runner, tmp_path, name, command):
    text, line, message = CASES[name]
    path = tmp_path / "t.jsonl"
    path.write_text(text)
    r = runner.invoke(app, [command[0], str(path), *command[1:]])
    assert (r.exit_code, r.stderr) == (3, f"ctxkit: error: {path}:{line}: {message}\n")


def _and_a_readable_line(text: str) -> str:
    """``text`` with a readable line of its format after it: a file with no readable line is refused even
    under skip (tests/test_simulate_bad_lines.py)."""
    plain = "role" in json.loads(text.splitlines()[0])
    return text + _cc({"role": "user", "content": "go on"} if plain else _user("go on", uuid=U4))


@pytest.mark.parametrize("name", sorted(CASES))
def test_under_skip_the_bad_line_is_kept_byte_for_byte(runner, tmp_path, name):
    text, line, message = CASES[name]
    path = tmp_path / "t.jsonl"
    path.write_text(_and_a_readable_line(text))
    r = runner.invoke(app, ["compact", str(path), "--on-bad-line", "skip", "--policy", "no-llm",
                            "--store", str(tmp_path / "s")])
    assert r.exit_code == 0, r.stderr
    assert text.splitlines()[line - 1] in r.stdout.splitlines()
    assert f"skipped 1 unreadable line(s); first: {path}:{line}: {message}" in r.stderr


@pytest.mark.parametrize("on_bad_line", ["fail", "skip"])
def test_a_hook_log_is_refused_as_no_session(runner, tmp_path, on_bad_line):
    """OpenCode's Claude Code compatibility logs prompts and tool calls to ~/.claude/transcripts/: read
    before as a Claude Code session of no message, doctor saying the resume would work."""
    path = tmp_path / "ses_4a1b2c3d4e5fAbCdEfGhIjKlMn.jsonl"
    path.write_text(_cc({"type": "user", "timestamp": "2026-11-29T09:00:00Z", "content": "fix the tests"},
                        {"type": "tool_use", "timestamp": "2026-11-29T09:00:04Z", "tool_name": "bash",
                         "tool_input": {"command": "pytest"}},
                        {"type": "tool_result", "timestamp": "2026-11-29T09:00:09Z", "tool_name": "bash",
                         "tool_input": {"command": "pytest"}, "tool_output": {"output": "1 passed"}}))
    for command in (["stats"], ["view"], ["doctor"], ["simulate"], ["compact", "-p", "no-llm"]):
        option = [] if command == ["doctor"] else ["--on-bad-line", on_bad_line]  # (doctor reads every line)
        r = runner.invoke(app, [*command, str(path), *option])
        assert r.exit_code == 3, (command, r.stdout, r.stderr)
        assert r.stderr.startswith(f"ctxkit: error: {path}:1: a hook log of prompts and tool calls"), r.stderr
        assert "not a session" in r.stderr and r.stdout == ""


def test_claude_codes_prompt_history_is_refused_as_no_session(runner, tmp_path):
    """~/.claude/history.jsonl sits beside the sessions; it was refused with "role is missing"."""
    path = tmp_path / "history.jsonl"
    path.write_text(_cc({"display": "/model ", "pastedContents": {}, "timestamp": 1762004100002, "project": "/home/u"},
                        {"display": "fix the tests", "pastedContents": {}, "timestamp": 1762004200002,
                         "project": "/home/u/app"}))
    r = runner.invoke(app, ["stats", str(path)])
    assert r.exit_code == 3
    assert r.stderr.startswith(f"ctxkit: error: {path}:1: Claude Code's prompt history (~/.claude/history.jsonl"), r.stderr
    assert "~/.claude/projects/PROJECT/SESSION.jsonl" in r.stderr


def test_a_huge_value_is_quoted_short(runner, tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(_cc(_user("hi", timestamp=["x" * 1_000_000])))
    r = runner.invoke(app, ["view", str(path)])
    assert r.exit_code == 3
    assert len(r.stderr) < 400
    assert r.stderr == f"ctxkit: error: {path}:1: timestamp must be a string or null, got a list of 1 item\n"


@pytest.mark.parametrize("path", public_transcripts() + sorted((CORPUS / "claude-code-2.1.328").glob("*/session.jsonl"))
                         if CORPUS.is_dir() else [], ids=str)
def test_every_real_transcript_has_the_shapes_ctxkit_reads(path):
    t = read_transcript(str(path), on_bad_line="skip")
    assert (t.info.bad_lines.count, t.info.bad_lines.first) == (0, [])


def _in_store(store, data: bytes):
    """A blob of ``store`` under its content-addressed name (the only files expand reads)."""
    digest = hashlib.sha256(data).hexdigest()
    blob = store / "blobs" / digest[:2] / f"{digest}.json"
    blob.parent.mkdir(parents=True)
    blob.write_bytes(data)
    return blob


def test_an_archive_record_naming_a_file_that_is_not_json_is_reported(runner, tmp_path):
    """expand: the record stays (nothing read from a foreign file), the problem is named, exit 1."""
    store = tmp_path / "store"
    blob = _in_store(store, b"these are my notes, not an archive\n")
    text = _cc(_user("hi"), {"type": "ctxkit-record", "record": "archive", "blob": str(blob), "uuids": [U1]})
    path = tmp_path / "t.jsonl"
    path.write_text(text)
    r = runner.invoke(app, ["expand", str(path), "--store", str(store)])
    assert r.exit_code == 1
    assert f"ctxkit: warning: did not read {blob} (named by archive record): is not JSON\n" in r.stderr
    assert r.stdout == text


def test_an_archived_entry_of_the_wrong_shape_is_not_restored(runner, tmp_path):
    store = tmp_path / "store"
    blob = _in_store(store, orjson.dumps({U1: {**_user("hi"), "message": True}}))
    text = _cc(_user("edited"), {"type": "ctxkit-record", "record": "archive", "blob": str(blob), "uuids": [U1]})
    path = tmp_path / "t.jsonl"
    path.write_text(text)
    r = runner.invoke(app, ["expand", str(path), "--store", str(store)])
    assert r.exit_code == 1
    assert (f"ctxkit: warning: did not read {blob} (named by archive record): holds an entry \"{U1}\" that is not "
            "one (message must be an object or null, got true)\n") in r.stderr
    assert r.stdout == text
