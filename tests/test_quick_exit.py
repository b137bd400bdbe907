"""The console script ends without tearing the process down (ctxkit.cli.quick_exit): everything it
printed still arrives, exit codes are the usual ones, and a batch does not keep every file's data."""
from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

from builders import session

RUN = [sys.executable, "-c", "from ctxkit.cli.main import run; run()"]


def test_output_and_exit_codes_are_those_of_a_normal_exit(tmp_path):
    src = session(tmp_path / "s.jsonl", rounds=30, size=2000)
    args = ["compact", str(src), "--policy", "no-llm", "--report", "json", "--store", str(tmp_path / "st")]
    r = subprocess.run([*RUN, *args], capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    written = subprocess.run([*RUN, *args, "-o", str(tmp_path / "out.jsonl")], capture_output=True, timeout=120)
    assert written.returncode == 0, written.stderr
    assert len(r.stdout) > 200_000 and r.stdout == (tmp_path / "out.jsonl").read_bytes()  # all of it, flushed
    assert r.stderr.rstrip().endswith(b"}")  # the JSON report, flushed
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "user"\n')
    r = subprocess.run([*RUN, "compact", str(bad)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 3 and r.stderr.startswith(f"ctxkit: error: {bad}:1:")
    r = subprocess.run([*RUN, "compact", "--no-such-option"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2


def test_a_command_run_with_standard_error_closed_still_succeeds(tmp_path):
    """Python then has no sys.stderr at all (None): nothing to flush, not an error."""
    r = subprocess.run([*RUN, "--version"], stdout=subprocess.PIPE, text=True, timeout=120,
                       preexec_fn=lambda: os.close(2))
    assert r.returncode == 0 and r.stdout.startswith("ctxkit")


def test_a_batch_keeps_no_more_than_the_last_file_open(tmp_path):
    """Each file's run is kept to the end of the process only until the next one replaces it: a batch
    of more files than the process may open at once still runs."""
    src = tmp_path / "in"
    src.mkdir()
    session(src / "s000.jsonl", rounds=4, size=100)
    for k in range(1, 60):
        os.link(src / "s000.jsonl", src / f"s{k:03d}.jsonl")

    def few_files():
        resource.setrlimit(resource.RLIMIT_NOFILE, (40, 40))

    r = subprocess.run([*RUN, "compact", "in", "--out-dir", "out", "-j", "1", "--policy", "no-llm", "--force",
                        "--store", "st", "--report", "none"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=300, preexec_fn=few_files)
    assert r.returncode == 0, r.stderr
    assert len(list(Path(tmp_path / "out").glob("*.jsonl"))) == 60


def test_detect_secrets_plugins_are_loaded_once_per_process():
    """Every redactor (each file of a batch, each step of a simulation) shares the loaded classes."""
    from ctxkit.summarize.secret_rules import load_detect_secrets_plugins

    first, second = load_detect_secrets_plugins(), load_detect_secrets_plugins()
    assert [type(p) for p in first] == [type(p) for p in second]
    assert all(a is not b for a, b in zip(first, second, strict=True))  # instances of their own
