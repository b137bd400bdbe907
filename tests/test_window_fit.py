"""A window no compaction can fit in is refused before any work by compact, simulate and report, with
``policy lint``'s message (one check: :func:`ctxkit.policy.lint.window_misfits`), exit 2; end to end."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from conftest import ROOT

EXAMPLE = str(ROOT / "examples" / "session.jsonl")
CTXKIT = [sys.executable, "-m", "ctxkit.cli.main"]
TOO_SMALL = ["--context-window", "34000"]  # threshold 1,000: below the system prompt and tools
LOOPS = ["--context-window", "40000", "--set", "thresholds.summary_reserve=5000"]  # under what a compaction leaves


def ctxkit(tmp_path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CTXKIT, *args], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
                               "PYTHONPATH": os.environ.get("PYTHONPATH", "")})


def lint_message(tmp_path, window: list[str]) -> str:
    """What ``policy lint`` says of the default policy in that window, without its file:line:col."""
    r = ctxkit(tmp_path, "policy", "lint", *window)
    assert r.returncode == 1
    return re.sub(r"^\S+:\d+:\d+: error: ", "", r.stderr.splitlines()[0])


@pytest.mark.parametrize("force", [[], ["--force"]], ids=["auto", "force"])
@pytest.mark.parametrize("window", [TOO_SMALL, LOOPS], ids=["below-overhead", "compacts-every-turn"])
def test_compact_refuses_before_any_work_with_lints_message(tmp_path, window, force):
    """The policy as written does not work in that window (lint's error, with its overhead_tokens): refused
    before any work, forced or not. (What the session's own system prompt and tools add is judged per session:
    tests/test_calibrated_overhead.py.)"""
    message = lint_message(tmp_path, window)
    r = ctxkit(tmp_path, "compact", EXAMPLE, *window, *force, "-o", "out.jsonl", "--store", "st")
    assert (r.returncode, r.stdout, r.stderr) == (2, "", f"ctxkit: error: {message}\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no output, no store


def test_the_message_for_34000_is_the_one_lint_gives(tmp_path):
    assert lint_message(tmp_path, TOO_SMALL) == (
        "the autocompact threshold (1,000 tokens: the 34,000-token window, less 20,000 reserved for output and the "
        "13,000-token autocompact buffer) is below the system prompt and tools (about 10,000 tokens): every request "
        "would be over it (use a larger context_window, or lower thresholds.summary_reserve or "
        "thresholds.autocompact_buffer)")


@pytest.mark.parametrize("command", [["simulate", EXAMPLE], ["report", EXAMPLE, "-o", "r.html"]])
def test_simulate_and_report_refuse_the_same_way(tmp_path, command):
    message = lint_message(tmp_path, LOOPS)
    r = ctxkit(tmp_path, *command, *LOOPS)
    assert (r.returncode, r.stdout, r.stderr) == (2, "", f"ctxkit: error: {message}\n")
    assert not (tmp_path / "r.html").exists()


def test_simulate_names_the_row_that_does_not_fit(tmp_path):
    (tmp_path / "roomy.yaml").write_text("extends: no-llm\nthresholds:\n  summary_reserve: 5000\n")
    r = ctxkit(tmp_path, "simulate", EXAMPLE, "-p", "roomy.yaml", "-p", "default", "--context-window", "50000")
    assert r.returncode == 2
    assert r.stderr.startswith("ctxkit: error: policy 'default': the autocompact threshold (17,000 tokens) is at or "
                               "below what a compaction may leave behind")


def test_a_window_that_fits_runs(tmp_path):
    fits = ["--context-window", "50000", "--set", "thresholds.summary_reserve=5000"]
    assert ctxkit(tmp_path, "policy", "lint", *fits).returncode == 0
    r = ctxkit(tmp_path, "compact", EXAMPLE, *fits, "--force", "-o", "out.jsonl", "--store", "st")
    assert r.returncode == 0, r.stderr
    assert "autocompact: applied: manual compaction" in r.stderr
    assert ctxkit(tmp_path, "simulate", EXAMPLE, *fits).returncode == 0


def test_stage_without_autocompact_skips_the_check(tmp_path):
    r = ctxkit(tmp_path, "compact", EXAMPLE, *TOO_SMALL, "--stage", "microcompact", "-o", "out.jsonl", "--store", "st",
               "--now", "2026-11-30T12:00:00Z")
    assert r.returncode == 0, r.stderr
    assert "microcompact: applied: cleared 3 old tool result(s)" in r.stderr
