"""The CLI as a user meets it: exact messages on stderr, data on stdout, named exit codes."""
from __future__ import annotations

import json

import pytest
from conftest import ROOT, cc_sessions

from ctxkit.cli.main import app

EXAMPLE = ROOT / "examples" / "session.jsonl"


def invoke(runner, args, input=None):
    return runner.invoke(app, args, input=input)


def test_help_documents_exit_codes(runner):
    r = invoke(runner, ["--help"])
    assert r.exit_code == 0
    assert ("2 usage or policy error, or an input that does not exist or cannot be opened (one input or many); "
            "3 bad transcript (a file read that is not one); 4 internal error") in " ".join(r.stdout.split())


def test_compact_example_with_default_policy_offline(runner, tmp_path):
    out = tmp_path / "out.jsonl"
    r = invoke(runner, ["compact", str(EXAMPLE), "-o", str(out), "--now", "2026-11-20T12:00:00Z",
                        "--store", str(tmp_path / "store")])
    assert r.exit_code == 0, r.stderr
    assert out.exists()
    assert "tool-result-budget: applied: persisted 1 result(s)" in r.stderr
    assert r.stdout == ""
    view = invoke(runner, ["view", str(out)])
    assert "<persisted-output>" in view.stdout


def test_compact_reads_stdin_and_writes_stdout(runner):
    r = invoke(runner, ["compact", "--policy", "no-llm", "--stage", "tool-result-budget", "--report", "none"],
               input=EXAMPLE.read_bytes())
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()  # the transcript, plus the record naming its store (docs/store.md)
    assert len(lines) == len(EXAMPLE.read_text().splitlines()) + 1
    assert json.loads(lines[-1])["record"] == "store"
    assert r.stderr == ""


def test_bad_transcript_line_exit_3_with_line_number(runner):
    r = invoke(runner, ["compact", "--stage", "tool-result-budget"], input=b'{"role": "user", "content": "hi"}\nnope\n')
    assert r.exit_code == 3
    assert r.stderr.startswith("ctxkit: error: <stdin>:2: not valid JSON: ")
    assert r.stderr.count("\n") == 1
    assert r.stdout == ""


def test_bad_line_skip_warns_and_counts(runner):
    r = invoke(runner, ["compact", "--stage", "tool-result-budget", "--on-bad-line", "skip"],
               input=b'{"role": "user", "content": "hi"}\nnope\n')
    assert r.exit_code == 0
    assert r.stderr.splitlines()[0] == "ctxkit: warning: skipped 1 unreadable line(s); first: <stdin>:2: not valid JSON: invalid literal, expected 'null'"


def test_failed_run_leaves_no_output_file(runner, tmp_path):
    out = tmp_path / "out.jsonl"
    r = invoke(runner, ["compact", "-", "-o", str(out), "--stage", "tool-result-budget"], input=b"{truncated")
    assert r.exit_code == 3
    assert r.stderr == ("ctxkit: error: <stdin>:1: truncated last line (not valid JSON; the writer may have crashed"
                        " mid-line)\n")
    assert not out.exists()
    assert list(tmp_path.glob(".out.jsonl.*")) == []


def test_unknown_option_value_is_a_usage_error(runner):
    r = invoke(runner, ["compact", "--on-bad-line", "ignore"], input=b"")
    assert r.exit_code == 2
    assert r.stderr == ("ctxkit: error: invalid value for '--on-bad-line': 'ignore' is not one of 'fail', 'skip'\n"
                        "Try 'ctxkit compact -h' for help.\n")


def test_bad_policy_exit_2_with_positions(runner, tmp_path):
    (tmp_path / ".ctxkit.yaml").write_text("tresholds:\n  autocompact_buffer: 1000\n")
    r = invoke(runner, ["compact", "--stage", "tool-result-budget"], input=EXAMPLE.read_bytes())
    assert r.exit_code == 2
    assert ".ctxkit.yaml:1:1: error: unknown key 'tresholds' (did you mean 'thresholds'?)" in r.stderr.splitlines()
    assert r.stderr.rstrip().endswith("ctxkit: 1 problem in the policy")


def test_policy_validate(runner, tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text("extends: no-llm\nthresholds:\n  autocompact_buffer: 20000\n")
    r = invoke(runner, ["policy", "validate", str(good)])
    assert r.exit_code == 0, r.stderr
    bad = tmp_path / "bad.yaml"  # the runner's working directory: labels are relative to it
    bad.write_text("estimator: exact\nthresholds:\n  autocompact_buffer: lots\n")
    r = invoke(runner, ["policy", "validate", "bad.yaml"])
    assert r.exit_code == 2
    assert r.stderr == ("bad.yaml:1:12: error: estimator must be one of rough, tiktoken, anthropic, got 'exact'\n"
                        "bad.yaml:3:23: error: thresholds.autocompact_buffer must be an integer, got 'lots'\n"
                        "ctxkit: 2 problems in the policy\n")


def test_policy_schema_is_json_with_stage_names(runner):
    r = invoke(runner, ["policy", "schema"])
    assert r.exit_code == 0
    schema = json.loads(r.stdout)
    assert schema["$schema"].endswith("2020-12/schema")
    assert "tool-result-budget" in json.dumps(schema)


def test_policy_show_names_the_file_of_each_value(runner, tmp_path):
    (tmp_path / ".ctxkit.yaml").write_text("thresholds:\n  autocompact_buffer: 20000\n")
    r = invoke(runner, ["policy", "show"])
    assert r.exit_code == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if "autocompact_buffer" in x)
    assert "20000" in line and ".ctxkit.yaml:2" in line


def test_check_exit_1_above_threshold(runner):
    r = invoke(runner, ["check", str(EXAMPLE), "--context-window", "40000"])
    assert r.exit_code == 1
    assert "level" in r.stdout
    r = invoke(runner, ["check", str(EXAMPLE), "--context-window", "1000000"])
    assert r.exit_code == 0


def test_stats_json(runner):
    r = invoke(runner, ["stats", str(EXAMPLE), "--json", "--policy", "no-llm"])
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["tokens"] > 0 and data["by_tool"]["Bash"] > data["by_tool"]["Read"]
    assert data["budget"]["autocompact_threshold"] == data["budget"]["effective_window"] - 13_000
    assert {s["id"] for s in data["stages"]} >= {"tool-result-budget"}


def test_stats_table(runner):
    r = invoke(runner, ["stats", str(EXAMPLE), "--policy", "no-llm"])
    assert r.exit_code == 0, r.stderr
    assert "autocompact threshold" in r.stdout and "by tool" in r.stdout


def test_expand_restores_every_byte(runner, tmp_path):
    store = tmp_path / "store"
    out = tmp_path / "out.jsonl"
    r = invoke(runner, ["compact", str(EXAMPLE), "-o", str(out), "--store", str(store),
                        "--stage", "tool-result-budget"])
    assert r.exit_code == 0, r.stderr
    assert out.read_bytes() != EXAMPLE.read_bytes()
    back = tmp_path / "back.jsonl"
    r = invoke(runner, ["expand", str(out), "-o", str(back), "--store", str(store)])
    assert r.exit_code == 0, r.stderr
    assert "restored 1 tool output(s)" in r.stderr.splitlines()  # the persisted log (the empty result was answered)
    orig = [json.loads(x) for x in EXAMPLE.read_text().splitlines()]
    restored = [json.loads(x) for x in back.read_text().splitlines()]
    assert restored == orig
    assert back.read_bytes() == EXAMPLE.read_bytes()  # the very bytes, not only the same JSON


@pytest.mark.parametrize("session", cc_sessions()[:2], ids=lambda p: p.name)
def test_view_to_openai(runner, session):
    r = invoke(runner, ["view", str(session / "session.jsonl"), "--to", "openai"])
    assert r.exit_code == 0, r.stderr
    roles = {json.loads(x)["role"] for x in r.stdout.splitlines()}
    assert roles <= {"system", "user", "assistant", "tool"} and "tool" in roles


def test_internal_error_is_a_message_not_a_traceback(runner, monkeypatch):
    import ctxkit.reports.stats as stats  # `ctxkit stats` imports it when it runs

    def boom(*a, **k):
        raise RuntimeError("kaboom")

    monkeypatch.setattr(stats, "view_stats", boom)
    r = invoke(runner, ["stats", str(EXAMPLE)])
    assert r.exit_code == 4
    assert r.stderr.startswith("ctxkit: error: internal error: RuntimeError: kaboom")
    assert "Traceback" not in r.stderr


def test_exact_token_counts_are_kept_between_runs(runner, tmp_path):
    """A transcript grown by one turn is not recounted from scratch: the second run finds the counts."""
    from ctxkit.cli.run_setup import open_run

    store = tmp_path / "store"
    # a plain message list: no reported usage, so every run counts the whole view
    plain = tmp_path / "plain.jsonl"
    assert invoke(runner, ["view", str(EXAMPLE), "-o", str(plain)]).exit_code == 0
    r = invoke(runner, ["compact", str(plain), "--set", "estimator=tiktoken", "--store", str(store),
                        "--stage", "microcompact", "-o", str(tmp_path / "o.jsonl")])
    assert r.exit_code == 0, r.stderr
    assert (store / "tokens-tiktoken.json").exists()
    run = open_run(str(plain), policy=None, sets=["estimator=tiktoken"], fmt="auto", on_bad_line="fail",
                   store=store, now=None, context_window=None)
    run.ctx.tokens.count_messages(run.transcript.view().api_messages())
    assert run.ctx.tokens.cache_misses == 0 and run.ctx.tokens.cache_hits > 0


def test_unwritable_store_is_a_clear_error_and_writes_nothing(runner, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    out = tmp_path / "out.jsonl"
    r = invoke(runner, ["compact", str(EXAMPLE), "--store", str(blocker / "store"), "-o", str(out)])
    assert r.exit_code == 2
    assert r.stderr == f"ctxkit: error: cannot write {blocker / 'store'}: Not a directory\n"
    assert not out.exists()


def test_missing_session_memory_file_falls_back_to_a_summary(runner, tmp_path):
    r = invoke(runner, ["compact", str(EXAMPLE), "--store", str(tmp_path / "s"), "--force", "--policy", "no-llm",
                        "--session-memory", str(tmp_path / "notes.md"), "-o", str(tmp_path / "o.jsonl")])
    assert r.exit_code == 0, r.stderr
    assert r.stderr.splitlines()[0] == (f"ctxkit: warning: --session-memory {tmp_path / 'notes.md'}: no such file yet;"
                                        " autocompact summarizes instead (`ctxkit memory update` writes it)")
    assert "autocompact: applied: manual compaction (summary by extractive)" in r.stderr


@pytest.mark.parametrize("policy", ["default", "claude-code-full"])
@pytest.mark.parametrize("window", [None, "40000"])
@pytest.mark.parametrize("path", [EXAMPLE] + [p / "session.jsonl" for p in cc_sessions()],
                         ids=lambda p: p.parent.name if hasattr(p, "parent") else str(p))
def test_compacting_the_output_again_changes_nothing(runner, tmp_path, path, policy, window):
    """compact(compact(x)) == compact(x): same store, same clock, nothing new crossed a threshold."""
    common = ["--policy", policy, "--store", str(tmp_path / "st"), "--now", "2026-12-01T00:00:00Z", "--report", "none"]
    if window:  # the recorded sessions' stand-in API left the system prompt and tools out of its usage
        # (a summary reserve a compaction fits under at this window: policy lint's fit check, which compact asks)
        common += ["--context-window", window, "--set", "overhead_tokens=0", "--set", "thresholds.summary_reserve=5000"]
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    r = invoke(runner, ["compact", str(path), "-o", str(a), *common])
    assert r.exit_code == 0, r.stderr
    r = invoke(runner, ["compact", str(a), "-o", str(b), *common])
    assert r.exit_code == 0, r.stderr
    assert a.read_bytes() == b.read_bytes()


def test_a_window_too_small_for_the_buffers_is_a_usage_error(runner):
    r = invoke(runner, ["check", str(EXAMPLE), "--context-window", "20000"])
    assert r.exit_code == 2
    assert r.stderr == (
        "ctxkit: error: the context window (20,000 tokens, from --context-window) is too small: after reserving "
        "20,000 for output the effective window is 0, and the autocompact threshold (effective window - 13,000) "
        "would be -13,000; use a window above 33,000 or lower thresholds.summary_reserve / "
        "thresholds.autocompact_buffer / max_output_tokens\n")
