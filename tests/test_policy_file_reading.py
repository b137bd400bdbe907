"""Reading a policy file is bounded: only a regular file, at most 1 MiB, opened non-blocking.

Before: ``extends: ./big.yaml`` (a 2 GB sparse file) read all of it (15 s, 4 GB) before failing;
``extends: /proc/self/environ`` was read and parsed; a FIFO was "not found" or could hang a run."""
from __future__ import annotations

import os
import shutil
import time

import pytest
from conftest import ROOT

from ctxkit.cli.main import app
from ctxkit.policy.layers import MAX_POLICY_BYTES

EXAMPLE = ROOT / "examples" / "session.jsonl"


def compact(runner, tmp_path, *args):
    shutil.copy(EXAMPLE, tmp_path / "s.jsonl")
    return runner.invoke(app, ["compact", "s.jsonl", "-o", "out.jsonl", "--now", "2026-11-20T13:00:00Z", *args])


def test_a_huge_extended_file_is_refused_by_its_size_without_reading_it(runner, tmp_path):
    with open(tmp_path / "big.yaml", "wb") as f:
        f.truncate(2 * 1024 ** 3)  # sparse: costs no disk
    (tmp_path / ".ctxkit.yaml").write_text("extends: ./big.yaml\n")
    start = time.monotonic()
    r = compact(runner, tmp_path)
    assert time.monotonic() - start < 10
    assert r.exit_code == 2
    assert r.stderr == (f"big.yaml:1:1: error: the file is {2 * 1024 ** 3} bytes, more than the {MAX_POLICY_BYTES} "
                        "a policy may hold\nctxkit: 1 problem in the policy\n")
    assert not (tmp_path / "out.jsonl").exists()


def test_a_file_just_over_the_cap_is_refused_and_one_at_the_cap_is_read(runner, tmp_path):
    (tmp_path / "p.yaml").write_text("#" * (MAX_POLICY_BYTES + 1))
    r = compact(runner, tmp_path, "--policy", "p.yaml")
    assert r.exit_code == 2
    assert r.stderr.startswith(f"p.yaml:1:1: error: the file is {MAX_POLICY_BYTES + 1} bytes")
    (tmp_path / "p.yaml").write_text("extends: no-llm\n" + "#" * (MAX_POLICY_BYTES - 16))
    assert os.path.getsize(tmp_path / "p.yaml") == MAX_POLICY_BYTES
    r = compact(runner, tmp_path, "--policy", "p.yaml")
    assert r.exit_code == 0, r.stderr


@pytest.mark.skipif(not os.path.exists("/proc/self/environ"), reason="no /proc")
def test_a_proc_pseudo_file_is_not_read_as_a_policy(runner, tmp_path):
    (tmp_path / ".ctxkit.yaml").write_text("extends: /proc/self/environ\n")
    r = compact(runner, tmp_path)
    assert r.exit_code == 2
    assert r.stderr == ("/proc/self/environ:1:1: error: cannot read the file: it holds more than its size (0 bytes) "
                        "says (a pseudo-file, or one being written)\nctxkit: 1 problem in the policy\n")


@pytest.mark.parametrize("how", ["extends", "--policy"])
def test_a_fifo_is_named_as_not_a_regular_file_and_does_not_hang(runner, tmp_path, how):
    os.mkfifo(tmp_path / "pipe.yaml")  # no writer: a blocking open would wait for ever
    if how == "extends":
        (tmp_path / ".ctxkit.yaml").write_text("extends: ./pipe.yaml\n")
        r = compact(runner, tmp_path)
    else:
        r = compact(runner, tmp_path, "--policy", "./pipe.yaml")
    assert r.exit_code == 2
    assert r.stderr == ("pipe.yaml:1:1: error: cannot read the file: not a regular file (a policy is a YAML file)\n"
                        "ctxkit: 1 problem in the policy\n")
