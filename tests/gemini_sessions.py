"""Gemini CLI session recordings for the tests, written from the format as Gemini CLI's source defines
it (packages/core/src/services/chatRecordingTypes.ts, chatRecordingService.ts): nothing here is copied
from a real session."""
from __future__ import annotations

import json

SESSION_ID = "5a1e2b3c-0000-4000-8000-00000000000a"


def metadata() -> dict:
    return {"sessionId": SESSION_ID, "projectHash": "9f86d081884c7d65", "startTime": "2026-03-01T10:00:00.000Z",
            "lastUpdated": "2026-03-01T10:00:00.000Z", "kind": "main"}


def user(mid: str, text: str) -> dict:
    return {"id": mid, "timestamp": "2026-03-01T10:00:01.000Z", "type": "user", "content": [{"text": text}]}


def tool_call(cid: str, name: str, args: dict, output: str | None, status: str = "success") -> dict:
    call = {"id": cid, "name": name, "args": args, "status": status, "timestamp": "2026-03-01T10:00:02.000Z"}
    if output is not None:
        call["result"] = [{"functionResponse": {"id": cid, "name": name, "response": {"output": output}}}]
    return call


def gemini(mid: str, text: str, calls: list[dict] = (), tokens: int | None = None) -> dict:
    rec = {"id": mid, "timestamp": "2026-03-01T10:00:03.000Z", "type": "gemini", "content": text,
           "model": "gemini-2.5-pro"}
    if calls:
        rec["toolCalls"] = list(calls)
    if tokens is not None:
        rec["tokens"] = {"input": tokens - 100, "output": 80, "cached": 0, "thoughts": 20, "tool": 0, "total": tokens}
    return rec


def responses(mid: str, calls: list[dict]) -> dict:
    """The batch of function responses Gemini CLI 0.61 records as a ``user`` message of its own after the
    ``gemini`` message whose calls it answers (``recordSyntheticMessage``): each call's result parts, in order."""
    return {"id": mid, "timestamp": "2026-03-01T10:00:02.500Z", "type": "user",
            "content": [p for c in calls for p in c.get("result") or []]}


def write(path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
