#!/usr/bin/env python3
"""Benchmark: ``ctxkit proxy`` under load, and the latency it adds over going direct (loopback only).

Starts the tests' stand-in Messages API (``tests/proxy_upstream.py``, a uvicorn process answering every
request with a short SSE stream) and ``ctxkit proxy --policy no-llm`` in front of it, each a process of its
own, then in the same run:

* two bursts of ``--burst`` (50) concurrent streamed requests through the proxy, each its own
  conversation of 20 messages: every one must be answered 200 with the stream byte for byte;
* ``--requests`` (200) requests one at a time, alternating direct and through the proxy, on one
  conversation growing by two messages a request (as an agent's does): the median and p99 of each, and
  the proxy's added latency at both (targets: ≤ 5 ms at the median, ≤ 25 ms at p99).

Bounded: at most ``2 × burst + 2 × requests`` requests, each with a 60 s timeout. Usage::

    python bench/proxy_load.py [--burst 50] [--requests 200]
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx2

HERE = Path(__file__).resolve().parent
UPSTREAM = HERE.parent / "tests" / "proxy_upstream.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_ms(pid: int) -> float | None:
    """The CPU time (user + system) process ``pid`` has used, in ms (Linux ``/proc``; None elsewhere): what the
    proxy itself spends, which the machine's load does not inflate as it does wall-clock latency."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def stand_in():
    """The tests' stand-in Messages API in a process of its own, answering every request with a short
    stream: its URL (bench/proxy_relay.py, bench/proxy_instructions.py)."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(UPSTREAM), str(port)], cwd=UPSTREAM.parent)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(15)


def conversation(name: str, turns: int) -> list[dict]:
    msgs: list[dict] = [{"role": "user", "content": f"Conversation {name}: fix the tests."}]
    for k in range(turns):
        tid = f"toolu_{name}_{k}"
        msgs.append({"role": "assistant", "content": [{"type": "text", "text": f"Step {k}."},
                     {"type": "tool_use", "id": tid, "name": "Bash", "input": {"command": f"pytest -k case{k}"}}]})
        msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid,
                                                  "content": f"case{k} passed\n" * 60}]})
    return msgs


def body(messages: list[dict], user: str) -> bytes:
    return json.dumps({"model": "claude-sonnet-4-5", "max_tokens": 1000, "stream": True, "messages": messages,
                       "metadata": {"user_id": user}}).encode()


async def streamed(client: httpx2.AsyncClient, url: str, content: bytes) -> tuple[int, bytes, float]:
    start = time.perf_counter()
    async with client.stream("POST", url + "/v1/messages?beta=true", content=content,
                             headers={"x-api-key": "sk-ant-bench"}) as r:
        data = b"".join([chunk async for chunk in r.aiter_raw()])
    return r.status_code, data, (time.perf_counter() - start) * 1000


async def run(args) -> int:
    up_port = free_port()
    store = tempfile.mkdtemp(prefix="ctxkit-proxy-bench-")
    upstream = subprocess.Popen([sys.executable, str(UPSTREAM), str(up_port)], cwd=UPSTREAM.parent)
    direct = f"http://127.0.0.1:{up_port}"
    proxy = subprocess.Popen([sys.executable, "-m", "ctxkit.cli.main", "proxy", "--listen", "127.0.0.1:0",
                              "--upstream", direct, "--policy", "no-llm", "--store", store, "--report", "json"],
                             stdout=open(Path(store) / "records.jsonl", "w"), stderr=subprocess.PIPE, text=True)
    try:
        line = proxy.stderr.readline()
        found = re.search(r"listening on (http://\S+?),", line)
        if not found:
            print("the proxy did not start:", line, proxy.stderr.read(), file=sys.stderr)
            return 1
        via = found.group(1)
        transport = httpx2.AsyncHTTPTransport(limits=httpx2.Limits(max_connections=None),
                                              socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])
        async with httpx2.AsyncClient(timeout=60, transport=transport) as client:
            for _ in range(100):  # the stand-in is up
                try:
                    await client.get(direct + "/")
                    break
                except httpx2.HTTPError:
                    await asyncio.sleep(0.1)
            _, expected, _ = await streamed(client, direct, body(conversation("warm", 1), "warm"))
            failures = 0
            for burst in (1, 2):
                start = time.perf_counter()
                results = await asyncio.gather(*[streamed(client, via, body(conversation(f"b{burst}c{i}", 10),
                                                                            f"b{burst}c{i}"))
                                                 for i in range(args.burst)])
                ok = sum(status == 200 and data == expected for status, data, _ in results)
                failures += args.burst - ok
                print(f"burst {burst}: {ok}/{args.burst} concurrent streamed requests answered byte for byte in "
                      f"{(time.perf_counter() - start) * 1000:.0f} ms")
            talk = conversation("serial", args.requests + 1)
            for k in range(10):  # warm-up (first calls import and load lazily), not counted
                await streamed(client, via, body(conversation("warm", k + 1), "warm"))
            d_ms, p_ms = [], []
            cpu_before = cpu_ms(proxy.pid)
            for k in range(args.requests):
                messages = talk[:2 * k + 3]
                for url, into in ((direct, d_ms), (via, p_ms)):
                    status, data, ms = await streamed(client, url, body(messages, "serial"))
                    failures += status != 200 or data != expected
                    into.append(ms)
            cpu_after = cpu_ms(proxy.pid)
        q = lambda xs, p: statistics.quantiles(xs, n=100, method="inclusive")[p - 1]  # noqa: E731
        med = statistics.median(p_ms) - statistics.median(d_ms)
        p99 = q(p_ms, 99) - q(d_ms, 99)
        print(f"one at a time, {args.requests} requests each way, the conversation growing to {len(messages)} "
              f"messages:")
        print(f"  direct   median {statistics.median(d_ms):6.2f} ms  p99 {q(d_ms, 99):6.2f} ms")
        print(f"  proxied  median {statistics.median(p_ms):6.2f} ms  p99 {q(p_ms, 99):6.2f} ms")
        print(f"  added    median {med:6.2f} ms (target ≤ 5)  p99 {p99:6.2f} ms (target ≤ 25)")
        records = [json.loads(x) for x in (Path(store) / "records.jsonl").read_text().splitlines()]
        inside = [r["ms"] for r in records if r["conversation"] and r["tokens_in"] and r["path"].endswith("messages")]
        serial = inside[-args.requests:]
        print(f"  inside the proxy (its own log: request in to stream out) median {statistics.median(serial):6.2f} ms"
              f"  p99 {q(serial, 99):6.2f} ms")
        if cpu_before is not None and cpu_after is not None:
            print(f"  the proxy's CPU time (user + system) per request: {(cpu_after - cpu_before) / args.requests:6.2f} ms")
        print(f"load average: {os.getloadavg()[0]:.2f}")
        return 0 if failures == 0 else 1
    finally:
        for p in (proxy, upstream):
            p.terminate()
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--burst", type=int, default=50)
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
