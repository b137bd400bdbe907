"""Review fixes for the summarizer: a string ``content`` is named as such, and the total time limit
holds against a server that trickles its answer (tests/mock_messages_api.py, the real SDK)."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from builders import session
from helpers import breaker_failures
from mock_messages_api import MockMessagesAPI, Reply

from ctxkit.cli.main import app
from ctxkit.errors import LLMError
from ctxkit.summarize.anthropic import AnthropicSummarizer

KEY = "sk-ant-test-0123456789abcdef"


@pytest.fixture
def api():
    with MockMessagesAPI(default_text=None) as server:
        yield server


def test_a_string_content_is_reported_as_a_string_not_one_block_per_character(api):
    api.enqueue(Reply(body={"id": "m", "type": "message", "role": "assistant", "model": "x",
                            "content": "here is the summary", "stop_reason": "end_turn", "stop_sequence": None,
                            "usage": {"input_tokens": 1, "output_tokens": 1}}))
    summarizer = AnthropicSummarizer("x", base_url=api.base_url, env={"ANTHROPIC_API_KEY": KEY}, max_retries=0)
    with pytest.raises(LLMError) as raised:
        summarizer.complete([{"role": "user", "content": "hi"}], system=None, max_tokens=10)
    assert raised.value.message == ("malformed summary: the answer's content is a string, not a list of content "
                                    "blocks (stop_reason: end_turn)")
    assert "?, ?" not in raised.value.message


def test_a_server_trickling_its_answer_is_cut_off_at_the_total_timeout(runner, api):
    src = session(Path("s.jsonl"))
    api.always = Reply(text="<summary>1. Primary Request and Intent:\n   x</summary>" * 20, trickle=0.5)
    env = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": api.base_url}
    started = time.monotonic()
    result = runner.invoke(app, ["compact", "s.jsonl", "-o", "out.jsonl", "--context-window", "40000",
                                 "--set", "overhead_tokens=0", "--set", "thresholds.summary_reserve=3000",
                                 "--set", "thresholds.autocompact_buffer=30000",
                                 "--set", "summarizer.total_timeout_seconds=3", "--set", "summarizer.max_retries=1"],
                           env=env)
    elapsed = time.monotonic() - started
    assert result.exit_code == 1, result.stderr
    assert elapsed < 8  # each byte came within the per-read timeout: only the total limit can stop it
    assert len(api.message_requests) == 1
    assert ("autocompact: failed: the summary request gave up after 1 attempt(s): its time limit ran out "
            "(summarizer.total_timeout_seconds: 3s)\n") in result.stderr
    assert Path("out.jsonl").read_bytes() == src.read_bytes()
    assert breaker_failures() == [1]
    assert json.loads(src.read_text().splitlines()[0])["role"] == "user"
