"""Gemini CLI session recordings: read as ``gemini``, the history Gemini CLI's resume sends, its
per-message tokens, and a compaction its loader reads back. Run from the command line."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from gemini_sessions import gemini, metadata, tool_call, user, write

from ctxkit.transcript import pairing_problems, read_transcript


def ctxkit(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ctxkit.cli.main", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=120)


def _session(tmp_path: Path) -> Path:
    """Upserts, a command and an info line, a rewound turn, a cancelled call, a metadata patch and a
    record of a kind this ctxkit does not know."""
    call = tool_call("call-1", "list_directory", {"path": "."}, "a.txt\nb.txt")
    path = tmp_path / "session-2026-03-01T10-00-5a1e2b3c.jsonl"
    write(path, [metadata(), user("u1", "list files"),
                 gemini("g1", "", [call]), gemini("g1", "", [call], tokens=4_200),  # the same record, updated
                 gemini("g2", "Two files.", tokens=4_400),
                 user("u2", "/stats"), {"id": "i1", "timestamp": "2026-03-01T10:00:04.000Z", "type": "info",
                                        "content": "Stats shown"},
                 user("u3", "delete them"),
                 gemini("g3", "", [tool_call("call-2", "run_shell_command", {"command": "rm *"}, None, "cancelled")]),
                 {"$rewindTo": "u3"},
                 user("u4", "read b.txt"),
                 gemini("g4", "", [tool_call("call-3", "read_file", {"path": "b.txt"}, None, "cancelled")]),
                 {"$set": {"lastUpdated": "2026-03-01T10:05:00.000Z", "summary": "files"}},
                 {"$frobnicate": {"from": "a newer Gemini CLI"}}])
    return path


def test_stats_names_gemini_and_counts_by_its_tokens(tmp_path):
    done = ctxkit("stats", "--json", str(_session(tmp_path)), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    stats = json.loads(done.stdout)
    assert stats["format"] == "gemini"
    assert stats["tokens_source"] == "usage" and stats["tokens_reported"] == 4_400
    assert stats["budget"]["model"] == "gemini-2.5-pro"  # the newest gemini message's
    assert any("$frobnicate" in n for n in stats["notes"])


def test_the_view_is_the_history_gemini_resumes_with(tmp_path):
    msgs = read_transcript(_session(tmp_path)).view().api_messages()
    assert not pairing_problems(msgs)
    texts = [b.get("text") for m in msgs for b in m["content"] if b.get("type") == "text"]
    assert texts == ["list files", "Two files.", "read b.txt"]  # no command, no info line, no rewound turn
    uses = [b["id"] for m in msgs for b in m["content"] if b.get("type") == "tool_use"]
    assert uses == ["call-1", "call-3"]  # the upserted g1 once; call-2 was rewound
    results = {b["tool_use_id"]: b["content"] for m in msgs for b in m["content"] if b.get("type") == "tool_result"}
    assert results == {"call-1": "a.txt\nb.txt", "call-3": "[no result recorded: the call was cancelled]"}


def test_a_set_of_messages_is_the_conversation(tmp_path):
    path = tmp_path / "s.jsonl"
    write(path, [metadata(), user("u1", "old question"), gemini("g1", "old answer"),
                 {"$set": {"messages": [user("u9", "the question"), gemini("g9", "the answer")]}}])
    msgs = read_transcript(path).view().api_messages()
    assert [b["text"] for m in msgs for b in m["content"]] == ["the question", "the answer"]


def test_compact_appends_what_gemini_resumes_and_expand_gives_the_session_back(tmp_path):
    records = [metadata()]
    for k in range(30):
        records += [user(f"u{k}", f"read f{k}"),
                    gemini(f"g{k}", "", [tool_call(f"c{k}", "read_file", {"path": f"f{k}"}, f"line {k} " * 800)]),
                    gemini(f"h{k}", f"read f{k}")]
    path = tmp_path / "long.jsonl"
    write(path, records)
    done = ctxkit("compact", "--force", "-p", "no-llm", str(path), "-o", "c.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "autocompact: applied" in done.stderr
    original, compacted = path.read_bytes(), (tmp_path / "c.jsonl").read_bytes()
    assert compacted.startswith(original)
    added = [json.loads(x) for x in compacted[len(original):].splitlines()]
    assert added[0]["$rewindTo"] == "u0"  # Gemini CLI's loader drops everything recorded so far ...
    assert added[1]["type"] == "user" and "continued from a previous conversation" in added[1]["content"][0]["text"]
    after = read_transcript(tmp_path / "c.jsonl")  # ... and loads what follows, as this reader does
    assert after.format == "gemini" and not pairing_problems(after.view().api_messages())
    assert after.view().messages[0].kind == "summary"
    back = ctxkit("expand", "c.jsonl", "-o", "e.jsonl", cwd=tmp_path)
    assert back.returncode == 0, back.stderr
    assert (tmp_path / "e.jsonl").read_bytes() == original


def test_a_timestamp_or_tool_calls_of_the_wrong_type_is_named_with_its_line_also_inside_a_set(tmp_path):
    # a number for a timestamp reached the clock (exit 4 in view --to anthropic-request), and a $set's
    # messages were not checked at all (toolCalls: 5 was exit 4 in every command)
    cases = {"ts.jsonl": ([metadata(), user("u1", "hi"), {**gemini("g1", "ok", tokens=500), "timestamp": 1e300}],
                          "ts.jsonl:3: timestamp must be a string, got 1e+300"),
             "set.jsonl": ([metadata(), {"$set": {"messages": [user("u1", "hi"),
                                                               {**gemini("g1", "x"), "toolCalls": 5}]}}],
                           "set.jsonl:2: $set.messages[1].toolCalls must be a list, got 5")}
    for name, (records, said) in cases.items():
        write(tmp_path / name, records)
        for args in (("view", "--to", "anthropic-request"), ("compact", "--force", "-p", "no-llm")):
            done = ctxkit(*args, name, cwd=tmp_path)
            assert (done.returncode, done.stderr) == (3, f"ctxkit: error: {said}\n"), done.stderr


def test_doctor_finds_no_unanswered_call_where_gemini_recorded_the_result(tmp_path):
    # each recorded result was taken for one the projection made up: every call of every session was an
    # "orphan tool_use" error (exit 1), in a $set's messages too
    call = tool_call("call-1", "read_file", {"path": "a"}, "content")
    write(tmp_path / "ok.jsonl", [metadata(), user("u1", "hi"), gemini("g1", "Reading.", [call], tokens=500),
                                  {"$set": {"summary": "x"}}])
    write(tmp_path / "set.jsonl", [metadata(), {"$set": {"messages": [user("u1", "hi"), gemini("g1", "", [call])]}},
                                   user("u2", "more"), gemini("g2", "ok", tokens=500)])
    for name in ("ok.jsonl", "set.jsonl"):
        done = ctxkit("doctor", name, cwd=tmp_path)
        assert (done.returncode, done.stdout) == (0, ""), done.stdout
    cancelled = tool_call("call-2", "run_shell_command", {"command": "rm *"}, None, "cancelled")
    write(tmp_path / "cut.jsonl", [metadata(), user("u1", "hi"), gemini("g1", "", [cancelled]), user("u2", "go on"),
                                   gemini("g2", "ok", tokens=500)])
    done = ctxkit("doctor", "cut.jsonl", cwd=tmp_path)  # no result recorded: Gemini CLI sends the call unanswered
    assert done.returncode == 1 and done.stdout.startswith("cut.jsonl:3: error: tool_use call-2 has no tool_result")


def test_doctor_names_an_unreadable_line_in_the_middle(tmp_path):
    # looking for the rewind a record may follow parsed every line before it, the unreadable one too: exit 3
    # (and a scan back from each message, quadratic in a session without tokens)
    write(tmp_path / "s.jsonl", [metadata(), user("u1", "hi"), gemini("g1", "ok"), user("u2", "more"),
                                 gemini("g2", "ok")])
    lines = (tmp_path / "s.jsonl").read_text().splitlines(keepends=True)
    (tmp_path / "s.jsonl").write_text("".join([*lines[:3], "{broken\n", *lines[3:]]))
    done = ctxkit("doctor", "s.jsonl", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith("s.jsonl:4: error: the agent cannot read this line: ")


def test_a_record_of_a_kind_ctxkit_does_not_know_passes_whatever_its_timestamp(tmp_path):
    write(tmp_path / "s.jsonl", [metadata(), user("u1", "hi"), {"$frobnicate": {"at": 5}, "timestamp": 5},
                                 {"id": "n1", "type": "newkind", "timestamp": 7, "content": "c"},
                                 gemini("g1", "ok", tokens=500)])
    done = ctxkit("view", "--to", "anthropic", "s.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 2

def test_doctor_flags_only_the_calls_the_session_recorded_no_result_for(tmp_path):
    # a result lives in its call's own record: every answered call was reported by doctor as an
    # orphan tool_use ("a turn cut off"), 19 errors on a real session that resumes fine
    path = tmp_path / "session-2026-03-01T10-00-5a1e2b3c.jsonl"
    write(path, [metadata(), user("u1", "list files"),
                 gemini("g1", "", [tool_call("call-1", "list_directory", {"path": "."}, "a.txt\nb.txt")]),
                 gemini("g2", "Two files."), user("u2", "read b.txt"),
                 gemini("g3", "", [tool_call("call-2", "read_file", {"path": "b.txt"}, None, "cancelled")]),
                 user("u3", "never mind"), gemini("g4", "OK.")])
    done = ctxkit("doctor", "--json", str(path), cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    errors = [f for f in json.loads(done.stdout)["findings"] if f["severity"] == "error"]
    assert [(f["rule"], f["line"]) for f in errors] == [("orphan-tool-use", 6)]


def test_gemini_clis_prompt_log_is_refused_saying_what_it_is(tmp_path):
    # logs.json, beside the chats: what was typed (LogEntry), no session. It was taken for Claude Code
    # entries: "message must be an object or null" (exit 3) on real ones
    path = tmp_path / "logs.json"
    path.write_text(json.dumps([{"sessionId": "5a1e2b3c", "messageId": 0, "type": "user", "message": "list files",
                                 "timestamp": "2026-03-01T10:00:01.000Z"},
                                {"sessionId": "5a1e2b3c", "messageId": 1, "type": "user", "message": "/quit",
                                 "timestamp": "2026-03-01T10:01:00.000Z"}], indent=2))
    for command in ("stats", "compact"):
        done = ctxkit(command, str(path), cwd=tmp_path)
        assert done.returncode == 3 and "Traceback" not in done.stderr
        assert "logs.json:1: a Gemini CLI prompt log" in done.stderr and "chats/session-" in done.stderr


def test_an_antigravity_agent_log_is_refused_saying_what_it_is_not_read_as_claude_code(tmp_path):
    # Antigravity's transcript.jsonl, committed publicly as gemini-session.jsonl: `stats` said claude-code
    path = tmp_path / "gemini-session.jsonl"
    steps = [{"step_index": 0, "source": "USER_EXPLICIT", "type": "USER_INPUT", "status": "DONE",
              "created_at": "2026-03-01T10:00:00Z", "content": "<USER_REQUEST>\nbuild it\n</USER_REQUEST>"},
             {"step_index": 1, "source": "MODEL", "type": "PLANNER_RESPONSE", "status": "DONE",
              "created_at": "2026-03-01T10:00:05Z", "content": "Looking.",
              "tool_calls": [{"name": "list_dir", "args": {"DirectoryPath": "\"/w\""}}]}]
    path.write_text("".join(json.dumps(s, separators=(",", ":")) + "\n" for s in steps))
    for command in ("stats", "compact"):
        done = ctxkit(command, str(path), cwd=tmp_path)
        assert done.returncode == 3 and done.stdout == "" and "Traceback" not in done.stderr
        assert "gemini-session.jsonl:1: a Google Antigravity agent log" in done.stderr


def test_gemini_cli_s_stream_json_output_is_refused_saying_where_the_session_is(tmp_path):
    # `gemini -p ... --output-format stream-json` captured by an eval harness and committed as transcript.jsonl
    # (its own prompt line first): `stats` said claude-code, 0 messages
    path = tmp_path / "transcript.jsonl"
    events = [{"type": "message", "role": "user", "content": "build the page", "ts": "2026-03-01T10:00:00"},
              {"type": "init", "timestamp": "2026-03-01T10:00:01.000Z", "session_id": "6727b31e", "model": "gemini-3-pro"},
              {"type": "tool_use", "timestamp": "2026-03-01T10:00:02.000Z", "tool_name": "read_file",
               "tool_id": "read_file-1", "parameters": {"file_path": "a.py"}},
              {"type": "tool_result", "timestamp": "2026-03-01T10:00:03.000Z", "tool_id": "read_file-1",
               "status": "success", "output": "x = 1"}]
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    done = ctxkit("stats", str(path), cwd=tmp_path)
    assert done.returncode == 3 and done.stdout == "" and "Traceback" not in done.stderr
    assert "transcript.jsonl:1: the output of a headless Gemini CLI run" in done.stderr
    assert "chats/session-" in done.stderr
    plain = tmp_path / "plain.jsonl"  # a message list whose lines carry a type is still one
    plain.write_text(json.dumps({"type": "message", "role": "user", "content": "hi"}) + "\n")
    assert ctxkit("stats", str(plain), cwd=tmp_path).returncode == 0
