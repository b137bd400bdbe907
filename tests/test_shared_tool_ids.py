"""Two tool results that answer one tool id (an agent that used a call id twice, two calls of one
Gemini CLI batch under one id) are left whole by the masking stages: the store keeps one decision per
tool id, so clearing both kept the original of the last one only, and ``ctxkit expand`` put it back in
both places (the first output lost). Run from the command line."""
from __future__ import annotations

import json
from pathlib import Path

import gemini_sessions as g
from builders import assistant_message, entry, user_message, write
from test_agent_masking import ctxkit

from ctxkit.transcript import read_transcript

OPTIONS = ("--force", "-p", "no-llm", "--set", "stages.microcompact.options.keep_recent=1",
           "--set", "stages.tool-result-budget.options.max_result_chars=2000",
           "--set", "stages.autocompact.enabled=false")


def _messages(path: Path) -> None:
    """Four turns whose calls all have the id ``same``, then one of a fresh id."""
    msgs = []
    for k in range(5):
        tid = "same" if k < 4 else "fresh"
        msgs += [{"role": "user", "content": f"read {k}"},
                 {"role": "assistant", "content": [{"type": "tool_use", "id": tid, "name": "Bash",
                                                    "input": {"command": f"cat f{k}"}}]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid,
                                               "content": f"line {k} " * 500}]},
                 {"role": "assistant", "content": "ok"}]
    path.write_text("".join(json.dumps(m) + "\n" for m in msgs))


def _gemini(path: Path) -> None:
    """Four turns of two calls each under one id, and their recorded batch of responses."""
    recs = [g.metadata()]
    for k in range(4):
        calls = [g.tool_call(f"c{k}", "run_shell_command", {"command": f"cat {x}{k}"}, f"line {x}{k} " * 500)
                 for x in "ab"]
        recs += [g.user(f"u{k}", f"read pair {k}"), g.gemini(f"g{k}", "", calls), g.responses(f"r{k}", calls),
                 g.gemini(f"h{k}", "ok")]
    g.write(path, recs)


def test_results_sharing_a_tool_id_are_left_whole_and_expand_gives_the_file_back(tmp_path):
    for make, name in ((_messages, "messages.jsonl"), (_gemini, "session.jsonl")):
        make(tmp_path / name)
        done = ctxkit("compact", *OPTIONS, name, "-o", f"c-{name}", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        compacted = (tmp_path / f"c-{name}").read_text()
        shared = [f"line {x}{k} " * 500 for k in range(4) for x in ("ab" if name == "session.jsonl" else [""])]
        assert all(text in compacted for text in shared), name  # each output of a shared id is still whole
        if name == "messages.jsonl":  # the result of its own id is still persisted, as before
            assert "<persisted-output>" in compacted and "line 4 " * 500 not in compacted
        back = ctxkit("expand", f"c-{name}", "-o", f"e-{name}", cwd=tmp_path)
        assert back.returncode == 0, back.stderr
        assert (tmp_path / f"e-{name}").read_bytes() == (tmp_path / name).read_bytes(), name


def test_two_calls_of_one_id_in_one_message_are_found_and_fix_renames_the_second_with_its_result(tmp_path):
    """One assistant line with two tool_use blocks of one id (the API refuses it: ids must be unique)
    was passed by doctor ('should work': only a second line of the id counted); --fix gives the second
    call a new id and the second result the same, the first pair left as it was."""
    calls = [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": c}} for c in ("ls", "pwd")]
    results = [{"type": "tool_result", "tool_use_id": "t1", "content": out} for out in ("a.txt", "/w")]
    lines = [entry("user", user_message("look"), uuid="u1"),
             entry("assistant", assistant_message(calls, "msg_1"), uuid="a1", parent="u1"),
             entry("user", user_message(results), uuid="r1", parent="a1"),
             entry("assistant", assistant_message([{"type": "text", "text": "done"}], "msg_2"), uuid="a2", parent="r1")]
    write(tmp_path / "s.jsonl", lines)
    done = ctxkit("doctor", "s.jsonl", cwd=tmp_path)
    assert done.returncode == 1 and "s.jsonl:2: error: tool_use id t1 is used again" in done.stdout, done.stdout
    done = ctxkit("doctor", "--fix", "s.jsonl", "-o", "fixed.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    view = read_transcript(tmp_path / "fixed.jsonl").view().api_messages()
    assert [(b["id"], b["input"]["command"]) for b in view[1]["content"]] == [("t1", "ls"), ("t1_2", "pwd")]
    assert [(b["tool_use_id"], b["content"]) for b in view[2]["content"]] == [("t1", "a.txt"), ("t1_2", "/w")]
    assert ctxkit("doctor", "fixed.jsonl", cwd=tmp_path).returncode == 0
