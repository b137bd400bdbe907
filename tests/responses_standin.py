"""A stand-in of the OpenAI Responses API on loopback, for the genuine Codex CLI: it records every
request body it receives and answers each with a scripted reply, streamed as the API streams
(``response.created``, ``response.output_item.done`` per item, ``response.completed`` with usage).

A reply is a list of output items: ``{"type": "message", ...}`` or ``{"type": "function_call", ...}``
(the Responses API's own item shapes). When the script runs out, the reply is a short message."""
from __future__ import annotations

import json

from loopback_standin import LoopbackStandIn


def message(text: str) -> dict:
    return {"type": "message", "role": "assistant", "id": "msg_standin",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def function_call(call_id: str, name: str, arguments: dict) -> dict:
    return {"type": "function_call", "id": f"fc_{call_id}", "call_id": call_id, "name": name,
            "arguments": json.dumps(arguments)}


class ResponsesStandIn(LoopbackStandIn):
    def __init__(self, script: list[list[dict]] | None = None):
        super().__init__(script, prefix="/v1")

    def answer(self, method: str, path: str, raw: bytes) -> tuple[str, bytes]:
        if method == "GET":  # model listings and the like: nothing to offer
            return "application/json", json.dumps({"object": "list", "data": [], "models": []}).encode()
        self.requests.append({"path": path, "body": self.body(raw)})
        items = self.script.pop(0) if self.script else [message("ok")]
        n = len(self.requests)
        size = len(raw) // 4  # (about what a tokenizer makes of it: what the request held)
        usage = {"input_tokens": size, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 10,
                 "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": size + 10}
        events = [("response.created", {"type": "response.created",
                                        "response": {"id": f"resp_{n}", "status": "in_progress"}})]
        events += [("response.output_item.done", {"type": "response.output_item.done", "output_index": k,
                                                  "item": item}) for k, item in enumerate(items)]
        events.append(("response.completed", {"type": "response.completed", "response": {
            "id": f"resp_{n}", "status": "completed", "output": items, "usage": usage}}))
        return "text/event-stream", b"".join(f"event: {name}\ndata: {json.dumps(ev)}\n\n".encode()
                                             for name, ev in events)
