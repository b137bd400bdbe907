#!/usr/bin/env python3
"""Benchmark row: the second ``ctxkit compact`` after one new turn, on a 190 MB session and on a 3 MB one.

ctxkit runs after every agent turn, so the run that matters is the one after the agent appended a
turn to a session ctxkit has compacted before (same store). Both sessions are built from the
recorded sessions of the corpus (fresh ids per copy: :func:`bench_compact.build`); for each:

1. ``ctxkit compact SESSION -o OUT`` (the first run: reads everything, keeps checkpoints);
2. one new turn (a user prompt and the assistant's answer, chained onto the leaf) is appended to
   the session;
3. timed: ``ctxkit compact SESSION -o OUT`` again, same store.

The row is the time of step 3 on 190 MB over the time of step 3 on 3 MB (target: at most 2x): with
checkpoints the second run reads only the new turn, and copies the unchanged bytes in the kernel.
The same step with ``--no-checkpoint`` is printed beside it, for reference.

Run alone (``python bench/perf_incremental.py [--repeat N] [--big-mb 190] [--small-mb 3]``) or from
the bench driver, which calls :func:`rows`. Timings are wall-clock seconds of a child process, noisy on
a shared machine: the load average is printed with them.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_compact import build  # noqa: E402  (the one builder of corpus-derived sessions)

NAME = "second compact after one new turn, 190 MB vs 3 MB (same store)"
TARGET = 2.0
_TURN = 0


def new_turn(path: Path) -> None:
    """Append one turn to a Claude Code session: a user prompt and the assistant's answer, chained onto
    the leaf, with the envelope fields of the last conversation entry."""
    global _TURN
    _TURN += 1
    last = None
    with open(path, "rb") as f:
        f.seek(max(0, os.path.getsize(path) - (4 << 20)))
        for line in f.read().splitlines()[1:]:
            try:
                d = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if d.get("type") in ("user", "assistant", "attachment") and not d.get("isSidechain") and d.get("uuid"):
                last = d
    if last is None:
        raise SystemExit(f"{path}: no conversation entry to chain onto")
    env = {k: last[k] for k in ("userType", "entrypoint", "cwd", "sessionId", "version", "gitBranch") if k in last}
    tag = f"bench-turn-{os.getpid()}-{_TURN}-{time.monotonic_ns()}"
    user = {"parentUuid": last["uuid"], "isSidechain": False, **env, "type": "user", "uuid": f"{tag}-u",
            "timestamp": "2026-11-30T12:00:00.000Z", "message": {"role": "user", "content": "One more thing: "
                                                                 "summarize what changed."}}
    answer = {"parentUuid": user["uuid"], "isSidechain": False, **env, "type": "assistant", "uuid": f"{tag}-a",
              "timestamp": "2026-11-30T12:00:05.000Z",
              "message": {"id": f"msg_{tag}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                          "content": [{"type": "text", "text": "The models and views were edited; tests pass."}],
                          "stop_reason": "end_turn", "usage": {"input_tokens": 10, "output_tokens": 12}}}
    with open(path, "ab") as f:
        f.write(orjson.dumps(user) + b"\n" + orjson.dumps(answer) + b"\n")


def _ctxkit() -> list[str]:
    exe = shutil.which("ctxkit") or str(Path(sys.executable).with_name("ctxkit"))
    return [exe] if os.path.exists(exe) else [sys.executable, "-m", "ctxkit.cli.main"]


def _compact(session: Path, out: Path, store: Path, *extra: str) -> float:
    cmd = [*_ctxkit(), "compact", str(session), "--policy", "no-llm", "--store", str(store),
           "--now", "2026-12-01T00:00:00Z", "--report", "none", "-o", str(out), *extra]
    t = time.perf_counter()
    r = subprocess.run(cmd, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - t
    if r.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} exited {r.returncode}: {r.stderr.decode()[-600:]}")
    return elapsed


def second_run(work: Path, size_mb: int, repeat: int) -> tuple[list[float], list[float]]:
    """Times of the second run after one new turn (with checkpoints, and with ``--no-checkpoint``)."""
    session = work / f"session-{size_mb}.jsonl"
    build(session, size_mb, 10)
    store, out = work / f"store-{size_mb}", work / f"out-{size_mb}.jsonl"
    _compact(session, out, store)  # the first run
    resumed, full = [], []
    for _ in range(repeat):
        new_turn(session)
        resumed.append(_compact(session, out, store))
        new_turn(session)
        full.append(_compact(session, out, store, "--no-checkpoint"))
    return resumed, full


def rows(ctx: dict | None = None) -> list[dict]:
    """The row for the bench driver: ``{"name", "value", "baseline", "ratio", "target"}`` (seconds;
    ``value`` and ``baseline`` are medians over ``ctx["repeat"]`` runs), plus min/median/max of the ratio."""
    ctx = ctx or {}
    repeat = int(ctx.get("repeat", 3))
    work = Path(ctx["workdir"]) if ctx.get("workdir") else Path(tempfile.mkdtemp(prefix="ctxkit-bench-incr-"))
    try:
        big, big_full = second_run(work, int(ctx.get("big_mb", 190)), repeat)
        small, small_full = second_run(work, int(ctx.get("small_mb", 3)), repeat)
    finally:
        if not ctx.get("workdir"):
            shutil.rmtree(work, ignore_errors=True)
    ratios = sorted(b / s for b, s in zip(big, small, strict=True))
    return [{"name": NAME, "value": statistics.median(big), "baseline": statistics.median(small),
             "ratio": statistics.median(big) / statistics.median(small), "target": TARGET,
             "ratios": {"min": ratios[0], "median": statistics.median(ratios), "max": ratios[-1]},
             "without_checkpoint": {"big": statistics.median(big_full), "small": statistics.median(small_full)},
             "load": os.getloadavg()}]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--big-mb", type=int, default=190)
    ap.add_argument("--small-mb", type=int, default=3)
    args = ap.parse_args()
    load_before = os.getloadavg()
    for row in rows({"repeat": args.repeat, "big_mb": args.big_mb, "small_mb": args.small_mb}):
        r = row["ratios"]
        print(f"{row['name']}: {row['value']:.2f} s vs {row['baseline']:.2f} s = {row['ratio']:.2f}x "
              f"(target at most {row['target']:.1f}x; ratio min/median/max {r['min']:.2f}/{r['median']:.2f}/"
              f"{r['max']:.2f} over {args.repeat} runs)")
        print(f"  the same second run with --no-checkpoint: {row['without_checkpoint']['big']:.2f} s vs "
              f"{row['without_checkpoint']['small']:.2f} s")
        print(f"  load average before/after: {' '.join(f'{x:.1f}' for x in load_before)} / "
              f"{' '.join(f'{x:.1f}' for x in row['load'])} ({os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
