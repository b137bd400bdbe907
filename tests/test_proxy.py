"""``ctxkit proxy`` on the wire: a stand-in upstream on loopback (tests/proxy_upstream.py), the real
``ContextManager`` behind each conversation, real HTTP between client, proxy and upstream."""
from __future__ import annotations

import gzip
import json
import shutil
import subprocess
from pathlib import Path

import httpx2
import pytest
from conftest import CC_CORPUS, needs_corpus
from live_conversations import from_corpus, synthetic
from proxy_upstream import Answer, RunningProxy, Upstream

from ctxkit import ContextManager
from ctxkit.proxy import ProxySettings
from ctxkit.proxy.conversations import live_managers
from ctxkit.proxy.gate import without_marks

SECRET = "sk-ant-api03-proxy-test-SECRET-4242"


def _body(messages, **extra):
    return {"model": "claude-sonnet-4-5", "max_tokens": 1000, "system": [{"type": "text", "text": "You are an agent."}],
            "messages": messages, "metadata": {"user_id": "session-1"}, **extra}


def _paired(messages: list[dict]) -> bool:
    """Every tool_use answered in the next message, every tool_result answering one just before."""
    for i, m in enumerate(messages):
        content = m.get("content") if isinstance(m.get("content"), list) else []
        uses = [b["id"] for b in content if b.get("type") == "tool_use"]
        if uses:
            nxt = messages[i + 1].get("content") if i + 1 < len(messages) else None
            answered = {b.get("tool_use_id") for b in nxt if b.get("type") == "tool_result"} if isinstance(nxt, list) else set()
            if not set(uses) <= answered:
                return False
        results = [b["tool_use_id"] for b in content if b.get("type") == "tool_result"]
        if results:
            prev = messages[i - 1].get("content") if i else None
            asked = {b.get("id") for b in prev if b.get("type") == "tool_use"} if isinstance(prev, list) else set()
            if not set(results) <= asked:
                return False
    return True


def _prefix_breaks(requests) -> int:
    """How many requests' messages do not start with the previous request's (cache marks aside)."""
    breaks, prev = 0, None
    for q in requests:
        now = [json.dumps(without_marks(m), sort_keys=True) for m in q.json()["messages"]]
        if prev is not None and now[:len(prev)] != prev:
            breaks += 1
        prev = now
    return breaks


def _cuts(messages: list[dict]) -> list[int]:
    """Where an agent sends: after the last of each run of user messages."""
    return [i for i in range(1, len(messages) + 1)
            if messages[i - 1]["role"] == "user" and (i == len(messages) or messages[i]["role"] != "user")]


def _send_growing(url: str, messages: list[dict], **headers) -> list[httpx2.Response]:
    """The conversation sent as an agent sends it: the whole list so far, after each user message."""
    out = []
    with httpx2.Client(timeout=60) as client:
        for i in _cuts(messages):
            out.append(client.post(url + "/v1/messages?beta=true", content=json.dumps(_body(messages[:i])),
                                   headers={"x-api-key": SECRET, "anthropic-version": "2023-06-01", **headers}))
    return out


def _check_long_conversation(messages: list[dict], tmp_path: Path, window: int | None = None) -> None:
    records = []
    with Upstream() as up, RunningProxy(ProxySettings(up.url, live_managers("default", window), store=tmp_path / "store",
                                                      on_request=records.append)) as proxy:
        answers = _send_growing(proxy.url, messages)
    assert all(r.status_code == 200 for r in answers)
    sent = [len(q.body) for q in up.requests]
    given = [len(json.dumps(_body(messages[:i]))) for i in _cuts(messages)]
    assert len(sent) == len(given)
    assert sum(sent) < 0.8 * sum(given), "the upstream should receive smaller bodies"
    assert sent[-1] < given[-1]
    assert _prefix_breaks(up.requests) <= len(up.requests) / 10
    assert all(_paired(q.json()["messages"]) for q in up.requests)
    assert all(q.headers["x-api-key"] == SECRET for q in up.requests)
    assert any(r.managed and r.saved_usd > 0 and r.tokens_sent < r.tokens_in for r in records)
    assert {r.conversation for r in records} == {records[0].conversation}


def test_a_long_tool_heavy_conversation_reaches_the_upstream_smaller_with_its_prefix_kept(tmp_path):
    _check_long_conversation(synthetic(60, 3_000, big_every=6), tmp_path)


@needs_corpus
def test_a_long_conversation_from_the_corpus_reaches_the_upstream_smaller_with_its_prefix_kept(tmp_path):
    messages = from_corpus(160)
    if messages is None:
        pytest.skip("no corpus session to build the conversation from")
    _check_long_conversation(messages[:161], tmp_path, window=60_000)  # a window it outgrows


@needs_corpus
def test_claude_codes_own_requests_pass_with_every_field_but_messages_untouched(tmp_path):
    """The exact bodies Claude Code sent in a recorded session, in order, with their cache marks,
    metadata and tools: everything but ``messages`` arrives as sent, and the messages stay paired."""
    lines = gzip.open(CC_CORPUS / "multi-prompt" / "requests.jsonl.gz", "rt").read().splitlines()
    bodies = [json.loads(line)["body"] for line in lines]
    with Upstream() as up, RunningProxy(ProxySettings(up.url, live_managers("default"),
                                                      store=tmp_path / "store")) as proxy:
        with httpx2.Client(timeout=60) as client:
            for body in bodies:
                r = client.post(proxy.url + "/v1/messages?beta=true", content=json.dumps(body))
                assert r.status_code == 200
    assert len(up.requests) == len(bodies)
    for body, seen in zip(bodies, up.requests, strict=True):
        got = seen.json()
        assert seen.path == "/v1/messages?beta=true"
        assert {k: v for k, v in got.items() if k != "messages"} == {k: v for k, v in body.items() if k != "messages"}
        assert list(got) == list(body)  # the same keys in the same order
        assert _paired(got["messages"])
        if got["messages"] == body["messages"]:
            assert seen.body == json.dumps(body).encode()  # not managed: the very bytes


def test_blocks_no_stage_manages_pass_through_untouched(tmp_path):
    """server_tool_use / web_search_tool_result, signed thinking, unknown block types and cache marks
    reach the upstream as the agent wrote them, in a conversation the policy does manage."""
    special = [
        {"type": "thinking", "thinking": "Let me look.", "signature": "EqQBCkgIARABGAIiQ" + "x" * 40},
        {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": {"query": "ctxkit"}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01",
         "content": [{"type": "web_search_result", "url": "https://example.org", "title": "t",
                      "encrypted_content": "Eo8BCioIAhgBIiQ", "page_age": None}]},
        {"type": "future_block_kind", "payload": {"anything": [1, 2, 3]}},
        {"type": "text", "text": "Searching done.", "cache_control": {"type": "ephemeral"}},
    ]
    messages = synthetic(40, 3_000, big_every=4)
    messages[1] = {"role": "assistant", "content": special + messages[1]["content"]}
    with Upstream() as up, RunningProxy(ProxySettings(up.url, live_managers("default"), store=tmp_path / "s")) as proxy:
        _send_growing(proxy.url, messages)
    last = up.requests[-1].json()["messages"]
    assert len(up.requests[-1].body) < len(json.dumps(_body(messages)))  # managed
    assert last[1]["content"][:len(special)] == special


def test_responses_reach_the_client_byte_for_byte(tmp_path):
    sse = Answer.sse("Streaming text with ünïcödé and \"quotes\".", {"input_tokens": 12, "output_tokens": 9,
                                                                     "cache_read_input_tokens": 100})
    plain = Answer.json("A JSON answer.", {"input_tokens": 5, "output_tokens": 3})
    plain.headers = [("request-id", "req_0123"), ("anthropic-ratelimit-requests-remaining", "99")]
    records = []
    with Upstream() as up, RunningProxy(ProxySettings(up.url, live_managers("default"), store=tmp_path / "s",
                                                      on_request=records.append)) as proxy:
        up.script.extend([sse, plain])
        body = json.dumps(_body([{"role": "user", "content": "hi"}], stream=True))
        with httpx2.Client() as client:
            with client.stream("POST", proxy.url + "/v1/messages", content=body) as r:
                streamed = b"".join(r.iter_raw())
                assert r.headers["content-type"] == "text/event-stream; charset=utf-8"
            r2 = client.post(proxy.url + "/v1/messages", content=body)
    assert streamed == b"".join(sse.chunks)
    assert r2.content == b"".join(plain.chunks)
    assert r2.headers["request-id"] == "req_0123" and r2.headers["anthropic-ratelimit-requests-remaining"] == "99"
    assert records[0].usage == {"input_tokens": 12, "output_tokens": 9, "cache_read_input_tokens": 100}
    assert records[1].usage == {"input_tokens": 5, "output_tokens": 3}


@pytest.mark.parametrize("status,kind", [(400, "invalid_request_error"), (401, "authentication_error"),
                                         (429, "rate_limit_error"), (500, "api_error"), (529, "overloaded_error")])
def test_upstream_errors_reach_the_client_as_given(tmp_path, status, kind):
    answer = Answer.error(status, kind, f"the upstream says {status}")
    answer.headers = [("retry-after", "7")]
    with Upstream() as up, RunningProxy(ProxySettings(up.url, live_managers("default"), store=tmp_path / "s")) as proxy:
        up.script.append(answer)
        r = httpx2.post(proxy.url + "/v1/messages", content=json.dumps(_body([{"role": "user", "content": "hi"}])))
    assert r.status_code == status
    assert r.content == answer.chunks[0]
    assert r.headers["retry-after"] == "7"


def test_an_upstream_that_breaks_off_or_is_gone_is_not_an_error_of_the_proxys_making(tmp_path):
    records = []
    with Upstream() as up, RunningProxy(ProxySettings(up.url, live_managers("default"), store=tmp_path / "s",
                                                      on_request=records.append, timeout=1.0)) as proxy:
        body = json.dumps(_body([{"role": "user", "content": "hi"}], stream=True))
        up.script.append(Answer.sse("a long answer cut short", cut_after=2))
        with pytest.raises(httpx2.HTTPError):  # the client's stream breaks off as the upstream's did
            with httpx2.stream("POST", proxy.url + "/v1/messages", content=body) as r:
                b"".join(r.iter_raw())
        slow_answer = Answer.sse("slow")
        slow_answer.delay = 3.0
        up.script.append(slow_answer)
        slow = httpx2.post(proxy.url + "/v1/messages", content=body, timeout=30)
        gone = ProxySettings("http://127.0.0.1:9", live_managers("default"), store=tmp_path / "s2")
        with RunningProxy(gone) as dead:
            unreachable = httpx2.post(dead.url + "/v1/messages", content=body)
    assert records[0].error and "broke off" in records[0].error
    assert slow.status_code == 504 and slow.json()["error"]["type"] == "timeout_error"
    assert unreachable.status_code == 502 and unreachable.json()["type"] == "error"


def test_what_the_proxy_cannot_manage_passes_through_with_a_warning(tmp_path):
    records = []
    with Upstream() as up, RunningProxy(ProxySettings(up.url, live_managers("default"), store=tmp_path / "s",
                                                      on_request=records.append)) as proxy:
        with httpx2.Client() as client:
            bad = b'{"model": "claude-sonnet-4-5", "messages": [tru'
            r1 = client.post(proxy.url + "/v1/messages", content=bad)
            unknown = json.dumps(_body(synthetic(30, 20_000), model="some-local-model")).encode()
            r2 = client.post(proxy.url + "/v1/messages", content=unknown)
            r3 = client.get(proxy.url + "/v1/models?limit=5", headers={"x-api-key": SECRET})
    assert [r.status_code for r in (r1, r2, r3)] == [200, 200, 200]
    assert up.requests[0].body == bad and up.requests[1].body == unknown
    assert up.requests[2].method == "GET" and up.requests[2].path == "/v1/models?limit=5"
    assert "not JSON" in records[0].warning and "unknown model 'some-local-model'" in records[1].warning
    assert records[2].usage == {} and records[2].conversation is None  # a path it does not manage: not read


def test_requests_it_does_not_manage_reach_the_upstream_as_sent_bodies_streamed_and_no_header_added(tmp_path):
    import http.client

    upload = b"--b\r\nContent-Disposition: form-data; name=file\r\n\r\n" + bytes(range(256)) * 64 + b"\r\n--b--\r\n"
    with Upstream() as up, RunningProxy(ProxySettings(up.url, live_managers("default"), store=tmp_path / "s")) as proxy:
        # a bare client (http.client sends only what it is told, besides Host and Accept-Encoding)
        conn = http.client.HTTPConnection(proxy.url.removeprefix("http://"), timeout=30)
        conn.request("POST", "/v1/files?purpose=batch", body=upload,
                     headers={"x-api-key": SECRET, "content-type": "multipart/form-data; boundary=b",
                              "anthropic-beta": "files-api-2025-04-14", "expect": "100-continue"})
        assert conn.getresponse().read() and conn.sock is not None
        # a body of unknown length, sent chunked
        conn.request("PUT", "/v1/skills/abc%2Fdef", body=iter([b"part one, ", b"part two"]), encode_chunked=True,
                     headers={"x-api-key": SECRET, "transfer-encoding": "chunked"})
        conn.getresponse().read()
        conn.close()
    files, skills = up.requests
    assert (files.method, files.path, files.body) == ("POST", "/v1/files?purpose=batch", upload)
    assert files.headers["content-length"] == str(len(upload))
    assert files.headers["content-type"] == "multipart/form-data; boundary=b" and files.headers["x-api-key"] == SECRET
    assert files.headers["anthropic-beta"] == "files-api-2025-04-14"
    assert "expect" not in files.headers  # the body is on its way already: nothing to wait for upstream
    for added in ("user-agent", "accept"):  # the upstream hears the client's headers, not the proxy's
        assert added not in files.headers and added not in skills.headers, added
    assert (skills.method, skills.raw_path, skills.body) == ("PUT", b"/v1/skills/abc%2Fdef", b"part one, part two")


@pytest.mark.skipif(shutil.which("openssl") is None, reason="the openssl command makes the test's certificate")
def test_an_https_upstream_is_reached_when_its_certificate_is_trusted_and_refused_when_not(tmp_path, monkeypatch):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True, timeout=60)
    body = json.dumps(_body([{"role": "user", "content": "hi"}]))
    answer = Answer.json("over TLS", {"input_tokens": 5, "output_tokens": 2})
    with Upstream(tls=(str(cert), str(key))) as up:
        assert up.url.startswith("https://")
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # the way a user trusts their own certificate authority
        with RunningProxy(ProxySettings(up.url, live_managers("default"), store=tmp_path / "s")) as proxy:
            up.script.append(answer)
            trusted = httpx2.post(proxy.url + "/v1/messages", content=body, headers={"x-api-key": SECRET})
        monkeypatch.delenv("SSL_CERT_FILE")  # certifi's bundle, which does not hold this certificate
        with RunningProxy(ProxySettings(up.url, live_managers("default"), store=tmp_path / "s2")) as proxy:
            refused = httpx2.post(proxy.url + "/v1/messages", content=body, headers={"x-api-key": SECRET})
    assert trusted.status_code == 200 and trusted.content == answer.chunks[0]
    assert up.requests[0].headers["x-api-key"] == SECRET and len(up.requests) == 1  # the key went to no one else
    assert refused.status_code == 502 and "could not be reached" in refused.json()["error"]["message"]


def test_the_upstream_is_reached_through_the_http_proxy_the_environment_names(tmp_path, monkeypatch):
    body = json.dumps(_body([{"role": "user", "content": "hi"}]))
    for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    with Upstream() as up, Upstream() as way_out:
        monkeypatch.setenv("HTTP_PROXY", way_out.url)  # as the agent's SDK would go out
        with RunningProxy(ProxySettings(up.url, live_managers("default"), store=tmp_path / "s")) as proxy:
            # (the test's own client ignores the environment: it talks to the proxy directly)
            via = httpx2.post(proxy.url + "/v1/messages", content=body, headers={"x-api-key": SECRET}, trust_env=False)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        with RunningProxy(ProxySettings(up.url, live_managers("default"), store=tmp_path / "s2")) as proxy:
            direct = httpx2.post(proxy.url + "/v1/messages", content=body, headers={"x-api-key": SECRET},
                                 trust_env=False)
    assert via.status_code == direct.status_code == 200
    [relayed] = way_out.requests  # the absolute URL of the upstream, as a forward proxy is asked
    assert relayed.raw_path == f"{up.url}/v1/messages".encode() and relayed.headers["x-api-key"] == SECRET
    [reached] = up.requests  # NO_PROXY: straight there
    assert reached.body == body.encode()


def test_dry_run_forwards_the_original_and_says_what_it_would_save(tmp_path):
    records = []
    messages = synthetic(30, 3_000, big_every=3)
    with Upstream() as up, RunningProxy(ProxySettings(up.url, live_managers("default"), store=tmp_path / "s",
                                                      dry_run=True, on_request=records.append)) as proxy:
        _send_growing(proxy.url, messages)
    assert [q.body for q in up.requests] == [json.dumps(_body(messages[:i])).encode() for i in _cuts(messages)]
    assert not any(r.managed for r in records)
    assert any(r.would_save_usd and r.would_save_usd > 0 and r.would_send < r.tokens_in == r.tokens_sent
               for r in records)


def test_count_tokens_is_asked_for_the_body_the_model_would_receive(tmp_path):
    messages = synthetic(20, 3_000, big_every=2)
    with Upstream() as up, RunningProxy(ProxySettings(up.url, live_managers("default"), store=tmp_path / "s")) as proxy:
        _send_growing(proxy.url, messages[:-2])
        body = json.dumps(_body(messages))
        up.script.append(Answer(200, [b'{"input_tokens": 1234}']))
        counted = httpx2.post(proxy.url + "/v1/messages/count_tokens?beta=true", content=body)
        httpx2.post(proxy.url + "/v1/messages?beta=true", content=body)
    assert counted.json() == {"input_tokens": 1234}
    count_request, message_request = up.requests[-2], up.requests[-1]
    assert count_request.path == "/v1/messages/count_tokens?beta=true"
    assert count_request.json()["messages"] == message_request.json()["messages"]
    assert len(count_request.body) < len(body)


def test_an_openai_chat_conversation_is_managed_and_its_usage_read(tmp_path):
    from ctxkit.transcript.plain.messages import to_openai

    messages = to_openai(synthetic(40, 3_000, big_every=4))
    records = []
    with Upstream() as up, RunningProxy(ProxySettings(up.url, live_managers("default"), store=tmp_path / "s",
                                                      on_request=records.append)) as proxy:
        with httpx2.Client() as client:
            for i in range(1, len(messages) + 1):
                if messages[i - 1]["role"] == "assistant":
                    continue
                usage = {"prompt_tokens": 900, "completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": 800}}
                up.script.append(Answer(200, [json.dumps({"id": "c", "object": "chat.completion", "choices": [],
                                                          "usage": usage}).encode()]))
                r = client.post(proxy.url + "/v1/chat/completions", content=json.dumps(
                    {"model": "gpt-4.1", "messages": messages[:i]}), headers={"authorization": f"Bearer {SECRET}"})
                assert r.status_code == 200
    assert len(up.requests[-1].body) < len(json.dumps({"model": "gpt-4.1", "messages": messages}))
    assert records[-1].usage == {"input_tokens": 100, "cache_read_input_tokens": 800, "cache_creation_input_tokens": 0,
                                 "output_tokens": 20}
    assert all(q.headers["authorization"] == f"Bearer {SECRET}" for q in up.requests)


def test_the_usage_of_each_response_is_fed_to_the_conversations_manager(tmp_path):
    fed = []

    class Recording(ContextManager):
        def record_usage(self, usage):
            fed.append(usage)
            return super().record_usage(usage)

    make = lambda store, model: Recording(policy="default", store=store, model=model)  # noqa: E731
    with Upstream() as up, RunningProxy(ProxySettings(up.url, make, store=tmp_path / "s")) as proxy:
        up.script.append(Answer.sse("hi", {"input_tokens": 40, "output_tokens": 5, "cache_creation_input_tokens": 300}))
        httpx2.post(proxy.url + "/v1/messages", content=json.dumps(_body([{"role": "user", "content": "hi"}])))
    assert fed == [{"input_tokens": 40, "output_tokens": 5, "cache_creation_input_tokens": 300}]


def test_a_client_that_goes_away_cancels_the_upstream_request(tmp_path):
    import time

    with Upstream() as up, RunningProxy(ProxySettings(up.url, live_managers("default"), store=tmp_path / "s")) as proxy:
        up.script.append(Answer.sse("x" * 200, pieces=100, drip=0.05))
        body = json.dumps(_body([{"role": "user", "content": "hi"}], stream=True))
        with httpx2.stream("POST", proxy.url + "/v1/messages", content=body) as r:
            next(r.iter_raw())
        deadline = time.monotonic() + 5
        while up.cancelled == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
    assert up.cancelled == 1 and up.completed == 0


def test_a_client_that_goes_away_before_the_upstream_answers_is_not_waited_for(tmp_path):
    import threading
    import time

    logged = threading.Event()
    records = []

    def on_request(record):
        records.append(record)
        logged.set()

    with Upstream() as up, RunningProxy(ProxySettings(up.url, live_managers("default"), store=tmp_path / "s",
                                                      on_request=on_request)) as proxy:
        slow = Answer.sse("x" * 50, pieces=10, drip=0.05)
        slow.delay = 6.0  # thinking: nothing is sent for a while
        up.script.append(slow)
        body = json.dumps(_body([{"role": "user", "content": "hi"}], stream=True))
        with pytest.raises(httpx2.TimeoutException):
            httpx2.post(proxy.url + "/v1/messages", content=body, timeout=httpx2.Timeout(30, read=0.5))
        left = time.monotonic()
        assert logged.wait(10)
        waited = time.monotonic() - left
        deadline = time.monotonic() + 10
        while up.cancelled == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
    assert waited < 3.0  # not the upstream's 6 s
    assert records[0].error == "the client went away"
    assert up.cancelled == 1 and up.completed == 0


def test_a_policy_that_fails_costs_the_request_its_management_not_its_answer(tmp_path):
    class Failing(ContextManager):
        def prepare(self, messages, *, system=None, tools=None):
            raise RuntimeError("the summarizer is down")

    records = []
    make = lambda store, model: Failing(policy="no-llm", store=store, model=model)  # noqa: E731
    with Upstream() as up, RunningProxy(ProxySettings(up.url, make, store=tmp_path / "s",
                                                      on_request=records.append)) as proxy:
        body = json.dumps(_body(synthetic(5, 100))).encode()
        r = httpx2.post(proxy.url + "/v1/messages", content=body)
    assert r.status_code == 200 and up.requests[0].body == body
    assert records[0].warning == ("the policy failed (RuntimeError: the summarizer is down); passed through "
                                  "unmanaged")
