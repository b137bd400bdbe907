"""A summarizer command is read within bounds: its stdout up to a limit, never past its time.

Before: a command that floods stdout grew ctxkit by about 1 GB/s to a MemoryError (exit 4) or an
OOM kill; one that left a child holding its stdout (``echo summary; sleep 600 &``) made the run wait
for the child (60 s past ``total_timeout_seconds``, or forever when the child escaped the process
group) and then threw the summary away. docs/security.md, "Bounds".
"""
from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import time

import pytest
from conftest import ROOT

from ctxkit.errors import LLMError
from ctxkit.summarize import CommandSummarizer
from ctxkit.summarize.command import MIN_SUMMARY_BYTES

EXAMPLE = ROOT / "examples" / "session.jsonl"
SUMMARY = "<summary>\n1. Primary Request and Intent:\n   the summary the command printed\n</summary>"


def compact_with(tmp_path, command, *, total=20):
    """``ctxkit compact --force`` with ``command`` as the summarizer, in a child process: (result, seconds, peak RSS MB)."""
    shutil.copy(EXAMPLE, tmp_path / "s.jsonl")
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    env.pop("ANTHROPIC_API_KEY", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "ctxkit.cli.main", "compact", "s.jsonl", "-o", "out.jsonl", "--force",
                        "--set", "summarizer.use=command", "--set", f"summarizer.command={command}",
                        "--set", f"summarizer.total_timeout_seconds={total}"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    seconds = time.monotonic() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return r, seconds, (peak if peak > before else 0) / 1024


def test_a_command_that_floods_stdout_is_stopped_at_the_bound(tmp_path):
    r, seconds, peak_mb = compact_with(tmp_path, "cat /dev/zero")
    assert r.returncode == 1, r.stderr
    assert seconds < 60  # stopped at the byte bound, well before its time ran out (loose: a loaded machine)
    assert peak_mb < 300  # 8 MiB of output kept at most; before, it grew until killed
    assert (f"autocompact: failed: the summarizer command 'cat /dev/zero' printed more than "
            f"{MIN_SUMMARY_BYTES:,} bytes, more than a summary of") in r.stderr
    assert "Traceback" not in r.stderr


def test_a_child_left_holding_stdout_does_not_hold_the_run_and_the_summary_is_used(tmp_path):
    marker = tmp_path / "child-finished"
    (tmp_path / "summary.txt").write_text(SUMMARY + "\n")
    (tmp_path / "summarize.sh").write_text(f"cat summary.txt; (sleep 150; touch {marker}) &\n")
    r, seconds, _ = compact_with(tmp_path, "sh summarize.sh", total=60)
    assert r.returncode == 0, r.stderr
    assert seconds < 60  # was: until the child closed stdout (150 s here), past the 60 s total: the summary lost
    assert "the summary the command printed" in (tmp_path / "out.jsonl").read_text()
    time.sleep(0.2)
    out = subprocess.run(["pgrep", "-f", f"touch {marker}"], capture_output=True, text=True)
    assert out.stdout == ""  # the child went with the command's process group


def test_a_child_that_escaped_the_process_group_cannot_hold_the_run(tmp_path):
    """``setsid`` puts the child out of reach of the group kill: ctxkit stops reading, it does not wait."""
    pidfile = tmp_path / "child.pid"
    summarizer = CommandSummarizer(f"printf '%s\\n' '{SUMMARY}'; setsid sh -c 'echo $$ > {pidfile}; exec sleep 60' &",
                                   timeout_seconds=30, total_timeout_seconds=30)
    start = time.monotonic()
    try:
        text = summarizer.complete([{"role": "user", "content": "go"}], system=None, max_tokens=1000)
        assert time.monotonic() - start < 5
        assert text == SUMMARY + "\n"
    finally:
        for _ in range(50):
            if pidfile.exists() and pidfile.read_text().strip():
                os.kill(int(pidfile.read_text()), 9)  # the child this test started
                break
            time.sleep(0.1)


def test_a_command_still_running_at_the_total_timeout_is_killed_even_if_it_printed(tmp_path):
    summarizer = CommandSummarizer("echo '<summary>1. Primary Request and Intent: x</summary>'; sleep 60",
                                   timeout_seconds=600, total_timeout_seconds=1)
    start = time.monotonic()
    with pytest.raises(LLMError) as caught:
        summarizer.complete([{"role": "user", "content": "go"}], system=None, max_tokens=1000)
    assert time.monotonic() - start < 5
    assert caught.value.message == ("the summarizer command \"echo '<summary>1. Primary Request and Intent: x</summary>'; "
                                    "sleep 60\" timed out after 1s (summarizer.total_timeout_seconds: 1s)")


def test_a_large_prompt_to_a_command_that_reads_none_of_it(tmp_path):
    summarizer = CommandSummarizer(f"printf '%s\\n' '{SUMMARY}'", timeout_seconds=10)
    text = summarizer.complete([{"role": "user", "content": "word " * 2_000_000}], system=None, max_tokens=1000)
    assert text == SUMMARY + "\n"


CHATTY_CHILD = "(while true; do echo x; sleep 0.5; done) &"


def test_a_child_that_keeps_printing_after_the_command_exited_0_does_not_lose_the_summary(tmp_path):
    """Before: the pipe never went quiet, so the run waited out total_timeout_seconds (30 s) and failed
    "timed out", throwing away the summary the command had printed."""
    (tmp_path / "summary.txt").write_text(SUMMARY + "\n")
    r, seconds, _ = compact_with(tmp_path, f"cat >/dev/null; cat summary.txt; {CHATTY_CHILD}", total=30)
    assert r.returncode == 0, r.stderr
    assert seconds < 25
    assert "timed out" not in r.stderr
    assert "the summary the command printed" in (tmp_path / "out.jsonl").read_text()


def test_what_a_child_prints_after_the_command_exited_is_not_part_of_the_summary():
    # the child starts printing a moment later: what it printed before the command exited would count
    summarizer = CommandSummarizer(f"cat >/dev/null; printf '%s\\n' '{SUMMARY}'; (while sleep 0.3; do echo x; done) &",
                                   timeout_seconds=20, total_timeout_seconds=20)
    start = time.monotonic()
    text = summarizer.complete([{"role": "user", "content": "go"}], system=None, max_tokens=1000)
    assert time.monotonic() - start < 15
    assert text == SUMMARY + "\n"
