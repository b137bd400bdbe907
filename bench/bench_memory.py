#!/usr/bin/env python3
"""Benchmark: peak memory of ``ctxkit compact`` on a million tiny lines, against the file's size.

Memory should follow the view, not the number of lines. Three files of ``--lines`` lines each:

* ``claude-code``: small user/assistant entries on one chain, with a compact boundary ten lines
  before the end (the view is a handful of messages);
* ``metadata``: tiny non-conversation Claude Code lines (``progress``), then a short conversation;
* ``anthropic``: tiny plain messages. Every line is in the view here, so memory follows the
  file: shown for comparison, not bounded.

For each: the file size, the peak RSS of ``ctxkit compact --policy no-llm`` on it, the same on a
one-line file of the same kind (the interpreter and its imports), and the ratios peak/size and
(peak - one-line peak)/size, the memory that grows with the input. Usage::

    python bench/bench_memory.py [--lines 1000000] [--kinds claude-code,metadata,anthropic]
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import orjson

KINDS = ("claude-code", "metadata", "anthropic")


def write_lines(kind: str, n: int, path: Path) -> None:
    """``n`` tiny lines of ``kind`` (see the module docstring)."""
    rnd = uuid.UUID(int=0)
    with open(path, "wb", buffering=1 << 20) as f:
        if kind == "anthropic":
            user, assistant = b'{"role":"user","content":"hi"}\n', b'{"role":"assistant","content":"ok"}\n'
            for i in range(n):
                f.write(user if i % 2 == 0 else assistant)
            return
        if kind == "metadata":
            for i in range(max(0, n - 2)):
                f.write(b'{"type":"progress","n":%d}\n' % i)
            n = min(n, 2)
        parent = None
        for i in range(n):
            uid = str(uuid.UUID(int=(rnd.int + i * 0x9E3779B97F4A7C15) % (1 << 128), version=4))
            if kind == "claude-code" and i == n - 10:
                entry = {"type": "system", "subtype": "compact_boundary", "parentUuid": None, "uuid": uid,
                         "content": "Conversation compacted", "timestamp": "2026-11-29T23:00:00.000Z"}
            elif i % 2 == 0:
                entry = {"type": "user", "uuid": uid, "parentUuid": parent,
                         "message": {"role": "user", "content": "hi"}}
            else:
                entry = {"type": "assistant", "uuid": uid, "parentUuid": parent,
                         "message": {"role": "assistant", "id": f"msg_{i}", "content": [{"type": "text",
                                                                                        "text": "ok"}]}}
            f.write(orjson.dumps(entry) + b"\n")
            parent = uid


# Started from a small launcher: Linux counts the memory of the process a command was started from in
# the command's own peak (ru_maxrss carries over fork and exec), so a command started straight from a
# big process (a test runner holding 300 MiB) would report at least that much, whatever it used.
_LAUNCH = ("import os, sys\n"
           "pid = os.posix_spawnp(sys.argv[1], sys.argv[1:], os.environ)\n"
           "_, status, usage = os.wait4(pid, 0)\n"
           "print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)")


def peak_rss(cmd: list[str]) -> tuple[float, int]:
    """(seconds, peak RSS in bytes) of a command run to its end (from a small launcher, see _LAUNCH)."""
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", _LAUNCH, *cmd], capture_output=True)
    try:
        code, maxrss = (int(x) for x in proc.stdout.split())
    except ValueError:
        sys.exit(f"{' '.join(cmd)} could not be started: {proc.stderr.decode(errors='replace')}")
    if code not in (0, 1):
        sys.exit(f"{' '.join(cmd)} failed ({code}): {proc.stderr.decode(errors='replace')}")
    return time.monotonic() - start, maxrss * 1024  # ru_maxrss is in KiB on Linux


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--kinds", default=",".join(KINDS))
    args = ap.parse_args()
    ctxkit = shutil.which("ctxkit") or str(Path(sys.executable).with_name("ctxkit"))
    work = Path(tempfile.mkdtemp(prefix="ctxkit-bench-memory-"))
    try:
        print(f"{'kind':<12} {'lines':>9} {'size MiB':>9} {'peak MiB':>9} {'1-line MiB':>10} {'peak/size':>9} "
              f"{'growth/size':>11} {'time s':>7}")
        for kind in args.kinds.split(","):
            big, one = work / f"{kind}.jsonl", work / f"{kind}-1.jsonl"
            write_lines(kind, args.lines, big)
            write_lines(kind, 12 if kind == "claude-code" else 1, one)
            cmd = [ctxkit, "compact", "--policy", "no-llm", "--store", str(work / "store"), "-o", str(work / "out")]
            _, base = peak_rss([*cmd, str(one)])
            secs, peak = peak_rss([*cmd, str(big)])
            size = big.stat().st_size
            print(f"{kind:<12} {args.lines:>9,} {size / 2**20:>9.1f} {peak / 2**20:>9.1f} {base / 2**20:>10.1f} "
                  f"{peak / size:>9.2f} {(peak - base) / size:>11.2f} {secs:>7.1f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
