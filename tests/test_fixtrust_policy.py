"""Review fixes for repository-policy trust: a trusted file's relative command runs beside that file,
and the settings that decide where data goes (redact, estimator: anthropic) need trust too."""
from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from builders import session
from mock_messages_api import MockMessagesAPI

from ctxkit.cli.main import app

SUMMARY = "<summary>\n1. Primary Request and Intent:\n   summarized by GOOD\n</summary>"


def script(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\ncat >/dev/null\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.fixture
def repos(runner, tmp_path, monkeypatch):
    """``good/`` (trusted: ``command: ./summarize.sh``) and ``evil/`` beside it, each with a summarize.sh."""
    good, evil = tmp_path / "good", tmp_path / "evil"
    good.mkdir()
    evil.mkdir()
    (good / ".ctxkit.yaml").write_text("summarizer:\n  use: command\n  command: ./summarize.sh\n")
    script(good / "summarize.sh", f"printf '%s\\n' '{SUMMARY}'")
    marker = tmp_path / "EVIL-RAN"
    script(evil / "summarize.sh", f"touch {marker}\nprintf '%s\\n' '{SUMMARY}'")
    monkeypatch.chdir(good)
    trusted = runner.invoke(app, ["policy", "trust"])
    assert trusted.exit_code == 0, trusted.stderr
    return good, evil, marker


def compact_in(runner, monkeypatch, folder: Path):
    folder.mkdir(parents=True, exist_ok=True)
    monkeypatch.chdir(folder)
    session(folder / "s.jsonl")
    return runner.invoke(app, ["compact", "--force", "s.jsonl", "-o", "o.jsonl"])


def assert_good_ran(result, folder: Path, marker: Path) -> None:
    assert result.exit_code == 0, result.stderr
    assert not marker.exists(), "the untrusted folder's summarize.sh ran"
    assert "summarized by GOOD" in (folder / "o.jsonl").read_text()


def test_a_repository_extending_the_trusted_file_cannot_swap_the_script(runner, repos, monkeypatch):
    good, evil, marker = repos
    (evil / ".ctxkit.yaml").write_text("extends: ../good/.ctxkit.yaml\nstages:\n  - id: autocompact\n")
    assert_good_ran(compact_in(runner, monkeypatch, evil), evil, marker)


def test_a_symlink_to_the_trusted_file_runs_the_script_beside_the_real_file(runner, repos, monkeypatch):
    good, evil, marker = repos
    os.symlink("../good/.ctxkit.yaml", evil / ".ctxkit.yaml")
    assert_good_ran(compact_in(runner, monkeypatch, evil), evil, marker)


def test_a_subfolder_of_the_trusted_repository_runs_the_repository_script(runner, repos, monkeypatch):
    good, evil, marker = repos
    sub = good / "node_modules" / "evil"
    sub.mkdir(parents=True)
    script(sub / "summarize.sh", f"touch {marker}")
    assert_good_ran(compact_in(runner, monkeypatch, sub), sub, marker)


def test_a_command_from_set_runs_in_the_working_directory(runner, repos, monkeypatch):
    good, evil, marker = repos
    monkeypatch.chdir(evil)
    session(evil / "s.jsonl")
    result = runner.invoke(app, ["compact", "--force", "s.jsonl", "-o", "o.jsonl", "--set", "summarizer.use=command",
                                 "--set", "summarizer.command=./summarize.sh"])
    assert result.exit_code == 0, result.stderr
    assert marker.exists()  # the user's own word: their working directory's script


def test_the_extending_file_still_needs_trust_for_its_own_command(runner, repos, monkeypatch):
    good, evil, marker = repos
    (evil / ".ctxkit.yaml").write_text("extends: ../good/.ctxkit.yaml\nsummarizer:\n  command: sh ./summarize.sh\n"
                                     "stages:\n  - id: autocompact\n")
    result = compact_in(runner, monkeypatch, evil)
    assert result.exit_code == 2
    assert not marker.exists()
    assert result.stderr == (
        ".ctxkit.yaml:3:3: error: summarizer.command comes from a repository policy that you have not trusted: it runs "
        "a shell command with your environment (API keys included). Nothing was run (read the file, then run: ctxkit "
        "policy trust .ctxkit.yaml)\nctxkit: 1 problem in the policy\n")


# -- settings that decide where data goes ---------------------------------------------------------------------
AUTOCOMPACT = "stages:\n  - id: autocompact\n"
REDACT_DOES = "decides which secrets reach the summarizer and the summary (and runs its patterns over every message)"


@pytest.mark.parametrize("redact, key, line", [
    ("redact:\n  enabled: false\n", "redact.enabled", 2),
    ("redact:\n  allowlist:\n    - regex: '.*'\n", "redact.allowlist", 2),
    ("redact:\n  patterns: ['(\\w+\\s?)+\\$X']\n", "redact.patterns", 2),
])
def test_an_untrusted_repository_cannot_change_redaction_of_a_summarizing_run(runner, redact, key, line):
    Path(".ctxkit.yaml").write_text(AUTOCOMPACT + redact)
    src = session(Path("s.jsonl"))
    result = runner.invoke(app, ["compact", "--force", "s.jsonl", "-o", "o.jsonl"])
    assert result.exit_code == 2
    assert result.stderr.startswith(
        f".ctxkit.yaml:{line + 2}:3: error: {key} comes from a repository policy that you have not trusted: it "
        f"{REDACT_DOES}. Nothing was run (read the file, then run: ctxkit policy trust .ctxkit.yaml)\n"), result.stderr
    assert not Path("o.jsonl").exists() and src.exists()
    assert runner.invoke(app, ["policy", "trust"]).exit_code == 0
    if "patterns" not in redact:  # trusted, it is used (the pattern above would be the user's own slow regex)
        assert runner.invoke(app, ["compact", "--force", "s.jsonl", "-o", "o.jsonl"]).exit_code == 0


def test_a_run_that_does_not_summarize_only_warns_about_redact(runner):
    Path(".ctxkit.yaml").write_text("redact:\n  enabled: false\n")
    session(Path("s.jsonl"))
    result = runner.invoke(app, ["stats", "s.jsonl"])
    assert result.exit_code == 0, result.stderr
    assert ("ctxkit: warning: the repository policy sets redact.enabled (.ctxkit.yaml:2), which you have not "
            "trusted") in result.stderr


@pytest.mark.parametrize("command", [["stats", "s.jsonl"], ["view", "s.jsonl"], ["check", "s.jsonl"],
                                     ["compact", "s.jsonl", "-o", "o.jsonl"]])
def test_an_untrusted_repository_cannot_send_the_transcript_to_count_tokens(runner, monkeypatch, command):
    Path(".ctxkit.yaml").write_text("estimator: anthropic\n")
    session(Path("s.jsonl"))
    with MockMessagesAPI() as api:
        env = {"ANTHROPIC_API_KEY": "sk-ant-test-0123456789abcdef", "ANTHROPIC_BASE_URL": api.base_url}
        result = runner.invoke(app, command, env=env)
        assert result.exit_code == 2
        assert result.stderr.startswith(
            ".ctxkit.yaml:1:1: error: estimator comes from a repository policy that you have not trusted: it sends "
            "the whole transcript to Anthropic's count_tokens API. Nothing was run (read the file, then run: "
            "ctxkit policy trust .ctxkit.yaml)\n"), result.stderr
        assert api.requests == []


def test_an_estimator_that_stays_local_needs_no_trust(runner):
    Path(".ctxkit.yaml").write_text("estimator: tiktoken\n")
    session(Path("s.jsonl"))
    result = runner.invoke(app, ["stats", "s.jsonl"])
    assert result.exit_code == 0 and "warning" not in result.stderr, result.stderr
    shown = runner.invoke(app, ["policy", "show"])
    assert shown.exit_code == 0 and "warning" not in shown.stderr


def test_policy_show_warns_about_an_untrusted_estimator(runner):
    Path(".ctxkit.yaml").write_text("estimator: anthropic\n")
    result = runner.invoke(app, ["policy", "show"])
    assert result.exit_code == 0
    assert result.stderr == (
        "ctxkit: warning: the repository policy sets estimator (.ctxkit.yaml:1), which you have not trusted; a command "
        "that would use it refuses to run until you read the file and run: ctxkit policy trust .ctxkit.yaml\n")


def test_a_slow_repository_pattern_does_not_hang_a_simulation(runner):
    """stats simulates autocompact: it redacts what it would send, so the repository's patterns would run."""
    import time

    Path(".ctxkit.yaml").write_text(AUTOCOMPACT + "redact:\n  patterns: ['(\\w+\\s?)+\\$X']\n")
    session(Path("s.jsonl"))
    started = time.monotonic()
    # a window compact works in (a 28,000-token threshold) and the session is over: the simulation summarizes
    result = runner.invoke(app, ["stats", "s.jsonl", "--context-window", "42000", "--set", "thresholds.summary_reserve=1000"])
    assert time.monotonic() - started < 10
    assert result.exit_code == 2
    assert ".ctxkit.yaml:4:3: error: redact.patterns comes from a repository policy that you have not trusted" \
        in result.stderr


def test_library_callers_cannot_count_with_an_untrusted_anthropic_estimator(runner, tmp_path):
    from ctxkit import load_policy, make_context
    from ctxkit.errors import PolicyError

    Path(".ctxkit.yaml").write_text("estimator: anthropic\n")
    with pytest.raises(PolicyError) as raised:
        make_context(load_policy(cwd=tmp_path), store_dir=tmp_path / "store")
    assert "estimator comes from a repository policy that you have not trusted" in str(raised.value.problems[0])
