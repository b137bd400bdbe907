#!/usr/bin/env python3
"""The proxy's work per request counted in instructions: what its CPU time cannot show on a noisy machine.

``bench/proxy_load.py`` prints the proxy's CPU time per request, which on a shared virtual machine moves
by half from one minute to the next. This runs ``ctxkit proxy --policy no-llm`` under valgrind's
``callgrind`` (user space only: the kernel's share of the socket work is not counted) and sends it, one
at a time, the same growing conversation as ``proxy_load.py``, twice: ``--first`` requests, then
``--first + --requests``; the difference of the two counts over ``--requests`` is the instructions of one
request of the series' later part (bodies of 120–240 KB at the defaults), start-up and imports cancelled
out. ``--old DIR`` counts another copy of ctxkit too (``git archive main | tar -x -C DIR``), run from
that folder, and prints the ratio. Valgrind runs programs about fifty times slower: a few minutes.

    python bench/proxy_instructions.py [--first 100] [--requests 100] [--old DIR]
"""
from __future__ import annotations

import argparse
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx2
from proxy_load import body, conversation, free_port, stand_in

ROOT = Path(__file__).resolve().parent.parent
_COLLECTED = re.compile(r"Collected\s*:\s*(\d+)")


def count(tree: Path, upstream: str, requests: int) -> int:
    """The instructions ``ctxkit proxy`` (run from ``tree``) executes serving ``requests`` requests."""
    port = free_port()
    store = tempfile.mkdtemp(prefix="ctxkit-proxy-instr-")
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-m", "ctxkit.cli.main",
           "proxy", "--listen", f"127.0.0.1:{port}", "--upstream", upstream, "--policy", "no-llm", "--store", store,
           "--report", "json"]
    proc = subprocess.Popen(cmd, cwd=tree, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    ready = threading.Event()

    def read() -> None:
        for line in proc.stderr:
            lines.append(line)
            if "listening on" in line:
                ready.set()
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        if not ready.wait(600):
            sys.exit("the proxy did not start under valgrind:\n" + "".join(lines[-20:]))
        talk = conversation("serial", requests + 1)
        with httpx2.Client(timeout=300) as client:
            for k in range(requests):
                r = client.post(f"http://127.0.0.1:{port}/v1/messages?beta=true", content=body(talk[:2 * k + 3], "serial"),
                                headers={"x-api-key": "sk-ant-bench"})
                if r.status_code != 200:
                    sys.exit(f"request {k + 1}: status {r.status_code}")
        proc.send_signal(signal.SIGTERM)
        proc.wait(600)
    finally:
        if proc.poll() is None:
            proc.kill()
    reader.join(10)
    found = [int(m.group(1)) for line in lines for m in [_COLLECTED.search(line)] if m]
    if not found:
        sys.exit("valgrind printed no count:\n" + "".join(lines[-20:]))
    return found[-1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--first", type=int, default=100)
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--old", type=Path, help="another copy of ctxkit's tree to count the same way")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (Debian: apt-get install -y valgrind)")
    trees = [("this tree", ROOT)] + ([("--old", args.old.resolve())] if args.old else [])
    per: dict[str, float] = {}
    with stand_in() as upstream:
        time.sleep(1)
        for name, tree in trees:
            short = count(tree, upstream, args.first)
            long = count(tree, upstream, args.first + args.requests)
            per[name] = (long - short) / args.requests
            print(f"{name} ({tree}): {per[name] / 1e6:.2f} M instructions per request "
                  f"(requests {args.first + 1}–{args.first + args.requests} of the series; "
                  f"{short:,} for {args.first}, {long:,} for {args.first + args.requests})", flush=True)
    if args.old:
        print(f"ratio this tree / --old: {per['this tree'] / per['--old']:.2f}")
    return 0

if __name__ == "__main__":
    sys.exit(main())
