"""``view --to anthropic-request`` asks the API for context management as Claude Code does.

Claude Code sends ``clear_thinking_20251015`` (keep: all) with its thinking settings on every request, and
never ``clear_tool_uses``; the recorded requests of the corpus show it. ctxkit's request body does the same by
default, and adds ``clear_tool_uses`` only when a policy asks for it.
"""
from __future__ import annotations

import gzip
import json
from datetime import timedelta

import pytest
from conftest import cc_sessions

from ctxkit.cli.main import app
from ctxkit.clock import parse_instant

SESSIONS = cc_sessions()
NOTE = "ctxkit: note: send the header anthropic-beta: context-management-2025-06-27"


def _last_request(session) -> dict:
    with gzip.open(session / "requests.jsonl.gz", "rt") as f:
        return [json.loads(line)["body"] for line in f][-1]


def _soon_after_last_reply(session) -> str:
    stamps = [json.loads(x).get("timestamp") for x in (session / "session.jsonl").read_text().splitlines()
              if '"type":"assistant"' in x]
    return (parse_instant(stamps[-1]) + timedelta(minutes=1)).isoformat()


@pytest.mark.skipif(not SESSIONS, reason="the recorded sessions are absent")
@pytest.mark.parametrize("session", SESSIONS, ids=[p.name for p in SESSIONS])
def test_the_request_asks_for_what_claude_code_asked(runner, session):
    recorded = _last_request(session)
    assert recorded["context_management"] == {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]}
    r = runner.invoke(app, ["view", str(session / "session.jsonl"), "--to", "anthropic-request",
                            "--now", _soon_after_last_reply(session)])
    assert r.exit_code == 0, r.stderr
    body = json.loads(r.stdout)
    assert body["context_management"] == recorded["context_management"]
    assert body["thinking"] == recorded["thinking"]
    assert NOTE in r.stderr.splitlines()[0]


def test_clear_tool_uses_only_when_the_policy_asks(runner, corpus_session):
    path = str(corpus_session("explore-edit"))
    now = _soon_after_last_reply(corpus_session("explore-edit").parent)
    api_native = ["--set", "stages.microcompact.options.mode=api-native"]
    r = runner.invoke(app, ["view", path, "--to", "anthropic-request", "--now", now, *api_native])
    assert [e["type"] for e in json.loads(r.stdout)["context_management"]["edits"]] == ["clear_thinking_20251015"]
    r = runner.invoke(app, ["view", path, "--to", "anthropic-request", "--now", now, *api_native,
                            "--set", "stages.microcompact.options.api_native.clear_tool_uses.enabled=true"])
    assert [e["type"] for e in json.loads(r.stdout)["context_management"]["edits"]] == [
        "clear_thinking_20251015", "clear_tool_uses_20250919"]


def test_a_plain_message_list_has_no_thinking_so_no_edit(runner, tmp_path):
    path = tmp_path / "msgs.jsonl"
    path.write_text(json.dumps({"role": "user", "content": "hello"}) + "\n")
    r = runner.invoke(app, ["view", str(path), "--to", "anthropic-request"])
    assert (r.exit_code, r.stderr) == (0, "")
    assert json.loads(r.stdout) == {"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "hello"}],
                                    "max_tokens": 32000}
