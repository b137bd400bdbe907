"""An API endpoint that misbehaves ends the summary bounded in time and memory, with a clear error.

Before: an answer of 3 GB was held whole (3.17 GB of memory); an event stream or a JSON object
that is not a message read as "the model answered with no text"; a connection closed mid-answer
said only "Connection error.". The server is tests/mock_messages_api.py, on loopback.
docs/security.md, "Bounds".
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import anthropic  # noqa: F401 - imported here: its import (seconds on a busy machine) is not what is timed
import pytest
from conftest import ROOT
from mock_messages_api import MockMessagesAPI

from ctxkit.anthropic_client import MAX_CONTENT_BLOCKS, MAX_RESPONSE_BYTES
from ctxkit.errors import LLMError
from ctxkit.summarize import AnthropicSummarizer

EXAMPLE = ROOT / "examples" / "session.jsonl"
HISTORY = [{"role": "user", "content": "fix the bug"}, {"role": "assistant", "content": "fixed"}]


def summarize(api, **options):
    summarizer = AnthropicSummarizer("claude-x", base_url=api.base_url, env={"ANTHROPIC_API_KEY": "sk-test"},
                                     sleep=lambda s: None, **options)
    start = time.monotonic()
    with pytest.raises(LLMError) as caught:
        summarizer.summarize(HISTORY)
    return caught.value, time.monotonic() - start


def run_measured(args, *, cwd, env, timeout):
    """Run a command: (exit status, stderr, its own peak RSS in MB, seconds), the RSS from wait4."""
    err = cwd / "stderr.txt"
    start = time.monotonic()
    with open(err, "wb") as f:
        proc = subprocess.Popen(args, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=f)
        deadline = start + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                proc.kill()
                raise AssertionError(f"still running after {timeout} s")
            time.sleep(0.05)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, err.read_text(), usage.ru_maxrss / 1024, time.monotonic() - start


def test_a_3_gb_answer_leaves_peak_memory_under_600_mb(tmp_path):
    """The whole command, in a process of its own: its peak RSS is what is measured."""
    shutil.copy(EXAMPLE, tmp_path / "s.jsonl")
    with MockMessagesAPI() as api:
        api.always = None
        api.reply_huge(3 << 30, announced=False)  # no content-length: only reading can find out
        env = {**os.environ, "ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": api.base_url,
               "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
        code, stderr, peak_mb, seconds = run_measured(
            [sys.executable, "-m", "ctxkit.cli.main", "compact", "s.jsonl", "-o", "out.jsonl", "--force",
             "--set", "summarizer.use=anthropic"], cwd=tmp_path, env=env, timeout=300)
        where = api.base_url
        requests = len(api.message_requests)
    assert code == 1, stderr
    assert peak_mb < 600
    assert seconds < 120
    assert (f"autocompact: failed: malformed response: the API at {where} answered the summary request "
            f"with an answer longer than {MAX_RESPONSE_BYTES:,} bytes, the most ctxkit reads\n") in stderr
    assert requests == 1  # not retried: the same server would send it again


def test_an_answer_announcing_more_than_the_bound_is_refused_before_its_body():
    with MockMessagesAPI() as api:
        api.reply_huge(3 << 30, announced=True)
        where, (error, seconds) = api.base_url, summarize(api)
    assert seconds < 10
    assert error.message == (f"malformed response: the API at {where} answered the summary request with an "
                             f"answer longer than {MAX_RESPONSE_BYTES:,} bytes, the most ctxkit reads (it announced "
                             f"{(3 << 30) + 178:,} bytes)")


def test_a_server_that_trickles_forever_is_given_up_at_the_total_timeout():
    with MockMessagesAPI() as api:
        api.reply_trickle(0.2)  # a byte every 0.2 s: each read is quick, the answer never ends
        error, seconds = summarize(api, total_timeout_seconds=2)
    assert seconds < 6
    assert error.message == ("the summary request gave up after 1 attempt(s): its time limit ran out "
                             "(summarizer.total_timeout_seconds: 2s)")


def test_a_200_that_is_not_json_is_a_malformed_response():
    with MockMessagesAPI() as api:
        api.reply_raw(b"<html><body>502 Bad Gateway</body></html>")
        where, (error, _) = api.base_url, summarize(api)
    assert error.message.startswith(f"malformed response: the API at {where} answered the summary request "
                                    "with a body that is not valid JSON")
    assert not error.retryable


@pytest.mark.parametrize("answer,what", [
    (b'{"hello": "world"}', 'dict, no "type"'),
    (b'{"type": "error", "error": {"type": "api_error", "message": "x"}}', "\"type\": 'error'"),
])
def test_a_200_whose_json_is_not_a_message_says_so(answer, what):
    with MockMessagesAPI() as api:
        api.reply_raw(answer)
        where, (error, _) = api.base_url, summarize(api)
    assert error.message.startswith(f"malformed response: the API at {where} answered the summary request "
                                    "with something that is not a Messages API message (")


def test_an_event_stream_where_json_was_asked_is_a_malformed_response():
    with MockMessagesAPI() as api:
        api.reply_sse()
        where, (error, _) = api.base_url, summarize(api)
    assert error.message.startswith(f"malformed response: the API at {where} answered the summary request "
                                    "with something that is not a Messages API message (")


def test_a_connection_closed_mid_answer_says_so_and_is_retried_within_bounds():
    with MockMessagesAPI() as api:
        api.always = None
        for _ in range(3):
            api.reply_cut(b'{"id": "msg_1", "type": "mess', 5000)
        where, (error, seconds) = api.base_url, summarize(api, max_retries=2)
    assert seconds < 30
    assert len(api.message_requests) == 3
    # the SDK's own words differ across its versions ("Connection error." in 0.x, "Connection to HOST failed:
    # CAUSE" in 2.x): what the user must read is where, what closed, how much came, and that it gave up
    cut = "peer closed connection without sending complete message body (received 29 bytes, expected 5000)"
    assert error.message.startswith(f"could not reach the Anthropic API at {where}: ")
    assert error.message.count(cut) == 1
    assert "RemoteProtocolError" in error.message
    assert error.message.endswith(" (gave up after 3 attempts)")


@pytest.mark.parametrize("retry_after", ["1000000000000", "1e400", "99999999999999999999999999"])
@pytest.mark.parametrize("status", [429, 529])
def test_an_absurd_retry_after_does_not_hold_the_run(status, retry_after):
    with MockMessagesAPI() as api:
        api.always = None
        api.reply_error(status, "rate_limit_error" if status == 429 else "overloaded_error", "slow down",
                        retry_after=retry_after)
        summarizer = AnthropicSummarizer("claude-x", base_url=api.base_url, env={"ANTHROPIC_API_KEY": "sk-test"},
                                         sleep=time.sleep, total_timeout_seconds=30)
        start = time.monotonic()
        with pytest.raises(LLMError) as caught:
            summarizer.summarize(HISTORY)
    assert time.monotonic() - start < 10  # the wait is capped (60 s), and a wait past the deadline is not started
    assert caught.value.message.startswith("the summary request gave up after 1 attempt(s): waiting 60s more "
                                           "would pass its time limit (summarizer.total_timeout_seconds: 30s)")


def compact_measured(tmp_path, reply, *, timeout=300):
    """``ctxkit compact`` with the anthropic summarizer against a server scripted by ``reply(api)``, in a
    process of its own: (exit status, stderr, peak RSS in MB, the server's address, requests made)."""
    shutil.copy(EXAMPLE, tmp_path / "s.jsonl")
    with MockMessagesAPI() as api:
        api.always = None
        reply(api)
        env = {**os.environ, "ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": api.base_url,
               "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
        code, stderr, peak_mb, _ = run_measured(
            [sys.executable, "-m", "ctxkit.cli.main", "compact", "s.jsonl", "-o", "out.jsonl", "--force",
             "--set", "summarizer.use=anthropic"], cwd=tmp_path, env=env, timeout=timeout)
        return code, stderr, peak_mb, api.base_url, len(api.message_requests)


@pytest.mark.parametrize("in_message", [False, True], ids=["deep", "deepobj"])
def test_json_nested_200_000_deep_is_a_malformed_response_not_an_internal_error(tmp_path, in_message):
    """Before: exit 4, ``internal error: RecursionError: maximum recursion depth exceeded while decoding
    a JSON array`` (the SDK's parser)."""
    code, stderr, _, where, requests = compact_measured(tmp_path, lambda api: api.reply_deep(in_message=in_message))
    assert code == 1, stderr
    assert "internal error" not in stderr and "RecursionError" not in stderr
    assert (f"autocompact: failed: malformed response: the API at {where} answered the summary request "
            "with a body that is not valid JSON (") in stderr
    assert requests == 1


def test_an_answer_of_640_000_content_blocks_is_refused_with_peak_memory_well_under_600_mb(tmp_path):
    """Before: 16.6 MB of empty text blocks (under the byte bound) were built into SDK objects: exit 0,
    peak 637 MB."""
    code, stderr, peak_mb, where, requests = compact_measured(tmp_path, lambda api: api.reply_many_blocks(640_000))
    assert code == 1, stderr
    assert peak_mb < 400, peak_mb
    assert (f"autocompact: failed: malformed response: the API at {where} answered the summary request "
            f"with {640_001:,} content blocks, more than the {MAX_CONTENT_BLOCKS:,} ctxkit reads\n") in stderr
    assert requests == 1


def test_a_redirect_from_the_api_is_not_followed(tmp_path):
    """Before: a 307 to another host was followed and the whole conversation re-sent there."""
    with MockMessagesAPI() as elsewhere, MockMessagesAPI() as api:
        target = f"{elsewhere.base_url}/v1/messages"
        api.reply_redirect(target)
        where, (error, _) = api.base_url, summarize(api)
        sent_elsewhere = len(elsewhere.requests)
    assert sent_elsewhere == 0
    assert error.message == (f"the API at {where} answered the summary request with a redirect (307) to "
                             f"'{target}'; ctxkit does not follow redirects: set the "
                             "API's own address as base_url")
    assert not error.retryable
