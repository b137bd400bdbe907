"""OpenCode session exports for the tests, written from the format as OpenCode's source defines it
(sst/opencode ``packages/opencode/src/cli/cmd/export.ts``, ``packages/opencode/src/session/message-v2.ts``):
nothing here is copied from a real session."""
from __future__ import annotations

import json

SESSION = "ses_5a1e2b3c4d5e6f7a8b9c0d1e2f"
T0 = 1_767_000_000_000


def _mid(n: int) -> str:
    return f"msg_{n:012x}AbCdEfGhIjKlMn"


def user(n: int, text: str) -> dict:
    mid = _mid(n)
    return {"info": {"id": mid, "sessionID": SESSION, "role": "user", "time": {"created": T0 + n},
                     "agent": "build", "model": {"providerID": "anthropic", "modelID": "claude-sonnet-4-5"}},
            "parts": [{"id": f"prt_{n:012x}a", "sessionID": SESSION, "messageID": mid, "type": "text", "text": text}]}


def tool(n: int, k: int, name: str, args: dict, output: str | None, status: str = "completed",
         pruned: bool = False) -> dict:
    state: dict = {"status": status, "input": args}
    if status == "completed":
        state.update(output=output, title=name, metadata={}, time={"start": T0 + n, "end": T0 + n + 1})
        if pruned:
            state["time"]["compacted"] = T0 + 99
    elif status == "error":
        state.update(error=output, time={"start": T0 + n, "end": T0 + n + 1})
    return {"id": f"prt_{n:012x}t{k}", "sessionID": SESSION, "messageID": _mid(n), "type": "tool",
            "callID": f"toolu_{n}_{k}", "tool": name, "state": state}


def assistant(n: int, parent: int, text: str = "", tools: list[dict] = (), tokens: int | None = None,
              **info) -> dict:
    mid = _mid(n)
    parts: list[dict] = [{"id": f"prt_{n:012x}s", "sessionID": SESSION, "messageID": mid, "type": "step-start"}]
    if text:
        parts.append({"id": f"prt_{n:012x}x", "sessionID": SESSION, "messageID": mid, "type": "text", "text": text})
    parts += list(tools)
    usage = {"input": (tokens or 0) - 200, "output": 150, "reasoning": 50, "cache": {"read": 0, "write": 0}}
    if tokens is not None:
        parts.append({"id": f"prt_{n:012x}f", "sessionID": SESSION, "messageID": mid, "type": "step-finish",
                      "reason": "tool-calls" if tools else "stop", "cost": 0.01, "tokens": usage})
    return {"info": {"id": mid, "sessionID": SESSION, "role": "assistant", "parentID": _mid(parent),
                     "time": {"created": T0 + n, "completed": T0 + n + 1}, "modelID": "claude-sonnet-4-5",
                     "providerID": "anthropic", "mode": "build", "agent": "build", "cost": 0.01,
                     "tokens": usage if tokens is not None else {"input": 0, "output": 0, "reasoning": 0,
                                                                  "cache": {"read": 0, "write": 0}},
                     "finish": "stop", **info},
            "parts": parts}


def export(messages: list[dict]) -> dict:
    return {"info": {"id": SESSION, "slug": "quiet-river", "projectID": "a1b2c3", "directory": "/work/app",
                     "title": "Fix the tests", "version": "1.2.3", "time": {"created": T0, "updated": T0 + 500}},
            "messages": messages}


def write(path, messages: list[dict]) -> None:
    """As ``opencode export`` prints it: ``JSON.stringify(data, null, 2)``."""
    path.write_text(json.dumps(export(messages), indent=2, ensure_ascii=False) + "\n")
