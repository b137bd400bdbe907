"""tool-result-budget and microcompact on the other agents' sessions (Codex rollouts, Gemini CLI
recordings, OpenCode exports): a replaced output is written where the agent keeps it, in its own shape
(so the agent sends the replacement when it resumes), the next run changes nothing, and ``ctxkit
expand`` gives the file back byte for byte. Cursor records no results: the stages say so."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import cline_tasks
import codex_rollouts
import gemini_sessions
import opencode_sessions

from ctxkit.transcript import pairing_problems, read_transcript

PLACEHOLDER = "[Old tool result content cleared]"
# keep 2 results whole, persist any result over 30,000 characters; no summary (what is asked here is masking)
OPTIONS = ("--set", "stages.microcompact.options.keep_recent=2",
           "--set", "stages.tool-result-budget.options.max_result_chars=30000",
           "--set", "stages.autocompact.enabled=false")


def ctxkit(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ctxkit.cli.main", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=120)


def _codex(path: Path) -> None:
    lines = codex_rollouts.opening()
    for k in range(6):
        size = 8000 if k in (1, 5) else 300  # two results over the budget: one old, one recent
        lines += codex_rollouts.turn(k, f"read file {k}", [(f"c{k}", f"cat f{k}.txt", f"line {k} " * size)],
                                     f"read f{k}", second=k * 4)
    codex_rollouts.write(path, lines)


def _codex_outputs(path: Path) -> dict[str, str]:
    out = {}
    for raw in path.read_text().splitlines():
        d = json.loads(raw)
        if d.get("type") == "response_item" and d["payload"].get("type") == "function_call_output":
            out[d["payload"]["call_id"]] = d["payload"]["output"]
    return out


def _gemini(path: Path) -> None:
    """Six turns of one call each, every batch of responses recorded again as Gemini CLI 0.61 does."""
    g = gemini_sessions
    recs = [g.metadata()]
    for k in range(6):
        size = 8000 if k in (1, 5) else 300
        call = g.tool_call(f"c{k}", "read_file", {"path": f"f{k}"}, f"line {k} " * size)
        recs += [g.user(f"u{k}", f"read file {k}"), g.gemini(f"g{k}", "", [call]), g.responses(f"r{k}", [call]),
                 g.gemini(f"h{k}", f"read f{k}")]
    g.write(path, recs)


def _gemini_outputs(path: Path) -> dict[str, str]:
    """Each call's output, checked to be the same in its ``result`` and in the recorded batch of responses."""
    out, copies = {}, {}
    for raw in path.read_text().splitlines():
        d = json.loads(raw)
        for c in d.get("toolCalls") or []:
            [part] = c["result"]  # one functionResponse part, as Gemini CLI records a result
            assert part["functionResponse"]["id"] == c["id"] and part["functionResponse"]["name"] == c["name"]
            out[c["id"]] = part["functionResponse"]["response"]["output"]
        if d.get("type") == "user":
            copies.update({p["functionResponse"]["id"]: p["functionResponse"]["response"]["output"]
                           for p in d["content"] if "functionResponse" in p})
    assert copies == out  # the copy Gemini CLI sends again is what the call's result is
    return out


def _opencode(path: Path) -> None:
    o = opencode_sessions
    msgs, n = [], 0
    for k in range(6):
        size = 8000 if k in (1, 5) else 300
        msgs.append(o.user(n, f"read file {k}"))
        msgs.append(o.assistant(n + 1, n, "", [o.tool(n + 1, 0, "read", {"filePath": f"f{k}"}, f"line {k} " * size)]))
        msgs.append(o.assistant(n + 2, n, f"read f{k}"))
        n += 3
    o.write(path, msgs)


def _opencode_outputs(path: Path) -> dict[str, str]:
    return {p["callID"]: p["state"]["output"] for m in json.loads(path.read_text())["messages"]
            for p in m["parts"] if p["type"] == "tool"}


CASES = {"codex": (_codex, _codex_outputs, "s.jsonl"), "gemini": (_gemini, _gemini_outputs, "s.jsonl"),
         "opencode": (_opencode, _opencode_outputs, "s.json")}


def _ids(fmt: str) -> list[str]:
    return [f"c{k}" for k in range(6)] if fmt != "opencode" else [f"toolu_{3 * k + 1}_0" for k in range(6)]


def test_masking_stages_write_each_agents_own_output_and_expand_gives_the_file_back(tmp_path):
    for fmt, (make, outputs, name) in CASES.items():
        folder = tmp_path / fmt
        folder.mkdir()
        path = folder / name
        make(path)
        out = folder / ("c" + path.suffix)
        done = ctxkit("compact", "-p", "no-llm", *OPTIONS, name, "-o", out.name, cwd=folder)
        assert done.returncode == 0, done.stderr
        assert "tool-result-budget: applied: persisted 2 result(s)" in done.stderr, (fmt, done.stderr)
        assert "microcompact: applied: cleared 4 old tool result(s)" in done.stderr, (fmt, done.stderr)
        ids = _ids(fmt)
        got = outputs(out)
        # the four oldest results cleared (one was a preview first), the two newest kept: one whole, one a preview
        assert [got[i] for i in ids[:4]] == [PLACEHOLDER] * 4, fmt
        assert got[ids[4]] == outputs(path)[ids[4]], fmt
        assert got[ids[5]].startswith("<persisted-output>\nOutput too large"), fmt
        after = read_transcript(out)
        assert after.format == fmt and not pairing_problems(after.view().api_messages())
        # frozen: a second run on its own output changes nothing
        again = ctxkit("compact", "-p", "no-llm", *OPTIONS, out.name, "-o", "again" + path.suffix, cwd=folder)
        assert again.returncode == 0, again.stderr
        assert (folder / ("again" + path.suffix)).read_bytes() == out.read_bytes(), fmt
        back = ctxkit("expand", out.name, "-o", "e" + path.suffix, cwd=folder)
        assert back.returncode == 0, back.stderr
        assert "restored 5 tool output(s)" in back.stderr  # four cleared, one preview, (fmt, back.stderr)
        assert (folder / ("e" + path.suffix)).read_bytes() == path.read_bytes(), fmt


def test_a_gemini_output_is_replaced_in_its_recorded_batch_too_and_the_view_holds_neither_copy(tmp_path):
    """Gemini CLI 0.61 records each batch of function responses again (a ``user`` record) and sends it on
    resume besides the calls' results: a cleared output is replaced in both, so neither the view nor ``view
    --to anthropic`` holds it. A batch part that is not, key for key, the result is no copy of it: it stays
    as recorded (and is sent whole). Expand gives the file back byte for byte: a JSONL recording, and the
    older single-JSON session."""
    g = gemini_sessions
    recs, whole = [g.metadata()], {}
    for k in range(4):
        calls = [g.tool_call(f"c{k}{x}", "read_file", {"path": f"{x}{k}"}, f"{x} {k} " * 3000) for x in "ab"]
        whole.update({c["id"]: f"{c['id'][2]} {k} " * 3000 for c in calls})
        batch = g.responses(f"r{k}", calls)
        if k == 1:  # the second response with its keys in another order: not the result as recorded
            fr = batch["content"][1]["functionResponse"]
            batch["content"][1] = {"functionResponse": {"name": fr["name"], "response": fr["response"], "id": fr["id"]}}
        recs += [g.user(f"u{k}", f"read pair {k}"), g.gemini(f"g{k}", "", calls), batch, g.gemini(f"h{k}", "read")]
    g.write(tmp_path / "s.jsonl", recs)
    (tmp_path / "s.json").write_text(json.dumps({**recs[0], "messages": recs[1:]}, indent=2))
    sent = {"c0a": 0, "c0b": 0, "c1a": 0, "c1b": 1, "c2a": 0, "c2b": 0, "c3a": 2, "c3b": 2}  # times each is whole
    for name in ("s.jsonl", "s.json"):
        out = "c" + Path(name).suffix
        done = ctxkit("compact", "-p", "no-llm", *OPTIONS, name, "-o", out, cwd=tmp_path)
        assert done.returncode == 0 and "microcompact: applied: cleared 6 old tool result(s)" in done.stderr, done.stderr
        shown = ctxkit("view", "--to", "anthropic", out, cwd=tmp_path)
        assert shown.returncode == 0, shown.stderr
        view = json.dumps(read_transcript(tmp_path / out).view().api_messages())
        assert {cid: shown.stdout.count(text) for cid, text in whole.items()} == sent, name
        assert {cid: view.count(text) for cid, text in whole.items()} == sent, name
        assert shown.stdout.count(PLACEHOLDER) == 6 + 5  # each cleared result, and each copy of one
        back = ctxkit("expand", out, "-o", "e" + Path(name).suffix, cwd=tmp_path)
        assert back.returncode == 0 and "restored 6 tool output(s)" in back.stderr, back.stderr
        assert (tmp_path / ("e" + Path(name).suffix)).read_bytes() == (tmp_path / name).read_bytes(), name


def test_a_codex_output_kept_as_content_items_comes_back_as_items(tmp_path):
    """(Codex records an output as a string or as a list of content items: a replacement is a string,
    and expand gives back the list as it was.)"""
    lines = codex_rollouts.opening()
    for k in range(4):
        lines += codex_rollouts.turn(k, f"look {k}", [(f"c{k}", f"cat f{k}", "x")], "ok", second=k * 4)
    items = [{"type": "input_text", "text": "big " * 20000}]
    lines = [raw.replace('"output": "x"', '"output": ' + json.dumps(items)) if '"c0"' in raw else raw for raw in lines]
    path = tmp_path / "s.jsonl"
    codex_rollouts.write(path, lines)
    done = ctxkit("compact", "-p", "no-llm", *OPTIONS, "s.jsonl", "-o", "c.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert _codex_outputs(tmp_path / "c.jsonl")["c0"] == PLACEHOLDER  # (a string where the items were)
    assert ctxkit("expand", "c.jsonl", "-o", "e.jsonl", cwd=tmp_path).returncode == 0
    assert (tmp_path / "e.jsonl").read_bytes() == path.read_bytes()


def test_cursor_says_why_the_masking_stages_do_nothing_and_others_say_why_snip_does_not(tmp_path):
    cursor = tmp_path / "cursor.jsonl"
    cursor.write_text("".join(json.dumps(x) + "\n" for x in [
        {"role": "user", "message": {"content": [{"type": "text", "text": "<user_query>\nhi\n</user_query>"}]}},
        {"role": "assistant", "message": {"content": [{"type": "text", "text": "hello"}]}}]))
    done = ctxkit("compact", "-p", "no-llm", "cursor.jsonl", "-o", "c.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "microcompact: skipped (a Cursor transcript records no tool result" in done.stderr
    done = ctxkit("compact", "-p", "no-llm", "--set", "stages.snip.enabled=true", "cursor.jsonl", "-o", "c3.jsonl",
                  cwd=tmp_path)
    assert "snip: skipped (a Cursor transcript has no room for a record of a snip" in done.stderr, done.stderr
    _opencode(tmp_path / "export.json")
    done = ctxkit("compact", "-p", "no-llm", "--set", "stages.snip.enabled=true", "export.json", "-o", "c2.json",
                  cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "snip: skipped (OpenCode records no turns taken out of the middle of a session" in done.stderr


def _id_of(path: Path, prompt: str, cwd: Path) -> str:
    """The snip id ``ctxkit view --tag-ids`` shows on the user message ``prompt``."""
    shown = ctxkit("view", "--tag-ids", path.name, cwd=cwd).stdout
    [found] = re.findall(re.escape(json.dumps(prompt)[1:-1]) + r"\\n\[id:([0-9a-z]+)\]", shown)
    return found


def test_snip_takes_a_turn_out_of_a_codex_or_gemini_session_by_appending_its_rewritten_history(tmp_path):
    for fmt in ("codex", "gemini"):
        make, outputs, name = CASES[fmt]
        folder = tmp_path / fmt
        folder.mkdir()
        path = folder / name
        make(path)
        sid = _id_of(path, "read file 2", folder)
        done = ctxkit("snip", "--ids", sid, name, "-o", "snipped.jsonl", cwd=folder)
        assert done.returncode == 0 and "snip: applied: snipped 1 turn" in done.stderr, done.stderr
        snipped = (folder / "snipped.jsonl").read_bytes()
        assert snipped.startswith(path.read_bytes())  # appended: the agent's own lines stay as they were
        api = read_transcript(folder / "snipped.jsonl").view().api_messages()
        texts = json.dumps(api)
        assert "read file 2" not in texts and '"c2"' not in texts and "read file 3" in texts and "read file 1" in texts
        assert not pairing_problems(api)
        back = ctxkit("expand", "snipped.jsonl", "-o", "e.jsonl", cwd=folder)
        assert back.returncode == 0, back.stderr
        assert (folder / "e.jsonl").read_bytes() == path.read_bytes(), fmt


def test_a_cline_history_with_native_calls_is_masked_as_an_anthropic_list_and_expanded(tmp_path):
    """(Cline's messages are Anthropic's: its results are tool_result blocks. A history has no timestamps,
    so --force says the cache is cold, as for any message list.)"""
    msgs = [cline_tasks.task("read the files")]
    for k in range(6):
        size = 8000 if k in (1, 5) else 300
        msgs += [cline_tasks.native_call(f"toolu_{k}", "read_file", {"path": f"f{k}"}),
                 cline_tasks.native_result(f"toolu_{k}", f"line {k} " * size)]
    msgs.append(cline_tasks.say("all read"))
    path = tmp_path / "api_conversation_history.json"
    cline_tasks.write(path, msgs)
    done = ctxkit("compact", "-p", "no-llm", "--force", *OPTIONS, path.name, "-o", "c.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "tool-result-budget: applied: persisted 2 result(s)" in done.stderr
    assert "microcompact: applied: cleared 4 old tool result(s)" in done.stderr
    results = [b["content"] for m in json.loads((tmp_path / "c.json").read_text()) for b in m["content"]
               if isinstance(b, dict) and b.get("type") == "tool_result"]
    assert results[:4] == [PLACEHOLDER] * 4 and results[5].startswith("<persisted-output>")
    assert ctxkit("expand", "c.json", "-o", "e.json", cwd=tmp_path).returncode == 0
    assert (tmp_path / "e.json").read_bytes() == path.read_bytes()
