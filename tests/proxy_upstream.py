"""A stand-in upstream for the proxy's tests: an ASGI app (served by uvicorn on loopback) that records
every request's raw bytes and headers and answers from a script, the way the Messages API answers.

    with Upstream() as up:
        up.script.append(Answer.sse(text="hi", usage={...}))
        ...  # requests to up.url
        up.requests[0].body  # the exact bytes received

An :class:`Answer` is JSON or SSE (the Messages API's event sequence, built from text and usage), any
status and body (errors as the API gives them), optionally dripped with a delay between chunks
(``drip``), held back before the status line (``delay``) or cut short (``cut_after``: the connection breaks after that many chunks). With the script
empty, a JSON message answers. ``cancelled`` counts streams the client abandoned.
"""
from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field

import uvicorn


@dataclass
class Seen:
    method: str
    path: str  # with the query string
    headers: dict[str, str]
    body: bytes
    raw_path: bytes = b""  # as it came on the request line (percent-escapes kept)

    def json(self):
        return json.loads(self.body)


@dataclass
class Answer:
    status: int = 200
    chunks: list[bytes] = field(default_factory=list)
    content_type: str = "application/json"
    drip: float = 0.0
    cut_after: int | None = None
    headers: list[tuple[str, str]] = field(default_factory=list)
    delay: float = 0.0  # before the status line

    @staticmethod
    def message(text: str = "ok", usage: dict | None = None) -> dict:
        return {"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
                "usage": usage or {"input_tokens": 10, "output_tokens": 2}}

    @classmethod
    def json(cls, text: str = "ok", usage: dict | None = None, status: int = 200, body: dict | None = None):
        raw = json.dumps(body if body is not None else cls.message(text, usage)).encode()
        return cls(status, [raw])

    @classmethod
    def sse(cls, text: str = "ok", usage: dict | None = None, pieces: int = 3, drip: float = 0.0,
            cut_after: int | None = None):
        usage = usage or {"input_tokens": 10, "output_tokens": 2}
        start = cls.message("", {**usage, "output_tokens": 1})
        start["content"] = []
        events = [("message_start", {"type": "message_start", "message": start}),
                  ("content_block_start", {"type": "content_block_start", "index": 0,
                                           "content_block": {"type": "text", "text": ""}})]
        step = max(1, len(text) // pieces)
        for i in range(0, len(text), step):
            events.append(("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                   "delta": {"type": "text_delta", "text": text[i:i + step]}}))
        events += [("content_block_stop", {"type": "content_block_stop", "index": 0}),
                   ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                                      "usage": {"output_tokens": usage["output_tokens"]}}),
                   ("message_stop", {"type": "message_stop"})]
        chunks = [f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events]
        return cls(200, chunks, "text/event-stream; charset=utf-8", drip, cut_after)

    @classmethod
    def error(cls, status: int, kind: str, message: str):
        return cls(status, [json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()])


class Upstream:
    def __init__(self, tls: tuple[str, str] | None = None):
        self.tls = tls  # (certificate file, key file): served over https
        self.requests: list[Seen] = []
        self.script: deque[Answer] = deque()
        self.cancelled = 0
        self.completed = 0
        self._lock = threading.Lock()

    async def __call__(self, scope, receive, send):
        if scope["type"] == "lifespan":
            while (msg := await receive())["type"] != "lifespan.shutdown":
                if msg["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        body = b""
        while True:
            msg = await receive()
            body += msg.get("body", b"")
            if not msg.get("more_body"):
                break
        path = scope["path"] + (("?" + scope["query_string"].decode()) if scope["query_string"] else "")
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        with self._lock:
            self.requests.append(Seen(scope["method"], path, headers, body, scope.get("raw_path") or b""))
            answer = self.script.popleft() if self.script else Answer.json()
        if answer.delay:
            await asyncio.sleep(answer.delay)
        await send({"type": "http.response.start", "status": answer.status,
                    "headers": [(b"content-type", answer.content_type.encode()),
                                *[(k.encode(), v.encode()) for k, v in answer.headers]]})
        gone = asyncio.Event()

        async def watch():  # the client's disconnect, as a server notices it
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()
        watcher = asyncio.ensure_future(watch())
        try:
            for i, chunk in enumerate(answer.chunks):
                if gone.is_set():
                    self.cancelled += 1
                    return
                if answer.cut_after is not None and i >= answer.cut_after:
                    raise ConnectionResetError("cut")  # uvicorn closes the connection mid-answer
                if answer.drip:
                    await asyncio.sleep(answer.drip)
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            self.completed += 1
        except OSError:
            if answer.cut_after is not None:
                raise
            self.cancelled += 1
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        finally:
            watcher.cancel()

    def __enter__(self) -> Upstream:
        from ctxkit.proxy.server import bind
        sock = bind("127.0.0.1", 0)
        self.port = sock.getsockname()[1]
        self.url = f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"
        tls = {"ssl_certfile": self.tls[0], "ssl_keyfile": self.tls[1]} if self.tls else {}
        self._running = _InThread(uvicorn.Server(uvicorn.Config(self, log_level="critical", lifespan="on", **tls)), sock)
        return self

    def __exit__(self, *exc) -> None:
        self._running.stop()


class _InThread:
    """A uvicorn server serving ``sock`` in a daemon thread, started and waited for."""

    def __init__(self, server: uvicorn.Server, sock: socket.socket):
        self.server = server
        self.thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.01)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


class RunningProxy:
    """The proxy's app under uvicorn in a thread on loopback: ``with RunningProxy(settings) as p: p.url``."""

    def __init__(self, settings):
        from ctxkit.proxy.server import bind
        self.settings = settings
        self.sock = bind("127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def __enter__(self) -> RunningProxy:
        from ctxkit.proxy.server import make_server
        self._running = _InThread(make_server(self.settings), self.sock)
        return self

    def __exit__(self, *exc) -> None:
        self._running.stop()


if __name__ == "__main__":  # bench/proxy_load.py: the stand-in alone, answering every request with a stream
    import sys

    port = int(sys.argv[1])
    upstream = Upstream()
    answer = Answer.sse("A streamed answer of a few words, as a model gives it.", {
        "input_tokens": 20, "cache_read_input_tokens": 2_000, "output_tokens": 12}, pieces=6)

    async def app(scope, receive, send):
        if scope["type"] == "http":
            upstream.script.append(answer)
            upstream.requests.clear()  # a long run keeps nothing
        await upstream(scope, receive, send)

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="critical", lifespan="on")
