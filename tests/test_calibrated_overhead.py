"""The calibrated overhead: after a rewrite the count is what the last usage held besides the view plus the
estimate of the new view, so counts before and after a stage stand on one basis (docs/tokens.md)."""
from __future__ import annotations

import json
from pathlib import Path

import codex_rollouts
import opencode_sessions
import pytest
from builders import Session

from ctxkit.cli.main import app
from ctxkit.tokens import RoughCounter
from ctxkit.tokens.view_count import MIN_SCALE, Calibration, count_view
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


def test_a_window_fit_only_by_the_worst_case_of_a_compaction_is_not_refused_ahead(runner, tmp_path):
    """A 100,000-token window (threshold 67,000) and the ~25,000 tokens of system prompt and tools this session's
    usage implies: a compaction that kept the largest tail and re-injected files its budgets allow (half the
    threshold) would leave 78,500 tokens, but this one leaves far less. compact refused such a session before any
    work (exit 2), under the threshold or forced; it now decides on the view it has, and on the one it leaves."""
    path = _session(tmp_path, {"input_tokens": 40_000, "output_tokens": 10})
    r = runner.invoke(app, ["compact", str(path), "--context-window", "100000", "-o", "out.jsonl", "--store", "st2"])
    assert r.exit_code == 0, r.stderr
    assert "under the autocompact threshold (67,000))" in r.stderr
    report = _compact(runner, path, "--context-window", "100000", "--force", "--policy", "no-llm")
    compaction = next(s for s in report["stages"] if s["use"] == "autocompact")
    assert compaction["action"] == "applied", compaction["reason"]
    assert 0 < report["tokens_after"] < report["tokens_before"]
    assert _stats(runner, "out.jsonl")["tokens"] == report["tokens_after"]


def _big_prompt_session(tmp_path: Path, input_tokens: int) -> Path:
    """A short session whose one usage reports ``input_tokens``: all but a few thousand of them are system
    prompt and tools (an agent with many tools and MCP servers)."""
    s = Session(tmp_path)
    s.prompt("look at the logs")
    for k in range(4):
        s.tool("Bash", {"command": f"cat {k}.log"}, f"line {k}\n" * 1_500)
    s.entries[-2]["message"]["usage"] = {"input_tokens": input_tokens, "output_tokens": 10}
    s.say("The logs are read.")
    s.write(tmp_path / "s.jsonl")
    return tmp_path / "s.jsonl"


def test_force_compacts_a_session_whose_system_prompt_and_tools_leave_no_room(runner, tmp_path):
    """erk's sessions (dagster-io/erk, .erk/session/42753e23...) carry ~70,000 tokens of system prompt and tools:
    in a 200,000-token window, compact --force refused them (exit 2: a compaction "may leave behind" 173,500
    tokens, over the 167,000 threshold). It compacts, and the output counts as compact said."""
    path = _big_prompt_session(tmp_path, 85_000)
    overhead = _stats(runner, str(path))["tokens_calibration"]["tokens"]
    assert overhead > 70_000
    report = _compact(runner, path, "--context-window", "200000", "--force", "--policy", "no-llm")
    compaction = next(s for s in report["stages"] if s["use"] == "autocompact")
    assert compaction["action"] == "applied", compaction["reason"]
    assert overhead < report["tokens_after"] < report["tokens_before"]
    assert report["warnings"] == []  # under the threshold after it
    assert _stats(runner, "out.jsonl")["tokens"] == report["tokens_after"]


def test_a_threshold_below_the_sessions_system_prompt_and_tools(runner, tmp_path):
    """A 150,000-token window (threshold 117,000) and ~125,000 tokens of system prompt and tools: every request
    is over the threshold. Automatic compaction would run every turn and never get under it: refused before any
    work (exit 2, the policy as written fits: lint passes), naming the figure and --force. --force compacts (the
    view is smaller), warns that it is still over the threshold and why, and exits 0."""
    path = _big_prompt_session(tmp_path, 140_000)
    overhead = _stats(runner, str(path))["tokens_calibration"]["tokens"]
    assert runner.invoke(app, ["policy", "lint", "--context-window", "150000"]).exit_code == 0
    r = runner.invoke(app, ["compact", str(path), "--context-window", "150000", "-o", "out.jsonl", "--store", "st"])
    assert r.exit_code == 2
    assert f"is below the system prompt and tools (about {overhead:,} tokens): every request would be over it" \
        in r.stderr
    assert "`--force` compacts anyway" in r.stderr
    assert not Path("out.jsonl").exists()
    r = runner.invoke(app, ["compact", str(path), "--context-window", "150000", "--force", "--policy", "no-llm",
                            "-o", "out.jsonl", "--store", "st"])
    assert r.exit_code == 0, r.stderr
    assert "autocompact: applied: manual compaction (summary by extractive)" in r.stderr
    warning = next(line for line in r.stderr.splitlines() if line.startswith("ctxkit: warning: the view is still"))
    assert "over the autocompact threshold (117,000)" in warning
    assert f"The system prompt and tools alone take about {overhead:,} tokens" in warning
    final = int(r.stderr.split("view: ")[1].split(" -> ")[1].split()[0].replace(",", ""))
    assert overhead < final < 140_010
    assert _stats(runner, "out.jsonl")["tokens"] == final


def test_a_usage_of_zero_tokens_counts_as_no_usage_and_compacts_output_reads_back_the_same(runner, tmp_path):
    """A response reporting 0 for every figure (a proxy in front of another model) counts no request: the
    view is estimated as without usage, and stats of compact's output says compact's final count (a zero
    usage made a scale of 0 that counted every rewritten view as 0 tokens, and its output read back as
    the estimate plus the policy's overhead)."""
    zero = {"input_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 0}
    path = _session(tmp_path, zero)
    before = _stats(runner, str(path))
    assert (before["tokens_source"], before["tokens_reported"], before["tokens_overhead_source"]) == \
        ("estimate", 0, "policy")
    assert before["tokens"] == before["tokens_estimated"] + 10_000
    report = _compact(runner, path, *CLEAR)
    assert report["stages"][0]["action"] == "applied"
    assert 0 < report["tokens_after"] < report["tokens_before"] == before["tokens"]
    assert _stats(runner, "out.jsonl")["tokens"] == report["tokens_after"]


def test_a_usage_far_below_the_estimate_is_no_count_of_the_view(runner, tmp_path):
    """5 tokens reported for a view estimated at ~15,000 (a fake or odd usage): a scale fitted to it counted the
    view after a rewrite as 0 tokens ("1,005 -> 0"). Below half the estimate (the lowest seen: the corpus's
    stand-in API at 0.61 of tiktoken's) the usage is not used: the count is the estimate plus the overhead,
    before and after, never 0, and stats of the output says compact's final count."""
    path = _session(tmp_path, {"input_tokens": 3, "output_tokens": 2})
    before = _stats(runner, str(path))
    assert (before["tokens_source"], before["tokens_overhead_source"]) == ("estimate", "policy")
    assert before["tokens_source_note"].startswith("the count from the reported usage (")
    assert "is below half the estimate of the view" in before["tokens_source_note"]
    assert before["tokens"] == before["tokens_estimated"] + 10_000
    for k, args in enumerate((CLEAR, ("--force", "--policy", "no-llm"))):
        report = _compact(runner, path, *args, "-o", f"out{k}.jsonl")
        assert all(s["tokens_after"] > 0 for s in report["stages"])
        assert 0 < report["tokens_after"] < report["tokens_before"] == before["tokens"]
        assert _stats(runner, f"out{k}.jsonl")["tokens"] == report["tokens_after"]


def test_a_calibration_never_scales_below_half():
    assert Calibration.of(5, 4_782) == Calibration(0, MIN_SCALE) and Calibration(0, MIN_SCALE).count(1) == 1
    assert Calibration.from_json({"tokens": 0, "scale": 0.001}) is None


@pytest.mark.parametrize("usage", [(3, 2), (30_000, 200)], ids=["tiny-usage", "usage"])
def test_a_codex_rollout_reads_back_as_compact_counted_it(runner, tmp_path, usage):
    """A Codex rollout's token_count events are its usage: after a compaction or a microcompact its output, read
    back, counts as compact said (the calibration and the stale usage are kept for it as for Claude Code), and
    a tiny usage counts no view as 0 tokens."""
    lines = codex_rollouts.opening()
    for n in range(6):
        lines += codex_rollouts.turn(n, f"prompt {n}: read file {n}", [(f"c{n}", f"cat f{n}.txt", "data line\n" * 300)],
                                     f"done {n}", usage=(usage[0] + 1_000 * n, usage[1]), second=n * 10)
    codex_rollouts.write(tmp_path / "rollout.jsonl", lines)
    for k, args in enumerate((CLEAR, ("--force", "--policy", "no-llm"))):
        report = _compact(runner, tmp_path / "rollout.jsonl", *args, "-o", f"out{k}.jsonl", "--store", f"st{k}")
        assert 0 < report["tokens_after"] < report["tokens_before"]
        r = runner.invoke(app, ["stats", f"out{k}.jsonl", "--store", f"st{k}", "--json"])
        assert json.loads(r.stdout)["tokens"] == report["tokens_after"], args


@pytest.mark.parametrize("force", [[], ["--force"]], ids=["auto", "force"])
def test_an_opencode_export_with_100000_tokens_outside_its_messages_compacts(runner, tmp_path, force):
    """A real OpenCode export stood at 170,414 of 200,000 tokens, ~100,000 of them system prompt and tools: over
    the 167,000 threshold, and refused before any work (exit 2: "may leave behind 204,303"). It is brought under
    the threshold (forced: compacted to about the system prompt and tools plus the summary) and reads back as
    compact counted it."""
    msgs, n = [], 1
    for k in range(30):
        msgs += [opencode_sessions.user(n, f"read f{k}"),
                 opencode_sessions.assistant(n + 1, n, "", [opencode_sessions.tool(
                     n + 1, 0, "read", {"filePath": f"f{k}"}, f"line {k} " * 1200)], tokens=100_000 + 2_350 * (k + 1))]
        n += 2
    msgs += [opencode_sessions.user(n, "summarize"), opencode_sessions.assistant(
        n + 1, n, "Done.", tokens=170_414, modelID="claude-sonnet-4-5", providerID="anthropic")]
    opencode_sessions.write(tmp_path / "session-export.json", msgs)
    report = _compact(runner, tmp_path / "session-export.json", *force, "--policy", "no-llm", "-o", "out.json")
    assert report["tokens_before"] == 170_414 and 100_000 < report["tokens_after"] < 167_000
    if force:  # auto: clearing the old results (a cold cache) brings it under the threshold first
        compaction = next(s for s in report["stages"] if s["use"] == "autocompact")
        assert compaction["action"] == "applied", compaction["reason"]
        assert report["tokens_after"] < 110_000
    assert _stats(runner, "out.json")["tokens"] == report["tokens_after"]
