"""The server half of the stand-in APIs the genuine agent CLIs are run against (tests/responses_standin.py,
tests/gemini_standin.py): a ``ThreadingHTTPServer`` on 127.0.0.1 (a free port) that hands every request
to the stand-in's ``answer`` and sends back what it returns."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class LoopbackStandIn:
    """Subclasses answer ``(method, path, body bytes)`` with ``(content type, bytes)``; ``script`` is
    theirs to consume, ``requests`` theirs to record what they were asked."""

    def __init__(self, script: list | None = None, *, prefix: str = ""):
        self.script = list(script or [])
        self.requests: list[dict] = []
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # (quiet)
                pass

            def _reply(self, method: str) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                content_type, data = standin.answer(method, self.path, raw)
                self.send_response(200)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._reply("GET")

            def do_POST(self):
                self._reply("POST")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}{prefix}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def answer(self, method: str, path: str, raw: bytes) -> tuple[str, bytes]:  # pragma: no cover - abstract
        raise NotImplementedError

    @staticmethod
    def body(raw: bytes) -> dict:
        try:
            return json.loads(raw or b"{}")
        except ValueError:
            return {"unreadable": raw.decode("utf-8", "replace")}

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
