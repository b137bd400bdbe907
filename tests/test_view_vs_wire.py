"""The view written ``--to anthropic`` against what Claude Code sent (``requests.jsonl.gz``): the same
content — every reminder, the files Claude Code re-attaches after a compaction included — laid out one
message per transcript message; ``--to anthropic-request`` is the wire's layout, message for message.
docs/formats.md ("The view of a Claude Code session") says why the two differ."""
from __future__ import annotations

import json

import pytest
from conftest import cc_sessions, needs_corpus
from helpers import core, last_main_request

from ctxkit.cli.main import app
from ctxkit.transcript.claude_code.requests import as_blocks, without_cache_control


def _texts(messages: list[dict]) -> list[str]:
    return [b["text"].strip() for m in messages for b in as_blocks(m)["content"] if b.get("type") == "text"]


def _paragraphs(messages: list[dict]) -> set[str]:
    """Every paragraph of every text (Claude Code joins consecutive system messages with a blank line)."""
    return {p.strip() for t in _texts(messages) for p in t.split("\n\n") if p.strip()}


@needs_corpus
@pytest.mark.parametrize("session", cc_sessions(), ids=lambda p: p.name)
def test_the_view_holds_what_claude_code_sent_and_the_request_is_its_layout(session, runner):
    sent = last_main_request(session)["messages"]
    view = runner.invoke(app, ["view", "--to", "anthropic", str(session / "session.jsonl")])
    assert view.exit_code == 0, view.output
    got = [json.loads(line) for line in view.stdout.splitlines()]
    assert core(got)[:len(core(sent))] == core(sent)
    missing = sorted(_paragraphs(sent) - _paragraphs(got))
    assert not missing, f"{session.name}: sent but not in the view: {[t[:80] for t in missing]}"
    files = [t for t in _texts(sent) if t.startswith("<system-reminder>\nResult of calling the Read tool")]
    if session.name in ("autocompact", "manual-compact"):
        assert files  # the re-attached files: in the request, and (above) in the view
    request = runner.invoke(app, ["view", "--to", "anthropic-request", str(session / "session.jsonl")])
    assert request.exit_code == 0, request.output
    rebuilt = [as_blocks(m) for m in without_cache_control(json.loads(request.stdout)["messages"])]
    assert rebuilt[:len(sent)] == [as_blocks(m) for m in without_cache_control(sent)]
    assert [m["role"] for m in rebuilt[len(sent):]] == ["assistant"]  # the last answer, after the request
