"""``ctxkit doctor``: each breakage named on its line (exit 1), healthy sessions pass (exit 0), the table of
the API's rules and limits read as data."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import doctor_fixtures as fx
import pytest
from conftest import CC_CORPUS, PUBLIC_CORPUS, needs_corpus

from ctxkit.api_rules import MEASURES, limits, rules
from ctxkit.media import image_size, pdf_pages


def ctxkit(args, cwd, timeout=120) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "CTXKIT_DEBUG")}
    env["XDG_CONFIG_HOME"] = str(cwd / "xdg")
    return subprocess.run([sys.executable, "-m", "ctxkit.cli.main", *args], cwd=cwd, capture_output=True,
                          timeout=timeout, env=env, text=True)


def write_session(tmp_path: Path, name: str, fixture) -> tuple[Path, int]:
    entries, line = fixture()
    path = tmp_path / f"{name.strip()}.jsonl"
    path.write_bytes(fx.lines_of(entries, torn_at=line if fixture is fx.torn_line else None))
    return path, line


# -- the table ---------------------------------------------------------------------------------------
def test_every_limit_row_measures_a_quantity_doctor_knows():
    for lim in limits():
        assert lim.measure in MEASURES, lim.id
        assert (lim.max is None) != (lim.min is None), lim.id
        if lim.when is not None:
            assert lim.when["measure"] in MEASURES, lim.id
    assert {"orphan-tool-use", "orphan-tool-result", "empty-text", "prompt-too-long"} <= set(rules())


def test_a_new_limit_is_a_row_of_the_table(tmp_path, monkeypatch):
    """A limit the code has never heard of, on a quantity it measures, takes effect from the table alone."""
    import ctxkit.api_rules as api_rules
    from ctxkit.reports.doctor import diagnose
    from ctxkit.transcript import read_transcript

    path, _ = write_session(tmp_path, "wide", fx.pasted_wide_image)  # 9000 x 400
    table = json.loads((Path(api_rules.__file__).parent / "api_rules.json").read_text())
    table["limits"] = [{"id": "image-too-tall", "block": "image", "measure": "max_side", "max": 300,
                        "severity": "error", "problem": "image side {value} px over {max}", "api_error": "too tall",
                        "fix": "store it", "source": "a test"}]
    monkeypatch.setattr(api_rules, "_table", lambda: table)
    api_rules.limits.cache_clear()
    api_rules.rules.cache_clear()
    try:
        found = diagnose(read_transcript(path, check_pairing=False)).findings
    finally:
        api_rules.limits.cache_clear()
        api_rules.rules.cache_clear()
    assert [(f.rule, f.problem) for f in found if f.rule == "image-too-tall"] == \
        [("image-too-tall", "image side 9000 px over 300")]


def test_image_sizes_and_pdf_pages_are_read_from_the_bytes():
    assert image_size(fx.png(9000, 10)) == (9000, 10)
    assert image_size(b"GIF89a" + (640).to_bytes(2, "little") + (480).to_bytes(2, "little")) == (640, 480)
    jpeg = (b"\xff\xd8" + b"\xff\xe1\x00\x10" + b"Exif\x00\x00" + b"\x00" * 8
            + b"\xff\xc0\x00\x11\x08" + (1080).to_bytes(2, "big") + (1920).to_bytes(2, "big") + b"\x03" + b"\x00" * 9)
    assert image_size(jpeg) == (1920, 1080)
    webp = b"RIFF" + b"\x00" * 4 + b"WEBPVP8X" + b"\x00" * 8 + (2999).to_bytes(3, "little") + (99).to_bytes(3, "little")
    assert image_size(webp) == (3000, 100)
    assert pdf_pages(fx.pdf(120)) == 120
    assert pdf_pages(b"not a pdf") is None


# -- each breakage, on its line ----------------------------------------------------------------------
@pytest.mark.parametrize("problem", sorted(fx.BROKEN))
def test_doctor_names_each_breakage_on_its_line(tmp_path, problem):
    path, line = write_session(tmp_path, problem, fx.BROKEN[problem])
    r = ctxkit(["doctor", str(path), "--json"], tmp_path)
    assert r.returncode == 1, r.stderr
    findings = json.loads(r.stdout)["findings"]
    errors = [(f["rule"], f["line"]) for f in findings if f["severity"] == "error"]
    assert (problem.strip(), line) in errors, findings
    hit = next(f for f in findings if f["rule"] == problem.strip())
    assert set(hit) >= {"line", "problem", "api_error", "fix"}
    assert hit["api_error"] and hit["fix"]
    assert not re.search(r"messages\.\?|content\.\?", hit["api_error"]), hit  # real indexes, as the API gives them


@pytest.mark.parametrize("problem", sorted(fx.NOTED))
def test_blank_assistant_text_is_found_on_its_line_and_left_out_by_fix(tmp_path, problem):
    """The view leaves an empty or whitespace-only assistant text block out (as Claude Code's resume does), so
    the next request is valid: a note on its line (exit 0); --fix leaves it out, expand gives it back."""
    from mock_messages_api import MockMessagesAPI

    path, line = write_session(tmp_path, problem, fx.NOTED[problem])
    r = ctxkit(["doctor", str(path), "--json"], tmp_path)
    assert r.returncode == 0, r.stdout
    assert (problem, line, "note") in [(f["rule"], f["line"], f["severity"]) for f in json.loads(r.stdout)["findings"]]
    fixed, back = tmp_path / "fixed.jsonl", tmp_path / "back.jsonl"
    f = ctxkit(["doctor", "--fix", str(path), "-o", str(fixed)], tmp_path)
    assert f.returncode == 0 and "repaired 1 problem(s); 0 left" in f.stderr, f.stderr
    assert problem not in ctxkit(["doctor", str(fixed), "--json"], tmp_path).stdout
    assert ctxkit(["expand", str(fixed), "-o", str(back)], tmp_path).returncode == 0
    assert back.read_bytes() == path.read_bytes()
    with MockMessagesAPI(strict=True) as api:
        status, answer = _post(api, _next_request(fixed, tmp_path))
        assert status == 200, answer


def test_an_interrupted_turn_reads_as_the_api_would_answer_it(tmp_path):
    path, line = write_session(tmp_path, "crash", fx.crash_mid_turn)
    r = ctxkit(["doctor", str(path)], tmp_path)
    assert r.returncode == 1
    tid = json.loads(path.read_text().splitlines()[line - 1])["message"]["content"][0]["id"]
    assert r.stdout.splitlines()[:3] == [
        f"{path}:{line}: error: tool_use {tid} has no tool_result after it (a turn cut off before its result was "
        "written)",
        f"  api: messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: {tid}. Each "
        "`tool_use` block must have a corresponding `tool_result` block in the next message.",
        "  fix: answer it with a tool_result saying the call was interrupted and its outcome is unknown (as Claude "
        "Code does)",
    ]
    assert r.stderr.startswith(f"{path}: 1 error, ")


def test_a_session_too_long_to_compact_is_an_error(tmp_path):
    path = tmp_path / "long.jsonl"
    path.write_bytes(fx.lines_of(fx.healthy()))
    ok = ctxkit(["doctor", str(path), "--json"], tmp_path)
    assert ok.returncode == 0, ok.stdout
    r = ctxkit(["doctor", str(path), "--json", "--context-window", "1000", "--set", "max_output_tokens=900",
                "--set", "thresholds.autocompact_buffer=0", "--set", "thresholds.warning_buffer=0",
                "--set", "thresholds.blocking_buffer=0"], tmp_path)
    rules_found = [f["rule"] for f in json.loads(r.stdout)["findings"]]
    assert r.returncode == 1 and "prompt-too-long" in rules_found, r.stderr


def test_a_healthy_session_exits_0_and_reports_bloat_as_notes(tmp_path):
    entries = fx.healthy()
    entries[2]["toolUseResult"] = {"stdout": "a.py\nb.py" * 100, "stderr": ""}
    entries.append({"type": "file-history-snapshot", "messageId": "m", "snapshot": {
        "messageId": "m", "trackedFileBackups": {"a.py": {"backupFileName": "abc@v1", "content": "z" * 1000}}}})
    path = tmp_path / "ok.jsonl"
    path.write_bytes(fx.lines_of(entries))
    r = ctxkit(["doctor", str(path), "--json"], tmp_path)
    assert r.returncode == 0, r.stdout
    data = json.loads(r.stdout)
    assert {f["rule"] for f in data["findings"]} == {"bloat-tool-use-result", "bloat-file-history-snapshot"}
    # a whole-file note is on the first line it is about (1-based, never 0), in text and --json alike
    assert {f["rule"]: f["line"] for f in data["findings"]} == {"bloat-tool-use-result": 3,
                                                                "bloat-file-history-snapshot": len(entries)}
    text = ctxkit(["doctor", str(path)], tmp_path).stdout
    assert f"{path}:3: note:" in text and f"{path}:0:" not in text
    assert all(f["severity"] == "note" for f in data["findings"])
    assert data["slim_would_save"] > 1000


def test_many_sessions_a_folder_and_jobs(tmp_path):
    folder = tmp_path / "sessions"
    folder.mkdir()
    write_session(folder, "crash", fx.crash_mid_turn)
    (folder / "ok.jsonl").write_bytes(fx.lines_of(fx.healthy()))
    r = ctxkit(["doctor", str(folder), "-j", "2", "--json"], tmp_path)
    assert r.returncode == 1, r.stderr
    by_file = {Path(d["file"]).name: d for d in map(json.loads, r.stdout.splitlines())}
    assert set(by_file) == {"crash.jsonl", "ok.jsonl"}
    assert set(by_file["ok.jsonl"]) == {"file", "findings", "bytes", "slim_would_save", "tokens"}  # docs/doctor.md
    assert by_file["ok.jsonl"]["tokens"] > 0
    # the batch summary shows the view's tokens, not zeros
    table = ctxkit(["doctor", str(folder), "-j", "2"], tmp_path).stderr
    total = next(x for x in table.splitlines() if "total" in x)
    assert re.findall(r"[\d,]+", total)[-2:] != ["0", "0"], table
    assert [f["rule"] for f in by_file["ok.jsonl"]["findings"] if f["severity"] == "error"] == []
    assert "orphan-tool-use" in [f["rule"] for f in by_file["crash.jsonl"]["findings"]]


def test_fix_in_place_of_one_file_says_what_it_repaired(tmp_path):
    path, _ = write_session(tmp_path, "ip", fx.crash_mid_turn)
    r = ctxkit(["doctor", "--fix", "--in-place", str(path)], tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"{path}: repaired 1 problem(s); 0 left" in r.stderr


def test_a_missing_file_is_a_usage_error_as_elsewhere(tmp_path):
    r = ctxkit(["doctor", str(tmp_path / "nope.jsonl")], tmp_path)
    assert r.returncode == 2 and r.stderr == f"ctxkit: error: {tmp_path / 'nope.jsonl'}:0: no such file\n"
    doc = (Path(__file__).parents[1] / "docs" / "doctor.md").read_text()
    assert "3 unreadable input (a missing file)" not in doc and "2 usage (a missing file" in doc


# -- no false alarms ---------------------------------------------------------------------------------
def _corpus_sessions() -> list[Path]:
    found = sorted(CC_CORPUS.glob("*/session.jsonl")) if CC_CORPUS.is_dir() else []
    return found + (sorted(PUBLIC_CORPUS.rglob("*.jsonl")) if PUBLIC_CORPUS.is_dir() else [])


@needs_corpus
def test_every_corpus_session_is_healthy(tmp_path):
    r = ctxkit(["doctor", *map(str, _corpus_sessions()), "--json", "-j", "2"], tmp_path, timeout=600)
    errors = {d["file"]: [f for f in d["findings"] if f["severity"] == "error"] for d in map(json.loads, r.stdout.splitlines())}
    assert len(errors) == len(_corpus_sessions())
    assert {k: v for k, v in errors.items() if v} == {}
    assert r.returncode == 0, r.stderr


# -- --fix: the smallest repair, undone by expand ------------------------------------------------------
REPAIRABLE = sorted(fx.BROKEN)


@pytest.mark.parametrize("problem", REPAIRABLE)
def test_fix_makes_the_session_healthy_and_expand_gives_the_broken_input_back(tmp_path, problem):
    path, _ = write_session(tmp_path, problem, fx.BROKEN[problem])
    fixed = tmp_path / "fixed.jsonl"
    r = ctxkit(["doctor", "--fix", str(path), "-o", str(fixed)], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "; 0 left" in r.stderr
    after = ctxkit(["doctor", str(fixed), "--json"], tmp_path)
    assert after.returncode == 0, after.stdout
    assert [f for f in json.loads(after.stdout)["findings"] if f["severity"] == "error"] == []
    back = tmp_path / "back.jsonl"
    e = ctxkit(["expand", str(fixed), "-o", str(back)], tmp_path)
    assert e.returncode == 0, e.stderr
    assert back.read_bytes() == path.read_bytes()
    # expand says what it put back: the repaired lines, not "0 tool outputs"
    assert re.search(r"restored \d+ tool output\(s\) and [1-9]\d* archived line\(s\)", e.stderr), e.stderr


def _view(path: Path, cwd: Path) -> list[dict]:
    r = ctxkit(["view", str(path)], cwd)
    assert r.returncode == 0, r.stderr
    return [json.loads(x) for x in r.stdout.splitlines()]


def test_an_interrupted_call_is_answered_as_claude_code_answers_it(tmp_path):
    path, line = write_session(tmp_path, "crash", fx.crash_mid_turn)
    fixed = tmp_path / "fixed.jsonl"
    assert ctxkit(["doctor", "--fix", str(path), "-o", str(fixed)], tmp_path).returncode == 0
    msgs = _view(fixed, tmp_path)
    tid = json.loads(path.read_text().splitlines()[line - 1])["message"]["content"][0]["id"]
    assert msgs[-1] == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": tid, "is_error": True,
         "content": "[Tool call interrupted: the session ended before its result was recorded, so its outcome is "
                    "unknown. Check its effects before relying on them.]"},
        {"type": "text", "text": "Where were we?"}]}


def test_an_output_whose_call_was_lost_is_kept_as_text_not_dropped(tmp_path):
    path, line = write_session(tmp_path, "lost-call", fx.dropped_tool_use)
    said = json.loads(ctxkit(["doctor", str(path), "--json"], tmp_path).stdout)["findings"][0]["api_error"]
    assert said.startswith("messages.0.content.1: unexpected `tool_use_id`"), said  # the prompt and the result, merged
    fixed = tmp_path / "fixed.jsonl"
    assert ctxkit(["doctor", "--fix", str(path), "-o", str(fixed)], tmp_path).returncode == 0
    texts = [b.get("text") for m in _view(fixed, tmp_path) if isinstance(m["content"], list) for b in m["content"]]
    assert any(t and t.startswith("[The output of tool call ") for t in texts)
    assert "a.py\nb.py" in texts  # what the model had read


def test_a_lost_result_line_is_reported_as_fix_will_repair_it(tmp_path):
    """The relink --fix makes brings the lost result's call to light: doctor reports it before the fix."""
    path, line = write_session(tmp_path, "lost-result", fx.dropped_result_line)
    r = ctxkit(["doctor", str(path), "--json"], tmp_path)
    rules_found = {(f["rule"], f["line"]) for f in json.loads(r.stdout)["findings"] if f["severity"] == "error"}
    assert ("parent-missing", line) in rules_found and ("consecutive-assistant", line) in rules_found, rules_found
    fixed = tmp_path / "fixed.jsonl"
    f = ctxkit(["doctor", "--fix", str(path), "-o", str(fixed)], tmp_path)
    assert f.returncode == 0 and "repaired 2 problem(s); 0 left" in f.stderr, f.stderr


def test_fix_in_place_is_atomic_and_undone_by_expand(tmp_path):
    path, _ = write_session(tmp_path, "crash", fx.crash_mid_turn)
    before = path.read_bytes()
    r = ctxkit(["doctor", "--fix", "--in-place", str(path)], tmp_path)
    assert r.returncode == 0, r.stderr
    assert path.read_bytes() != before
    assert ctxkit(["doctor", str(path)], tmp_path).returncode == 0
    assert ctxkit(["expand", "--in-place", str(path)], tmp_path).returncode == 0
    assert path.read_bytes() == before


def _unreadable(tmp_path: Path, where: str) -> tuple[Path, int]:
    """A session with a line the agent cannot read, made as it happens: two writers tore a line in the
    middle, a crash cut the last one short (no newline), a byte flipped on disk (not UTF-8)."""
    entries = fx.healthy()
    fx._append_prompt(entries, "Go on")
    line = len(entries) if where == "last" else 3
    data = fx.lines_of(entries, torn_at=line if where != "stray-byte" else None)
    if where == "last":
        data = data[:-1]  # a crash leaves the last line unended
    if where == "stray-byte":
        lines = data.splitlines(keepends=True)
        k = lines[line - 1].index(b'"content"')
        lines[line - 1] = lines[line - 1][:k + 2] + b"\xff" + lines[line - 1][k + 3:]
        data = b"".join(lines)
    path = tmp_path / f"{where}.jsonl"
    path.write_bytes(data)
    return path, line


@pytest.mark.parametrize("where", ["middle", "last", "stray-byte"])
def test_a_line_the_agent_cannot_read_goes_to_the_store_and_expand_puts_it_back(tmp_path, where):
    """--fix moves the line out of the session (a record in its place, which the agent passes over), and the
    repaired session expands back to the broken input byte for byte, the unended last line too."""
    path, line = _unreadable(tmp_path, where)
    data = path.read_bytes()
    found = json.loads(ctxkit(["doctor", str(path), "--json"], tmp_path).stdout)["findings"]
    assert ("unparseable-line", line) in {(f["rule"], f["line"]) for f in found}
    fixed = tmp_path / "fixed.jsonl"
    r = ctxkit(["doctor", "--fix", str(path), "-o", str(fixed)], tmp_path)
    assert r.returncode == 0 and "; 0 left" in r.stderr, r.stderr
    out = fixed.read_bytes().splitlines()
    record = json.loads(out[line - 1])  # every line of the repaired session is JSON; the record is in its place
    assert (record["type"], record["record"], record["line"]) == ("ctxkit-record", "unreadable-line", line), record
    assert Path(record["blob"]).read_bytes() == data.splitlines(keepends=True)[line - 1]
    assert ctxkit(["doctor", str(fixed)], tmp_path).returncode == 0
    back = tmp_path / "back.jsonl"
    e = ctxkit(["expand", str(fixed), "-o", str(back)], tmp_path)
    assert e.returncode == 0 and "archived line(s)" in e.stderr, e.stderr
    assert back.read_bytes() == data
    r = ctxkit(["doctor", "--fix", "--in-place", str(path)], tmp_path)
    if where == "last":  # onto the session, an unended last line may be one the agent is still writing: it
        # stays the session's last line, as compact --in-place keeps it (docs/store.md), and is reported as left
        assert r.returncode == 1 and f"{path}:{line}: not repaired: the agent cannot read" in r.stderr, r.stderr
        assert path.read_bytes().splitlines()[-1] == data.splitlines()[-1]
        return
    assert r.returncode == 0, r.stderr
    assert b"unreadable-line" in path.read_bytes()
    assert ctxkit(["expand", "--in-place", str(path)], tmp_path).returncode == 0
    assert path.read_bytes() == data


def test_a_plain_message_list_with_a_line_fix_cannot_carry_is_left_untouched(tmp_path):
    """A message list has no place for the record: --fix names the line and writes nothing."""
    path = tmp_path / "list.jsonl"
    data = b'{"role": "user", "content": "hi"}\n{"role": "assistant", "con\n{"role": "user", "content": "go on"}\n'
    path.write_bytes(data)
    fixed = tmp_path / "fixed.jsonl"
    r = ctxkit(["doctor", "--fix", str(path), "-o", str(fixed)], tmp_path)
    assert r.returncode == 1
    assert f"{path}:2: not repaired: the agent cannot read this line" in r.stderr
    assert "nothing written" in r.stderr and not fixed.exists() and path.read_bytes() == data


def test_o_without_fix_is_a_usage_error(tmp_path):
    path, _ = write_session(tmp_path, "crash", fx.crash_mid_turn)
    r = ctxkit(["doctor", str(path), "-o", str(tmp_path / "x.jsonl")], tmp_path)
    assert (r.returncode, r.stderr) == (2, "ctxkit: error: -o writes the repaired session: it goes with --fix\n")


# -- --slim --------------------------------------------------------------------------------------------
def _compacted_session() -> list[dict]:
    """A session compacted once: history, a compact boundary, a summary, then more turns; outputs with the
    harness's toolUseResult copy; a file-history-snapshot line per prompt."""
    before = fx.healthy()
    for e in before:
        if e["type"] == "user" and isinstance(e["message"]["content"], list):
            e["message"]["content"][0]["content"] = "x" * 3000
            e["toolUseResult"] = {"stdout": "x" * 3000, "stderr": "", "interrupted": False}
    boundary = {"parentUuid": None, "logicalParentUuid": before[-1]["uuid"], "isSidechain": False, "type": "system",
                "subtype": "compact_boundary", "content": "Conversation compacted", "uuid": "b-1",
                "timestamp": "2026-11-30T11:00:00.000Z", "sessionId": "s-1",
                "compactMetadata": {"trigger": "manual", "preTokens": 5000}}
    summary = {"parentUuid": "b-1", "isSidechain": False, "type": "user", "isCompactSummary": True,
               "message": {"role": "user", "content": "This session is being continued: the files were listed."},
               "uuid": "sum-1", "timestamp": "2026-11-30T11:00:01.000Z", "sessionId": "s-1"}
    after = fx.healthy()
    for e in after:
        e["uuid"] = "n-" + e["uuid"]
        e["parentUuid"] = "n-" + e["parentUuid"] if e["parentUuid"] else "sum-1"
        if e["type"] == "user" and isinstance(e["message"]["content"], list):
            e["toolUseResult"] = {"stdout": "y" * 2000, "stderr": "", "interrupted": False}
    snapshot = {"type": "file-history-snapshot", "messageId": "m-1", "isSnapshotUpdate": False,
                "snapshot": {"messageId": "m-1", "timestamp": "2026-11-30T11:00:02.000Z",
                             "trackedFileBackups": {"a.py": {"backupFileName": "abc@v1", "version": 1,
                                                             "content": "z" * 2000}}}}
    return [*before, boundary, summary, snapshot, *after]


def test_slim_moves_what_the_agent_never_sends_and_expand_gives_it_back(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(fx.lines_of(_compacted_session()))
    slim = tmp_path / "slim.jsonl"
    r = ctxkit(["doctor", "--fix", "--slim", str(path), "-o", str(slim)], tmp_path)
    assert r.returncode == 0, r.stderr
    assert slim.stat().st_size < path.stat().st_size / 2
    assert _view(slim, tmp_path) == _view(path, tmp_path)  # the model is sent the same bytes
    after = json.loads(ctxkit(["doctor", str(slim), "--json"], tmp_path).stdout)
    assert after["findings"] == [] and after["slim_would_save"] == 0
    back = tmp_path / "back.jsonl"
    assert ctxkit(["expand", str(slim), "-o", str(back)], tmp_path).returncode == 0
    assert back.read_bytes() == path.read_bytes()


def test_the_slim_estimate_is_about_what_slim_saves(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(fx.lines_of(_compacted_session()))
    said = json.loads(ctxkit(["doctor", str(path), "--json"], tmp_path).stdout)["slim_would_save"]
    slim = tmp_path / "slim.jsonl"
    assert ctxkit(["doctor", "--fix", "--slim", str(path), "-o", str(slim)], tmp_path).returncode == 0
    records = sum(len(x) + 1 for x in slim.read_text().splitlines() if '"ctxkit-record"' in x)
    saved = path.stat().st_size - (slim.stat().st_size - records)
    assert abs(said - saved) <= 0.05 * saved, (said, saved)


def test_slim_without_fix_is_a_usage_error(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(fx.lines_of(fx.healthy()))
    r = ctxkit(["doctor", "--slim", str(path)], tmp_path)
    assert (r.returncode, r.stderr) == (2, "ctxkit: error: --slim rewrites the session: it goes with --fix\n")


@needs_corpus
def test_slim_halves_the_largest_public_session_and_expand_gives_it_back(tmp_path):
    largest = max(PUBLIC_CORPUS.rglob("*.jsonl"), key=lambda p: p.stat().st_size)
    path = tmp_path / largest.name
    path.write_bytes(largest.read_bytes())
    slim = tmp_path / "slim.jsonl"
    r = ctxkit(["doctor", "--fix", "--slim", str(path), "-o", str(slim)], tmp_path, timeout=300)
    assert r.returncode == 0, r.stderr
    assert slim.stat().st_size <= path.stat().st_size / 2
    assert _view(slim, tmp_path) == _view(path, tmp_path)
    back = tmp_path / "back.jsonl"
    assert ctxkit(["expand", str(slim), "-o", str(back)], tmp_path, timeout=300).returncode == 0
    assert back.read_bytes() == largest.read_bytes()


# -- proof: the next request, sent to a strict stand-in of the API -------------------------------------
def _post(api, body: dict) -> tuple[int, dict]:
    import urllib.error
    import urllib.request

    req = urllib.request.Request(f"{api.base_url}/v1/messages", data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json", "x-api-key": "k",
                                          "anthropic-version": "2023-06-01"})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _next_request(path: Path, cwd: Path, prompt: str | None = "Go on") -> dict:
    r = ctxkit(["view", str(path), "--to", "anthropic-request", "--store", str(cwd / "view-store")], cwd)
    assert r.returncode == 0, r.stderr
    body = json.loads(r.stdout)
    if prompt is not None:  # what the user types next, as the agent sends it
        last = body["messages"][-1]
        if last["role"] == "user":
            last["content"] = [*({"type": "text", "text": last["content"]} for _ in [0] if isinstance(last["content"], str)),
                               *(last["content"] if isinstance(last["content"], list) else []),
                               {"type": "text", "text": prompt}]
        else:  # a turn left in progress: the agent answers its calls as interrupted when it resumes
            calls = [b["id"] for b in last["content"] if isinstance(last["content"], list) and b.get("type") == "tool_use"]
            body["messages"].append({"role": "user", "content": [
                *({"type": "tool_result", "tool_use_id": c, "is_error": True,
                   "content": "[Request interrupted by user for tool use]"} for c in calls),
                {"type": "text", "text": prompt}]})
    return body


def repaired(tmp_path: Path, problem: str) -> tuple[Path, Path]:
    """The broken session made for ``problem``, and its repair by ``doctor --fix``."""
    path, _ = write_session(tmp_path, problem, fx.BROKEN[problem])
    fixed = tmp_path / "fixed.jsonl"
    assert ctxkit(["doctor", "--fix", str(path), "-o", str(fixed)], tmp_path).returncode == 0
    return path, fixed


#: problems the agent itself sends unchanged (its resume repairs only pairing, by dropping)
SENT_AS_IS = ["empty-text", "whitespace-text", "image-too-large", "image-too-many-pixels",
              "image-too-many-pixels-among-many", "pdf-too-many-pages", "thinking-signature-truncated",
              "duplicate-tool-use-id"]


@pytest.mark.parametrize("problem", SENT_AS_IS)
def test_the_strict_stand_in_refuses_the_broken_session_and_accepts_the_repaired_one(tmp_path, problem):
    from mock_messages_api import MockMessagesAPI

    path, fixed = repaired(tmp_path, problem)
    with MockMessagesAPI(strict=True) as api:
        status, answer = _post(api, _next_request(path, tmp_path))
        assert (status, answer["error"]["type"]) == (400, "invalid_request_error")
        doctor = json.loads(ctxkit(["doctor", str(path), "--json"], tmp_path).stdout)["findings"]
        said = next(f["api_error"] for f in doctor if f["rule"] == problem)
        shape = re.sub(r"messages\.\d+(\.content\.\d+)?", "messages.N", said)
        assert re.sub(r"messages\.\d+(\.content\.\d+)?", "messages.N", answer["error"]["message"]) == shape
        status, answer = _post(api, _next_request(fixed, tmp_path))
        assert status == 200, answer


@pytest.mark.parametrize("problem", REPAIRABLE)
def test_every_repaired_session_s_next_request_is_accepted(tmp_path, problem):
    from mock_messages_api import MockMessagesAPI

    path, fixed = repaired(tmp_path, problem)
    with MockMessagesAPI(strict=True) as api:
        status, answer = _post(api, _next_request(fixed, tmp_path))
        assert status == 200, answer


@needs_corpus
def test_every_corpus_session_s_next_request_passes_the_strict_stand_in(tmp_path):
    """Healthy by the independent check too: doctor's exit 0 on the corpus is no false alarm."""
    from mock_messages_api import MockMessagesAPI

    with MockMessagesAPI(strict=True) as api:
        for path in _corpus_sessions():
            status, answer = _post(api, _next_request(path, tmp_path))
            assert status == 200, (path, answer)


# -- the genuine Claude Code CLI resumes the repaired session (../shared/tools/cc-harness) ---------------
HARNESS = Path(__file__).resolve().parent.parent.parent / "shared" / "tools" / "cc-harness"
CLI = Path(os.environ.get("CC_HARNESS_CACHE", Path.home() / ".cache" / "cc-harness")) / "2.1.328" / "package" / "claude"
needs_cli = pytest.mark.skipif(not (HARNESS / "run-claude.sh").exists() or not CLI.exists(),
                               reason="the genuine Claude Code CLI is not fetched (../shared/tools/cc-harness fetches "
                               "it once with npm; these tests do not download it)")


def _resume_with_claude_code(tmp_path: Path, session: Path) -> dict | None:
    """Put ``session`` where Claude Code keeps its sessions, resume it with the genuine CLI, and return the
    first request it sent with its tools (the context it rebuilt from the file); None when it sent none
    (it refuses a session it finds broken before sending: an image over the limit is an ``image_error``)."""
    import uuid

    work, out = tmp_path / "work", tmp_path / "out"
    work.mkdir(parents=True)
    sid = str(uuid.uuid4())
    lines = []
    for raw in session.read_text().splitlines():
        e = json.loads(raw)
        if "sessionId" in e:
            e["sessionId"] = sid
        if "cwd" in e:
            e["cwd"] = str(work)
        lines.append(json.dumps(e))
    slug = re.sub(r"[^A-Za-z0-9]", "-", str(work))
    folder = out / "home" / ".claude" / "projects" / slug
    folder.mkdir(parents=True)
    (folder / f"{sid}.jsonl").write_text("".join(x + "\n" for x in lines))
    scenario = tmp_path / "scenario.json"
    scenario.write_text(json.dumps({"steps": [{"blocks": [{"type": "text", "text": "Resumed."}]}]}))
    r = subprocess.run(["bash", str(HARNESS / "run-claude.sh"), str(scenario), str(work), str(out), "Continue",
                        "--resume", sid], capture_output=True, text=True, timeout=300, env={**os.environ, "CC_TIMEOUT": "120"})
    log = out / "requests.jsonl"
    for raw in (log.read_text().splitlines() if log.exists() else []):
        body = json.loads(raw)["body"]
        if body.get("tools"):
            return body
    assert r.returncode != 0, r.stdout  # no request, and no failure either: the harness itself went wrong
    return None


@needs_cli
@pytest.mark.parametrize("problem", ["orphan-tool-use", "image-too-large", "thinking-signature-truncated",
                                     "unparseable-line"])
def test_claude_code_resumes_the_repaired_session_and_its_request_is_accepted(tmp_path, problem):
    from strict_messages import problem as refused

    path, fixed = repaired(tmp_path, problem)
    body = _resume_with_claude_code(tmp_path / "fixed", fixed)
    assert body is not None and refused(body) is None
    if problem not in ("orphan-tool-use", "unparseable-line"):  # Claude Code sends these as they are (refused),
        # or refuses to send them (the others it repairs or skips as it reads)
        body = _resume_with_claude_code(tmp_path / "broken", path)
        assert body is None or refused(body) is not None


@needs_cli
def test_claude_code_resumes_a_1_0_session_s_turns_between_its_local_commands_once_repaired(tmp_path):
    """Claude Code 1.0 chained each later ``!`` command onto the session's first caveat line: the genuine
    CLI resumes the broken file without the turns between them, and the repaired one with all of them."""
    path, fixed = repaired(tmp_path, "local-command-parent")

    def sent(body: dict) -> str:
        return json.dumps(body["messages"])

    broken = _resume_with_claude_code(tmp_path / "broken", path)
    assert broken is not None and "git diff" in sent(broken) and "List the files" not in sent(broken)
    whole = _resume_with_claude_code(tmp_path / "fixed", fixed)
    assert whole is not None
    assert all(text in sent(whole) for text in ("git status", "List the files", "It prints a.", "git diff"))


@needs_cli
@needs_corpus
def test_claude_code_resumes_the_slimmed_largest_public_session(tmp_path):
    from strict_messages import problem as refused

    largest = max(PUBLIC_CORPUS.rglob("*.jsonl"), key=lambda p: p.stat().st_size)
    path = tmp_path / largest.name
    path.write_bytes(largest.read_bytes())
    slim = tmp_path / "slim.jsonl"
    assert ctxkit(["doctor", "--fix", "--slim", str(path), "-o", str(slim)], tmp_path, timeout=300).returncode == 0
    body = _resume_with_claude_code(tmp_path / "cc", slim)
    assert body is not None and refused(body) is None
    assert len(body["messages"]) > 100  # the history after the boundary, not a fresh session


def test_a_secret_shaped_tool_id_is_described_not_printed(tmp_path):
    """A tool id is user data: one shaped like a key (a pasted token) is described, in text and in --json,
    as stats and compact describe it; an id of the usual shape is shown as the API shows it."""
    key, ghp = "sk-ant-api03-" + "AbCdEf0123456789" * 2, "ghp_" + "a" * 36
    badid = tmp_path / "badid.jsonl"
    badid.write_text(json.dumps({"role": "user", "content": "hi"}) + "\n" + json.dumps(
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": key, "content": "x"}]}) + "\n")
    use = {"role": "assistant", "content": [{"type": "tool_use", "id": ghp, "name": "Bash", "input": {}}]}
    dup = tmp_path / "dup.jsonl"
    dup.write_text("".join(json.dumps(m) + "\n" for m in [
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "x"}]},
        use, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": ghp, "content": "x"}]}, use]))
    for path, secret in ((badid, key), (dup, ghp)):
        for args in (["doctor", str(path)], ["doctor", "--json", str(path)]):
            r = ctxkit(args, tmp_path)
            assert r.returncode == 1, r.stderr
            assert secret not in r.stdout + r.stderr
    r = ctxkit(["doctor", str(badid)], tmp_path)
    assert r.stdout.splitlines()[0] == (f"{badid}:2: error: tool_result a string of 45 characters answers no "
                                        "tool_use of the message before it")
    r = ctxkit(["doctor", str(dup)], tmp_path)
    assert "tool_result toolu_01 answers no tool_use" in r.stdout
    assert "tool_use id a string of 40 characters is used again (first at line 2)" in r.stdout
    assert "the session ends with tool_use a string of 40 characters unanswered" in r.stdout


def test_an_unreadable_line_of_another_agents_session_is_named_and_nothing_written(tmp_path):
    import codex_rollouts as cx

    lines = [*cx.opening(), *cx.turn(1, "list files", [("c1", "ls", "a\nb")], "Two files.", usage=(1000, 50))]
    lines.insert(3, '{"timestamp": "2026-03-01T10:00:00.000Z", "type": "event_msg", "payl')  # a torn line
    (tmp_path / "rollout.jsonl").write_text("\n".join(lines) + "\n")
    r = ctxkit(["doctor", "--fix", "rollout.jsonl", "-o", "fixed.jsonl"], tmp_path)
    assert r.returncode == 1 and not (tmp_path / "fixed.jsonl").exists()
    # the fix said "in a plain message list": a Codex rollout is none
    assert ("fix: move the line to the store, a record in its place (what it held is not guessed at; expand puts "
            "it back byte for byte); in any other format (a plain message list, another agent's session), not "
            "repaired: only a Claude Code session has a place for the record, so --fix writes nothing while it "
            "is there") in r.stderr
    assert "rollout.jsonl:4: not repaired: the agent cannot read this line" in r.stderr


def test_another_models_thinking_of_an_earlier_turn_is_no_error(tmp_path):
    """The API strips an earlier turn's thinking unread; real sessions went on after a switch with it in their
    history (SWORDIntel/claude-backups: Claude Code 1.0.89 falling back from Opus 4.1 to Sonnet 4 sent the Opus
    thinking of earlier turns as it was, and Sonnet answered). Only the turn in progress must send it back."""
    path = tmp_path / "earlier.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in fx.model_switched_earlier()))
    r = ctxkit(["doctor", str(path), "--json"], tmp_path)
    assert r.returncode == 0, r.stdout
    assert not [f for f in json.loads(r.stdout)["findings"] if f["rule"] == "thinking-model-changed"]
