"""``ctxkit expand`` streams: it does not keep a parsed copy of every line it has read.

Expand reads every entry (output behind a compaction boundary counts too), but needs again only the
ones it restores. On 100,000 small Claude Code lines (18 MB), keeping each parsed line made its peak
memory grow by 6.7x the file's size; reading each once and letting it go, by under 1x (the line
index). The bound (2x) leaves room for allocator noise.
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
def test_expand_memory_does_not_follow_the_number_of_lines(tmp_path):
    ctxkit = shutil.which("ctxkit") or str(Path(sys.executable).with_name("ctxkit"))
    big, one = tmp_path / "big.jsonl", tmp_path / "one.jsonl"
    bench_memory.write_lines("claude-code", 100_000, big)
    bench_memory.write_lines("claude-code", 12, one)
    cmd = [ctxkit, "expand", "--store", str(tmp_path / "s"), "-o", str(tmp_path / "out.jsonl")]
    _, base = bench_memory.peak_rss([*cmd, str(one)])
    _, peak = bench_memory.peak_rss([*cmd, str(big)])
    assert (tmp_path / "out.jsonl").read_bytes() == big.read_bytes()  # nothing to restore: the same bytes
    growth = (peak - base) / big.stat().st_size
    assert growth < 2, f"expand held {growth:.1f}x the file's size ({peak / 2**20:.0f} MiB peak)"
