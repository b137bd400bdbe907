"""One builder of the Anthropic SDK client (ctxkit.anthropic_client), shared by the summarizer and
the ``anthropic`` token counter: same key rule, same base URL rule, same redaction.

Driven with the real SDK against tests/mock_messages_api.py (loopback only)."""
from __future__ import annotations

import pytest
from mock_messages_api import MockMessagesAPI

from ctxkit import anthropic_client
from ctxkit.errors import LLMError
from ctxkit.summarize.anthropic import AnthropicSummarizer
from ctxkit.tokens.api_counter import AnthropicCounter

KEY = "sk-ant-shared-builder-key-0042"
MESSAGES = [{"role": "user", "content": "List the files in the repository, please."}]


@pytest.fixture
def clean_environ(monkeypatch):
    """No Anthropic credentials or address in os.environ: whatever is used comes from the ``env`` passed."""
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE",
                "ANTHROPIC_CONFIG_DIR"):
        monkeypatch.delenv(var, raising=False)


def test_the_summarizer_and_the_token_counter_build_their_client_in_one_place(monkeypatch, clean_environ):
    calls = []
    real = anthropic_client.build_client

    def recording(**kwargs):
        calls.append(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(anthropic_client, "build_client", recording)
    with MockMessagesAPI(api_key=KEY) as api:
        # the address and the key from an ``env`` mapping, not os.environ: both honour it the same way
        env = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": api.base_url}
        api.token_count = 321
        counter = AnthropicCounter(model="claude-sonnet-4-5", env=env)
        assert counter.count_messages(MESSAGES) == 321
        assert counter.notice is None
        summarizer = AnthropicSummarizer("claude-x", env=env, sleep=lambda s: None)
        assert "mock summary" in summarizer.complete(MESSAGES, system=None, max_tokens=100)
        paths = [r.path.split("?")[0] for r in api.requests]
        keys = {r.headers.get("x-api-key") or r.headers.get("authorization", "").removeprefix("Bearer ")
                for r in api.requests}
    assert paths == ["/v1/messages/count_tokens", "/v1/messages"]
    assert keys == {KEY}
    assert [c["env"] for c in calls] == [env, env]  # one builder, called by each path


def test_the_token_counter_takes_the_key_from_ANTHROPIC_API_KEY_only(monkeypatch, clean_environ):
    # like the summarizer: another credential the SDK would pick up by itself is not used
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "some-bearer-token")
    counter = AnthropicCounter(model="claude-sonnet-4-5")
    assert counter.notice == ("anthropic: no API key (set ANTHROPIC_API_KEY); "
                              + counter.notice.split("; ", 1)[1])
    with pytest.raises(LLMError, match="needs an API key: set ANTHROPIC_API_KEY"):
        AnthropicSummarizer("claude-x", sleep=lambda s: None).complete(MESSAGES, system=None, max_tokens=10)


def test_a_policy_base_url_wins_over_the_environment_and_the_public_api_is_the_fallback():
    assert anthropic_client.base_url("http://policy", {"ANTHROPIC_BASE_URL": "http://env"}) == "http://policy"
    assert anthropic_client.base_url(None, {"ANTHROPIC_BASE_URL": "http://env"}) == "http://env"
    assert anthropic_client.base_url(None, {}) == "https://api.anthropic.com"
    assert anthropic_client.redact_key(f"bad key {KEY}!", KEY) == "bad key [redacted]!"
