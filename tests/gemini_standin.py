"""A stand-in of the Gemini API on loopback, for the genuine Gemini CLI (through its
``GOOGLE_GEMINI_BASE_URL``): it records every streamed request body and answers
``streamGenerateContent`` (``alt=sse``) with a scripted reply, ``generateContent`` and ``countTokens``
as the API does.

A reply is a list of parts (``{"text": ...}`` or ``{"functionCall": {...}}``: the API's own shapes);
when the script runs out, the reply is a short text."""
from __future__ import annotations

import json

from loopback_standin import LoopbackStandIn


def text(value: str) -> dict:
    return {"text": value}


def function_call(name: str, args: dict) -> dict:
    return {"functionCall": {"name": name, "args": args}}


class GeminiStandIn(LoopbackStandIn):
    def answer(self, method: str, path: str, raw: bytes) -> tuple[str, bytes]:
        if method == "GET":
            return "application/json", json.dumps({"models": []}).encode()
        size = len(raw) // 4  # (about what a tokenizer makes of it: what the request held)
        if ":countTokens" in path:
            return "application/json", json.dumps({"totalTokens": size}).encode()
        streamed = ":streamGenerateContent" in path
        if streamed:  # (the CLI's own side calls — titles, routing — are not streamed: no script)
            self.requests.append({"path": path, "body": self.body(raw)})
        parts = self.script.pop(0) if streamed and self.script else [text("ok")]
        answer = {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
                  "usageMetadata": {"promptTokenCount": size, "candidatesTokenCount": 5,
                                    "totalTokenCount": size + 5},
                  "modelVersion": "gemini-2.5-pro"}
        if not streamed:
            return "application/json", json.dumps(answer).encode()
        return "text/event-stream", f"data: {json.dumps(answer)}\r\n\r\n".encode()
