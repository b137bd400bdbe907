"""What a folder walk takes: regular files only (docs/batch.md "Which files")."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from builders import session


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_a_fifo_named_jsonl_in_a_folder_is_skipped_not_waited_on(tmp_path):
    (tmp_path / "d").mkdir()
    session(tmp_path / "d" / "a.jsonl", rounds=1, size=10)
    os.mkfifo(tmp_path / "d" / "pipe.jsonl")
    try:
        r = subprocess.run([sys.executable, "-c", "from ctxkit.cli.main import run; run()", "check", "d", "--json", "-j", "1"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("the batch waited forever on a FIFO")
    assert r.returncode == 0, r.stderr
    assert [line.split('"file": ')[1].split(",")[0] for line in r.stdout.splitlines()] == ['"d/a.jsonl"']
