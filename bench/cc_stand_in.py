#!/usr/bin/env python3
"""A scripted stand-in for the Anthropic Messages API, served on loopback (for bench/record_cc_sessions.py).

A copy of the shared harness's ``tools/cc-harness/mock_anthropic.py`` with two changes. A step may
name its ``stop_reason`` (``max_tokens``: an answer cut at the output limit, which Claude Code answers
with a recovery prompt), or be an ``error`` the API returns (``{"status": 529, "type":
"overloaded_error", "message": ...}``: Claude Code retries; a 400 "prompt is too long": it compacts).
A compaction request is recognised by its last *user* message. After a first compaction Claude Code
2.1.328 ends the history with a system message, so a second compaction's request ends with that; the shared
stand-in then answered it as a main-loop step ("Done.") and the session held a wrong summary.

It answers POST /v1/messages (streaming or not) and /v1/messages/count_tokens.
Each main-loop request (one that carries tools) takes the next step of a
scenario file; a summarisation request (its last user turn asks for an
<analysis>/<summary> answer) gets the scenario's summary; any other request
gets a short text. Every request body is appended to a JSONL log, so a test
can read exactly what a client sent.

usage: mock_anthropic.py PORT SCENARIO.json REQUEST_LOG.jsonl
scenario: {"steps": [{"blocks": [...], "usage": {...}, "stop_reason": "max_tokens"} | {"error": {...}}, ...],
           "summary": "..."}
  a block is {"type": "text", "text": ...},
             {"type": "thinking", "thinking": ..., "signature": ...} or
             {"type": "tool_use", "name": ..., "input": {...}}
"""
import json
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT, SCENARIO, LOG_PATH = int(sys.argv[1]), sys.argv[2], sys.argv[3]
scenario = json.load(open(SCENARIO))
steps = scenario.get("steps", [])
summary = scenario.get("summary", "<analysis>notes</analysis>\n<summary>\n1. Primary Request and Intent: scripted summary.\n</summary>")
lock = threading.Lock()
next_step = 0
log = open(LOG_PATH, "a")


def text_of(message):
    content = message.get("content")
    if isinstance(content, str):
        return content
    return " ".join(b.get("text", "") for b in content or [] if isinstance(b, dict))


def is_summary_request(body):
    msgs = [m for m in body.get("messages") or [] if m.get("role") == "user"]
    last = text_of(msgs[-1]) if msgs else ""
    return "<analysis>" in last and "summary" in last.lower()


def choose(body):
    global next_step
    if is_summary_request(body):
        return [{"type": "text", "text": summary}], {}, None
    if not body.get("tools"):
        return [{"type": "text", "text": "ok"}], {}, None
    with lock:
        i = next_step
        next_step += 1
    if i < len(steps):
        return steps[i].get("blocks"), steps[i].get("usage", {}), steps[i].get("stop_reason") or steps[i].get("error")
    return [{"type": "text", "text": "Done."}], {}, None


def sse(event, data):
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, ctype, data):
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.reply(404, "application/json", b"{}")

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        with lock:
            log.write(json.dumps({"path": self.path, "body": body}) + "\n")
            log.flush()
        if "count_tokens" in self.path:
            out = json.dumps({"input_tokens": len(json.dumps(body)) // 4}).encode()
            return self.reply(200, "application/json", out)
        blocks, usage_override, stop_override = choose(body)
        if isinstance(stop_override, dict):  # an API error: {"status": 529, "type": "overloaded_error", ...}
            err = {"type": "error", "error": {"type": stop_override.get("type", "api_error"),
                                              "message": stop_override.get("message", "scripted error")}}
            return self.reply(int(stop_override.get("status", 500)), "application/json", json.dumps(err).encode())
        for b in blocks:
            if b["type"] == "tool_use":
                b.setdefault("id", "toolu_" + uuid.uuid4().hex[:24])
        stop = stop_override or ("tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn")
        usage = {"input_tokens": len(json.dumps(body.get("messages"))) // 4, "output_tokens": 20,
                 "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        usage.update(usage_override)
        mid = "msg_" + uuid.uuid4().hex[:24]
        message = {"id": mid, "type": "message", "role": "assistant", "model": body.get("model", "mock"),
                   "stop_reason": None, "stop_sequence": None}
        if not body.get("stream"):
            out = dict(message, content=blocks, stop_reason=stop, usage=usage)
            return self.reply(200, "application/json", json.dumps(out).encode())
        chunks = [sse("message_start", {"type": "message_start", "message": dict(message, content=[], usage=usage)})]
        for i, b in enumerate(blocks):
            if b["type"] == "text":
                start, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": b["text"]}
            elif b["type"] == "thinking":
                start = {"type": "thinking", "thinking": "", "signature": ""}
                delta = {"type": "thinking_delta", "thinking": b["thinking"]}
                chunks += [sse("content_block_start", {"type": "content_block_start", "index": i, "content_block": start}),
                           sse("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta})]
                start, delta = None, {"type": "signature_delta", "signature": b.get("signature", "c2lnbmF0dXJl")}
            else:
                start = {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(b["input"])}
            if start is not None:
                chunks.append(sse("content_block_start", {"type": "content_block_start", "index": i, "content_block": start}))
            chunks += [sse("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta}),
                       sse("content_block_stop", {"type": "content_block_stop", "index": i})]
        chunks += [sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                         "usage": {"output_tokens": usage["output_tokens"]}}),
                   sse("message_stop", {"type": "message_stop"})]
        self.reply(200, "text/event-stream", b"".join(chunks))


ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
