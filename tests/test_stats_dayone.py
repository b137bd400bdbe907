"""``ctxkit stats`` on a session over the threshold: the case where it matters most.

It says what autocompact would do, with the summarizer compact would choose
(one choice, :func:`ctxkit.summarize.factory.summarizer_for_run`), and exits 0 whatever the
level: no model is called, no command is run, nothing is written.

"Nothing is written" is checked on a copy of the example in the test's own folder, never on the
source tree: the README's Quick start runs ``ctxkit compact examples/session.jsonl`` first, which
rightly leaves its store in ``examples/.ctxkit`` (the store sits beside the input so that ``ctxkit
expand compacted.jsonl`` gives everything back), and the tests run after it on the same checkout.
"""
from __future__ import annotations

import json
import shutil

from conftest import ROOT
from mock_messages_api import MockMessagesAPI

from ctxkit.cli.main import app

EXAMPLE = ROOT / "examples" / "session.jsonl"
# 56,139 tokens (the usage the session reports) against a 58,000 window: over every threshold once the cheaper
# stages are off. A 5,000-token summary reserve (20,000 by default) lets compact work there (a threshold of
# 40,000, over what a compaction may leave behind); in a window compact refuses, stats says so instead
OVER = [str(EXAMPLE), "--context-window", "58000", "--set", "thresholds.summary_reserve=5000",
        "--set", "stages.microcompact.enabled=false", "--set", "stages.tool-result-budget.enabled=false"]


def stats_json(runner, *extra):
    r = runner.invoke(app, ["stats", *OVER, "--json", *extra])
    assert (r.exit_code, r.stderr) == (0, ""), r.stderr
    data = json.loads(r.stdout)
    return data, {s["id"]: s for s in data["stages"]}


def test_stats_over_the_threshold_says_what_autocompact_would_do(runner, tmp_path):
    copy = tmp_path / "inputs" / "session.jsonl"
    copy.parent.mkdir()
    shutil.copyfile(EXAMPLE, copy)
    r = runner.invoke(app, ["stats", str(copy), *OVER[1:], "--json"])
    assert (r.exit_code, r.stderr) == (0, ""), r.stderr
    data = json.loads(r.stdout)
    stages = {s["id"]: s for s in data["stages"]}
    assert data["level"] == "blocking"
    assert stages["autocompact"]["action"] == "applied"
    assert stages["autocompact"]["reason"].startswith("auto compaction (summary by extractive): 56,139 -> ")
    # nothing written: no store beside the input nor in the working directory, no other file
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == ["inputs", "inputs/session.jsonl"]


def test_stats_table_over_the_threshold_exits_0(runner):
    r = runner.invoke(app, ["stats", *OVER])
    assert (r.exit_code, r.stderr) == (0, "")
    assert r.stdout.startswith("22 messages, 56,139 tokens (56,139 reported by the API + 0 rough estimate), level: blocking\n")
    assert "autocompact" in r.stdout and "applied" in r.stdout
    assert runner.invoke(app, ["check", *OVER]).exit_code == 1  # check is the command that fails on a level


def test_stats_with_an_api_key_names_the_model_and_calls_nothing(runner, monkeypatch):
    with MockMessagesAPI() as api:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
        data, stages = stats_json(runner)
        assert stages["autocompact"]["reason"].startswith(
            "auto compaction (summary by anthropic claude-sonnet-4-5, simulated): 56,139 -> ")
        assert stages["autocompact"]["details"]["summarizer"] == "anthropic claude-sonnet-4-5, simulated"
        assert api.requests == []
        # compact makes the same choice, and does call the model
        # (with a summary reserve a compaction fits under in that window: compact refuses one it cannot fit)
        r = runner.invoke(app, ["compact", *OVER, "--set", "thresholds.summary_reserve=5000", "--report", "none",
                                "-o", "out.jsonl"])
        assert r.exit_code == 0, r.stderr
        assert [q.path for q in api.requests] == ["/v1/messages"]


def test_stats_never_runs_a_summarizer_command(runner, tmp_path):
    marker = tmp_path / "ran"
    (tmp_path / "p.yaml").write_text(f"summarizer:\n  use: command\n  command: touch {marker}; cat\n")
    data, stages = stats_json(runner, "--policy", "p.yaml")
    assert stages["autocompact"]["reason"].startswith("auto compaction (summary by command, simulated): ")
    assert not marker.exists()


def test_stats_uses_the_summarizer_an_embedder_injects_without_calling_it(make_context, tmp_path):
    from ctxkit.reports.stats import view_stats
    from ctxkit.transcript import read_transcript

    class Recorder:
        name = "embedded"
        calls = 0

        def summarize(self, messages, *, instructions=None):  # pragma: no cover - must not run
            Recorder.calls += 1
            return "x"

        def complete(self, messages, *, system, max_tokens):  # pragma: no cover - must not run
            Recorder.calls += 1
            return "x"

    from ctxkit import load_policy

    policy = load_policy(None, ["stages.microcompact.enabled=false", "stages.tool-result-budget.enabled=false",
                                "thresholds.summary_reserve=5000"], cwd=tmp_path, user_config=tmp_path / "none.yaml")
    ctx = make_context(context_window=58_000)
    ctx.policy = policy
    ctx.summarizer_factory = lambda policy, c: Recorder()
    out = view_stats(read_transcript(str(EXAMPLE)), ctx)
    autocompact = next(s for s in out["stages"] if s["id"] == "autocompact")
    assert autocompact["reason"].startswith("auto compaction (summary by embedded, simulated): ")
    assert Recorder.calls == 0


def test_stats_says_compact_would_refuse_a_window_the_policy_does_not_fit(runner, tmp_path):
    """In a window compact refuses before any work (exit 2), stats said what autocompact would do there
    ("applied"): it now says compact refuses, with compact's own words, and predicts no stage."""
    window = ["--context-window", "45000", "--store", str(tmp_path / "st")]
    r = runner.invoke(app, ["compact", str(EXAMPLE), *window, "-o", str(tmp_path / "out.jsonl")])
    assert r.exit_code == 2 and "ctxkit: error: " in r.stderr
    refusal = r.stderr.split("ctxkit: error: ", 1)[1].strip()
    s = runner.invoke(app, ["stats", str(EXAMPLE), *window, "--json"])
    assert s.exit_code == 0, s.stderr
    data = json.loads(s.stdout)
    assert data["refused"] == refusal and data["stages"] == [] and data["tokens_after"] == data["tokens"]
    text = runner.invoke(app, ["stats", str(EXAMPLE), *window])
    assert "compact refuses this session (exit 2): " + refusal[:60] in " ".join(text.stdout.split())
    assert not (tmp_path / "out.jsonl").exists()


def test_stats_predicts_the_count_compact_ends_with(runner, tmp_path):
    """The summary tells the model where the full history can be read; stats left the file unnamed, and
    its prediction came out 42 tokens under what compact then wrote (review47: 50 on every held-out run)."""
    copy = tmp_path / "session.jsonl"
    shutil.copyfile(EXAMPLE, copy)
    settings = [str(copy), *OVER[1:], "--store", str(tmp_path / "st")]
    predicted = json.loads(runner.invoke(app, ["stats", *settings, "--json"]).stdout)["tokens_after"]
    r = runner.invoke(app, ["compact", *settings, "--report", "json"])  # (to stdout: the summary names the input)
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stderr[r.stderr.index("{"):])["tokens_after"] == predicted
