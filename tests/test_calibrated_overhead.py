"""The calibrated overhead: after a rewrite the count is what the last usage held besides the view plus the
estimate of the new view, so counts before and after a stage stand on one basis (docs/tokens.md)."""
from __future__ import annotations

import json
from pathlib import Path

from builders import Session

from ctxkit.cli.main import app
from ctxkit.tokens import RoughCounter
from ctxkit.tokens.view_count import Calibration, count_view
from ctxkit.transcript import read_transcript

#: microcompact, the cache cold, keeping the newest result only: the 60,000 characters are cleared
CLEAR = ("--stage", "microcompact", "--now", "2030-01-01T00:00:00Z", "--set", "stages.microcompact.options.keep_recent=1")


def _session(tmp_path: Path, usage: dict) -> Path:
    """A 60,000-character log read early, a short one after it; the second call's response reports ``usage``."""
    s = Session(tmp_path)
    s.prompt("look at the logs")
    s.tool("Bash", {"command": "cat a.log"}, "a" * 60_000)
    s.tool("Bash", {"command": "cat b.log"}, "b" * 400)
    s.entries[-2]["message"]["usage"] = usage
    s.write(tmp_path / "s.jsonl")
    return tmp_path / "s.jsonl"


def _compact(runner, path: Path, *args: str) -> dict:
    r = runner.invoke(app, ["compact", str(path), "--store", "st", "-o", "out.jsonl", "--report", "json", *args])
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stderr)


def _stats(runner, path: str, *args: str) -> dict:
    r = runner.invoke(app, ["stats", path, "--store", "st", "--json", *args])
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def test_the_usage_implies_the_overhead_and_a_rewrite_is_counted_with_it(runner, tmp_path):
    path = _session(tmp_path, {"input_tokens": 40_000, "output_tokens": 10})
    whole = RoughCounter().count_view_messages(read_transcript(path).view().messages)
    before = _stats(runner, str(path))
    assert before["tokens_source"] == "usage"
    assert before["tokens_calibration"] == {"tokens": before["tokens"] - whole, "scale": 1.0}
    report = _compact(runner, path, *CLEAR)
    stage = report["stages"][0]
    assert stage["action"] == "applied"
    # the cleared 60,000 characters leave the count, nothing else changes: not the policy's 10,000
    assert stage["tokens_before"] == before["tokens"]
    assert 0 < stage["tokens_before"] - stage["tokens_after"] <= 15_004
    after = _stats(runner, "out.jsonl")
    assert after["tokens"] == report["tokens_after"] == stage["tokens_after"]
    assert (after["tokens_source"], after["tokens_overhead_source"]) == ("estimate", "calibrated")
    assert after["tokens_overhead"] == before["tokens"] - whole
    r = runner.invoke(app, ["stats", "out.jsonl", "--store", "st"])
    assert f"{after['tokens_estimated']:,} rough estimate + {after['tokens_overhead']:,} calibrated overhead" \
        in r.stdout.splitlines()[0]


def test_an_explicit_overhead_wins_over_the_calibration(runner, tmp_path):
    path = _session(tmp_path, {"input_tokens": 40_000, "output_tokens": 10})
    report = _compact(runner, path, *CLEAR,
                      "--set", "overhead_tokens=2500")
    after = _stats(runner, "out.jsonl", "--set", "overhead_tokens=2500")
    assert (after["tokens_overhead"], after["tokens_overhead_source"]) == (2_500, "policy")
    assert report["tokens_after"] == after["tokens"] == after["tokens_estimated"] + 2_500


def test_a_usage_below_the_estimate_scales_it_instead(runner, tmp_path):
    """The estimator counts more than the API reported (no room for a system prompt): the count after a rewrite
    is the estimate scaled down, never above the count before."""
    path = _session(tmp_path, {"input_tokens": 8_000, "output_tokens": 10})  # the view alone estimates ~15,000
    before = _stats(runner, str(path))
    scale = before["tokens_calibration"]["scale"]
    assert before["tokens_calibration"]["tokens"] == 0 and 0 < scale < 1
    report = _compact(runner, path, *CLEAR)
    assert report["tokens_after"] < report["tokens_before"] == before["tokens"]
    after = _stats(runner, "out.jsonl")
    assert after["tokens"] == report["tokens_after"] == round(after["tokens_estimated"] * scale)
    r = runner.invoke(app, ["stats", "out.jsonl", "--store", "st"])
    assert f"rough estimate x {scale:.3f} + 0 calibrated overhead" in r.stdout.splitlines()[0]


def test_a_calibration_made_with_another_estimator_is_not_used(runner, tmp_path):
    path = _session(tmp_path, {"input_tokens": 40_000, "output_tokens": 10})
    _compact(runner, path, *CLEAR)
    after = _stats(runner, "out.jsonl", "--set", "estimator=tiktoken")
    assert (after["tokens_overhead"], after["tokens_overhead_source"]) == (10_000, "policy")


def test_message_lists_have_nothing_to_calibrate_from(tmp_path):
    path = tmp_path / "msgs.jsonl"
    path.write_text(json.dumps({"role": "user", "content": "hello there"}) + "\n")
    count = count_view(read_transcript(path), RoughCounter(), 10_000)
    assert (count.total, count.overhead_source, count.calibration) == (10_007, "policy", None)


def test_a_calibration_counts_a_smaller_view_as_fewer_tokens():
    for calibration in (Calibration.of(50_000, 30_000), Calibration.of(20_000, 30_000)):
        assert calibration.count(30_000) == (50_000 if calibration.scale == 1 else 20_000)
        assert all(calibration.count(n) >= calibration.count(n - 1) for n in range(1, 2_000, 7))
    assert Calibration.from_json({"tokens": -1}) is None and Calibration.from_json({"tokens": 5, "scale": 2}) is None
    assert Calibration.from_json(Calibration.of(20_000, 30_000).to_json()) == Calibration.of(20_000, 30_000)


def test_the_window_fit_check_uses_the_sessions_own_system_prompt_and_tools(runner, tmp_path):
    """A 100,000-token window fits the default policy with 10,000 tokens of overhead, not with the ~25,000 this
    session's usage implies: compact refuses before any work, naming that figure (lint's check, on the run's basis)."""
    path = _session(tmp_path, {"input_tokens": 40_000, "output_tokens": 10})
    overhead = _stats(runner, str(path))["tokens_calibration"]["tokens"]
    r = runner.invoke(app, ["compact", str(path), "--context-window", "100000", "-o", "out.jsonl", "--store", "st2"])
    assert r.exit_code == 2
    assert f"and about {overhead:,} of system prompt and tools): it would compact again every turn" in r.stderr
    assert not Path("out.jsonl").exists()
    r = runner.invoke(app, ["compact", str(path), "--context-window", "100000", "-o", "out.jsonl", "--store", "st2",
                            "--set", "overhead_tokens=10000"])
    assert r.exit_code == 0, r.stderr
