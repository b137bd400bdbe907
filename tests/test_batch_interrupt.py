"""Ctrl-C or SIGTERM during a batch stops the batch: no further file starts, the files being written
remove their temporary files, no worker is left running, one line on stderr, exit 4 (docs/batch.md)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from builders import session

from ctxkit import fileio

FILES = 400


def temp_files(root: Path) -> list[str]:
    return sorted(str(p) for p in root.rglob("*.tmp"))


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize(("signum", "word", "to_group"), [
    (signal.SIGTERM, "terminated", True), (signal.SIGINT, "interrupted", True),
    (signal.SIGTERM, "terminated", False),  # `kill PID`, `timeout`: the batch's process alone stops its workers
])
def test_a_signal_stops_the_whole_batch(tmp_path, jobs, signum, word, to_group):
    src = tmp_path / "in"
    src.mkdir()
    session(src / "s000.jsonl", rounds=30, size=400)
    for k in range(1, FILES):
        os.link(src / "s000.jsonl", src / f"s{k:03d}.jsonl")  # the same bytes, FILES names
    out = tmp_path / "out"

    def restore_sigint():  # a shell's background job ignores SIGINT; a terminal's does not
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    p = subprocess.Popen([sys.executable, "-c", "from ctxkit.cli.main import run; run()", "compact", "in",
                          "--out-dir", "out", "-j", jobs, "--policy", "no-llm", "--report", "none"],
                         cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True, preexec_fn=restore_sigint)
    deadline = time.monotonic() + 60
    while (not out.exists() or len(list(out.glob("*.jsonl"))) < 3) and time.monotonic() < deadline \
            and p.poll() is None:
        time.sleep(0.02)
    assert p.poll() is None, p.communicate()
    before = len(list(out.glob("*.jsonl")))
    if to_group:
        os.killpg(p.pid, signum)  # what a terminal's Ctrl-C, or a service manager's stop, does: the whole group
    else:
        p.send_signal(signum)
    try:
        _, err = p.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        pytest.fail("the batch went on after the signal")
    assert p.returncode == 4
    assert err == f"ctxkit: error: {word}; no file was left half-written\n"
    # no file started after the signal: at most the ones being written then were finished
    assert len(list(out.glob("*.jsonl"))) <= before + 2 * int(jobs), "files were still compacted after the signal"
    assert temp_files(tmp_path) == []
    with pytest.raises(ProcessLookupError):  # no worker left running in the group
        os.killpg(p.pid, 0)


def test_sigterm_right_after_the_temporary_file_is_made_still_removes_it(tmp_path, monkeypatch):
    """The signal lands between ``os.open`` returning and the next statement: the file exists already."""
    real_open = os.open

    def open_then_signal(path, *args, **kw):
        fd = real_open(path, *args, **kw)
        if str(path).endswith(".tmp"):
            os.close(fd)
            raise fileio.Terminated(signal.SIGTERM)
        return fd

    monkeypatch.setattr(fileio.os, "open", open_then_signal)
    with pytest.raises(fileio.Terminated), fileio.terminate_cleanly():
        with fileio.atomic_output(tmp_path / "out.jsonl") as f:
            f.write(b"x")
    assert list(tmp_path.iterdir()) == []


_SWALLOWS_AN_INTERRUPT = """
import os, signal, sys
from ctxkit.cli import commands
real, calls = commands.compact, [0]
def compact(**kwargs):
    calls[0] += 1
    if calls[0] == 3:  # Ctrl-C lands where Python loses its exception (a finalizer run by the collector)
        try:
            os.kill(os.getpid(), signal.SIGINT)
            sum(range(1000))
        except KeyboardInterrupt:
            pass
    return real(**kwargs)
commands.compact = compact
from ctxkit.cli.main import run
run()
"""


def test_a_ctrl_c_whose_exception_was_lost_still_stops_the_batch(tmp_path):
    """Python drops the KeyboardInterrupt of a Ctrl-C that lands in a finalizer (about one in two
    hundred in a long batch): the batch remembers the signal, and no file starts after it."""
    src = tmp_path / "in"
    src.mkdir()
    session(src / "s000.jsonl", rounds=4, size=40)
    for k in range(1, 20):
        os.link(src / "s000.jsonl", src / f"s{k:03d}.jsonl")
    r = subprocess.run([sys.executable, "-c", _SWALLOWS_AN_INTERRUPT, "compact", "in", "--out-dir", "out", "-j", "1",
                        "--policy", "no-llm", "--report", "none"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=120, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert r.returncode == 4, r.stderr
    assert r.stderr == "ctxkit: error: interrupted; no file was left half-written\n"
    assert len(list((tmp_path / "out").glob("*.jsonl"))) == 3  # the third file finished; none started after
    assert temp_files(tmp_path) == []


def test_a_second_sigterm_during_the_cleanup_finds_no_temporary_file_left(tmp_path, monkeypatch):
    """A batch's worker gets SIGTERM twice (its process group's, then the batch's own): the second lands
    in the cleanup of the first, and once the worker's own handler is back it exits on the spot. The
    temporary file must be gone by then."""
    seen: list[list[Path]] = []

    def workers_own(signum, frame):  # the worker's handler between two files exits on the spot
        seen.append(sorted(tmp_path.iterdir()))

    previous = signal.signal(signal.SIGTERM, workers_own)
    real_signal, real_close = fileio.signal.signal, fileio._close_quietly

    def handler_back_then_signal(signum, handler):  # the second SIGTERM arrives as the handler is given back
        was = real_signal(signum, handler)
        if handler is workers_own:
            os.kill(os.getpid(), signal.SIGTERM)
        return was

    def close_then_signal(f):  # and the cleanup of atomic_output is cut short by another
        real_close(f)
        raise fileio.Terminated(signal.SIGTERM)

    try:
        monkeypatch.setattr(fileio.signal, "signal", handler_back_then_signal)
        monkeypatch.setattr(fileio, "_close_quietly", close_then_signal)
        with pytest.raises(fileio.Terminated), fileio.terminate_cleanly():
            with fileio.atomic_output(tmp_path / "out.jsonl") as f:
                f.write(b"x")
                raise fileio.Terminated(signal.SIGTERM)
    finally:
        monkeypatch.undo()
        signal.signal(signal.SIGTERM, previous)
    assert seen == [[]]
    assert list(tmp_path.iterdir()) == []
