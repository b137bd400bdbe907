"""Long, tool-heavy message lists for the ContextManager's tests and bench/context_manager.py.

``synthetic``: built here, always available (Bash rounds with outputs of a chosen size, a few big ones
the tool-result budget persists). ``from_corpus``: the recorded sessions' views (the Claude Code
corpus and the public one) as Anthropic messages, one after another and repeated until long enough,
each copy's tool ids made its own; None when ../shared/corpus is absent.
"""
from __future__ import annotations

import os
from pathlib import Path

#: as tests/conftest.py finds it (bench/context_manager.py imports this module without pytest)
CORPUS = Path(os.environ.get("CTXKIT_SHARED", Path(__file__).resolve().parent.parent.parent / "shared")) / "corpus"
CC_CORPUS = CORPUS / "claude-code-2.1.328"
PUBLIC_CORPUS = CORPUS / "public"


def synthetic(rounds: int, size: int = 3_000, big_every: int = 0, big: int = 60_000) -> list[dict]:
    """A user prompt, then ``rounds`` of (assistant text + tool_use, user tool_result): 2 * rounds + 1
    messages. Every ``big_every``-th result (0: none) is ``big`` characters long."""
    msgs: list[dict] = [{"role": "user", "content": "Fix the failing tests in the repository."}]
    for k in range(rounds):
        tid = f"toolu_{k:05d}"
        n = big if big_every and k % big_every == big_every - 1 else size
        output = "".join(f"tests/test_{k}.py::case_{j} output line {j} of step {k}\n" for j in range(n // 48 + 1))[:n]
        msgs.append({"role": "assistant", "content": [
            {"type": "text", "text": f"Step {k}: running the tests of module {k}."},
            {"type": "tool_use", "id": tid, "name": "Bash", "input": {"command": f"pytest tests/test_{k}.py"}}]})
        msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid, "content": output}]})
    return msgs


def suffixed(value, suffix: str):
    """``value`` with every tool id made unique to one copy of a session."""
    if isinstance(value, dict):
        return {k: (v + suffix if k in ("id", "tool_use_id") and isinstance(v, str) else suffixed(v, suffix))
                for k, v in value.items()}
    if isinstance(value, list):
        return [suffixed(v, suffix) for v in value]
    return value


def corpus_sessions() -> list[Path]:
    found = []
    if CC_CORPUS.is_dir():
        found += sorted(p / "session.jsonl" for p in CC_CORPUS.iterdir() if (p / "session.jsonl").exists())
    if PUBLIC_CORPUS.is_dir():
        found += sorted(p for p in PUBLIC_CORPUS.rglob("*.jsonl") if "subagents" not in p.parts)
    return found


def _calls_tools(message: dict) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(b.get("type") == "tool_use" for b in content)


def from_corpus(at_least: int) -> list[dict] | None:
    """At least ``at_least`` messages from the corpus sessions' views (roles alternating: a session that
    would follow a user message with another is joined after an assistant's acknowledgement)."""
    from ctxkit import read_transcript

    views = []
    for path in corpus_sessions():
        msgs = read_transcript(path, on_bad_line="skip").view().api_messages(include_system=False)
        while msgs and msgs[-1]["role"] == "assistant" and _calls_tools(msgs[-1]):
            msgs = msgs[:-1]  # a turn in progress when the session was recorded: its call has no answer
        if msgs:
            views.append(msgs)
    if not views:
        return None
    out: list[dict] = []
    copy = 0
    while len(out) < at_least:
        for msgs in views:
            if out and out[-1]["role"] == msgs[0]["role"]:
                out.append({"role": "assistant" if msgs[0]["role"] == "user" else "user",
                            "content": "Noted; on to the next task."})
            out.extend(suffixed(m, f"_c{copy}") for m in msgs)
            copy += 1
        if len(out) >= at_least:
            break
    return out
