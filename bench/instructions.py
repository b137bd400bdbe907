#!/usr/bin/env python3
"""The work of the big compact rows counted in instructions: what CPU seconds cannot show on a noisy machine.

    python bench/instructions.py [--quick] [--input FILE]

``bench/perf.py`` times its rows in CPU seconds, as the targets are set. On a shared virtual machine
the same command's CPU time moves by a third from one minute to the next (the kernel's time for
memory the host took back, caches other guests filled), so a change worth a few percent does not show
in a median of three. This counts what the program does instead: the instructions it executes, under
valgrind's ``callgrind`` (user space only; valgrind must be installed). The count of one command is
the same run after run to within a fraction of a percent, so two versions of ctxkit can be compared on
it, and so can ctxkit and its baseline. The rows' targets stay in CPU seconds (``perf.py``).

It counts ``ctxkit compact`` (the same options as ``perf.py``'s compact rows) and the orjson
read+write baseline on the "all one view" input ``perf.py`` builds (50 MB; 12.5 MB with ``--quick``;
or ``--input`` a transcript of your own), each once after an untimed run that compiles the modules,
and prints both counts and their ratio. Valgrind runs programs about fifty times slower: the full
size takes about two minutes.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from perf import BUSY, ORJSON_FLOOR, Context  # noqa: E402  (bench/ is not a package)

_COLLECTED = re.compile(rb"Collected\s*:\s*(\d+)")


def run_once(name: str, cmd: list[str], env: dict[str, str], ok: tuple[int, ...]) -> None:
    """Run ``cmd`` once, not counted (its modules get compiled); stop with its own error unless it
    exits with one of ``ok``."""
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    if proc.returncode not in ok:
        sys.exit(f"{name} exited {proc.returncode}: {proc.stderr.decode(errors='replace')[-600:]}")


def instructions(name: str, cmd: list[str], env: dict[str, str], ok: tuple[int, ...]) -> int:
    """The number of instructions ``cmd`` executes (callgrind's total); it must exit with one of ``ok``."""
    proc = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    found = _COLLECTED.findall(proc.stderr)
    if proc.returncode not in ok or not found:
        sys.exit(f"{name} under valgrind exited {proc.returncode}: "
                 f"{proc.stderr.decode(errors='replace')[-600:]}")
    return int(found[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="an input a quarter of the size")
    ap.add_argument("--input", help="count on this transcript instead of a built one")
    args = ap.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (Debian: apt-get install -y valgrind)")
    if args.input and not Path(args.input).is_file():
        sys.exit(f"--input {args.input}: no such file")
    work = Path(tempfile.mkdtemp(prefix="ctxkit-instructions-"))
    try:
        ctx = Context(work, 0.25 if args.quick else 1.0)
        source = Path(args.input) if args.input else ctx.session(50, boundary_every=0)
        out, store = work / "out.jsonl", work / "store"
        compact = [ctx.ctxkit_python, *ctx.ctxkit, "compact", str(source), "-o", str(out), "--store", str(store), *BUSY]
        floor = [ctx.python, "-c", ORJSON_FLOOR, str(source), str(work / "floor.out")]
        counts = {}
        # ctxkit exits 1 when it did its job and a check failed; the floor must read every line
        for name, cmd, ok in (("ctxkit compact", compact, (0, 1)), ("orjson read+write", floor, (0,))):
            shutil.rmtree(store, ignore_errors=True)
            run_once(name, cmd, ctx.env, ok)
            shutil.rmtree(store, ignore_errors=True)
            counts[name] = instructions(name, cmd, ctx.env, ok)
        size = os.path.getsize(source)
        print(f"{source.name} ({size / 2**20:.1f} MiB), instructions executed (valgrind callgrind):\n")
        print("| command | instructions |\n| --- | --- |")
        for name, n in counts.items():
            print(f"| {name} | {n:,} |")
        print(f"\nratio: {counts['ctxkit compact'] / counts['orjson read+write']:.2f}x")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
