"""Every file named beside the transcript is read within a bound, and only if it is a regular file.

Before: ``--queued``, ``--state``, ``--session-memory``, ``--system`` and ``--tools`` read ``/dev/zero``
until memory ran out (exit 4, or killed), a FIFO hung the run, a folder was an internal error.
Now each is a usage error (exit 2) naming the option and the path, at once, before any output
(docs/security.md, "Bounds").
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import pytest
from conftest import ROOT

from ctxkit.side_files import BOUNDS, SideFileError, read_side_file

EXAMPLE = ROOT / "examples" / "session.jsonl"

#: (command line before the option, option): every option that names a side file
SIDE_OPTIONS = [
    (["compact", "s.jsonl", "-o", "out.jsonl", "--force"], "--queued"),
    (["compact", "s.jsonl", "-o", "out.jsonl", "--force"], "--state"),
    (["compact", "s.jsonl", "-o", "out.jsonl", "--force"], "--session-memory"),
    (["memory", "update", "s.jsonl"], "--session-memory"),
    (["view", "s.jsonl", "-o", "out.jsonl", "--to", "anthropic-request"], "--system"),
    (["view", "s.jsonl", "-o", "out.jsonl", "--to", "anthropic-request"], "--tools"),
    (["simulate", "s.jsonl"], "--pricing"),
]


def ctxkit(tmp_path, *args, timeout=60):
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    env.pop("ANTHROPIC_API_KEY", None)
    return subprocess.run([sys.executable, "-m", "ctxkit.cli.main", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=timeout)


def _side(tmp_path, kind, option):
    """A path of ``kind`` in ``tmp_path`` (or the system's): what a mistaken command line names."""
    if kind == "device":
        return "/dev/zero", "not a regular file (a character device)"
    if kind == "fifo":
        os.mkfifo(tmp_path / "side")
        return "side", "not a regular file (a FIFO)"
    if kind == "folder":
        (tmp_path / "side").mkdir()
        return "side", "a folder, not a file"
    with open(tmp_path / "side", "wb") as f:  # sparse: costs no disk
        f.truncate(BOUNDS[option] + 1)
    return "side", f"more than {BOUNDS[option]:,} bytes, the most {option} reads (docs/security.md, Bounds)"


@pytest.mark.parametrize("kind", ["device", "fifo", "folder", "over the bound"])
@pytest.mark.parametrize("before,option", SIDE_OPTIONS, ids=[f"{c[0]}{o}" for c, o in SIDE_OPTIONS])
def test_a_side_file_that_is_not_a_bounded_regular_file_is_a_usage_error(tmp_path, before, option, kind):
    shutil.copy(EXAMPLE, tmp_path / "s.jsonl")
    path, why = _side(tmp_path, kind, option)
    start = time.monotonic()
    r = ctxkit(tmp_path, *before, option, path)
    assert time.monotonic() - start < 30
    assert r.returncode == 2, r.stderr
    tail = "" if kind == "over the bound" else f"; {option} reads a regular file"
    assert r.stderr == f"ctxkit: error: {option} '{path}': {why}{tail}\n"
    assert not (tmp_path / "out.jsonl").exists()
    assert r.stdout == ""


def test_a_side_file_at_its_bound_is_read(tmp_path):
    queued = tmp_path / "q.txt"
    queued.write_text(("stop after the tests\n" * (BOUNDS["--queued"] // 21 + 1))[:BOUNDS["--queued"]])
    assert read_side_file(queued, "--queued") == queued.read_bytes()
    with open(queued, "ab") as f:
        f.write(b"x")
    with pytest.raises(SideFileError) as err:
        read_side_file(queued, "--queued")
    assert err.value.kind == "too-large"


def test_a_fifo_swapped_in_after_the_check_does_not_hang_the_reader(tmp_path):
    """The check before the run only stats; the read itself opens non-blocking and fstat()s, so a FIFO
    put in place between the two is refused, not waited on."""
    os.mkfifo(tmp_path / "state.json")
    start = time.monotonic()
    with pytest.raises(SideFileError) as err:
        read_side_file(tmp_path / "state.json", "--state")
    assert time.monotonic() - start < 5
    assert err.value.kind == "not-regular"


def test_a_side_file_that_is_not_utf8_is_a_usage_error_not_a_crash(tmp_path):
    shutil.copy(EXAMPLE, tmp_path / "s.jsonl")
    (tmp_path / "system.txt").write_bytes(b"you are \xff helpful")
    r = ctxkit(tmp_path, "view", "s.jsonl", "--to", "anthropic-request", "--system", "system.txt")
    assert r.returncode == 2
    assert r.stderr == "ctxkit: error: --system 'system.txt': not UTF-8 text (byte 8)\n"


def test_a_missing_state_file_is_still_only_a_warning(tmp_path):
    shutil.copy(EXAMPLE, tmp_path / "s.jsonl")
    r = ctxkit(tmp_path, "compact", "s.jsonl", "-o", "out.jsonl", "--force", "--state", "nope.json")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out.jsonl").exists()


DEEP = "[" * 100_000 + "]" * 100_000  # JSON the stdlib parser recurses into until it gives up


@pytest.mark.parametrize("before, option", SIDE_OPTIONS, ids=lambda x: x if isinstance(x, str) else x[0])
def test_a_side_file_nested_too_deeply_is_no_internal_error(tmp_path, before, option):
    # json.loads raised RecursionError: --tools, --pricing, --state and --queued were exit 4
    shutil.copy(EXAMPLE, tmp_path / "s.jsonl")
    (tmp_path / "deep.json").write_text(DEEP)
    r = ctxkit(tmp_path, *before, option, "deep.json")
    assert r.returncode in (0, 1, 2) and "internal error" not in r.stderr, r.stderr
    if option in ("--tools", "--pricing"):
        assert r.returncode == 2 and "nested too deeply to read" in r.stderr
