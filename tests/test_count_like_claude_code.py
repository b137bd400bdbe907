"""Counting like Claude Code: the usage the transcript reports plus an estimate of what came after it.

Claude Code records, on every compaction boundary, the count it decided on (``compactMetadata.preTokens``).
Cut a recorded session just before the boundary and ``ctxkit stats`` must say the same count (within 1%),
and where Claude Code compacted on its own (``trigger: auto``), ``ctxkit check`` must fail at that window.
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from builders import Session
from conftest import CC_CORPUS, PUBLIC_CORPUS

from ctxkit.cli.main import app


def recorded_boundaries() -> list[tuple[Path, int, dict]]:
    """(transcript, 0-based line of the boundary, compactMetadata) of every boundary carrying preTokens."""
    files = sorted(CC_CORPUS.glob("*/session.jsonl")) + sorted(PUBLIC_CORPUS.rglob("*.jsonl"))
    out = []
    for path in files:
        for n, line in enumerate(path.read_bytes().splitlines()):
            if b'"compact_boundary"' not in line:
                continue
            entry = json.loads(line)
            meta = entry.get("compactMetadata") or {}
            if entry.get("subtype") == "compact_boundary" and isinstance(meta.get("preTokens"), int):
                out.append((path, n, meta))
    return out


BOUNDARIES = recorded_boundaries()


def _cut(path: Path, n: int, tmp_path: Path) -> Path:
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(b"".join(path.read_bytes().splitlines(keepends=True)[:n]))
    return cut


@pytest.mark.skipif(not BOUNDARIES, reason=f"no recorded compact boundaries under {CC_CORPUS.parent}")
@pytest.mark.parametrize("path,n,meta", BOUNDARIES,
                         ids=[f"{p.parent.name}/{p.name[:12]}:{n + 1}" for p, n, _ in BOUNDARIES])
def test_stats_before_a_recorded_boundary_reports_claude_codes_pretokens(runner, tmp_path, path, n, meta):
    cut = _cut(path, n, tmp_path)
    r = runner.invoke(app, ["stats", str(cut), "--json", "--on-bad-line", "skip"])
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)
    assert abs(data["tokens"] - meta["preTokens"]) <= 0.01 * meta["preTokens"], (data["tokens"], meta["preTokens"])
    assert data["tokens_source"] == "usage"
    assert data["tokens"] == data["tokens_reported"] + data["tokens_estimated"]
    if meta.get("trigger") == "auto":  # the recorded sessions ran on a 1M window, the public ones on 200K
        window = "1000000" if CC_CORPUS in path.parents else "200000"
        r = runner.invoke(app, ["check", str(cut), "--context-window", window, "--on-bad-line", "skip"])
        assert r.exit_code == 1, r.stdout + r.stderr


def test_the_recorded_auto_compaction_is_decided_the_same_way(runner, tmp_path, corpus_session):
    """autocompact/session.jsonl line 30: Claude Code compacted at 993,493 tokens of a 1M window."""
    cut = _cut(corpus_session("autocompact"), 29, tmp_path)
    r = runner.invoke(app, ["check", str(cut), "--context-window", "1000000", "--json"])
    assert r.exit_code == 1
    assert json.loads(r.stdout)["tokens"] == 990_020 + 3_477  # the usage + the estimate of the result after it
    r = runner.invoke(app, ["compact", str(cut), "--context-window", "1000000", "-o", "out.jsonl", "--store", "st",
                            "--policy", "no-llm"])
    assert "autocompact: applied: auto compaction (summary by extractive): 993,497 -> " in r.stderr
    # the stand-in API reported 990,000 tokens for a view of a few thousand: taken at its word, the rest is
    # system prompt and tools (the calibrated overhead), which no compaction frees; the output is written
    assert r.exit_code == 1, r.stderr
    assert "the view is still 991,826 tokens after every stage" in r.stderr
    assert Path("out.jsonl").stat().st_size > 0
    # with the overhead named (an explicit override), the count after the compaction is the estimate plus it
    r = runner.invoke(app, ["compact", str(cut), "--context-window", "1000000", "-o", "out2.jsonl", "--store", "st2",
                            "--policy", "no-llm", "--set", "overhead_tokens=10000"])
    assert r.exit_code == 0, r.stderr
    assert "autocompact: applied: auto compaction (summary by extractive): 993,497 -> " in r.stderr


def test_usage_from_before_the_last_boundary_is_not_used(runner, corpus_session):
    """After the recorded compaction the preserved tail still carries the 990,000-token usage: it counted the
    history that was compacted away, so the count is the estimate plus the overhead until the next reply."""
    path = corpus_session("autocompact")
    lines = path.read_bytes().splitlines(keepends=True)
    Path("after.jsonl").write_bytes(b"".join(lines[:51]))  # the boundary, the summary, before the next reply
    r = runner.invoke(app, ["stats", "after.jsonl", "--json"])
    data = json.loads(r.stdout)
    assert (data["tokens_source"], data["tokens_reported"], data["tokens_overhead"]) == ("estimate", 0, 10_000)
    assert data["tokens"] == data["tokens_estimated"] + 10_000
    assert data["tokens_source_note"] == "the reported usage predates the last compact boundary"
    r = runner.invoke(app, ["stats", str(path), "--json"])  # the reply after it reports the new size
    data = json.loads(r.stdout)
    assert (data["tokens_source"], data["tokens_reported"]) == ("usage", 7_422 + 20)


def _session_with_usage(tmp_path: Path, usage: dict, result: str) -> Path:
    """A prompt, a Bash call whose response reports ``usage``, and its result."""
    s = Session(tmp_path)
    s.prompt("look at the logs")
    s.tool("Bash", {"command": "cat app.log"}, result)
    s.entries[-2]["message"]["usage"] = usage
    s.write(tmp_path / "s.jsonl")
    return tmp_path / "s.jsonl"


def test_the_estimator_counts_only_what_the_usage_does_not_cover(runner, tmp_path):
    path = _session_with_usage(tmp_path, {"input_tokens": 5, "cache_creation_input_tokens": 100,
                                          "cache_read_input_tokens": 50_000, "output_tokens": 45}, "x" * 4_000)
    r = runner.invoke(app, ["stats", str(path)])
    assert r.stdout.splitlines()[0] == \
        "3 messages, 51,154 tokens (50,150 reported by the API + 1,004 rough estimate), level: ok"
    r = runner.invoke(app, ["stats", str(path), "--json", "--set", "estimator=tiktoken"])
    data = json.loads(r.stdout)
    assert data["tokens_reported"] == 50_150 and data["tokens_estimated"] < 1_004  # 4,000 x's: fewer BPE tokens


def test_plain_message_lists_add_the_policy_overhead(runner, tmp_path):
    path = tmp_path / "msgs.jsonl"
    path.write_text(json.dumps({"role": "user", "content": "hello there"}) + "\n")
    r = runner.invoke(app, ["stats", str(path)])
    assert r.stdout.splitlines()[0] == "1 messages, 10,007 tokens (7 rough estimate + 10,000 overhead), level: ok"
    r = runner.invoke(app, ["check", str(path), "--json", "--set", "overhead_tokens=2500"])
    assert json.loads(r.stdout)["tokens"] == 2_507


def test_a_stage_that_rewrites_the_history_is_counted_by_estimate(runner, tmp_path):
    """tool-result-budget persisting a result after the usage keeps the usage; microcompact clearing one before
    it does not (the usage counted what was cleared)."""
    path = _session_with_usage(tmp_path, {"input_tokens": 20_000, "output_tokens": 10}, "a" * 60_000)
    r = runner.invoke(app, ["compact", str(path), "--stage", "tool-result-budget", "--report", "json", "-o", "o.jsonl"])
    report = json.loads(r.stderr)
    stage = report["stages"][0]
    assert stage["action"] == "applied"
    assert stage["tokens_before"] == 20_010 + 15_004  # the usage + the estimate of the 60,000 characters
    assert stage["tokens_after"] < 20_010 + 1_000 and stage["tokens_after"] > 20_010  # still usage-based


def test_the_overhead_default_is_what_claude_codes_system_prompt_and_tools_measure():
    """docs/tokens.md: the recorded requests' system prompt and tool definitions, counted with cl100k_base."""
    from ctxkit.policy.model import Policy
    from ctxkit.tokens import TiktokenCounter

    requests = sorted(CC_CORPUS.glob("*/requests.jsonl.gz"))
    if not requests:
        pytest.skip(f"no recorded requests under {CC_CORPUS}")
    counter = TiktokenCounter()
    if counter.degraded:
        pytest.skip(counter.notice)
    for path in requests:
        with gzip.open(path, "rt") as f:
            body = json.loads(f.readline())["body"]
        measured = (counter.count_message({"role": "system", "content": body["system"]})
                    + counter.count_text(json.dumps(body["tools"], separators=(",", ":"))))
        assert abs(Policy().overhead_tokens - measured) <= 0.05 * measured, (path, measured)


def test_an_output_read_back_is_counted_as_the_run_that_wrote_it_counted(runner, tmp_path):
    """The run rewrote results the last response's usage counted: its output, read back with the same store,
    is counted by estimate (so compacting it again decides the same way); the original input still by usage."""
    s = Session(tmp_path)
    s.prompt("look at the logs")
    s.tool("Bash", {"command": "cat a.log"}, "a" * 60_000)
    s.tool("Bash", {"command": "cat b.log"}, "b" * 400)  # its call's response reports the usage
    s.entries[-2]["message"]["usage"] = {"input_tokens": 20_000, "output_tokens": 10}
    s.write(tmp_path / "s.jsonl")
    path = tmp_path / "s.jsonl"
    r = runner.invoke(app, ["compact", str(path), "--store", "st", "-o", "out.jsonl", "--set", "estimator=rough"])
    assert r.exit_code == 0, r.stderr
    out = json.loads(runner.invoke(app, ["stats", "out.jsonl", "--store", "st", "--json"]).stdout)
    assert (out["tokens_source"], out["tokens_source_note"]) == \
        ("estimate", "an earlier run changed the history the reported usage counted")
    original = json.loads(runner.invoke(app, ["stats", str(path), "--store", "st", "--json"]).stdout)
    assert (original["tokens_source"], original["tokens"]) == ("usage", 20_010 + 104)
