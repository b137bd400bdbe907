"""A stand-in of the OpenAI Responses API on loopback, for the genuine Codex CLI: it records every
request body it receives and answers each with a scripted reply, streamed as the API streams
(``response.created``, ``response.output_item.done`` per item, ``response.completed`` with usage).

A reply is a list of output items: ``{"type": "message", ...}`` or ``{"type": "function_call", ...}``
(the Responses API's own item shapes). When the script runs out, the reply is a short message."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def message(text: str) -> dict:
    return {"type": "message", "role": "assistant", "id": "msg_standin",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def function_call(call_id: str, name: str, arguments: dict) -> dict:
    return {"type": "function_call", "id": f"fc_{call_id}", "call_id": call_id, "name": name,
            "arguments": json.dumps(arguments)}


class ResponsesStandIn:
    def __init__(self, script: list[list[dict]] | None = None):
        self.script = list(script or [])
        self.requests: list[dict] = []
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # (quiet)
                pass

            def do_GET(self):  # model listings and the like: nothing to offer
                body = json.dumps({"object": "list", "data": [], "models": []}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"unreadable": raw.decode("utf-8", "replace")}
                standin.requests.append({"path": self.path, "body": body})
                items = standin.script.pop(0) if standin.script else [message("ok")]
                n = len(standin.requests)
                events = [("response.created", {"type": "response.created",
                                                "response": {"id": f"resp_{n}", "status": "in_progress"}})]
                events += [("response.output_item.done", {"type": "response.output_item.done", "output_index": k,
                                                          "item": item}) for k, item in enumerate(items)]
                size = len(raw) // 4  # (about what a tokenizer makes of it: what the request held)
                usage = {"input_tokens": size, "input_tokens_details": {"cached_tokens": 0},
                         "output_tokens": 10, "output_tokens_details": {"reasoning_tokens": 0},
                         "total_tokens": size + 10}
                events.append(("response.completed", {"type": "response.completed",
                                                      "response": {"id": f"resp_{n}", "status": "completed",
                                                                   "output": items, "usage": usage}}))
                data = b"".join(f"event: {name}\ndata: {json.dumps(ev)}\n\n".encode() for name, ev in events)
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> ResponsesStandIn:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
