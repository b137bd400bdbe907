"""Memory follows the view, not the number of lines (bench/bench_memory.py measures a million lines).

``ctxkit compact`` runs in a subprocess on 100,000 tiny lines whose view is small (a Claude Code
chain with a compact boundary near the end; tiny metadata lines), and on a one-line file of the
same kind; the difference of their peak RSS is what the lines cost. Before the line index was
made of compact arrays it was 8x (claude-code) and 23x (metadata) the file's size; now about 1.3x.
The bound is loose (3x) so that allocator noise cannot fail it.
"""
from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench" / "bench_memory.py"
_spec = importlib.util.spec_from_file_location("bench_memory", BENCH)
bench_memory = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_memory)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ru_maxrss in KiB is Linux's")
@pytest.mark.parametrize("kind", ["claude-code", "metadata"])
def test_a_hundred_thousand_tiny_lines_cost_about_their_size(tmp_path, kind):
    ctxkit = shutil.which("ctxkit") or str(Path(sys.executable).with_name("ctxkit"))
    big, one = tmp_path / "big.jsonl", tmp_path / "one.jsonl"
    bench_memory.write_lines(kind, 100_000, big)
    bench_memory.write_lines(kind, 12 if kind == "claude-code" else 1, one)
    cmd = [ctxkit, "compact", "--policy", "no-llm", "--store", str(tmp_path / "s"), "-o", str(tmp_path / "out")]
    _, base = bench_memory.peak_rss([*cmd, str(one)])
    _, peak = bench_memory.peak_rss([*cmd, str(big)])
    growth = (peak - base) / big.stat().st_size
    assert growth < 3, f"{kind}: the lines cost {growth:.1f}x the file's size ({peak / 2**20:.0f} MiB peak)"
