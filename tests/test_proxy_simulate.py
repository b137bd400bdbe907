"""``ctxkit simulate`` and ``ctxkit report`` on a proxy's store: the proxy run against the stand-in upstream
for a few requests, then its store replayed; the recorded row is what the upstream reported."""
from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest
from proxy_upstream import Answer, RunningProxy, Upstream

from ctxkit.cli.main import app
from ctxkit.proxy import ProxySettings
from ctxkit.proxy.conversations import live_managers
from ctxkit.proxy.request_log import (
    MESSAGES,
    NOT_KEPT,
    REQUESTS,
    RequestLog,
    as_claude_code,
    is_anthropic,
    proxy_sessions,
)

USAGES = [{"input_tokens": 40 + i, "output_tokens": 5 + i, "cache_creation_input_tokens": 300 + 10 * i,
           "cache_read_input_tokens": 100 * i} for i in range(4)]




def _serve(store: Path, users: list[str]) -> None:
    """Two conversations through the proxy, each sent as an agent sends it, each answer with its usage."""
    with Upstream() as up, RunningProxy(ProxySettings(up.url, live_managers("default"), store=store)) as proxy:
        for user in users:
            messages: list[dict] = [{"role": "user", "content": f"Hello from {user}: list the files."}]
            for i, usage in enumerate(USAGES):
                up.script.append(Answer.sse(f"answer {i}", usage, pieces=2))
                # the mark moves to the last message, as Claude Code moves it (not onto the first: the
                # proxy names a conversation by its first message as sent)
                marked = messages if i == 0 else [*messages[:-1], {"role": "user", "content": [
                    {"type": "text", "text": messages[-1]["content"], "cache_control": {"type": "ephemeral"}}]}]
                body = {"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": marked, "stream": True,
                        "metadata": {"user_id": user}}
                assert httpx2.post(proxy.url + "/v1/messages", json=body, timeout=60).status_code == 200
                messages = [*messages, {"role": "assistant", "content": [{"type": "text", "text": f"answer {i}"}]},
                            {"role": "user", "content": f"Go on with step {i + 1}."}]
            # a count is no turn: not logged
            assert httpx2.post(proxy.url + "/v1/messages/count_tokens", json=body, timeout=60).status_code == 200


def test_simulate_on_a_proxys_store_bills_the_recorded_row_as_the_upstream_reported(tmp_path, runner):
    store = tmp_path / "store"
    _serve(store, ["alice", "bob"])
    assert len(proxy_sessions(store)) == 2  # one pair of files each: a moving cache mark is no rewrite
    assert not list(store.glob("proxy/*/messages.1.jsonl"))
    done = runner.invoke(app, ["simulate", str(store), "--json"])
    assert done.exit_code == 0, done.output
    doc = json.loads(done.stdout)
    assert len(doc["sessions"]) == 2
    for s in doc["sessions"]:
        assert s["session"].endswith(REQUESTS) and str(store) in s["session"]
        rec = s["recorded"]
        assert rec["requests"] == len(USAGES)
        for key in ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
            assert rec[key] == sum(u[key] for u in USAGES), key
        assert s["none"]["requests"] == len(USAGES) and s["policies"][0]["requests"] == len(USAGES)
    total = doc["total"]["recorded"]
    assert total["output_tokens"] == 2 * sum(u["output_tokens"] for u in USAGES)


def test_report_draws_one_proxied_conversation_and_refuses_the_whole_store(tmp_path, runner):
    store = tmp_path / "store"
    _serve(store, ["alice", "bob"])
    page = tmp_path / "day.html"
    refused = runner.invoke(app, ["report", str(store), "-o", str(page)])
    assert refused.exit_code == 2 and "holds 2 proxied conversations" in refused.stderr and not page.exists()
    conversation = proxy_sessions(store)[0][1].parent
    done = runner.invoke(app, ["report", str(conversation), "-o", str(page)])
    assert done.exit_code == 0, done.output
    assert str(conversation / REQUESTS) in page.read_text("utf-8")


def test_a_history_the_agent_rewrote_starts_a_new_log_and_keeps_the_old(tmp_path):
    log = RequestLog(tmp_path)
    first = [{"role": "user", "content": "one"}]
    log.append(model="claude-sonnet-4-5", messages=first, usage={"input_tokens": 1}, tokens_in=1, tokens_sent=1,
               managed=False)
    log.append(model="claude-sonnet-4-5", messages=[*first, {"role": "assistant", "content": "a"},
                                                     {"role": "user", "content": "two"}],
               usage={"input_tokens": 2}, tokens_in=2, tokens_sent=2, managed=False)
    assert len((tmp_path / MESSAGES).read_text().splitlines()) == 3  # each message written once
    log.append(model="claude-sonnet-4-5", messages=[{"role": "user", "content": "summary, then on"}],
               usage={"input_tokens": 3}, tokens_in=3, tokens_sent=3, managed=False)
    assert len((tmp_path / "messages.1.jsonl").read_text().splitlines()) == 3
    assert len((tmp_path / "requests.1.jsonl").read_text().splitlines()) == 2
    assert [p[1].name for p in proxy_sessions(tmp_path)] == ["requests.1.jsonl", REQUESTS]


def _serve_openai(store: Path, model: str) -> list[dict]:
    """An OpenAI-SDK agent's tool loop through the proxy: three requests, each answered with a tool call and
    the usage OpenAI reports (cached tokens inside prompt_tokens: the request before's prompt, cached in
    128-token steps). The usages, as sent."""
    usages = [{"prompt_tokens": 2_000 + 600 * i, "completion_tokens": 40 + i,
               "prompt_tokens_details": {"cached_tokens": (2_000 + 600 * (i - 1)) // 128 * 128 if i else 0}}
              for i in range(3)]
    with Upstream() as up, RunningProxy(ProxySettings(up.url, live_managers("default"), store=store)) as proxy:
        messages = [{"role": "system", "content": "You are a coding agent."},
                    {"role": "user", "content": "Run the tests and fix what fails."}]
        for i, usage in enumerate(usages):
            call = {"role": "assistant", "content": None, "tool_calls": [{"id": f"call_{i}", "type": "function",
                    "function": {"name": "shell", "arguments": json.dumps({"cmd": f"pytest -k case{i}"})}}]}
            up.script.append(Answer(200, [json.dumps({"id": f"chatcmpl-{i}", "object": "chat.completion", "model": model,
                                                      "choices": [{"index": 0, "message": call, "finish_reason": "tool_calls"}],
                                                      "usage": usage}).encode()]))
            body = {"model": model, "messages": messages}
            assert httpx2.post(proxy.url + "/v1/chat/completions", json=body, timeout=60).status_code == 200
            messages = [*messages, call, {"role": "tool", "tool_call_id": f"call_{i}", "content": f"case{i} ok\n" * 80}]
    return usages


def test_an_openai_conversation_in_the_store_is_replayed_at_openais_cached_input_prices(tmp_path, runner):
    from ctxkit.reports.pricing import load_pricing

    store = tmp_path / "store"
    _serve(store, ["alice"])
    usages = _serve_openai(store, "gpt-5.1")
    [openai] = [requests for _, requests in proxy_sessions(store) if not is_anthropic(requests)]
    done = runner.invoke(app, ["simulate", str(store), "--json"])
    assert done.exit_code == 0, done.output
    assert str(openai) not in done.stderr  # not skipped; its replay reproduces its recorded usage
    sessions = json.loads(done.stdout)["sessions"]
    assert len(sessions) == 2
    session = next(s for s in sessions if s["session"] == str(openai))
    rec = session["recorded"]
    cached = sum(u["prompt_tokens_details"]["cached_tokens"] for u in usages)
    fresh = sum(u["prompt_tokens"] for u in usages) - cached
    # automatic prefix caching: what a request did not read from the cache it wrote, at the input price
    assert (rec["requests"], rec["input_tokens"], rec["cache_creation_input_tokens"]) == (3, 0, fresh)
    assert rec["cache_read_input_tokens"] == cached
    assert rec["output_tokens"] == sum(u["completion_tokens"] for u in usages)
    rates = load_pricing().rates("gpt-5.1")
    expected = (fresh * rates["input"] + cached * rates["cache_read"]
                + rec["output_tokens"] * rates["output"]) / 1_000_000
    assert rec["cost_usd"] == pytest.approx(expected, abs=1e-6)
    none = session["none"]
    assert none["requests"] == 3 and none["cost_usd"] == pytest.approx(rec["cost_usd"], rel=0.1)
    page = tmp_path / "openai.html"
    drawn = runner.invoke(app, ["report", str(openai.parent), "-o", str(page)])
    assert drawn.exit_code == 0, drawn.output
    assert str(openai) in page.read_text("utf-8")


def test_an_openai_model_the_table_cannot_price_is_priced_as_unknown_with_a_warning(tmp_path, runner):
    store = tmp_path / "store"
    usages = _serve_openai(store, "gpt-4o")
    done = runner.invoke(app, ["simulate", str(store), "--json"])
    assert done.exit_code == 0, done.output
    assert "no price for model 'gpt-4o'" in done.stderr and "priced as unknown" in done.stderr
    rec = json.loads(done.stdout)["sessions"][0]["recorded"]
    assert rec["cost_usd"] == 0 and rec["requests"] == 3
    assert rec["cache_read_input_tokens"] == sum(u["prompt_tokens_details"]["cached_tokens"] for u in usages)


def test_a_store_with_nothing_to_replay_is_a_usage_error(tmp_path, runner):
    folder = tmp_path / "store" / "proxy" / "0123456789ab"
    folder.mkdir(parents=True)
    (folder / REQUESTS).write_text('{"api":"anthropic","model":"claude-sonnet-4-5","usage":{},"mess')  # cut short
    (folder / MESSAGES).write_text('{"role":"user","content":"hi"}\n')
    done = runner.invoke(app, ["simulate", str(tmp_path / "store")])
    assert done.exit_code == 2 and "none of the proxy's conversations there can be replayed" in done.stderr


def test_a_damaged_log_is_named_or_read_around_never_an_internal_error(tmp_path, runner):
    # a request line whose message count was true (read as 1) and had no model was a KeyError (exit 4); a
    # message whose content was a number was an error naming a temporary file
    conv = tmp_path / "store" / "proxy" / "0123456789ab"
    conv.mkdir(parents=True)
    (conv / MESSAGES).write_text('{"role": "user", "content": "hi"}\n{"role": "assistant", "content": "ok"}\n'
                                 '[1, 2]\n{"role": "user", "content": [{"type": "text", "text": "more"}]}\n')
    (conv / REQUESTS).write_text('{"messages": true}\n{"at": 5, "model": 7, "usage": "x", "messages": 1}\n'
                                 '{"messages": 99}\n')
    done = runner.invoke(app, ["simulate", str(tmp_path / "store"), "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["sessions"][0]["session"] == str(conv / REQUESTS)
    (conv / MESSAGES).write_text('{"role": "user", "content": "hi"}\n{"role": "assistant", "content": 5}\n')
    for args in (["simulate", str(tmp_path / "store")], ["report", str(conv), "-o", str(tmp_path / "r.html")]):
        done = runner.invoke(app, args)
        assert done.exit_code == 2 and not (tmp_path / "r.html").exists()
        assert f"warning: {conv / MESSAGES}: message 2 has no content the API takes" in done.stderr


def _request(log: RequestLog, messages: list[dict]) -> None:
    log.append(model="claude-sonnet-4-5", messages=messages, usage={"input_tokens": 1}, tokens_in=1, tokens_sent=1,
               managed=False)


def test_a_restarted_proxy_goes_on_from_the_ends_of_the_log_not_a_read_of_all_of_it(tmp_path):
    """The first request after a restart takes what ``messages.jsonl`` holds from the last request's line (its
    count and the file's size) and the file's first and last lines: a middle line it cannot read (here made
    unreadable on purpose, same size) does not matter, and the conversation goes on in the same files. A file
    not the size the last request left (a line cut short) is read whole, as before."""
    history = [{"role": "user", "content": "one"}, {"role": "assistant", "content": "a"},
               {"role": "user", "content": "two"}, {"role": "assistant", "content": "b"},
               {"role": "user", "content": "three"}]
    _request(RequestLog(tmp_path), history[:3])
    lines = (tmp_path / MESSAGES).read_bytes().splitlines(keepends=True)
    (tmp_path / MESSAGES).write_bytes(lines[0] + b"#" * (len(lines[1]) - 1) + b"\n" + lines[2])
    _request(RequestLog(tmp_path), history)  # a new RequestLog: the proxy restarted
    assert not list(tmp_path.glob("messages.*.jsonl"))  # went on: no new pair
    assert (tmp_path / MESSAGES).read_bytes().count(b"\n") == 5
    with open(tmp_path / MESSAGES, "ab") as f:
        f.write(b'{"role": "user", "con')  # cut short by a killed proxy: the sizes differ, read whole
    _request(RequestLog(tmp_path), [*history, {"role": "assistant", "content": "c"}])
    assert list(tmp_path.glob("messages.1.jsonl"))  # the unreadable line counted out: no longer the same list


def test_a_log_write_that_fails_is_said_and_the_writer_goes_on(tmp_path):
    from ctxkit.proxy.log_writer import LogWriter

    said: list[str] = []
    writer = LogWriter(on_error=said.append)
    (tmp_path / "a-file").write_text("not a folder")
    writer.submit(_request, log=RequestLog(tmp_path / "a-file" / "conv"), messages=[{"role": "user", "content": "x"}])
    writer.submit(_request, log=RequestLog(tmp_path / "conv"), messages=[{"role": "user", "content": "y"}])
    writer.close()
    assert len(said) == 1 and "a request was not logged in the store" in said[0] and "a-file" in said[0]
    assert len((tmp_path / "conv" / REQUESTS).read_text().splitlines()) == 1


def test_a_log_line_cut_short_does_not_take_the_next_one_with_it(tmp_path):
    """A proxy killed while it wrote a message leaves that line cut short; restarted, it writes the messages
    from there again: the cut line stays one unreadable line of its own, and every message, the last
    request's usage with it, is read back in order (the next line used to join the cut one and be lost)."""
    history = [{"role": "user", "content": "one"}, {"role": "assistant", "content": "a"},
               {"role": "user", "content": "two"}, {"role": "assistant", "content": "b"},
               {"role": "user", "content": "three"}]
    _request(RequestLog(tmp_path), history[:3])
    with open(tmp_path / MESSAGES, "ab") as f:
        f.write(b'{"role":"assistant","con')
    with open(tmp_path / REQUESTS, "ab") as f:
        f.write(b'{"at":"2026')
    _request(RequestLog(tmp_path), history)
    lines = as_claude_code(tmp_path / MESSAGES, tmp_path / REQUESTS)
    assert [(x["type"], x["message"]["content"][0]["text"]) for x in lines] == [
        ("user", "one"), ("assistant", "a"), ("user", "two"), ("assistant", "b"), ("user", "three"),
        ("assistant", NOT_KEPT)]
    assert lines[-1]["message"]["usage"] == {"input_tokens": 1}


_FULL_DISK = """
import resource, signal, sys
from pathlib import Path
from ctxkit.proxy.request_log import RequestLog
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG), as on a full disk
folder, history = Path(sys.argv[1]), [{"role": "user" if k % 2 == 0 else "assistant", "content": f"message {k}"}
                                      for k in range(7)]
log = RequestLog(folder)
def request(n):
    log.append(model="m", messages=history[:n], usage={"input_tokens": n}, tokens_in=1, tokens_sent=1, managed=False)
request(3)
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, ((folder / "messages.jsonl").stat().st_size + 30, hard))
try:
    request(5)
except OSError as exc:
    print("not logged:", exc)
resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))  # room again
request(7)
"""


def test_after_a_write_the_disk_had_no_room_for_the_next_request_logs_every_message(tmp_path):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _FULL_DISK, str(tmp_path)], capture_output=True, text=True,
                          timeout=60)
    # (the error names the conversation: the proxy's warning says which one lost a line)
    assert done.returncode == 0 and f"not logged: [Errno 27] File too large: '{tmp_path}'" in done.stdout, done.stderr
    lines = as_claude_code(tmp_path / MESSAGES, tmp_path / REQUESTS)
    assert [x["message"]["content"][0]["text"] for x in lines] == [f"message {k}" for k in range(7)] + [NOT_KEPT]
    assert lines[-1]["message"]["usage"] == {"input_tokens": 7}


@pytest.mark.parametrize("before,last", [(0, 10), (5, 65_535), (5, 65_536), (70_000, 65_535), (3, 200_000), (0, 0)])
def test_a_restart_finds_the_last_line_across_the_blocks_it_reads(tmp_path, before, last):
    """The last line, read from the end in blocks, whichever block its start falls in."""
    from ctxkit.proxy.request_log import _last_line

    line, lines_before = b"y" * last + b"\n", b"x" * before + b"\n" if before else b""
    (tmp_path / "f").write_bytes(lines_before + line)
    assert _last_line(tmp_path / "f") == line
    (tmp_path / "f").write_bytes(lines_before + line[:-1])  # cut short: the piece after the newline
    assert _last_line(tmp_path / "f") == line[:-1]


def test_a_first_line_cut_short_is_not_taken_for_the_conversation_s_first_message(tmp_path):
    """The proxy killed while it wrote a conversation's first messages: restarted, it logs them after the cut
    line; restarted again, the conversation goes on in the same files (the cut line was taken for its first
    message, and the conversation for another: a second pair of files, the history counted twice)."""
    history = [{"role": "user" if k % 2 == 0 else "assistant", "content": f"message {k}"} for k in range(5)]
    (tmp_path / MESSAGES).write_bytes(b'{"role":"user","cont')
    _request(RequestLog(tmp_path), history[:3])
    _request(RequestLog(tmp_path), history)
    assert not list(tmp_path.glob("messages.*.jsonl"))
    lines = as_claude_code(tmp_path / MESSAGES, tmp_path / REQUESTS)
    assert [x["message"]["content"][0]["text"] for x in lines] == [m["content"] for m in history] + [NOT_KEPT]
