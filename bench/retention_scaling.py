#!/usr/bin/env python3
"""How retention probing grows with the number of messages: linear, not quadratic.

    python bench/retention_scaling.py [--sizes 10000,30000,100000] [--cli]

A plain message list of N one-word messages (``w0``, ``w1``, ...) has N/2 prompt probes and as many
identifiers, and a compaction that keeps the second half has a view of N/2 messages: one search of
the view per probe made this quadratic (30,000 messages: 45 s, 100,000: 484 s). For each size this
prints the CPU seconds of :func:`ctxkit.summarize.retention.measure` (with ``--cli``: of
``ctxkit stats`` on the list, which compacts it in simulation) and the ratio to the previous size
over the ratio of the sizes: about 1 when linear, about the size ratio when quadratic. Exits 1 when
a step grows more than twice as fast as the size.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def messages(n: int) -> list[dict]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": f"w{i}"} for i in range(n)]


def measure_seconds(n: int) -> float:
    from ctxkit.summarize.retention import measure

    history = messages(n)
    started = time.process_time()
    measure(history, history[n // 2:])
    return time.process_time() - started


def cli_seconds(n: int, folder: Path) -> float:
    path = folder / f"plain{n}.jsonl"
    path.write_text("".join(json.dumps(m) + "\n" for m in messages(n)))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "ctxkit.cli.main", "stats", str(path)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "NO_COLOR": "1"})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,30000,100000")
    ap.add_argument("--cli", action="store_true", help="time `ctxkit stats` on the list instead of measure()")
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    worst = 0.0
    previous: tuple[int, float] | None = None
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            seconds = cli_seconds(n, Path(tmp)) if args.cli else measure_seconds(n)
            growth = ""
            if previous is not None and previous[1] > 0:
                factor = (seconds / previous[1]) / (n / previous[0])
                worst = max(worst, factor)
                growth = f"  x{seconds / previous[1]:.1f} for x{n / previous[0]:.1f} messages (growth/size {factor:.2f})"
            print(f"{n:>8,} messages: {seconds:6.2f} s{growth}")
            previous = (n, seconds)
    print("linear" if worst <= 2 else "faster than linear growth")
    return 0 if worst <= 2 else 1


if __name__ == "__main__":
    sys.exit(main())
