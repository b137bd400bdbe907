#!/usr/bin/env python3
"""How ``ctxkit simulate``'s CPU time grows with the session: the longest public session against the
same session cut just before the first line of the middle one of its main-chain requests.

    python bench/simulate_scaling.py [SESSION] [--runs N]

SESSION defaults to ``../shared/corpus/public/spotter/4d5611e5-….jsonl`` (copied, so that its
subagent files beside it are not read). Each size is simulated N times (default 5) under the default policy, in
process (imports done once, before), alternating the two; the figure is the least CPU time of each
(``time.process_time``: other work on a shared machine inflates a run, never shrinks it), and their
ratio. Linear time would be 2x for twice the requests (target: at most 2.3x). The policy's steps of
that least run of the whole session are added up by half, with the slowest one: a step that does more
than its lines (a compaction) shows there, apart from the growth.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT.parent / "shared" / "corpus" / "public" / "spotter" / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from ctxkit import load_policy
    from ctxkit.reports import replay
    from ctxkit.reports.pricing import load_pricing
    from ctxkit.reports.simulate import simulate
    from ctxkit.reports.usage import recorded_requests
    from ctxkit.transcript import read_transcript

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("session", nargs="?", default=str(DEFAULT))
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    full = Path(args.session)
    points = [r for r in recorded_requests(read_transcript(full)) if not r.sidechain]
    with tempfile.TemporaryDirectory(prefix="ctxkit-bench-") as tmp:
        half = Path(tmp) / "half.jsonl"
        lines = full.read_bytes().splitlines(keepends=True)
        half.write_bytes(b"".join(lines[:points[len(points) // 2].first_entry]))
        full = Path(tmp) / "full.jsonl"  # a copy: the subagent files beside the session are not read
        full.write_bytes(b"".join(lines))
        policy = load_policy(None, [], cwd=Path(tmp))
        prices = load_pricing()

        steps: list[float] = []  # the CPU time of each policy step of the run under way
        step = replay.PolicyReplay.step

        def timed(self, *a, **k):
            start = time.process_time()
            try:
                return step(self, *a, **k)
            finally:
                steps.append(time.process_time() - start)

        replay.PolicyReplay.step = timed  # type: ignore[method-assign]

        def cpu(path: Path) -> tuple[float, list[float]]:
            steps.clear()
            start = time.process_time()
            simulate([str(path)], [("default", policy)], prices, cwd=Path(tmp))
            return time.process_time() - start, list(steps)

        cpu(half)  # warm: imports, the pricing table
        times: dict[str, list[tuple[float, list[float]]]] = {"half": [], "full": []}
        for _ in range(args.runs):
            times["half"].append(cpu(half))
            times["full"].append(cpu(full))
    h, (f, per_step) = min(times["half"])[0], min(times["full"])
    cut = len(points) // 2
    slowest = max(range(len(per_step)), key=per_step.__getitem__)
    print(f"{Path(args.session).name}: {len(points)} requests, cut after {cut}")
    print(f"half {h:.2f} s, full {f:.2f} s CPU (least of {args.runs}); ratio {f / h:.2f}")
    print(f"the full run's policy steps: {sum(per_step[:cut]):.2f} s for the first {cut}, "
          f"{sum(per_step[cut:]):.2f} s for the rest; the slowest, request {slowest + 1}: {per_step[slowest]:.2f} s")


if __name__ == "__main__":
    main()
