"""Shared helpers that read what a run left behind (the corpus's recorded requests, the store's state).

Test modules import these from here, never from one another; fixtures live in conftest.py and the
transcript builder in builders.py.
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path


def _blocks(m):
    c = m.get("content")
    return [{"type": "text", "text": c}] if isinstance(c, str) else list(c or [])


def _result_text(c):
    if isinstance(c, str):
        return c.strip()
    return "\n".join(b.get("text") or json.dumps(b, sort_keys=True) for b in c or []).strip()


def core(msgs):
    """The comparison ../shared/tools/check_view.py makes: roles, texts, tool ids/inputs, results."""
    out = []
    for m in msgs:
        if m.get("role") == "system":
            continue
        for b in _blocks(m):
            t = b.get("type")
            if t == "text":
                s = b["text"].strip()
                if s and not s.startswith("<system-reminder>"):
                    out.append((m["role"], "text", s))
            elif t == "tool_use":
                out.append((m["role"], "tool_use", b["id"], b["name"], json.dumps(b.get("input"), sort_keys=True)))
            elif t == "tool_result":
                out.append((m["role"], "tool_result", b["tool_use_id"], _result_text(b.get("content"))))
            elif t in ("thinking", "image"):
                out.append((m["role"], t))
    return out


def last_main_request(session_dir):
    last = None
    with gzip.open(session_dir / "requests.jsonl.gz", "rt") as f:
        for line in f:
            body = json.loads(line)["body"]
            if body.get("tools"):
                last = body
    return last


def breaker_failures(store: Path = Path(".ctxkit")) -> list[int]:
    """The consecutive-failure counts the store holds, one per session."""
    state = json.loads((store / "state.json").read_text()) if (store / "state.json").exists() else {}
    sessions = state.get("sessions", state)
    return [s["autocompact"]["consecutive_failures"] for s in sessions.values()
            if isinstance(s, dict) and isinstance(s.get("autocompact"), dict)]


def bash_rounds(start: int, n: int, size: int = 1_200) -> list[dict]:
    """Anthropic messages: ``n`` rounds of a ``Step k.`` Bash call and its result of ``size`` words."""
    out = []
    for k in range(start, start + n):
        tid = f"toolu_{k:02d}"
        out.append({"role": "assistant", "content": [{"type": "text", "text": f"Step {k}."},
                                                     {"type": "tool_use", "id": tid, "name": "Bash",
                                                      "input": {"command": f"make step{k}"}}]})
        out.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid,
                                                 "content": " ".join(f"out{k}_{i}" for i in range(size))}]})
    return out


def never_called(policy, ctx):
    """A summarizer factory whose summarizer fails the test if asked: the notes must be enough."""
    class Refuses:
        name = "refuses"

        def summarize(self, messages, *, instructions=None):
            raise AssertionError("the summarizer must not be called when the notes can be used")

    return Refuses()
