"""Codex CLI rollouts: read as ``codex``, the view Codex rebuilds on resume, its usage, and a compaction
written and undone the way Codex records one. Run as a user runs ctxkit, from the command line."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import zstandard
from codex_rollouts import SESSION_ID, call, line, message, opening, output, token_count, turn, write

from ctxkit.transcript import pairing_problems, read_transcript


def ctxkit(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ctxkit.cli.main", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=120)


def _session(tmp_path: Path) -> Path:
    """A rollout with parallel calls, a custom tool call, a local shell call, a rolled-back turn, a call
    without output and a line of a record type from a newer Codex."""
    lines = opening() + turn(1, "list the files", [("c_ls", "ls", "README.md\nsrc\n")], "two entries",
                             usage=(5_200, 180))
    lines += [line("response_item", message("user", "patch it and read README")),
              line("response_item", {"type": "custom_tool_call", "status": "completed", "call_id": "c_patch",
                                     "name": "apply_patch", "input": "*** Begin Patch\n*** End Patch\n"}),
              line("response_item", {"type": "local_shell_call", "call_id": "c_cat", "status": "completed",
                                     "action": {"type": "exec", "command": ["cat", "README.md"]}}),
              line("response_item", {"type": "custom_tool_call_output", "call_id": "c_patch", "output": "Done."}),
              line("response_item", output("c_cat", "# Demo\n")),
              line("response_item", message("assistant", "patched; README says Demo")),
              line("event_msg", token_count(6_000, 90)),
              line("response_item", message("user", "now delete everything")),
              line("response_item", call("c_rm", "rm -rf .")),
              line("event_msg", {"type": "turn_aborted", "reason": "interrupted", "turn_id": "t3"}),
              line("event_msg", {"type": "thread_rolled_back", "num_turns": 1}),
              line("response_item", message("user", "what is in src?")),
              line("response_item", call("c_src", "ls src")),
              line("world_model_v9", {"note": "a record type from a newer Codex"})]
    path = tmp_path / "rollout-2026-03-01T10-00-00-0199aaaa.jsonl"
    write(path, lines)
    return path


def test_stats_names_codex_and_counts_by_its_token_count_usage(tmp_path):
    path = _session(tmp_path)
    done = ctxkit("stats", "--json", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    stats = json.loads(done.stdout)
    assert stats["format"] == "codex"
    # the newest response with a recorded usage: input + output of its last_token_usage
    assert stats["tokens_source"] == "usage" and stats["tokens_reported"] == 6_090
    assert stats["budget"]["model"] == "gpt-5.1-codex"  # the newest turn_context's: its window, its prices
    assert any("world_model_v9" in n for n in stats["notes"])  # a newer record type: a warning, not an error


def test_the_view_is_the_history_codex_resumes_with_every_call_answered(tmp_path):
    t = read_transcript(_session(tmp_path))
    msgs = t.view().api_messages()
    assert not pairing_problems(msgs)
    uses = [b["id"] for m in msgs if m["role"] == "assistant" for b in m["content"] if b.get("type") == "tool_use"]
    assert uses == ["c_ls", "c_patch", "c_cat", "c_src"]  # c_rm's turn was rolled back
    results = {b["tool_use_id"]: b["content"] for m in msgs if m["role"] == "user" and isinstance(m["content"], list)
               for b in m["content"] if b.get("type") == "tool_result"}
    assert results == {"c_ls": "README.md\nsrc\n", "c_patch": "Done.", "c_cat": "# Demo\n", "c_src": "aborted"}
    texts = [b.get("text") for m in msgs for b in m["content"] if isinstance(m["content"], list)]
    assert "now delete everything" not in texts and "what is in src?" in texts
    assert msgs[0]["role"] == "system"  # the developer message


def test_a_replacement_history_is_the_view_from_there_on(tmp_path):
    lines = opening() + turn(1, "first task", [("c1", "ls", "a\n")], "done")
    lines.append(line("compacted", {"message": "summary of the first task", "replacement_history": [
        message("user", "first task"), message("user", "SUMMARY: listed the files")]}))
    lines += turn(2, "second task", [("c2", "pwd", "/w\n")], "in /w")
    path = tmp_path / "r.jsonl"
    write(path, lines)
    msgs = read_transcript(path).view().api_messages()
    texts = [b.get("text") or b.get("tool_use_id") or b.get("id") for m in msgs for b in m["content"]]
    assert texts[:2] == ["first task", "SUMMARY: listed the files"]
    assert "c1" not in texts and "c2" in texts


def test_a_rollout_of_codex_0_3x_is_read_too(tmp_path):
    path = tmp_path / "old.jsonl"
    path.write_text("\n".join(json.dumps(d) for d in [
        {"id": "5973b6c0-94b8-487b-a530-2aeb6098ae0e", "timestamp": "2025-05-07T17:24:21.123Z", "instructions": None},
        {"record_type": "state"},
        message("user", "what time is it"),
        call("call_1", "date"),
        output("call_1", "17:24\n"),
        message("assistant", "It is 17:24."),
    ]) + "\n")
    done = ctxkit("view", "--to", "openai", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    msgs = [json.loads(x) for x in done.stdout.splitlines()]
    assert [m["role"] for m in msgs] == ["user", "assistant", "tool", "assistant"]
    assert json.loads(ctxkit("stats", "--json", str(path), cwd=tmp_path).stdout)["format"] == "codex"


def _long_session(tmp_path: Path, name: str = "long.jsonl") -> Path:
    lines = opening()
    for k in range(30):
        lines += turn(k, f"read file {k}", [(f"c{k}", f"cat f{k}.txt", f"line {k} " * 800)], f"read f{k}",
                      second=k * 4)
    path = tmp_path / name
    write(path, lines)
    return path


def test_compact_appends_a_compacted_line_and_expand_gives_the_rollout_back_byte_for_byte(tmp_path):
    path = _long_session(tmp_path)
    done = ctxkit("compact", "--force", "-p", "no-llm", str(path), "-o", "c.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "autocompact: applied" in done.stderr
    assert "microcompact: applied" in done.stderr
    original, compacted = path.read_bytes(), (tmp_path / "c.jsonl").read_bytes()
    assert compacted.startswith(original)  # nothing the rollout held is rewritten
    added = [json.loads(x) for x in compacted[len(original):].splitlines()]
    assert [d["type"] for d in added] == ["compacted"]
    replacement = added[0]["payload"]["replacement_history"]
    assert replacement[0]["role"] == "developer"  # the initial context first, then the summary
    assert any(x.get("type") == "message" and "continued from a previous conversation" in json.dumps(x)
               for x in replacement)
    after = read_transcript(tmp_path / "c.jsonl")
    assert after.format == "codex" and not pairing_problems(after.view().api_messages())
    assert len(after.view().messages) < len(read_transcript(path).view().messages)
    back = ctxkit("expand", "c.jsonl", "-o", "e.jsonl", cwd=tmp_path)
    assert back.returncode == 0, back.stderr
    assert (tmp_path / "e.jsonl").read_bytes() == original


def test_a_zstd_rollout_is_read_and_written_compressed(tmp_path):
    plain = _long_session(tmp_path, "rollout.jsonl")
    packed = tmp_path / "rollout.jsonl.zst"
    with open(packed, "wb") as f, zstandard.ZstdCompressor(level=3).stream_writer(f, closefd=False) as z:
        z.write(plain.read_bytes())
    stats = ctxkit("stats", "--json", str(packed), cwd=tmp_path)
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)["format"] == "codex"
    done = ctxkit("compact", "--force", "-p", "no-llm", str(packed), "-o", "c.jsonl.zst", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    unpacked = zstandard.ZstdDecompressor().stream_reader(open(tmp_path / "c.jsonl.zst", "rb")).read()
    assert unpacked.startswith(plain.read_bytes()) and b'"type":"compacted"' in unpacked
    back = ctxkit("expand", "c.jsonl.zst", "-o", "e.jsonl.zst", cwd=tmp_path)
    assert back.returncode == 0, back.stderr
    assert (tmp_path / "e.jsonl.zst").read_bytes() == packed.read_bytes()
    over = ctxkit("compact", "--force", "-p", "no-llm", str(packed), "-o", str(packed), cwd=tmp_path)
    assert over.returncode == 3 and "not written over" in over.stderr and "Traceback" not in over.stderr


def test_a_broken_zstd_stream_is_a_clear_error(tmp_path):
    bad = tmp_path / "r.jsonl.zst"
    bad.write_bytes(b"\x28\xb5\x2f\xfd" + b"not a frame")
    done = ctxkit("stats", str(bad), cwd=tmp_path)
    assert done.returncode == 3 and "not a readable zstd stream" in done.stderr and "Traceback" not in done.stderr


def test_a_zstd_rollout_cut_short_is_named_and_one_of_several_frames_is_read_whole(tmp_path):
    # the decompressor said nothing at a frame's missing end: a cut file read as an empty one (format
    # "anthropic", 0 messages, exit 0)
    plain = _long_session(tmp_path, "rollout.jsonl").read_bytes()
    packed = zstandard.ZstdCompressor(level=3).compress(plain)
    for cut in (10, len(packed) // 2, len(packed) - 3):
        (tmp_path / "cut.jsonl.zst").write_bytes(packed[:cut])
        done = ctxkit("stats", "cut.jsonl.zst", cwd=tmp_path)
        assert (done.returncode, done.stderr) == (3, "ctxkit: error: cut.jsonl.zst:0: a zstd stream cut short (its "
                                                     "last frame does not end: the file is incomplete)\n")
    two = zstandard.ZstdCompressor().compress(plain[:4000]) + zstandard.ZstdCompressor().compress(plain[4000:])
    (tmp_path / "two.jsonl.zst").write_bytes(two)
    assert len(read_transcript(tmp_path / "two.jsonl.zst").view().messages) == \
        len(read_transcript(tmp_path / "rollout.jsonl").view().messages)


def test_doctor_finds_nothing_wrong_with_a_call_codex_answers_itself(tmp_path):
    done = ctxkit("doctor", str(_session(tmp_path)), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_line_whose_type_is_a_list_is_no_crash_of_detection(tmp_path):
    """(Found by the fuzzer: the rollout and Gemini record types were looked up in sets.)"""
    path = tmp_path / "odd.jsonl"
    path.write_text(json.dumps({"type": [], "payload": {}}) + "\n" + json.dumps({"type": {"a": 1}, "id": "x"}) + "\n")
    done = ctxkit("stats", "--json", str(path), cwd=tmp_path)
    assert done.returncode in (0, 3) and "Traceback" not in done.stderr, done.stderr


def test_the_thresholds_are_taken_from_the_window_codex_counts_against(tmp_path):
    # a rollout of Codex 0.34 holds no turn_context (so no model): the window was the 200,000-token
    # default, and a real session at 271,406 tokens of Codex's 272,000 was reported over the blocking limit
    # of a window it never had; the window Codex counts against is in every token_count
    lines = [line("session_meta", {"id": SESSION_ID, "timestamp": "2026-03-01T10:00:00Z", "cwd": "/w",
                                   "originator": "codex_cli_rs", "cli_version": "0.34.0"}),
             line("response_item", message("user", "fix the tests")),
             line("response_item", message("assistant", "Done.")),
             line("event_msg", token_count(150_000, 2_000, window=272_000))]
    path = tmp_path / "rollout.jsonl"
    path.write_text("\n".join(lines) + "\n")
    done = ctxkit("stats", "--json", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    budget = json.loads(done.stdout)["budget"]
    assert (budget["context_window"], budget["context_window_source"]) == (272_000, "session")
    over = ctxkit("stats", "--json", "--context-window", "200000", str(path), cwd=tmp_path)  # an explicit one wins
    assert json.loads(over.stdout)["budget"]["context_window"] == 200_000


def test_a_rollback_whose_num_turns_is_no_count_drops_no_turn_as_in_codex(tmp_path):
    """codex-rs reads ``num_turns`` as a ``u32``: a line holding ``true`` (or ``1.5``, ``-1``) fails to parse and
    Codex skips it, so no turn is rolled back; ctxkit reads it the same, says so, and keeps the line."""
    for bad in (True, 1.5, -1, 2 ** 32):
        lines = opening() + turn(1, "first task", [("c1", "ls", "a\n")], "done")
        lines += turn(2, "second task", [("c2", "pwd", "/w\n")], "in /w")
        lines.append(line("event_msg", {"type": "thread_rolled_back", "num_turns": bad}))
        path = tmp_path / "r.jsonl"
        write(path, lines)
        before = path.read_bytes()
        t = read_transcript(path)
        texts = [b.get("text") for m in t.view().api_messages() if isinstance(m["content"], list) for b in m["content"]]
        assert "second task" in texts and "in /w" in texts, bad
        warning = [n for n in t.view().notes if "thread_rolled_back" in n]
        assert warning and f"line {len(lines)}" in warning[0] and "no turn is dropped" in warning[0], bad
        done = ctxkit("compact", "--force", "-p", "no-llm", "--store", str(tmp_path / "store"), str(path),
                      "-o", str(tmp_path / "c.jsonl"), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert (tmp_path / "c.jsonl").read_bytes().startswith(before)  # the line kept byte for byte
    lines[-1] = line("event_msg", {"type": "thread_rolled_back", "num_turns": 1})  # a count: the turn goes
    write(path, lines)
    texts = [b.get("text") for m in read_transcript(path).view().api_messages() if isinstance(m["content"], list)
             for b in m["content"]]
    assert "second task" not in texts and "first task" in texts


def test_an_empty_text_item_of_an_output_is_left_out_of_the_view(tmp_path):
    # Codex 0.144 ends a command's output with an empty input_text when the command printed nothing (7 such
    # outputs in one public rollout): the view carried empty text blocks, a request the Messages API refuses,
    # and doctor reported each as an error
    lines = opening() + turn(0, "run it", [], "Done.")
    silent = {"type": "custom_tool_call_output", "call_id": "c1",
              "output": [{"type": "input_text", "text": "Script completed\nWall time 0.1 seconds\nOutput:\n"},
                         {"type": "input_text", "text": ""}]}
    empty = {**silent, "call_id": "c2", "output": [{"type": "input_text", "text": ""}]}
    lines[-3:-3] = [line("response_item", {"type": "custom_tool_call", "call_id": "c1", "name": "exec",
                                           "input": "python3 build.py"}),
                    line("response_item", silent),
                    line("response_item", {"type": "custom_tool_call", "call_id": "c2", "name": "exec",
                                           "input": "true"}),
                    line("response_item", empty)]
    path = tmp_path / "rollout.jsonl"
    write(path, lines)
    done = ctxkit("view", "--to", "anthropic-request", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    results = {b["tool_use_id"]: b.get("content") for m in json.loads(done.stdout)["messages"]
               if isinstance(m["content"], list) for b in m["content"] if b.get("type") == "tool_result"}
    assert results["c1"] == [{"type": "text", "text": "Script completed\nWall time 0.1 seconds\nOutput:\n"}]
    assert results["c2"] in ("", [])
    done = ctxkit("doctor", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
