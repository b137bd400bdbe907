"""Review fixes for the summarizer: a string ``content`` is named as such, and the total time limit
holds against a server that trickles its answer (tests/mock_messages_api.py, the real SDK)."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from ctxkit.cli.main import app
from ctxkit.errors import LLMError
from ctxkit.llm import AnthropicSummarizer

try:
    from tests.mock_messages_api import MockMessagesAPI, Reply
except ImportError:  # pragma: no cover
    from mock_messages_api import MockMessagesAPI, Reply

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
