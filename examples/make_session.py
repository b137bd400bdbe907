#!/usr/bin/env python3
"""Write examples/session.jsonl: a small Claude Code session (transcript format 2.1.x) to try ctxkit on.

The session is synthetic but shaped like the real thing: streamed assistant
fragments sharing a message id, parallel tool calls whose results are
interleaved, a 120 KB Bash output, an empty output, a failing command, an
edit, and metadata lines (queue operations, last-prompt) that ctxkit must pass
through untouched. Run it again to regenerate the file byte for byte.
"""
from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

SESSION = "7d1c2a9e-4b5f-4e8a-9c3d-2f6e8a1b0c4d"
CWD = "/home/dev/shop"
START = datetime(2026, 11, 20, 9, 0, 0, tzinfo=timezone.utc)
#: Tokens of Claude Code's system prompt and tool definitions (ctxkit's default overhead_tokens, docs/tokens.md)
SYSTEM_AND_TOOLS = 10_000

MODELS_PY = '''class Item:
    def __init__(self, name, price):
        self.name = name
        self.price = price


class Order:
    def __init__(self, items):
        self.items = list(items)

    def total(self):
        return sum(item.price for item in self.items)
'''


class Writer:
    def __init__(self):
        self.lines: list[dict] = []
        self.parent: str | None = None
        self.clock = START
        self.n = 0
        # the usage each response reports: the system prompt and tools plus about a token per 4 characters sent
        self.chars = 0
        self.prompt_tokens = 0
        self.last_id: str | None = None
        self.usage: dict = {}

    def uid(self) -> str:
        self.n += 1
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"ctxkit-example/{self.n}"))

    def stamp(self, seconds: float = 2) -> str:
        self.clock += timedelta(seconds=seconds)
        return self.clock.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.clock.microsecond // 1000:03d}Z"

    def env(self, kind: str, parent: str | None) -> dict:
        return {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": CWD,
                "sessionId": SESSION, "version": "2.1.30", "gitBranch": "main", "type": kind,
                "uuid": self.uid(), "timestamp": self.stamp()}

    def meta(self, entry: dict) -> None:
        self.lines.append(entry)

    def user(self, content, **extra) -> dict:
        e = self.env("user", self.parent)
        e["message"] = {"role": "user", "content": content}
        self.chars += len(json.dumps(content))
        e.update(extra)
        self.lines.append(e)
        self.parent = e["uuid"]
        return e

    def assistant(self, msg_id: str, block: dict, parent: str | None = None) -> dict:
        e = self.env("assistant", parent if parent is not None else self.parent)
        e["requestId"] = "req_" + msg_id[4:]
        if msg_id != self.last_id:  # a new API response: its request held everything written so far
            self.last_id, cached = msg_id, self.prompt_tokens
            self.prompt_tokens = SYSTEM_AND_TOOLS + round(self.chars / 4)
            self.usage = {"input_tokens": 3, "cache_creation_input_tokens": self.prompt_tokens - 3 - cached,
                          "cache_read_input_tokens": cached, "output_tokens": 40}
        e["message"] = {"id": msg_id, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                        "content": [block], "stop_reason": None, "stop_sequence": None, "usage": dict(self.usage)}
        self.chars += len(json.dumps(block))
        self.lines.append(e)
        self.parent = e["uuid"]
        return e

    def result(self, tool_id: str, content, source: dict, *, is_error: bool = False, parent: str | None = None) -> dict:
        e = self.env("user", parent if parent is not None else self.parent)
        block = {"tool_use_id": tool_id, "type": "tool_result", "content": content}
        if is_error:
            block["is_error"] = True
        e["message"] = {"role": "user", "content": [block]}
        self.chars += len(json.dumps(block))
        e["toolUseResult"] = {"stdout": content if isinstance(content, str) else "", "stderr": "", "interrupted": False}
        e["sourceToolAssistantUUID"] = source["uuid"]
        self.lines.append(e)
        if parent is None:
            self.parent = e["uuid"]
        return e


def build() -> list[dict]:
    w = Writer()
    w.meta({"type": "queue-operation", "operation": "enqueue", "timestamp": w.stamp(0), "sessionId": SESSION,
            "content": "The order total ignores discounts. Add a discount parameter to Order.total and test it."})
    w.user("The order total ignores discounts. Add a discount parameter to Order.total and test it.")
    m1 = "msg_01ExampleRead0000000001"
    w.assistant(m1, {"type": "text", "text": "I'll look at the models and the tests first."})
    r1 = w.assistant(m1, {"type": "tool_use", "id": "toolu_01Read000000000000000001", "name": "Read",
                          "input": {"file_path": f"{CWD}/shop/models.py"}})
    g1 = w.assistant(m1, {"type": "tool_use", "id": "toolu_01Grep000000000000000001", "name": "Grep",
                          "input": {"pattern": "total\\(", "path": CWD}})
    # parallel results: each hangs off the fragment holding its call (interleaved, as 2.1.x writes them)
    w.result("toolu_01Grep000000000000000001", "shop/models.py:11:    def total(self):\ntests/test_models.py:9:"
             "    assert order.total() == 5", g1, parent=g1["uuid"])
    numbered = "\n".join(f"{i + 1:>6}\t{line}" for i, line in enumerate(MODELS_PY.splitlines()))
    w.result("toolu_01Read000000000000000001", numbered, r1, parent=r1["uuid"])
    w.parent = w.lines[-1]["uuid"]
    m2 = "msg_01ExampleBash0000000002"
    b1 = w.assistant(m2, {"type": "tool_use", "id": "toolu_01Bash000000000000000001", "name": "Bash",
                          "input": {"command": "python -m pytest -vv 2>&1 | tee test.log", "description": "Run tests"}})
    log = "\n".join(f"tests/test_models.py::test_case_{i:05d} PASSED{' ' * 8}[{i * 100 // 3000:3d}%]"
                    for i in range(1, 3001))
    w.result("toolu_01Bash000000000000000001", log + "\n3000 passed in 4.21s", b1)
    m3 = "msg_01ExampleBash0000000003"
    b2 = w.assistant(m3, {"type": "tool_use", "id": "toolu_01Bash000000000000000002", "name": "Bash",
                          "input": {"command": "git status --porcelain", "description": "Check the tree"}})
    w.result("toolu_01Bash000000000000000002", "", b2)
    m4 = "msg_01ExampleEdit0000000004"
    e1 = w.assistant(m4, {"type": "tool_use", "id": "toolu_01Edit000000000000000001", "name": "Edit",
                          "input": {"file_path": f"{CWD}/shop/models.py",
                                    "old_string": "    def total(self):\n        return sum(item.price for item in self.items)",
                                    "new_string": "    def total(self, discount=0.0):\n        subtotal = sum(item.price "
                                                  "for item in self.items)\n        return subtotal * (1 - discount)"}})
    w.result("toolu_01Edit000000000000000001", f"The file {CWD}/shop/models.py has been updated.", e1)
    m5 = "msg_01ExampleBash0000000005"
    b3 = w.assistant(m5, {"type": "tool_use", "id": "toolu_01Bash000000000000000003", "name": "Bash",
                          "input": {"command": "python -m pytest -q tests/test_discount.py"}})
    w.result("toolu_01Bash000000000000000003", "Exit code 4\nERROR: file or directory not found: "
             "tests/test_discount.py", b3, is_error=True)
    m6 = "msg_01ExampleWrite000000006"
    w1 = w.assistant(m6, {"type": "tool_use", "id": "toolu_01Write00000000000000001", "name": "Write",
                          "input": {"file_path": f"{CWD}/tests/test_discount.py",
                                    "content": "from shop.models import Item, Order\n\n\ndef test_discount():\n"
                                               "    order = Order([Item('a', 10.0)])\n"
                                               "    assert order.total(discount=0.1) == 9.0\n"}})
    w.result("toolu_01Write00000000000000001", f"File created successfully at: {CWD}/tests/test_discount.py", w1)
    m7 = "msg_01ExampleBash0000000007"
    b4 = w.assistant(m7, {"type": "tool_use", "id": "toolu_01Bash000000000000000004", "name": "Bash",
                          "input": {"command": "python -m pytest -q"}})
    w.result("toolu_01Bash000000000000000004", ".." * 20 + "\n3001 passed in 4.30s", b4)
    w.assistant("msg_01ExampleDone0000000008", {"type": "text", "text": "Order.total now takes a `discount` "
                "(a fraction, default 0). I added tests/test_discount.py; all 3001 tests pass."})
    w.meta({"type": "last-prompt", "lastPrompt": "The order total ignores discounts.", "leafUuid": w.parent,
            "sessionId": SESSION})
    w.clock += timedelta(hours=2)
    w.user("Thanks. Now make sure a discount above 1 raises ValueError.")
    m9 = "msg_01ExampleRead0000000009"
    r2 = w.assistant(m9, {"type": "tool_use", "id": "toolu_01Read000000000000000002", "name": "Read",
                          "input": {"file_path": f"{CWD}/shop/models.py"}})
    w.result("toolu_01Read000000000000000002", numbered.replace("def total(self):", "def total(self, discount=0.0):"), r2)
    m10 = "msg_01ExampleEdit000000010"
    e2 = w.assistant(m10, {"type": "tool_use", "id": "toolu_01Edit000000000000000002", "name": "Edit",
                           "input": {"file_path": f"{CWD}/shop/models.py", "old_string": "        subtotal =",
                                     "new_string": "        if not 0 <= discount <= 1:\n            raise ValueError("
                                                   "'discount must be between 0 and 1')\n        subtotal ="}})
    w.result("toolu_01Edit000000000000000002", f"The file {CWD}/shop/models.py has been updated.", e2)
    w.assistant("msg_01ExampleDone0000000011", {"type": "text", "text": "Done: a discount outside 0..1 raises "
                "ValueError."})
    return w.lines


if __name__ == "__main__":
    out = Path(__file__).with_name("session.jsonl")
    with open(out, "w", encoding="utf-8") as f:
        for entry in build():
            f.write(json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n")
    print(f"wrote {out}")
