#!/usr/bin/env python3
"""What a compaction of a long plain message list costs in the store: files written and seconds.

    nice python bench/plain_list_store.py [--messages 30000]

A plain list written by ``json.dumps`` (``{"role": "user", "content": "w0"}``: spaces after the
separators) is not in compact form, so every line a compaction removes has its exact bytes kept in
the store for ``ctxkit expand`` (:mod:`ctxkit.store.original_lines`). Kept one file per line (each
written atomically, fsynced), a compaction of 30,000 one-word messages took minutes; kept one pack
per run, seconds. This runs ``ctxkit compact --force`` on such a list (the extractive summarizer of
the default policy: no network) and ``ctxkit expand`` on its output, checks the expansion gives the
input back byte for byte, and prints the wall and CPU seconds of each and the files in the store.
Exits 1 when the expansion differs.
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


def run(args: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of ``ctxkit ARGS``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "ctxkit.cli.main", *args], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, env={**os.environ, "NO_COLOR": "1"})
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=30000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        plain, out, back, store = folder / "plain.jsonl", folder / "out.jsonl", folder / "back.jsonl", folder / "store"
        plain.write_text("".join(json.dumps({"role": "user" if i % 2 == 0 else "assistant", "content": f"w{i}"}) + "\n"
                                 for i in range(args.messages)))
        wall, cpu = run(["compact", str(plain), "--store", str(store), "--force", "-o", str(out)])
        files = sum(len(names) for _, _, names in os.walk(store))
        print(f"compact: {args.messages:,} messages in {wall:.1f} s ({cpu:.1f} s CPU); {files:,} files in the store")
        wall, cpu = run(["expand", str(out), "--store", str(store), "-o", str(back)])
        same = back.read_bytes() == plain.read_bytes()
        print(f"expand: {wall:.1f} s ({cpu:.1f} s CPU); the input back byte for byte: {'yes' if same else 'NO'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
