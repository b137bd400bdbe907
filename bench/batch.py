#!/usr/bin/env python3
"""Benchmark: ``ctxkit compact`` over a fleet of 1,000 transcripts with ``-j 1``, ``-j 2`` and a 2-worker Dask cluster.

Builds the fleet from recorded sessions in ../shared/corpus (the smaller public ones, so a run stays
within a few minutes on a shared 2-core machine): each copy gets its own session id, so each is a
session of its own in the store, and the copies go into folders of 50, each folder with its store,
as a day of a team's sessions would. Then, in the same run, on a fresh copy of the fleet each time:

* ``ctxkit compact FLEET --out-dir OUT -j 1``  (in the command's own process);
* ``ctxkit compact FLEET --out-dir OUT -j 2``  (a pool of two forked worker processes);
* ``ctxkit compact FLEET --out-dir OUT --scheduler ADDRESS`` on a ``distributed.LocalCluster`` of two
  worker processes with one thread each (started and warmed up first: a cluster outlives a run).

Every run uses ``--policy no-llm`` and a fixed ``--now``; the three runs' outputs are compared byte
for byte. Prints wall time, files/s and MB/s of each, the speed-ups over ``-j 1``, the throughput per
worker, and the load average before and after (the machine is shared: figures are noisy). Usage::

    python bench/batch.py [--files 1000] [--per-folder 50] [--keep]
"""
from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
CORPUS = Path(os.environ.get("CTXKIT_SHARED", HERE.parent.parent / "shared")) / "corpus" / "public"
SOURCES = ["spotter/short.jsonl", "spotter/tool_heavy.jsonl", "kfischer/agent-a434715.jsonl",
           "spotter/4d5611e5-241a-462a-8d15-5122611a9569/subagents/agent-acompact-e1f845.jsonl"]
NOW = "2026-12-01T12:00:00Z"


def session_ids(text: str) -> list[str]:
    ids = []
    for line in text.splitlines():
        try:
            sid = orjson.loads(line).get("sessionId")
        except (orjson.JSONDecodeError, AttributeError):
            continue
        if isinstance(sid, str) and sid not in ids:
            ids.append(sid)
    return ids


def build_fleet(root: Path, files: int, per_folder: int) -> int:
    """``files`` transcripts in folders of ``per_folder``; returns their total size in bytes."""
    texts = [(CORPUS / s).read_text(encoding="utf-8") for s in SOURCES]
    ids = [session_ids(t) for t in texts]
    total = 0
    for k in range(files):
        text = texts[k % len(texts)]
        for sid in ids[k % len(texts)]:
            text = text.replace(sid, str(uuid.UUID(int=k * 1000 + ids[k % len(texts)].index(sid) + 1)))
        folder = root / f"day{k // per_folder:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        data = text.encode("utf-8")
        (folder / f"session-{k:05d}.jsonl").write_bytes(data)
        total += len(data)
    return total


def ctxkit(args: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "ctxkit.cli.main", *args], cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if r.returncode != 0:
        sys.exit(f"ctxkit {' '.join(args)} exited {r.returncode}:\n{r.stderr[-3000:]}")
    return elapsed


def same_outputs(a: Path, b: Path) -> bool:
    names = sorted(p.relative_to(a) for p in a.rglob("*.jsonl"))
    if names != sorted(p.relative_to(b) for p in b.rglob("*.jsonl")):
        return False
    return all(filecmp.cmp(a / n, b / n, shallow=False) for n in names)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--per-folder", type=int, default=50)
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    opts = ap.parse_args()
    if not all((CORPUS / s).exists() for s in SOURCES):
        sys.exit(f"corpus not found at {CORPUS}")
    work = Path(tempfile.mkdtemp(prefix="ctxkit-bench-batch-"))
    size = build_fleet(work / "fleet", opts.files, opts.per_folder)
    load_before = os.getloadavg()
    runs: dict[str, float] = {}
    common = ["--policy", "no-llm", "--now", NOW, "--report", "none"]
    def fresh() -> None:
        """The same fleet at the same path for every run (outputs name their stores by path), stores empty."""
        shutil.rmtree(work / "run", ignore_errors=True)
        shutil.copytree(work / "fleet", work / "run")

    try:
        for name, extra in (("-j 1", ["-j", "1"]), ("-j 2", ["-j", "2"])):
            fresh()
            runs[name] = ctxkit(["compact", "run", "--out-dir", f"out{name[-1]}", *extra, *common], work)
        from distributed import Client, LocalCluster

        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                          dashboard_address=":0") as cluster, Client(cluster) as client:
            client.run(lambda: __import__("ctxkit.cli.main"))  # a cluster's workers outlive a run: warm
            fresh()
            runs["dask, 2 workers"] = ctxkit(["compact", "run", "--out-dir", "outd", "--scheduler",
                                              cluster.scheduler_address, *common], work)
        identical = same_outputs(work / "out1", work / "out2") and same_outputs(work / "out1", work / "outd")
    finally:
        load_after = os.getloadavg()
        if not opts.keep:
            shutil.rmtree(work, ignore_errors=True)
    mb = size / 1e6
    print(f"fleet: {opts.files} transcripts, {mb:.1f} MB, folders of {opts.per_folder}; cpus: {os.cpu_count()}; "
          f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f}")
    base = runs["-j 1"]
    for name, seconds in runs.items():
        workers = 1 if name == "-j 1" else 2
        print(f"{name:>16}: {seconds:6.1f} s  {opts.files / seconds:6.1f} files/s  {mb / seconds:5.2f} MB/s  "
              f"x{base / seconds:.2f} vs -j 1  ({opts.files / seconds / workers:.1f} files/s per worker)")
    print(f"outputs identical across the three runs: {identical}")
    if opts.keep:
        print(f"kept {work}")


if __name__ == "__main__":
    main()
