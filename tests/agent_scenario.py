"""The conversation the adapter tests drive each framework through: a long, tool-heavy agent run.

Every step the model calls a ``Bash`` tool whose output is long (every third one over the policy's
4,000-character budget, so it is persisted), then answers. The policy (``no-llm`` with a
40,000-token window) persists the long outputs and, past the autocompact threshold, replaces the
history with an extractive summary: the model must then receive fewer tokens than the agent holds.
"""
from __future__ import annotations

from pathlib import Path

STEPS = 36
NOW = "2026-12-01T12:00:00Z"
PERSISTED = "<persisted-output>"
SUMMARY = "This session is being continued from a previous conversation"
POLICY = """\
extends: no-llm
context_window: 40000
overhead_tokens: 0
thresholds:
  summary_reserve: 5000
stages:
  - id: tool-result-budget
    options:
      max_result_chars: 4000
"""


def write_policy(folder: Path) -> str:
    path = folder / "agent-policy.yaml"
    path.write_text(POLICY, encoding="utf-8")
    return str(path)


def command(step: int) -> str:
    return f"tail -n 60 /var/log/worker-{step}.log"


def bash_output(command: str) -> str:
    """What the ``Bash`` tool prints: 60 log lines (about 3,500 characters), 120 for every third worker."""
    worker = int(command.rsplit("-", 1)[1].split(".")[0])
    lines = 120 if worker % 3 == 0 else 60
    return "\n".join(f"2026-12-01T10:{j % 60:02d}:{worker:02d} INFO worker-{worker} batch {worker * 1000 + j} "
                     f"done in {(j * 37 + worker) % 997} ms" for j in range(lines))


def unpaired_openai(messages: list[dict]) -> list[str]:
    """The tool call ids of an OpenAI chat request that lack their result, or whose result lacks its call."""
    problems, open_calls = [], set()
    for m in messages:
        if m.get("role") == "tool":
            if m.get("tool_call_id") not in open_calls:
                problems.append(f"result without call: {m.get('tool_call_id')}")
            open_calls.discard(m.get("tool_call_id"))
            continue
        problems += [f"call without result: {c}" for c in sorted(open_calls)]
        open_calls = {c["id"] for c in m.get("tool_calls") or ()}
    return problems + [f"call without result: {c}" for c in sorted(open_calls)]


def unpaired_anthropic(messages: list[dict]) -> list[str]:
    """The same for Anthropic messages: each tool_use answered by a tool_result in the next message."""
    problems, open_calls = [], set()
    for m in messages:
        blocks = m["content"] if isinstance(m["content"], list) else []
        results = {b["tool_use_id"] for b in blocks if b.get("type") == "tool_result"}
        problems += [f"result without call: {r}" for r in sorted(results - open_calls)]
        problems += [f"call without result: {c}" for c in sorted(open_calls - results)]
        open_calls = {b["id"] for b in blocks if b.get("type") == "tool_use"}
    return problems + [f"call without result: {c}" for c in sorted(open_calls)]
