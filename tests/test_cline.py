"""Cline and Roo Code task histories: read as ``cline`` (by content, whatever the file is called), the
messages the agent resumes with, its per-message metrics as usage, and compact + expand byte for byte.
Run from the command line."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from cline_tasks import TS, native_call, native_result, say, task, write, xml_call, xml_result

from ctxkit.transcript import pairing_problems, read_transcript


def ctxkit(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ctxkit.cli.main", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=120)


def _history(tmp_path: Path, name: str = "api_conversation_history.json") -> Path:
    path = tmp_path / name
    write(path, [task("fix the bug"), xml_call("read_file", "a.py"), xml_result("read_file", "a.py", "print(1)"),
                 say("Reading b.", metrics={"tokens": {"prompt": 12_000, "completion": 300, "cached": 9_000},
                                            "cost": 0.01}),
                 native_call("toolu_1", "read_file", {"path": "b.py"}), native_result("toolu_1", "print(2)"),
                 native_call("toolu_2", "execute_command", {"command": "pytest"})])
    return path


def test_stats_names_cline_and_counts_by_its_metrics(tmp_path):
    done = ctxkit("stats", "--json", str(_history(tmp_path, "history-without-its-folder.txt")), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    stats = json.loads(done.stdout)
    assert stats["format"] == "cline"
    assert stats["tokens_source"] == "usage" and stats["tokens_reported"] == 12_300


def test_the_view_answers_a_call_the_task_left_unanswered_as_cline_does(tmp_path):
    msgs = read_transcript(_history(tmp_path)).view().api_messages()
    assert not pairing_problems(msgs)
    results = {b["tool_use_id"]: b["content"] for m in msgs for b in m["content"] if b.get("type") == "tool_result"}
    assert results == {"toolu_1": "print(2)",
                       "toolu_2": "Task was interrupted before this tool call could be completed."}
    texts = [b["text"] for m in msgs for b in m["content"] if b.get("type") == "text"]
    assert "[read_file for 'a.py'] Result:" in texts and "print(1)" in texts  # XML tool results stay user text
    assert all("metrics" not in m and "ts" not in m for m in msgs)  # Cline's own keys are not sent


def test_roo_code_condensed_and_truncated_messages_are_out_of_the_view(tmp_path):
    path = tmp_path / "api_conversation_history.json"
    write(path, [task("refactor", ts=TS),
                 {**say("old answer"), "ts": TS + 1, "condenseParent": "c1"},
                 {"role": "user", "content": "old question", "ts": TS + 2, "condenseParent": "c1"},
                 {**say("Summary of the work so far."), "ts": TS + 3, "isSummary": True, "condenseId": "c1"},
                 {"role": "user", "content": "next", "ts": TS + 4, "truncationParent": "t1"},
                 {"role": "user", "content": "[Sliding window truncation: 1 message hidden]", "ts": TS + 5,
                  "isTruncationMarker": True, "truncationId": "t1"},
                 {**say("done"), "ts": TS + 6, "condenseParent": "gone"}])  # its summary was rewound: shown
    t = read_transcript(path)
    texts = [b["text"] for m in t.view().api_messages()
             for b in ([{"type": "text", "text": m["content"]}] if isinstance(m["content"], str) else m["content"])
             if b.get("type") == "text"]
    assert "old answer" not in texts and "old question" not in texts and "next" not in texts
    assert texts[-3:] == ["Summary of the work so far.", "[Sliding window truncation: 1 message hidden]", "done"]
    assert t.format == "cline" and any("hidden by Roo Code" in n for n in t.view().notes)


def test_compact_then_expand_gives_the_history_back_byte_for_byte(tmp_path):
    msgs = [task("read every file", ts=TS)]
    for k in range(30):
        msgs += [{**xml_call("read_file", f"f{k}.py"), "ts": TS + 2 * k + 1},
                 xml_result("read_file", f"f{k}.py", f"line {k} " * 800, ts=TS + 2 * k + 2)]
    path = tmp_path / "api_conversation_history.json"
    write(path, msgs)
    done = ctxkit("compact", "--force", "-p", "no-llm", str(path), "-o", "c.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "autocompact: applied" in done.stderr
    compacted = json.loads((tmp_path / "c.json").read_text())  # still one JSON array, as Cline reads it
    assert isinstance(compacted, list) and len(compacted) < len(msgs)
    assert compacted[0]["content"][0]["text"].startswith("This session is being continued")
    again = ctxkit("stats", "--json", "c.json", cwd=tmp_path)
    assert json.loads(again.stdout)["format"] == "cline"
    done = ctxkit("expand", "c.json", "-o", "e.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "e.json").read_bytes() == path.read_bytes()


def test_an_indented_history_keeps_its_layout_and_a_compaction_follows_it(tmp_path):
    msgs = [task("read every file", ts=TS)]
    for k in range(30):
        msgs += [native_call(f"toolu_{k}", "read_file", {"path": f"f{k}"}, ts=TS + 2 * k + 1),
                 native_result(f"toolu_{k}", f"line {k} " * 800, ts=TS + 2 * k + 2)]
    path = tmp_path / "api_conversation_history.json"
    path.write_text(json.dumps(msgs, indent=2, ensure_ascii=False) + "\n")
    done = ctxkit("compact", "--force", "-p", "no-llm", str(path), "-o", "c.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = (tmp_path / "c.json").read_text()
    assert out.startswith('[\n  {\n    "role": "user",') and out.endswith("}\n]\n")
    assert json.loads(out)[0]["ts"] == TS + 60  # the summary carries Roo's ts
    assert ctxkit("expand", "c.json", "-o", "e.json", cwd=tmp_path).returncode == 0
    assert (tmp_path / "e.json").read_bytes() == path.read_bytes()


def test_a_history_is_not_written_over(tmp_path):
    path = _history(tmp_path)
    before = path.read_bytes()
    done = ctxkit("compact", "--force", "-p", "no-llm", str(path), "-o", str(path), cwd=tmp_path)
    assert done.returncode not in (0, 4) and "-o" in done.stderr and "Traceback" not in done.stderr
    assert path.read_bytes() == before


def test_doctor_takes_a_call_cline_answers_on_resume_for_no_problem(tmp_path):
    done = ctxkit("doctor", str(_history(tmp_path)), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 errors" in done.stdout + done.stderr


def test_the_model_comes_from_the_task_metadata_beside_the_history(tmp_path):
    path = tmp_path / "api_conversation_history.json"
    write(path, [task("fix it"), say("Fixed.")])
    (tmp_path / "task_metadata.json").write_text(json.dumps(
        {"files_in_context": [], "model_usage": [{"ts": TS, "model_id": "claude-sonnet-4-5", "mode": "act"},
                                                  {"ts": TS + 9, "model_id": "claude-opus-4-1", "mode": "act"}]}))
    stats = json.loads(ctxkit("stats", "--json", str(path), cwd=tmp_path).stdout)
    assert stats["budget"]["model"] == "claude-opus-4-1"
    write(path, [task("fix it"), say("Fixed.", modelInfo={"modelId": "gpt-5", "providerId": "openai", "mode": "act"})])
    stats = json.loads(ctxkit("stats", "--json", str(path), cwd=tmp_path).stdout)
    assert stats["budget"]["model"] == "gpt-5"  # a message's own model first


def test_task_metadata_nested_too_deeply_is_read_as_none(tmp_path):
    # json.loads raised RecursionError: every command on the task was exit 4
    path = tmp_path / "api_conversation_history.json"
    write(path, [task("fix it"), say("Fixed.")])
    (tmp_path / "task_metadata.json").write_text("[" * 100_000 + "]" * 100_000)
    done = ctxkit("stats", "--json", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["format"] == "cline"


def test_the_chat_panel_s_ui_messages_are_refused_naming_the_history_beside_them(tmp_path):
    # ui_messages.json (ClineMessage: ts, type say/ask), found committed publicly: `stats` said claude-code, 0 messages
    path = tmp_path / "ui_messages.json"
    path.write_text(json.dumps([{"ts": 1760534080239, "type": "say", "say": "text", "text": "build an MCP server"},
                                {"ts": 1760534080301, "type": "say", "say": "api_req_started",
                                 "text": json.dumps({"tokensIn": 12, "tokensOut": 3})},
                                {"ts": 1760534090000, "type": "ask", "ask": "command", "text": "npm test"}], indent=4))
    for command in ("stats", "compact"):
        done = ctxkit(command, str(path), cwd=tmp_path)
        assert done.returncode == 3 and done.stdout == "" and "Traceback" not in done.stderr
        assert "ui_messages.json:1: the chat panel's log of a Cline or Roo Code task" in done.stderr
        assert "api_conversation_history.json beside it" in done.stderr


def test_a_prompt_count_that_leaves_the_cache_reads_out_is_counted_with_them(tmp_path):
    # through the Anthropic provider Cline records input_tokens as `prompt` (a real history: prompt 10, cached
    # 66,105): the usage counted 1,101 tokens, below half the estimate, and was thrown away
    path = tmp_path / "api_conversation_history.json"
    write(path, [task("fix the bug"), native_call("toolu_1", "read_file", {"path": "b.py"}),
                 native_result("toolu_1", "print(2)\n" * 3_000),
                 say("Fixed.", metrics={"tokens": {"prompt": 10, "completion": 1_071, "cached": 6_000}})])
    done = ctxkit("stats", "--json", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    stats = json.loads(done.stdout)
    assert stats["tokens_source"] == "usage" and stats["tokens_reported"] == 10 + 6_000 + 1_071
