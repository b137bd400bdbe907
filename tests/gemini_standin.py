"""A stand-in of the Gemini API on loopback, for the genuine Gemini CLI (through its
``GOOGLE_GEMINI_BASE_URL``): it records every request body and answers ``streamGenerateContent``
(``alt=sse``) with a scripted reply, ``generateContent`` and ``countTokens`` as the API does.

A reply is a list of parts (``{"text": ...}`` or ``{"functionCall": {...}}``: the API's own shapes);
when the script runs out, the reply is a short text."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def text(value: str) -> dict:
    return {"text": value}


def function_call(name: str, args: dict) -> dict:
    return {"functionCall": {"name": name, "args": args}}


class GeminiStandIn:
    def __init__(self, script: list[list[dict]] | None = None):
        self.script = list(script or [])
        self.requests: list[dict] = []
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _json(self, doc: dict) -> None:
                body = json.dumps(doc).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                self._json({"models": []})

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                size = len(raw) // 4
                if ":countTokens" in self.path:
                    self._json({"totalTokens": size})
                    return
                streamed = ":streamGenerateContent" in self.path
                if streamed:  # (the CLI's own side calls — titles, routing — are not streamed: no script)
                    standin.requests.append({"path": self.path, "body": body})
                parts = standin.script.pop(0) if streamed and standin.script else [text("ok")]
                answer = {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP",
                                          "index": 0}],
                          "usageMetadata": {"promptTokenCount": size, "candidatesTokenCount": 5,
                                            "totalTokenCount": size + 5},
                          "modelVersion": "gemini-2.5-pro"}
                if not streamed:
                    self._json(answer)
                    return
                data = f"data: {json.dumps(answer)}\r\n\r\n".encode()
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> GeminiStandIn:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
