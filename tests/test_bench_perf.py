"""bench/perf.py: one command, a row registry other files add to, a table, and a failing exit code.

The rows are run in a copy of the bench folder next to a ``perf_fake.py`` whose rows measure
nothing real (fixed samples), so what is checked is the harness: rows from ``bench/perf_*.py`` are
picked up, ``--only`` selects, the table shows min / median / max of the ratios, and a row over its
target makes the command exit 1.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench"

FAKE = '''
from perf import Row, Sample

def rows(ctx):
    ratios = iter([0.5, 0.9, 0.7, 0.6])
    def fine():
        r = next(ratios)
        return Sample(r, 1.0, f"{r:.1f} s vs 1.0 s")
    return [Row("fake fine row", "time", 1.0, fine),
            Row("fake slow row", "memory", 1.0, lambda: Sample(3.0, 1.0, "3 MiB for 1 MiB"))]
'''


def _run(tmp_path: Path, only: str, *extra: str, warmup: int = 0) -> subprocess.CompletedProcess:
    folder = tmp_path / "bench"
    folder.mkdir(exist_ok=True)
    shutil.copy(BENCH / "perf.py", folder / "perf.py")
    (folder / "perf_fake.py").write_text(FAKE)
    return subprocess.run([sys.executable, str(folder / "perf.py"), "--repeat", "3", "--warmup", str(warmup),
                           "--only", only, *extra], capture_output=True, text=True, timeout=120)


def test_rows_of_other_files_are_run_and_reported(tmp_path):
    r = _run(tmp_path, "fake fine")
    assert r.returncode == 0, r.stderr
    assert "| fake fine row | 0.7 s vs 1.0 s | 0.50x / 0.70x / 0.90x | at most 1x | ok |" in r.stdout.splitlines()
    assert "slow" not in r.stdout


def test_a_row_over_its_target_fails_the_command(tmp_path):
    r = _run(tmp_path, "fake")
    assert r.returncode == 1
    assert "| fake slow row | 3 MiB for 1 MiB | 3.00x / 3.00x / 3.00x | at most 1x | **missed** |" in r.stdout


def test_samples_lists_every_sample_and_every_command_it_ran(tmp_path):
    """What a median hides: the slow sample, and whether it was user or system time."""
    r = _run(tmp_path, "fake fine", "--samples")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "fake fine row: 0.50x (0.5 s vs 1.0 s), 0.90x (0.9 s vs 1.0 s), 0.70x (0.7 s vs 1.0 s)" in lines
    commands = [line for line in lines if line.startswith("| python") or line.startswith("| ctxkit")]
    assert any("-c (import typer, rich.console)" in line for line in commands)  # the start-up warm-up
    # and every ctxkit module compiled before the rows: no first sample times the bytecode compiler
    assert any("-c (import every ctxkit module)" in line for line in commands)
    assert all(len(line.split("|")) == 6 for line in commands)  # command, user, system, peak RSS


def test_a_warm_up_pass_runs_first_and_does_not_count(tmp_path):
    """On a virtual machine the first run of a large command pays for memory the host took back: the
    warm-up pass over every row is measured, shown with --samples, and left out of the ratios."""
    r = _run(tmp_path, "fake fine", "--samples", warmup=1)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    # the first sample (0.5) went to the warm-up; the table is of the next three
    assert "| fake fine row | 0.7 s vs 1.0 s | 0.60x / 0.70x / 0.90x | at most 1x | ok |" in lines
    assert ("fake fine row: 0.90x (0.9 s vs 1.0 s), 0.70x (0.7 s vs 1.0 s), 0.60x (0.6 s vs 1.0 s); "
            "warm-up, not counted: 0.50x (0.5 s vs 1.0 s)") in lines
    assert "3 run(s) per row after 1 not counted" in r.stdout
    assert any(line.startswith("| python") and "(not counted)" in line for line in lines)  # the preparation


def test_a_selection_that_matches_no_row_is_an_error_not_a_pass(tmp_path):
    r = _run(tmp_path, "no-such-row")
    assert r.returncode == 2
    assert "no row's name has any of these words" in r.stderr


def test_a_repeat_below_one_is_refused(tmp_path):
    r = _run(tmp_path, "fake fine", "--repeat", "0")
    assert r.returncode == 2
    assert "--repeat must be at least 1" in r.stderr
