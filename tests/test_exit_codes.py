"""One meaning per exit code, whatever the number of inputs: an input that names nothing or cannot be
opened is a usage error (exit 2) for every command, alone or among others; exit 3 is a file read that
is not a transcript (docs/cli-conventions.md)."""
from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import ROOT

EXAMPLE = str(ROOT / "examples" / "session.jsonl")
CTXKIT = [sys.executable, "-m", "ctxkit.cli.main"]


def ctxkit(tmp_path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CTXKIT, *args], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "xdg")})


# every command that reads transcripts: its arguments after the input
ONE_INPUT = {
    "compact": ["-o", "out.jsonl"],
    "view": [],
    "stats": [],
    "check": [],
    "expand": ["-o", "out.jsonl"],
    "snip": ["--ids", "abc123", "-o", "out.jsonl"],
    "report": ["-o", "out.html"],
    "memory update": [],
}
MANY_INPUTS = {"compact": ["--out-dir", "out"], "stats": [], "check": [], "expand": ["--out-dir", "out"],
               "simulate": []}


@pytest.mark.parametrize("command", sorted(ONE_INPUT))
def test_a_missing_input_alone_is_a_usage_error(tmp_path, command):
    r = ctxkit(tmp_path, *command.split(), "nosuch.jsonl", *ONE_INPUT[command])
    assert (r.returncode, r.stdout, r.stderr) == (2, "", "ctxkit: error: nosuch.jsonl:0: no such file\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing written, no store made


@pytest.mark.parametrize("command", sorted(MANY_INPUTS))
def test_a_missing_input_among_others_is_the_same_exit_code(tmp_path, command):
    r = ctxkit(tmp_path, command, EXAMPLE, "nosuch.jsonl", *MANY_INPUTS[command])
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == "ctxkit: error: no such file or folder: 'nosuch.jsonl'\n"
    alone = ctxkit(tmp_path, command, "nosuch.jsonl", *MANY_INPUTS[command])
    assert alone.returncode == 2, alone.stderr


def test_simulate_alone_says_the_same(tmp_path):
    r = ctxkit(tmp_path, "simulate", "nosuch.jsonl")
    assert (r.returncode, r.stderr) == (2, "ctxkit: error: no such file or folder: 'nosuch.jsonl'\n")


def test_a_folder_where_a_file_is_expected_is_a_usage_error(tmp_path):
    (tmp_path / "d").mkdir()
    r = ctxkit(tmp_path, "view", "d")
    assert (r.returncode, r.stderr) == (2, "ctxkit: error: d:0: is a directory, not a transcript\n")


def test_a_file_that_is_not_a_transcript_is_still_exit_3(tmp_path):
    (tmp_path / "bad.jsonl").write_text("not json\n")
    r = ctxkit(tmp_path, "view", "bad.jsonl")
    assert r.returncode == 3
    assert r.stderr.startswith("ctxkit: error: bad.jsonl:1: not valid JSON")


def test_a_batch_file_that_cannot_be_opened_is_an_error_not_a_bad_transcript(tmp_path):
    # a dangling link found by walking a folder is listed, then cannot be opened: exit 2, status error
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_bytes(open(EXAMPLE, "rb").read())
    (tmp_path / "in" / "gone.jsonl").symlink_to(tmp_path / "nowhere.jsonl")
    r = ctxkit(tmp_path, "stats", "in", "--report-file", "r.jsonl")
    assert r.returncode == 2, r.stderr
    assert '"status": "error", "exit_code": 2' in (tmp_path / "r.jsonl").read_text()
