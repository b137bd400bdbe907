"""A prompt queued while a turn ran, in the view of a Claude Code session that wrote it without ``rendered``.

Claude Code 2.1.114 to 2.1.148 record a ``queued_command`` attachment as ``{"type": "queued_command",
"prompt": ..., "commandMode": ...}`` and no ``rendered`` text; the model was sent it all the same (the
claude-mem observer sessions of LeoDChen/claude-config: 260,000 characters of queued observations between
two compactions, and the recorded usage grew by them). ctxkit/transcript/claude_code/queued.py."""
from __future__ import annotations

import json

from builders import Session

from ctxkit.cli.main import app

OBSERVATION = "<observed_from_primary_session>\n  <what_happened>Write</what_happened>\n" + "x = 1\n" * 2_000


def _session(tmp_path, queued: dict | None):
    tmp_path.mkdir(exist_ok=True)
    s = Session(tmp_path)
    s.prompt("Watch the primary session and keep notes", version="2.1.120")
    s.tool("Bash", {"command": "ls"}, "notes.md\n")
    if queued is not None:
        s._chain("attachment", attachment=queued, version="2.1.120")
    s.say("Noted.")
    path = tmp_path / "s.jsonl"
    s.write(path)
    return path


def _request(runner, path) -> list[dict]:
    done = runner.invoke(app, ["view", "--to", "anthropic-request", str(path)])
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout)["messages"]


def _texts(messages: list[dict]) -> list[str]:
    return [b["text"] for m in messages if m["role"] == "user" and isinstance(m["content"], list)
            for b in m["content"] if b.get("type") == "text"]


def test_an_unrendered_queued_prompt_is_sent_after_the_result_it_followed(tmp_path, runner):
    path = _session(tmp_path, {"type": "queued_command", "prompt": OBSERVATION, "commandMode": "prompt"})
    messages = _request(runner, path)
    queued = [t for t in _texts(messages) if "<observed_from_primary_session>" in t]
    assert queued == [f"<system-reminder>\nThe user sent a new message while you were working:\n{OBSERVATION}\n\n"
                      "IMPORTANT: After completing your current task, you MUST address the user's message above. "
                      "Do not ignore it.\n</system-reminder>"]
    result_message = next(m for m in messages if isinstance(m["content"], list)
                          and any(b.get("type") == "tool_result" for b in m["content"]))
    assert queued[0] in [b.get("text") for b in result_message["content"]]  # in the results' message, after them


def test_a_queued_task_notification_reads_as_one(tmp_path, runner):
    note = "<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>\n</task-notification>"
    path = _session(tmp_path, {"type": "queued_command", "prompt": note, "commandMode": "task-notification"})
    assert f"<system-reminder>\nA background agent completed a task:\n{note}\n</system-reminder>" in _texts(
        _request(runner, path))


def test_stats_counts_the_queued_prompt(tmp_path, runner):
    """The view's count is what decides compaction: without the queued text it is thousands of tokens short."""
    def tokens(path) -> int:
        done = runner.invoke(app, ["stats", "--json", str(path)])
        assert done.exit_code == 0, done.output
        return json.loads(done.stdout)["tokens"]

    with_queued = tokens(_session(tmp_path / "a", {"type": "queued_command", "prompt": OBSERVATION,
                                                    "commandMode": "prompt"}))
    assert with_queued - tokens(_session(tmp_path / "b", None)) > 2_000
