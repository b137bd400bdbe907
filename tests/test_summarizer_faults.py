"""Summarizer faults (issue 9): malformed answers are counted failures, a time limit bounds the whole
summarizer call, and a view still over the threshold after every stage fails the run.

The Anthropic summarizer runs through the real SDK against tests/mock_messages_api.py; the command
summarizer runs real commands. The CLI is driven with typer's CliRunner, as a user would run it.
"""
from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import anthropic
import pytest
from builders import session
from helpers import breaker_failures
from mock_messages_api import HANG, MockMessagesAPI, Reply

from ctxkit.cli.main import app
from ctxkit.errors import LLMError
from ctxkit.summarize import DEFAULT_TOTAL_TIMEOUT_SECONDS, AnthropicSummarizer, CommandSummarizer, make_summarizer
from ctxkit.summarize.deadline import Deadline

KEY = "sk-ant-test-0123456789abcdef"
WINDOW = "40000"  # autocompact threshold 7,000 tokens: the session below (~14,000) is over it
NO_OVERHEAD = ["--set", "overhead_tokens=0",  # the session stands for a whole request: no system prompt or tools
               # the same 7,000-token threshold from a reserve a compaction fits under (compact refuses one it does not)
               "--set", "thresholds.summary_reserve=3000", "--set", "thresholds.autocompact_buffer=30000"]
REFUSAL = "I cannot summarize this."
TRUNCATED = b'{"id": "msg_01", "type": "message", "role": "assistant", "content": [{"type": "te'


@pytest.fixture
def api():
    with MockMessagesAPI(default_text=None) as server:
        yield server


def compact(runner, api, *args: str):
    """``ctxkit compact s.jsonl -o out.jsonl --context-window 40000 ARGS`` against the mock API."""
    env = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": api.base_url}
    return runner.invoke(app, ["compact", "s.jsonl", "-o", "out.jsonl", "--context-window", WINDOW, *NO_OVERHEAD, *args],
                         env=env)


# -- malformed responses --------------------------------------------------------------------------------
def test_a_200_with_truncated_json_is_a_failure_the_breaker_counts(runner, api):
    src = session(Path("s.jsonl"))
    api.always = Reply(raw=TRUNCATED)
    results = [compact(runner, api) for _ in range(4)]

    assert [r.exit_code for r in results] == [1, 1, 1, 1]  # was 4 (internal error) every time
    assert len(api.message_requests) == 3  # the fourth run finds the breaker open and sends nothing
    assert Path("out.jsonl").read_bytes() == src.read_bytes()  # the transcript passes through unchanged
    first = results[0].stderr
    assert (f"ctxkit: warning: autocompact failed (1 of 3 in a row): malformed response: the API at {api.base_url} "
            "answered the summary request with a body that is not valid JSON (unexpected end of data: "
            "line 1 column 82 (char 81)); autocompact changed nothing\n") in first
    assert "Traceback" not in first and "internal error" not in first
    assert "autocompact: breaker-open: circuit breaker open after 3 failures" in results[3].stderr


@pytest.mark.parametrize("body", [b"", b"<html><body>502 Bad Gateway</body></html>"])
def test_a_200_whose_body_is_not_json_is_malformed_not_a_bug(api, body):
    api.reply_raw(body)
    summarizer = AnthropicSummarizer("m", base_url=api.base_url, env={"ANTHROPIC_API_KEY": KEY}, sleep=lambda s: None)
    with pytest.raises(LLMError, match=r"^malformed response: .* not valid JSON \(.*: line 1 column 1 \(char 0\)\)$"):
        summarizer.summarize([{"role": "user", "content": "hi"}])
    assert len(api.message_requests) == 1  # not retried: the same server answers the same way


def test_an_answer_without_the_summary_structure_is_refused_and_counted(runner, api):
    src = session(Path("s.jsonl"))
    api.reply_text(REFUSAL)
    result = compact(runner, api)

    assert result.exit_code == 1
    assert Path("out.jsonl").read_bytes() == src.read_bytes()
    assert ("autocompact: failed: malformed summary: the answer has none of the nine numbered sections the prompt "
            "asks for (e.g. '1. Primary Request and Intent:'); it reads: 'I cannot summarize this.'\n") in result.stderr
    assert breaker_failures() == [1]


def test_the_command_summarizer_is_held_to_the_same_structure(runner, tmp_path):
    src = session(Path("s.jsonl"))
    result = runner.invoke(app, ["compact", "s.jsonl", "-o", "out.jsonl", "--context-window", WINDOW, *NO_OVERHEAD,
                                 "--set", "summarizer.use=command", "--set", f"summarizer.command=echo {REFUSAL}"])
    assert result.exit_code == 1
    assert Path("out.jsonl").read_bytes() == src.read_bytes()
    assert result.stderr.splitlines()[0] == (
        "ctxkit: warning: autocompact failed (1 of 3 in a row): malformed summary: the answer has none of the nine "
        "numbered sections the prompt asks for (e.g. '1. Primary Request and Intent:'); it reads: 'I cannot summarize "
        "this.'; autocompact changed nothing")
    assert breaker_failures() == [1]


@pytest.mark.parametrize("answer", [
    "<summary>\n1. Primary Request and Intent:\n   Refactor billing.\n</summary>",
    "## 1. Primary Request and Intent\nRefactor billing.",  # no tags, Markdown headings
    "**Primary Request and Intent**: refactor billing",
    "<analysis>notes</analysis><summary>1. Primary Request and Intent: cut off by the output li",  # cut off
])
def test_answers_with_the_sections_are_accepted(api, answer):
    api.reply_text(answer)
    summarizer = AnthropicSummarizer("m", base_url=api.base_url, env={"ANTHROPIC_API_KEY": KEY}, sleep=lambda s: None)
    assert "Primary Request and Intent" in summarizer.summarize([{"role": "user", "content": "hi"}])


@pytest.mark.parametrize("answer", [REFUSAL, "<summary>I cannot summarize this.</summary>",
                                    "Sure! Here is what happened: we refactored the billing module."])
def test_answers_without_any_section_are_malformed(api, answer):
    api.reply_text(answer)
    summarizer = AnthropicSummarizer("m", base_url=api.base_url, env={"ANTHROPIC_API_KEY": KEY}, sleep=lambda s: None)
    with pytest.raises(LLMError, match="^malformed summary: the answer has none of the nine numbered sections"):
        summarizer.summarize([{"role": "user", "content": "hi"}])


# -- the time limit of the whole call ---------------------------------------------------------------------
def test_defaults_bound_the_whole_call_to_minutes_not_fifty(api):
    made = make_summarizer({"use": "anthropic"}, env={"ANTHROPIC_API_KEY": KEY})
    assert made.deadline.total == DEFAULT_TOTAL_TIMEOUT_SECONDS == 300
    assert made.timeout_seconds * (made.max_retries + 1) == 3000  # what a hung server could cost before
    assert make_summarizer({"use": "command", "command": "cat"}).deadline.total == 300
    assert make_summarizer({"use": "anthropic", "total_timeout_seconds": 42},
                           env={"ANTHROPIC_API_KEY": KEY}).deadline.total == 42


def test_a_hanging_server_holds_the_run_no_longer_than_the_total_timeout(runner, api):
    src = session(Path("s.jsonl"))
    api.always = HANG
    started = time.monotonic()
    # the per-attempt timeout (600 s) and retries (4) are the defaults; only the total is lowered
    result = compact(runner, api, "--set", "summarizer.total_timeout_seconds=1.5")
    elapsed = time.monotonic() - started

    assert result.exit_code == 1 and elapsed < 10
    assert len(api.message_requests) == 1  # no retry can start once the time is up
    assert Path("out.jsonl").read_bytes() == src.read_bytes()
    assert re.search(r"autocompact: failed: the summary request gave up after 1 attempt\(s\): waiting 0\.[56]s more "
                     r"would pass its time limit \(summarizer.total_timeout_seconds: 1.5s\); last error: the summary "
                     r"request timed out after 1.5s\n", result.stderr), result.stderr
    assert breaker_failures() == [1]


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_wait_that_would_pass_the_deadline_is_not_started(api):
    clock = FakeClock()
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        clock.now += seconds

    for _ in range(3):
        api.reply_rate_limited(retry_after=20)
    summarizer = AnthropicSummarizer("m", base_url=api.base_url, env={"ANTHROPIC_API_KEY": KEY}, sleep=sleep,
                                     total_timeout_seconds=45, clock=clock)
    with pytest.raises(LLMError) as caught:
        summarizer.summarize([{"role": "user", "content": "hi"}])
    assert sleeps == [20.0, 20.0]  # a third wait of 20 s would end at 60 s, past the 45 s limit
    assert len(api.message_requests) == 3
    assert caught.value.message.startswith(
        "the summary request gave up after 3 attempt(s): waiting 20s more would pass its time limit "
        "(summarizer.total_timeout_seconds: 45s); last error: Anthropic API 429 rate limited")
    assert not caught.value.retryable


def test_each_attempt_gets_only_what_is_left():
    clock = FakeClock()
    timeouts: list[float] = []

    class Client:  # records the timeout each attempt was given; only the timeout is under test here
        messages = None

    summarizer = AnthropicSummarizer("m", client=Client(), env={}, sleep=lambda s: None,
                                     timeout_seconds=600, total_timeout_seconds=100, clock=clock)

    def attempt(client, timeout):  # every attempt times out, using all the time it was given, at most 70 s
        timeouts.append(timeout)
        clock.now += min(timeout, 70)
        raise anthropic.APITimeoutError(request=None)  # what the SDK raises when the timeout passes

    with pytest.raises(LLMError) as caught:
        summarizer._call("the summary request", attempt)
    assert timeouts == [100, 30]  # not 600 each: the second attempt gets what the first left
    assert caught.value.message.startswith("the summary request gave up after 2 attempt(s)")


def test_the_command_summarizer_is_killed_at_the_total_timeout(tmp_path):
    marker = tmp_path / "finished"
    summarizer = CommandSummarizer("sleep 20; touch finished", timeout_seconds=600, total_timeout_seconds=1,
                                   cwd=tmp_path)
    started = time.monotonic()
    with pytest.raises(LLMError) as caught:
        summarizer.summarize([{"role": "user", "content": "hi"}])
    assert time.monotonic() - started < 5
    assert caught.value.message == ("the summarizer command 'sleep 20; touch finished' timed out after 1s "
                                    "(summarizer.total_timeout_seconds: 1s)")
    with pytest.raises(LLMError, match="was not started: the summarizer's time limit ran out"):
        summarizer.summarize([{"role": "user", "content": "again"}])  # e.g. a prompt-too-long retry
    assert not marker.exists()


def test_the_deadline_starts_with_the_first_request():
    clock = FakeClock()
    deadline = Deadline(10, clock=clock)
    clock.now = 100  # building a summarizer long before it is used costs none of its time
    assert deadline.remaining() == 10
    clock.now = 104
    assert deadline.bound(600) == 6 and deadline.allows_wait(5) and not deadline.allows_wait(6)
    clock.now = 111
    assert deadline.expired() and Deadline(None).bound(600) == 600


# -- still over the threshold after every stage -----------------------------------------------------------
def test_a_view_still_over_the_threshold_exits_1_and_is_not_a_breaker_failure(runner, tmp_path):
    src = session(Path("s.jsonl"))
    script = tmp_path / "long_summary.py"  # a summary longer than the 7,000-token threshold
    script.write_text("import sys\nsys.stdin.read()\n"
                      "print('<summary>1. Primary Request and Intent:\\n' + 'detail ' * 8000 + '</summary>')\n")
    result = runner.invoke(app, ["compact", "s.jsonl", "-o", "out.jsonl", "--context-window", WINDOW, *NO_OVERHEAD,
                                 "--set", "summarizer.use=command",
                                 "--set", f"summarizer.command={sys.executable} {script}"])

    assert result.exit_code == 1  # was 0, with a warning
    assert Path("out.jsonl").read_bytes() != src.read_bytes()  # the compaction itself happened and was written
    # the summary names where the full transcript is (a tmp path), so the counts vary by a few tokens
    last = result.stderr.splitlines()[-1]
    tokens = re.search(r"-> ([\d,]+) tokens", result.stderr).group(1)
    assert last == (
        f"ctxkit: error: the view is still {tokens} tokens after every stage, over the autocompact threshold (7,000) "
        f"(autocompact: applied: auto compaction (summary by command): 21,963 -> {tokens} tokens, 17 messages "
        "summarized, 1 kept; retained prompts 0/1, commands 0/8); the output was written. The summary, the kept tail and the re-injected files do not "
        "fit: lower summarizer.max_output_tokens or the autocompact keep_tail / reinject budgets, or use a model "
        "with a larger context window")
    assert int(tokens.replace(",", "")) > 7_000
    assert breaker_failures() == []


def test_after_force_a_view_still_over_the_threshold_is_a_warning_and_exit_0(runner, tmp_path):
    """--force is the user's /compact: the compaction was asked for and made (the view is smaller), so the view
    still over the threshold is said as a warning, and the output written with exit 0."""
    src = session(Path("s.jsonl"))
    script = tmp_path / "long_summary.py"  # ~8,750 tokens: over the threshold, under the view it replaces
    script.write_text("import sys\nsys.stdin.read()\n"
                      "print('<summary>1. Primary Request and Intent:\\n' + 'detail ' * 5000 + '</summary>')\n")
    result = runner.invoke(app, ["compact", "s.jsonl", "-o", "out.jsonl", "--context-window", WINDOW, *NO_OVERHEAD,
                                 "--force", "--set", "summarizer.use=command",
                                 "--set", f"summarizer.command={sys.executable} {script}"])
    assert result.exit_code == 0, result.stderr
    assert Path("out.jsonl").read_bytes() != src.read_bytes()
    assert "ctxkit: warning: the view is still " in result.stderr
    assert "over the autocompact threshold (7,000) (autocompact: applied: manual compaction" in result.stderr
    assert "ctxkit: error" not in result.stderr
    # a compaction that would not make the view smaller is not made, forced or not: exit 1
    script.write_text(script.read_text().replace("5000", "8000"))
    result = runner.invoke(app, ["compact", "s.jsonl", "-o", "out2.jsonl", "--context-window", WINDOW, *NO_OVERHEAD,
                                 "--force", "--store", "st2", "--set", "summarizer.use=command",
                                 "--set", f"summarizer.command={sys.executable} {script}"])
    assert result.exit_code == 1
    assert "would not be smaller than the" in result.stderr


def test_a_view_brought_under_the_threshold_exits_0(runner):
    session(Path("s.jsonl"))
    result = runner.invoke(app, ["compact", "s.jsonl", "-o", "out.jsonl", "--context-window", WINDOW, *NO_OVERHEAD,
                                 "--set", "summarizer.use=extractive"])
    assert result.exit_code == 0, result.stderr
    assert "autocompact: applied" in result.stderr


def test_help_says_what_exit_1_means():
    from typer.testing import CliRunner

    text = " ".join(CliRunner().invoke(app, ["--help"]).stdout.split())
    assert "autocompact was skipped" not in text
    assert ("1 a threshold check failed (ctxkit check), a stage failed, autocompact's circuit breaker is open or "
            "the compacted view is still over the autocompact threshold (ctxkit compact; after --force, which made "
            "it smaller, a warning), the summarizer failed "
            "(ctxkit memory update), or ctxkit expand could not restore some output;") in text
