#!/usr/bin/env python3
"""How ``ctxkit simulate``'s CPU time grows with the session: the longest public session against the
same session cut just before the first line of the middle one of its main-chain requests.

    python bench/simulate_scaling.py [SESSION] [--runs N]

SESSION defaults to ``../shared/corpus/public/spotter/4d5611e5-….jsonl`` (copied, so that its
subagent files beside it are not read). Each size is simulated N times (default 5) under the default policy, in
process (imports done once, before), alternating the two; the figure is the least CPU time of each
(``time.process_time``: other work on a shared machine inflates a run, never shrinks it), and their
ratio. Linear time would be 2x for twice the requests (target: at most 2.3x).
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

        def cpu(path: Path) -> float:
            start = time.process_time()
            simulate([str(path)], [("default", policy)], prices, cwd=Path(tmp))
            return time.process_time() - start

        cpu(half)  # warm: imports, the pricing table
        times: dict[str, list[float]] = {"half": [], "full": []}
        for _ in range(args.runs):
            times["half"].append(cpu(half))
            times["full"].append(cpu(full))
    h, f = min(times["half"]), min(times["full"])
    print(f"{Path(args.session).name}: {len(points)} requests, cut after {len(points) // 2}")
    print(f"half {h:.2f} s, full {f:.2f} s CPU (least of {args.runs}); ratio {f / h:.2f}")


if __name__ == "__main__":
    main()
