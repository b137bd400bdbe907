"""bench/instructions.py: the compact row's work counted in instructions (valgrind), beside its baseline's."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_counts_ctxkit_and_the_baseline_on_a_transcript_and_prints_their_ratio():
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "instructions.py"), "--input",
                        str(ROOT / "examples" / "session.jsonl")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    counts = dict(re.findall(r"^\| (ctxkit compact|orjson read\+write) \| ([\d,]+) \|$", r.stdout, re.M))
    ctxkit, floor = (int(counts[k].replace(",", "")) for k in ("ctxkit compact", "orjson read+write"))
    assert ctxkit > floor > 0  # a Python start-up at least, and ctxkit's imports on top
    assert f"ratio: {ctxkit / floor:.2f}x" in r.stdout


def test_says_what_is_missing_without_valgrind(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "instructions.py"), "--input", "x.jsonl"],
                       capture_output=True, text=True, timeout=60, env={"PATH": str(tmp_path)})
    assert r.returncode != 0
    assert "valgrind is not installed" in r.stderr


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_a_missing_input_is_named_before_anything_runs(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "instructions.py"), "--input", str(tmp_path / "nope.jsonl")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert f"--input {tmp_path / 'nope.jsonl'}: no such file" in r.stderr
