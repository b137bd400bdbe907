#!/usr/bin/env python3
"""How reading the proxy's request log back as a session (what ``simulate`` and ``report`` do with a proxy's
store: :func:`ctxkit.proxy.request_log.as_claude_code`) grows with the conversation.

    python bench/proxy_log_scaling.py [--messages N] [--runs R] [--last-mb M]

A conversation of N alternating messages (default 20,000) and one logged request per user message, then
one of 2N; the figure is the least CPU time of R runs (default 5) of each, and their ratio. Linear time
would be 2x (target: at most 2.3x; the time of each message, found by a scan of the requests, was 4x).

Then what a restarted proxy reads of a conversation's log, its first request going on from the last line
of ``messages.jsonl``: a last message of M MB (default 64; screenshots make messages megabytes large) against
2M, the same way (target: at most 2.3x; the tail searched and copied again at every 64 KiB block was 4x,
17 s for 60 MB).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def write_log(folder: Path, n: int) -> tuple[Path, Path]:
    folder.mkdir(parents=True)
    messages, requests = folder / "messages.jsonl", folder / "requests.jsonl"
    messages.write_text("".join(json.dumps({"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"}) + "\n"
                                for i in range(n)))
    requests.write_text("".join(json.dumps({"at": f"2026-03-01T10:00:{i % 60:02d}.000Z", "api": "anthropic",
                                            "model": "claude-sonnet-4-5", "usage": {"input_tokens": 9},
                                            "messages": i}) + "\n" for i in range(1, n, 2)))
    return messages, requests


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from ctxkit.proxy.request_log import as_claude_code

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--last-mb", type=int, default=64)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ctxkit-bench-") as tmp:
        logs = {"n": write_log(Path(tmp) / "n", args.messages), "2n": write_log(Path(tmp) / "2n", 2 * args.messages)}
        times: dict[str, list[float]] = {"n": [], "2n": []}
        for _ in range(args.runs):
            for size, (messages, requests) in logs.items():
                start = time.process_time()
                as_claude_code(messages, requests)
                times[size].append(time.process_time() - start)
    n, n2 = min(times["n"]), min(times["2n"])
    print(f"{args.messages:,} messages {n:.3f} s, {2 * args.messages:,} messages {n2:.3f} s CPU "
          f"(least of {args.runs}); ratio {n2 / n:.2f}")
    restart(args.last_mb, args.runs)


def restart(mb: int, runs: int) -> None:
    from ctxkit.proxy.request_log import RequestLog

    with tempfile.TemporaryDirectory(prefix="ctxkit-bench-") as tmp:
        times: dict[int, list[float]] = {mb: [], 2 * mb: []}
        for size in times:
            folder = Path(tmp) / str(size)
            folder.mkdir()
            last = json.dumps({"role": "user", "content": "x" * (size << 20)}) + "\n"
            (folder / "messages.jsonl").write_text('{"role":"user","content":"m0"}\n' + last)
            (folder / "requests.jsonl").write_text(json.dumps(
                {"messages": 2, "messages_bytes": (folder / "messages.jsonl").stat().st_size}) + "\n")
            for _ in range(runs):
                start = time.process_time()
                RequestLog(folder)._messages_written()  # what the first request after a restart reads
                times[size].append(time.process_time() - start)
    n, n2 = min(times[mb]), min(times[2 * mb])
    print(f"restart on a last message of {mb} MB {n:.3f} s, of {2 * mb} MB {n2:.3f} s CPU (least of {runs}); "
          f"ratio {n2 / max(n, 1e-9):.2f}")


if __name__ == "__main__":
    main()
