"""Hostile inputs to ``ctxkit simulate``: pricing files of a bad shape, a bad session among good ones."""
from __future__ import annotations

import json
import shutil

import pytest
from conftest import ROOT

from ctxkit.cli.main import app

EXAMPLE = ROOT / "examples" / "session.jsonl"
RATES = {"input": 3, "output": 15, "cache_write_5m": 3.75, "cache_write_1h": 6, "cache_read": 0.3}


@pytest.mark.parametrize(("entry", "missing"), [
    ({**RATES, "input": -3}, "input"),  # a negative price would make a policy look cheaper than free
    ({**RATES, "input": True, "output": float("nan")}, "input, output"),  # true is not 1 USD; NaN prices nothing
    ([1], "input, output, cache_write_5m, cache_write_1h, cache_read"),
])
def test_a_price_that_is_not_a_number_of_usd_is_refused(runner, tmp_path, entry, missing):
    table = tmp_path / "prices.json"
    table.write_text(json.dumps({"models": {"claude-x": entry}}))
    result = runner.invoke(app, ["simulate", str(EXAMPLE), "--pricing", str(table)])
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == f"ctxkit: error: --pricing '{table}': model 'claude-x' has no number for {missing}\n"


def test_a_long_prompt_block_of_a_bad_shape_is_a_usage_error_not_a_bug(runner, tmp_path):
    table = tmp_path / "prices.json"
    table.write_text(json.dumps({"models": {"claude-x": {**RATES, "long_prompt": 5}}}))
    result = runner.invoke(app, ["simulate", str(EXAMPLE), "--pricing", str(table)])
    assert result.exit_code == 2
    assert result.stderr == (f"ctxkit: error: --pricing '{table}': model 'claude-x': long_prompt has no number for "
                             "threshold_tokens, input, output, cache_write_5m, cache_write_1h, cache_read\n")


def test_one_bad_session_does_not_stop_the_others(runner, tmp_path):
    folder = tmp_path / "sessions"
    folder.mkdir()
    shutil.copy(EXAMPLE, folder / "a.jsonl")
    (folder / "b.jsonl").write_text('{"bad\n')
    (folder / "c.jsonl").write_text('{"role": "user", "content": "hi"}\n')
    shutil.copy(EXAMPLE, folder / "d.jsonl")
    result = runner.invoke(app, ["simulate", str(folder), "--json"])
    assert result.exit_code == 3  # the most severe of all: a transcript could not be read
    assert [x for x in result.stderr.splitlines() if ": warning: " not in x] == [
        f"ctxkit: error: {folder}/b.jsonl:1: not valid JSON: unexpected end of data",
        f"ctxkit: error: {folder}/c.jsonl: simulate replays an agent's session (the requests it recorded and "
        "their usage: Claude Code, Codex, Gemini CLI, ...); this one is anthropic messages"]
    doc = json.loads(result.stdout)
    assert [s["session"] for s in doc["sessions"]] == [f"{folder}/a.jsonl", f"{folder}/d.jsonl"]
    assert doc["total"]["sessions"] == 2
    # only bad ones: the errors, nothing on stdout
    result = runner.invoke(app, ["simulate", str(folder / "b.jsonl"), str(folder / "c.jsonl")])
    assert (result.exit_code, result.stdout) == (3, "")
    result = runner.invoke(app, ["simulate", str(folder / "c.jsonl")])
    assert (result.exit_code, result.stdout) == (2, "")


def test_an_empty_file_is_named_empty_not_a_message_list(runner, tmp_path):
    (tmp_path / "empty.jsonl").write_bytes(b"")
    result = runner.invoke(app, ["simulate", str(tmp_path / "empty.jsonl")])
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (f"ctxkit: error: {tmp_path}/empty.jsonl: simulate replays an agent's session (the "
                             "requests it recorded and their usage: Claude Code, Codex, Gemini CLI, ...); this file "
                             "is empty\n")


def test_standard_input_is_refused_with_the_reason(runner):
    result = runner.invoke(app, ["simulate", "-"], input=EXAMPLE.read_text())
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == ("ctxkit: error: simulate replays transcript files, not standard input; save it to a "
                             "file first\n")


def test_report_of_a_folder_is_a_usage_error(runner, tmp_path):
    (tmp_path / "d").mkdir()
    result = runner.invoke(app, ["report", str(tmp_path / "d"), "-o", str(tmp_path / "r.html")])
    assert result.exit_code == 2
    assert result.stderr == (f"ctxkit: error: '{tmp_path / 'd'}' is a folder: report draws one session "
                             "(simulate takes folders; give report one conversation's folder, STORE/proxy/<name>)\n")
    assert not (tmp_path / "r.html").exists()


def test_a_sweep_value_named_twice_is_one_row(runner):
    result = runner.invoke(app, ["simulate", str(EXAMPLE), "--json", "--sweep", "thresholds.autocompact_buffer=13000,13000"])
    assert result.exit_code == 0, result.stderr
    assert [p["policy"] for p in json.loads(result.stdout)["sessions"][0]["policies"]] == [
        "default thresholds.autocompact_buffer=13000"]


def test_a_session_without_usage_says_its_recorded_row_is_empty(runner, tmp_path):
    lines = [json.loads(x) for x in EXAMPLE.read_text().splitlines()]
    for e in lines:
        (e.get("message") or {}).pop("usage", None)
    bare = tmp_path / "bare.jsonl"
    bare.write_text("".join(json.dumps(e) + "\n" for e in lines))
    result = runner.invoke(app, ["simulate", str(bare), "--json"])
    assert result.exit_code == 0, result.stderr
    assert result.stderr == (f"ctxkit: warning: {bare}: the session records no usage on its main chain: the "
                             "recorded row is empty, and costs 0\n")


@pytest.mark.parametrize("figure", ["1e300", "18446744073709551615", "-5"])
def test_a_usage_figure_no_request_holds_is_not_a_count_in_a_real_session(runner, tmp_path, figure):
    """As the fuzzer found it: a public session's first 40 lines, one answer's cache read 1e300."""
    source = ROOT.parent / "shared" / "corpus" / "public" / "drmaciver" / "python-to-rust-port" / "transcript.jsonl"
    if not source.exists():
        pytest.skip("../shared/corpus is absent")
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)[:40]
    k = next(i for i, x in enumerate(lines) if '"type":"assistant"' in x.replace(" ", "") and '"usage"' in x)
    entry = json.loads(lines[k])
    entry["message"]["usage"]["cache_read_input_tokens"] = json.loads(figure)
    lines[k] = json.dumps(entry) + "\n"
    (tmp_path / "odd.jsonl").write_text("".join(lines), encoding="utf-8")
    result = runner.invoke(app, ["simulate", str(tmp_path / "odd.jsonl"), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["sessions"][0]["recorded"]["cache_read_input_tokens"] < 10 ** 9


@pytest.mark.parametrize("figure", ["1e300", "18446744073709551615", "-5"])
def test_a_usage_figure_no_request_holds_is_not_a_count(runner, tmp_path, figure):
    """The fuzzer's crash (exit 4, "Integer exceeds 64-bit range" writing the replay's transcript): a usage
    figure of 1e300 was taken as a count and grew past what JSON holds. A figure below 0 or above a
    billion is not a count: it is left out of the recorded row and simulate goes on."""
    lines = EXAMPLE.read_text(encoding="utf-8").splitlines(keepends=True)
    k = next(i for i, x in enumerate(lines) if '"cache_read_input_tokens"' in x)
    entry = json.loads(lines[k])
    plain = runner.invoke(app, ["simulate", str(EXAMPLE), "--json"])
    entry["message"]["usage"]["cache_read_input_tokens"] = json.loads(figure)
    lines[k] = json.dumps(entry) + "\n"
    path = tmp_path / "odd.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    result = runner.invoke(app, ["simulate", str(path), "--json"])
    assert result.exit_code == 0, result.output
    recorded = json.loads(result.stdout)["sessions"][0]["recorded"]
    original = json.loads(plain.stdout)["sessions"][0]["recorded"]
    assert 0 <= recorded["cache_read_input_tokens"] <= original["cache_read_input_tokens"]
