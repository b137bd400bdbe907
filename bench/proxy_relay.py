#!/usr/bin/env python3
"""Benchmark: what relaying alone costs, by HTTP client — the reason ``ctxkit proxy`` forwards with aiohttp.

For each client (``none``: uvicorn receives the body and answers itself; ``httpx2``; ``aiohttp``) it starts a
minimal relay — a plain ASGI app under uvicorn that reads the request body and forwards it to the tests'
stand-in Messages API (``tests/proxy_upstream.py``) with that client, streaming the answer back — then sends
it ``--requests`` requests one at a time, a conversation growing by two messages a request as in
``bench/proxy_load.py`` (to ~240 KB a body at 200), and prints the relay process's CPU time per request
(user + system, from ``/proc``: the figure the machine's load inflates least). No policy, no parsing: only
HTTP in and out. Rounds alternate the clients, so a busy machine weighs on each alike. Usage::

    python bench/proxy_relay.py [--requests 200] [--rounds 2]
"""
from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import time

import httpx2
from proxy_load import body, conversation, cpu_ms, free_port, stand_in

CLIENTS = ("none", "httpx2", "aiohttp")
DROP = (b"host", b"content-length", b"connection", b"transfer-encoding")


def serve(client_name: str, port: int, upstream: str) -> None:
    """The relay process: uvicorn serving a plain ASGI app that forwards with ``client_name``."""
    import uvicorn

    state: dict = {}

    async def app(scope, receive, send):
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            if "c" in state:
                await (state["c"].aclose() if client_name == "httpx2" else state["c"].close())
            await send({"type": "lifespan.shutdown.complete"})
            return
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        content = b"".join(chunks)
        headers = [(k, v) for k, v in scope["headers"] if k not in DROP]
        url = upstream + scope["raw_path"].decode()
        if client_name == "none":
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": b"ok"})
        elif client_name == "httpx2":
            if "c" not in state:
                nodelay = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
                state["c"] = httpx2.AsyncClient(transport=httpx2.AsyncHTTPTransport(socket_options=nodelay))
            c = state["c"]
            r = await c.send(c.build_request("POST", url, headers=headers, content=content), stream=True)
            await send({"type": "http.response.start", "status": r.status_code,
                        "headers": [(k, v) for k, v in r.headers.raw if k.lower() not in DROP]})
            async for chunk in r.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
            await r.aclose()
        else:
            import aiohttp
            if "c" not in state:
                state["c"] = aiohttp.ClientSession(auto_decompress=False)
            c = state["c"]
            async with c.post(url, data=content, headers=[(k.decode(), v.decode()) for k, v in headers]) as r:
                await send({"type": "http.response.start", "status": r.status,
                            "headers": [(k, v) for k, v in r.raw_headers if k.lower() not in DROP]})
                async for chunk in r.content.iter_any():
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="critical", lifespan="on", http="h11", loop="asyncio")


def measure(client_name: str, requests: int, upstream: str) -> float:
    port = free_port()
    relay = subprocess.Popen([sys.executable, __file__, "--serve", client_name, str(port), upstream])
    url = f"http://127.0.0.1:{port}/v1/messages"
    try:
        with httpx2.Client(timeout=60) as client:
            for _ in range(200):  # the relay is up
                try:
                    client.get(f"http://127.0.0.1:{port}/")
                    break
                except httpx2.HTTPError:
                    time.sleep(0.05)
            talk = conversation("relay", requests + 1)
            for k in range(10):  # warm-up: imports, the connection pool
                client.post(url, content=body(talk[:2 * k + 3], "relay")).read()
            before = cpu_ms(relay.pid)
            for k in range(requests):
                r = client.post(url, content=body(talk[:2 * k + 3], "relay"))
                assert r.status_code == 200, r.status_code
            after = cpu_ms(relay.pid)
        return (after - before) / requests if before is not None and after is not None else float("nan")
    finally:
        relay.terminate()
        relay.wait(15)


def main() -> int:
    if sys.argv[1:2] == ["--serve"]:
        serve(sys.argv[2], int(sys.argv[3]), sys.argv[4])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    with stand_in() as upstream:
        figures: dict[str, list[float]] = {name: [] for name in CLIENTS}
        for _ in range(args.rounds):
            for name in CLIENTS:
                figures[name].append(measure(name, args.requests, upstream))
    largest = len(body(conversation("relay", args.requests + 1)[:2 * args.requests + 1], "relay")) // 1024
    print(f"relaying alone, {args.requests} requests one at a time (bodies to {largest} KB), the relay process's "
          "CPU per request:")
    for name in CLIENTS:
        shown = ", ".join(f"{x:.2f}" for x in figures[name])
        print(f"  {name:8s} median {statistics.median(figures[name]):5.2f} ms  (rounds: {shown})")
    return 0

if __name__ == "__main__":
    sys.exit(main())
