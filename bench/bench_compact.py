#!/usr/bin/env python3
"""Benchmark: ``ctxkit compact`` on a ~200 MB Claude Code transcript against a plain orjson read+write.

Builds the transcript from the recorded sessions in ../shared/corpus (each copy
gets fresh uuids, message ids and tool ids, and chains onto the previous one;
every ``--copies-per-boundary`` copies a compact boundary starts a new chain, as
in a long real session), then, in the same run:

* baseline: a Python process that parses every line with orjson and writes it back;
* ctxkit:   ``ctxkit compact --policy no-llm`` on the same file, with a fixed clock a day later and a
            50,000-token window, so that microcompact and autocompact (extractive) both work.

Prints wall time of each, the ratio ctxkit/baseline, and each one's peak memory
(max RSS) and its ratio to the file size. Usage::

    python bench/bench_compact.py [--size-mb 200] [--repeat 1] [--keep]
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
CORPUS = Path(os.environ.get("CTXKIT_SHARED", HERE.parent.parent / "shared")) / "corpus" / "claude-code-2.1.328"

BASELINE = r"""
import sys, orjson
with open(sys.argv[1], 'rb') as f, open(sys.argv[2], 'wb') as out:
    for line in f:
        out.write(orjson.dumps(orjson.loads(line)))
        out.write(b'\n')
"""


def _suffix_ids(value, suffix: str, keys=("uuid", "parentUuid", "id", "tool_use_id", "sourceToolAssistantUUID",
                                          "leafUuid", "logicalParentUuid", "headUuid", "anchorUuid", "tailUuid")):
    if isinstance(value, dict):
        return {k: (v + suffix if k in keys and isinstance(v, str) else _suffix_ids(v, suffix)) for k, v in value.items()}
    if isinstance(value, list):
        return [_suffix_ids(v, suffix) for v in value]
    return value


def build(target: Path, size_mb: int, copies_per_boundary: int) -> int:
    sessions = []
    for d in sorted(CORPUS.iterdir()):
        if (d / "session.jsonl").exists():
            sessions.append([orjson.loads(line) for line in (d / "session.jsonl").read_bytes().splitlines() if line.strip()])
    if not sessions:
        sys.exit(f"no corpus sessions in {CORPUS}")
    written = copy = 0
    leaf = None
    with open(target, "wb") as out:
        while written < size_mb * 1024 * 1024:
            entries = sessions[copy % len(sessions)]
            suffix = f"-c{copy}"
            if copy % copies_per_boundary == 0 and copy:
                boundary = {"type": "system", "subtype": "compact_boundary", "parentUuid": None,
                            "logicalParentUuid": leaf, "uuid": f"boundary{suffix}", "isSidechain": False,
                            "content": "Conversation compacted", "compactMetadata": {"trigger": "auto"},
                            "timestamp": "2026-11-29T23:00:00.000Z"}
                summary = {"type": "user", "parentUuid": boundary["uuid"], "uuid": f"summary{suffix}",
                           "isSidechain": False, "isCompactSummary": True, "timestamp": "2026-11-29T23:00:00.000Z",
                           "message": {"role": "user", "content": "This session is being continued from a previous "
                                       "conversation that ran out of context. Summary: benchmark."}}
                for e in (boundary, summary):
                    line = orjson.dumps(e) + b"\n"
                    out.write(line)
                    written += len(line)
                leaf = summary["uuid"]
            for e in entries:
                e = _suffix_ids(e, suffix)
                if e.get("parentUuid") is None and "uuid" in e and e.get("type") != "system":
                    e["parentUuid"] = leaf
                if e.get("type") == "system" and e.get("subtype") == "compact_boundary":
                    e = {**e, "subtype": "informational"}  # keep the corpus's own boundaries out of the chain logic
                    e["parentUuid"] = leaf
                line = orjson.dumps(e) + b"\n"
                out.write(line)
                written += len(line)
                if e.get("type") in ("user", "assistant", "attachment") and not e.get("isSidechain"):
                    leaf = e["uuid"]
            copy += 1
    return written


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mb", type=int, default=200)
    ap.add_argument("--copies-per-boundary", type=int, default=10)
    ap.add_argument("--context-window", type=int, default=50_000)
    ap.add_argument("--keep", action="store_true", help="keep the built transcript")
    args = ap.parse_args()
    ctxkit = shutil.which("ctxkit") or str(Path(sys.executable).with_name("ctxkit"))
    work = Path(tempfile.mkdtemp(prefix="ctxkit-bench-"))
    try:
        src = work / "big.jsonl"
        size = build(src, args.size_mb, args.copies_per_boundary)
        print(f"transcript: {size / 1e6:.1f} MB, {sum(1 for _ in open(src, 'rb')):,} lines")
        # each measurement in its own child, so that peak RSS is per process (baseline first)
        base_t, base_rss = _measure([sys.executable, "-c", BASELINE, str(src), os.devnull])
        # a fixed clock a day after the recording (the prompt cache is cold: microcompact fires) and a
        # window small enough that autocompact (extractive summarizer) fires too: every stage works
        ck_t, ck_rss = _measure([ctxkit, "compact", str(src), "--policy", "no-llm", "--store", str(work / "store"),
                                 "--now", "2026-12-01T00:00:00Z", "--context-window", str(args.context_window),
                                 "--report", "none", "-o", str(work / "out.jsonl")])
        mb = size / (1024 * 1024)
        print(f"baseline orjson read+write: {base_t:6.2f} s, peak RSS {base_rss / 1024:7.1f} MiB")
        print(f"ctxkit compact (no-llm):    {ck_t:6.2f} s, peak RSS {ck_rss / 1024:7.1f} MiB")
        print(f"time ratio ctxkit/baseline: {ck_t / base_t:.2f}x")
        print(f"ctxkit peak memory / file size: {ck_rss / 1024 / mb:.2f}x")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"kept {work}")


def _measure(cmd: list[str]) -> tuple[float, int]:
    """Run ``cmd`` under a tiny wrapper that reports its own peak RSS (children's max RSS is cumulative)."""
    wrapper = ("import resource,subprocess,sys,time;t=time.perf_counter();"
               "r=subprocess.run(sys.argv[1:],stderr=subprocess.PIPE);"
               "e=time.perf_counter()-t;"
               "sys.stderr.write(r.stderr.decode()[-400:]) if r.returncode not in (0,1) else None;"
               "print(e, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, r.returncode)")
    out = subprocess.run([sys.executable, "-c", wrapper, *cmd], capture_output=True, text=True, check=True)
    elapsed, rss, rc = out.stdout.split()
    if int(rc) not in (0, 1):
        sys.exit(f"{cmd[0]} exited {rc}: {out.stderr}")
    return float(elapsed), int(rss)


if __name__ == "__main__":
    main()
