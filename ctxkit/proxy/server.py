"""Running the proxy: uvicorn serving :func:`.app.build_app`, on 127.0.0.1 unless told otherwise.

uvicorn's own signal handling gives the graceful shutdown: on SIGTERM or SIGINT it stops accepting
connections and waits for the requests in flight — streams included — to finish before it exits.
"""
from __future__ import annotations

import gc
import socket
from typing import Callable

import uvicorn

from .app import ProxySettings, build_app

DEFAULT_HOST = "127.0.0.1"


def parse_listen(value: str) -> tuple[str, int]:
    """``HOST:PORT``, ``:PORT`` or ``PORT`` (host 127.0.0.1); ``[::1]:PORT`` for IPv6. ValueError when not."""
    host, sep, port = value.rpartition(":")
    if not sep:
        host, port = "", value
    host = host.strip("[]") or DEFAULT_HOST
    number = int(port)
    if not 0 <= number <= 65535:
        raise ValueError(f"port {number} is out of range")
    return host, number


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound before the server starts so that port 0 can be told before serving."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto named: asyncio turns Nagle's algorithm off (TCP_NODELAY) only on sockets whose proto says TCP;
    # with proto 0 every response waited ~40 ms for the client's delayed ACK between headers and body
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.setblocking(False)
    return sock


def make_server(settings: ProxySettings) -> uvicorn.Server:
    """uvicorn serving the proxy: no Server or Date header of its own (the upstream's are relayed), no
    access log (the proxy logs each request itself, without its headers), no ``X-Forwarded-*`` reading
    (the proxy relays those headers; it does not act on them)."""
    config = uvicorn.Config(build_app(settings), log_level="warning", access_log=False, lifespan="on",
                            timeout_keep_alive=75, server_header=False, date_header=False, proxy_headers=False)
    return uvicorn.Server(config)


#: the garbage collector's thresholds while serving (Python's default: 700, 10, 10)
GC_THRESHOLDS = (50_000, 20, 100)


def serve(settings: ProxySettings, sock: socket.socket, *, on_started: Callable[[], None] | None = None) -> None:
    """Serve until SIGTERM/SIGINT, finishing the requests in flight.

    The garbage collector runs less often here (:data:`GC_THRESHOLDS`): a request body parses into tens of
    thousands of dicts and lists, none in a cycle, so at the default threshold every request set off
    dozens of collections, the older ones walking every message the conversations hold in memory — ~0.3 ms
    of a 240 KB request's CPU for nothing to free. What was loaded before serving is frozen out of them."""
    server = make_server(settings)
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    if on_started is not None:
        original = server.startup

        async def startup(sockets=None):
            await original(sockets)
            on_started()
        server.startup = startup  # type: ignore[method-assign]
    server.run(sockets=[sock])
