"""A round of parallel tool results in ``ctxkit view --to anthropic-request`` is listed as Claude Code
sends it: in the order the calls finished (the transcript's), for every Claude Code version. Measured with the genuine CLI (docs/simulate.md, "Parallel tool results on the
wire"): 1.0.98, 2.0.67, 2.1.38, 2.1.150 and 2.1.328 all sent ``echo fast-b``'s result before that of
the earlier call ``sleep 2; echo slow-a``. Each transcript here is shaped as those runs wrote theirs."""
from __future__ import annotations

import json

import pytest
from builders import assistant_message, entry, user_message

from ctxkit.cli.main import app

SLOW, FAST = "toolu_slow", "toolu_fast"


def _session(version: str | None) -> list[dict]:
    """A prompt, an answer of two Bash calls (one line per block, as Claude Code writes them), their results
    in the order they finished (the second call first), and the answer after them."""
    lines: list[dict] = []

    def add(kind: str, message: dict, second: int) -> None:
        lines.append(entry(kind, message, uuid=f"u{len(lines) + 1}", parent=lines[-1]["uuid"] if lines else None,
                           timestamp=f"2026-11-30T10:00:{second:02d}.000Z", version=version))

    add("user", user_message("run both commands"), 0)
    add("assistant", assistant_message([{"type": "text", "text": "Running two commands at once."}]), 1)
    for k, (cid, command) in enumerate(((SLOW, "sleep 2; echo slow-a"), (FAST, "echo fast-b"))):
        add("assistant", assistant_message([{"type": "tool_use", "id": cid, "name": "Bash",
                                             "input": {"command": command}}]), 1 + k)
    for second, (cid, out) in ((2, (FAST, "fast-b")), (4, (SLOW, "slow-a"))):
        add("user", user_message([{"type": "tool_result", "tool_use_id": cid, "content": out}]), second)
    return lines


def _results(body: dict) -> list[str]:
    """The calls the tool results of the request's last message answer, in order."""
    return [b["tool_use_id"] for b in body["messages"][-1]["content"] if b.get("type") == "tool_result"]


@pytest.mark.parametrize("version", ["1.0.98", "2.0.67", "2.1.38", "2.1.150", "2.1.328", None])
def test_a_rounds_results_are_sent_in_the_order_they_finished(version, runner, tmp_path):
    path = tmp_path / "session.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in _session(version)), encoding="utf-8")
    result = runner.invoke(app, ["view", "--to", "anthropic-request", "--now", "2026-11-30T10:00:05Z", str(path)])
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    calls = [b["id"] for m in body["messages"] if m["role"] == "assistant" for b in m["content"]
             if b.get("type") == "tool_use"]
    assert calls == [SLOW, FAST]
    assert _results(body) == [FAST, SLOW]
