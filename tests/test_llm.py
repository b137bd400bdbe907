"""Summarizers: the real SDK against a local mock of the Messages API, commands, and the extractive one."""
from __future__ import annotations

import copy
import random
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mock_messages_api import MockMessagesAPI

from ctxkit.errors import LLMError, UsageError
from ctxkit.summarize import (
    AnthropicSummarizer,
    CommandSummarizer,
    ExtractiveSummarizer,
    Summarizer,
    build_summary_request,
    make_summarizer,
    prompt_overflow_tokens,
    render_transcript,
    text_only_messages,
)
from ctxkit.summarize.prompt import (
    CONTINUATION_PREFIX,
    SECTION_TITLES,
    build_compact_prompt,
    continuation_message,
    format_summary,
    section_heading,
)
from ctxkit.transcript.prompts import HARNESS_PREFIXES

KEY = "sk-ant-test-0123456789abcdef"
MODEL = "claude-test-model"


@pytest.fixture
def api():
    with MockMessagesAPI() as server:
        yield server


@pytest.fixture
def sleeps():
    return []


def anthropic_summarizer(api, sleeps, **kwargs):
    options = {"base_url": api.base_url, "env": {"ANTHROPIC_API_KEY": KEY}, "sleep": sleeps.append,
               "rng": random.Random(0)}
    options.update(kwargs)
    return AnthropicSummarizer(MODEL, **options)


def tool_use(id_, name, **tool_input):
    return {"type": "tool_use", "id": id_, "name": name, "input": tool_input}


def tool_result(id_, content, is_error=False):
    block = {"type": "tool_result", "tool_use_id": id_, "content": content}
    if is_error:
        block["is_error"] = True
    return block


HISTORY = [
    {"role": "user", "content": [
        {"type": "text", "text": "<system-reminder>The date is 2025-01-01.</system-reminder>"},
        {"type": "text", "text": "Fix the failing test in src/app.py, please."},
    ]},
    {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "let me look", "signature": "sig"},
        {"type": "text", "text": "I'll read the file first."},
        tool_use("t1", "Read", file_path="src/app.py"),
    ]},
    {"role": "user", "content": [tool_result("t1", "def add(a, b):\n    return a - b\n")]},
    {"role": "assistant", "content": [
        {"type": "text", "text": "The bug is a minus sign. Fixing it."},
        tool_use("t2", "Edit", file_path="src/app.py", old_string="a - b", new_string="a + b"),
        tool_use("t3", "TodoWrite", todos=[
            {"content": "Fix add()", "status": "completed", "activeForm": "Fixing add()"},
            {"content": "Run the test suite", "status": "in_progress", "activeForm": "Running tests"},
            {"content": "Update CHANGELOG.md", "status": "pending", "activeForm": "Updating changelog"},
        ]),
    ]},
    {"role": "user", "content": [tool_result("t2", "ok"), tool_result("t3", "todos updated")]},
    {"role": "assistant", "content": [tool_use("t4", "Bash", command="pytest -x tests/test_app.py")]},
    {"role": "user", "content": [tool_result("t4", "ModuleNotFoundError: No module named 'src'", is_error=True)]},
    {"role": "assistant", "content": [tool_use("t5", "Bash", command="PYTHONPATH=. pytest -x tests/test_app.py")]},
    {"role": "user", "content": [
        tool_result("t5", "1 passed"),
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
    ]},
    {"role": "assistant", "content": [{"type": "text", "text": "Tests pass now."}]},
    {"role": "user", "content": "Great. Now also update the changelog."},
]


def last_prompt_text(request_body):
    """The text of the final user turn of a summarizing request."""
    last = request_body["messages"][-1]
    assert last["role"] == "user"
    return "\n".join(block["text"] for block in last["content"])


# ---------------------------------------------------------------------------------------------
# AnthropicSummarizer against the mock API, through the real SDK
# ---------------------------------------------------------------------------------------------


def test_success_sends_a_text_only_request_without_tools(api, sleeps):
    api.reply_text("<analysis>scratch notes</analysis>\n<summary>\n1. Primary Request and Intent:\n   Fix it.\n</summary>")
    summarizer = anthropic_summarizer(api, sleeps)

    summary = summarizer.summarize(HISTORY)

    assert summary == "1. Primary Request and Intent:\n   Fix it."
    assert isinstance(summarizer, Summarizer)
    [request] = api.message_requests
    body = request.body
    assert "tools" not in body and "tool_choice" not in body
    assert body["model"] == MODEL
    assert body["max_tokens"] == 20_000
    assert body["system"]
    roles = [m["role"] for m in body["messages"]]
    assert roles[0] == "user" and all(a != b for a, b in zip(roles, roles[1:], strict=False))  # alternating
    for message in body["messages"]:
        assert set(message) == {"role", "content"}
        assert all(block["type"] == "text" and block["text"].strip() for block in message["content"])
    prompt = last_prompt_text(body)
    for number in range(1, 10):
        assert section_heading(number) in prompt
    assert "<analysis>" in prompt and "<summary>" in prompt
    everything = str(body["messages"])
    assert "[Tool call Edit id=t2]" in everything and "[Tool result (error) id=t4]" in everything
    assert "[image]" in everything and "let me look" not in everything  # images and thinking stripped
    assert request.headers.get("authorization") == f"Bearer {KEY}" or request.headers.get("x-api-key") == KEY
    assert summarizer.stats.requests == 1 and summarizer.stats.retries == 0 and sleeps == []


def test_rate_limit_then_success_honours_retry_after(api, sleeps):
    api.reply_rate_limited(retry_after=7)
    api.reply_text("<summary>1. Primary Request and Intent: done</summary>")
    summarizer = anthropic_summarizer(api, sleeps)

    assert summarizer.summarize(HISTORY) == "1. Primary Request and Intent: done"
    assert len(api.message_requests) == 2
    assert summarizer.stats.retries == 1 and summarizer.stats.requests == 2
    assert sleeps == [7.0]


def test_retry_after_is_capped(api, sleeps):
    api.reply_rate_limited(retry_after=3600)
    api.reply_text("<summary>1. Primary Request and Intent: done</summary>")
    anthropic_summarizer(api, sleeps, retry_after_max_seconds=60).summarize(HISTORY)
    assert sleeps == [60.0]


def test_overloaded_529_then_success(api, sleeps):
    api.reply_overloaded()
    api.reply_text("<summary>1. Primary Request and Intent: done</summary>")
    summarizer = anthropic_summarizer(api, sleeps)

    assert summarizer.summarize(HISTORY) == "1. Primary Request and Intent: done"
    assert summarizer.stats.retries == 1
    assert len(sleeps) == 1 and 0.5 <= sleeps[0] <= 0.625  # first backoff step plus at most 25% jitter


def test_server_error_on_every_attempt_gives_up_retryable(api, sleeps):
    for _ in range(3):
        api.reply_server_error(500)
    summarizer = anthropic_summarizer(api, sleeps, max_retries=2)

    with pytest.raises(LLMError) as caught:
        summarizer.summarize(HISTORY)

    assert caught.value.retryable and not caught.value.prompt_too_long
    assert "500" in caught.value.message and "3 attempts" in caught.value.message
    assert len(api.message_requests) == 3 and summarizer.stats.retries == 2
    assert len(sleeps) == 2 and sleeps[0] < sleeps[1] <= 32  # exponential, bounded


def test_backoff_is_bounded(api, sleeps):
    for _ in range(8):
        api.reply_server_error(503)
    summarizer = anthropic_summarizer(api, sleeps, max_retries=7, backoff_max_seconds=4.0)
    with pytest.raises(LLMError):
        summarizer.summarize(HISTORY)
    assert len(sleeps) == 7 and max(sleeps) <= 4.0


def test_client_timeout_is_retried(api, sleeps):
    api.reply_delayed(5)
    api.reply_text("<summary>1. Primary Request and Intent: after the timeout</summary>")
    summarizer = anthropic_summarizer(api, sleeps, timeout_seconds=0.3)

    started = time.monotonic()
    assert summarizer.summarize(HISTORY) == "1. Primary Request and Intent: after the timeout"
    assert time.monotonic() - started < 4
    assert len(api.message_requests) == 2 and summarizer.stats.retries == 1


def test_timeout_on_every_attempt(api, sleeps):
    api.reply_delayed(5)
    api.reply_delayed(5)
    summarizer = anthropic_summarizer(api, sleeps, timeout_seconds=0.2, max_retries=1)
    with pytest.raises(LLMError) as caught:
        summarizer.summarize(HISTORY)
    assert caught.value.retryable and "timed out" in caught.value.message


def test_prompt_too_long_with_figures(api, sleeps):
    api.reply_prompt_too_long(210_000, 200_000)
    summarizer = anthropic_summarizer(api, sleeps)

    with pytest.raises(LLMError) as caught:
        summarizer.summarize(HISTORY)

    error = caught.value
    assert error.prompt_too_long and error.overflow_tokens == 10_000 and not error.retryable
    assert len(api.message_requests) == 1 and sleeps == []  # never retried as is: the caller drops rounds


def test_prompt_too_long_without_figures(api, sleeps):
    api.reply_prompt_too_long()
    with pytest.raises(LLMError) as caught:
        anthropic_summarizer(api, sleeps).summarize(HISTORY)
    assert caught.value.prompt_too_long and caught.value.overflow_tokens is None


def test_other_bad_request_is_not_retried(api, sleeps):
    api.reply_error(400, "invalid_request_error", "messages.0.content: Field required")
    summarizer = anthropic_summarizer(api, sleeps)
    with pytest.raises(LLMError) as caught:
        summarizer.summarize(HISTORY)
    assert not caught.value.retryable and not caught.value.prompt_too_long
    assert "Field required" in caught.value.message
    assert len(api.message_requests) == 1


def test_malformed_answer_without_text(api, sleeps):
    api.reply_malformed()
    with pytest.raises(LLMError, match="malformed summary"):
        anthropic_summarizer(api, sleeps).summarize(HISTORY)


def test_answer_with_only_a_tool_call_is_malformed(api, sleeps):
    api.reply_content([{"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "x"}}],
                      stop_reason="tool_use")
    with pytest.raises(LLMError, match="malformed summary"):
        anthropic_summarizer(api, sleeps).summarize(HISTORY)


def test_answer_with_only_analysis_is_malformed(api, sleeps):
    api.reply_text("<analysis>I ran out of tokens while thinking</analysis>")
    with pytest.raises(LLMError, match="malformed summary"):
        anthropic_summarizer(api, sleeps).summarize(HISTORY)


def test_missing_api_key_is_a_clear_error(api, sleeps):
    summarizer = anthropic_summarizer(api, sleeps, env={})
    with pytest.raises(LLMError, match="ANTHROPIC_API_KEY"):
        summarizer.summarize(HISTORY)
    assert api.requests == []


def test_key_never_appears_in_errors(api, sleeps):
    # A misbehaving proxy that echoes the credentials back in its error message.
    api.reply_error(400, "invalid_request_error", f"bad header Authorization: Bearer {KEY}")
    with pytest.raises(LLMError) as caught:
        anthropic_summarizer(api, sleeps).summarize(HISTORY)
    assert KEY not in str(caught.value) and "[redacted]" in str(caught.value)

    api.reply_server_error(500)
    with pytest.raises(LLMError) as caught:
        anthropic_summarizer(api, sleeps, max_retries=0).summarize(HISTORY)
    assert KEY not in str(caught.value)


def test_connection_error_is_retried_and_reported_without_key(sleeps):
    with MockMessagesAPI() as server:
        dead_url = server.base_url  # nothing listens there once the server has stopped
    summarizer = AnthropicSummarizer(MODEL, base_url=dead_url, env={"ANTHROPIC_API_KEY": KEY},
                                     sleep=sleeps.append, max_retries=2)
    with pytest.raises(LLMError) as caught:
        summarizer.summarize(HISTORY)
    assert caught.value.retryable and KEY not in str(caught.value)
    assert summarizer.stats.requests == 3 and len(sleeps) == 2


def test_injected_client_has_sdk_retries_switched_off(api, sleeps):
    import anthropic

    client = anthropic.Anthropic(api_key=KEY, base_url=api.base_url, max_retries=5)
    for _ in range(2):
        api.reply_server_error(500)
    summarizer = AnthropicSummarizer(MODEL, client=client, max_retries=1, sleep=sleeps.append, env={})
    with pytest.raises(LLMError):
        summarizer.summarize(HISTORY)
    assert len(api.message_requests) == 2  # ours: 1 + 1 retry; the SDK's 5 never happened


def test_base_url_from_environment(api, sleeps):
    api.reply_text("<summary>1. Primary Request and Intent: via env</summary>")
    env = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": api.base_url}
    summarizer = make_summarizer({"use": "auto", "model": MODEL}, env=env, sleep=sleeps.append)
    assert isinstance(summarizer, AnthropicSummarizer)
    assert summarizer.summarize(HISTORY) == "1. Primary Request and Intent: via env"


def test_focus_instructions_reach_the_prompt(api, sleeps):
    api.reply_text("<summary>1. Primary Request and Intent: x</summary>")
    anthropic_summarizer(api, sleeps).summarize(HISTORY, instructions="the database migration")
    prompt = last_prompt_text(api.message_requests[0].body)
    assert prompt.rstrip().endswith("the database migration")


# ---------------------------------------------------------------------------------------------
# make_summarizer
# ---------------------------------------------------------------------------------------------


def test_auto_picks_anthropic_with_a_key_and_extractive_without():
    assert isinstance(make_summarizer({"use": "auto"}, env={"ANTHROPIC_API_KEY": KEY}), AnthropicSummarizer)
    assert isinstance(make_summarizer({"use": "auto"}, env={}), ExtractiveSummarizer)
    assert isinstance(make_summarizer({}, env={"ANTHROPIC_API_KEY": "  "}), ExtractiveSummarizer)


def test_make_summarizer_options():
    summarizer = make_summarizer(
        {"use": "anthropic", "model": "m", "max_output_tokens": 1000, "timeout_seconds": 5, "max_retries": 0,
         "base_url": "http://example.invalid"},
        env={},
    )
    assert (summarizer.model, summarizer.max_output_tokens, summarizer.timeout_seconds, summarizer.max_retries,
            summarizer.base_url) == ("m", 1000, 5.0, 0, "http://example.invalid")
    command = make_summarizer({"use": "command", "command": "cat", "timeout_seconds": 3}, env={})
    assert isinstance(command, CommandSummarizer) and command.timeout_seconds == 3.0
    assert isinstance(make_summarizer({"use": "extractive"}, env={"ANTHROPIC_API_KEY": KEY}), ExtractiveSummarizer)


def test_make_summarizer_rejects_bad_config():
    with pytest.raises(UsageError, match="summarizer.use"):
        make_summarizer({"use": "gpt"}, env={})
    with pytest.raises(UsageError, match="summarizer.command"):
        make_summarizer({"use": "command"}, env={})


# ---------------------------------------------------------------------------------------------
# CommandSummarizer
# ---------------------------------------------------------------------------------------------


def test_command_reads_the_prompt_on_stdin():
    summarizer = CommandSummarizer("cat", timeout_seconds=10, env={})
    text = summarizer.complete([{"role": "user", "content": "hello there"}, {"role": "assistant", "content": "hi"}],
                               system="sys", max_tokens=10)
    assert text == "System:\nsys\n\nUser:\nhello there\n\nAssistant:\nhi\n"


def test_command_summarize_gets_history_and_instructions():
    script = (
        "import sys, os; prompt = sys.stdin.read(); "
        "ok = all(t in prompt for t in ['Fix the failing test', 'All user messages', 'focus on tests']); "
        "print('<analysis>notes</analysis><summary>1. Primary Request and Intent: ' + ('complete ' if ok else 'missing ') "
        "+ os.environ['CTXKIT_MAX_TOKENS'] + '</summary>')"
    )
    command = f"{sys.executable} -c \"{script}\""
    summarizer = CommandSummarizer(command, timeout_seconds=30, max_output_tokens=1234)
    assert summarizer.summarize(HISTORY, instructions="focus on tests") == "1. Primary Request and Intent: complete 1234"


def test_command_failure_reports_stderr_tail():
    summarizer = CommandSummarizer("echo first line >&2; echo 'model exploded' >&2; exit 3", timeout_seconds=10)
    with pytest.raises(LLMError) as caught:
        summarizer.summarize(HISTORY)
    assert "status 3" in caught.value.message and "model exploded" in caught.value.message
    assert not caught.value.prompt_too_long


def test_command_prompt_too_long_is_recognised():
    summarizer = CommandSummarizer(
        "cat >/dev/null; echo 'Error: prompt is too long: 210000 tokens > 200000 maximum' >&2; exit 1",
        timeout_seconds=10,
    )
    with pytest.raises(LLMError) as caught:
        summarizer.summarize(HISTORY)
    assert caught.value.prompt_too_long and caught.value.overflow_tokens == 10_000


def test_command_with_empty_output_is_malformed():
    with pytest.raises(LLMError, match="malformed summary"):
        CommandSummarizer("cat >/dev/null", timeout_seconds=10).summarize(HISTORY)


def test_command_timeout_kills_it():
    summarizer = CommandSummarizer("sleep 30", timeout_seconds=0.5)
    started = time.monotonic()
    with pytest.raises(LLMError, match="timed out") as caught:
        summarizer.summarize(HISTORY)
    assert caught.value.retryable
    assert time.monotonic() - started < 10


def test_command_error_redacts_the_key():
    summarizer = CommandSummarizer(f"echo 'denied for {KEY}' >&2; exit 1", timeout_seconds=10,
                                   env={"ANTHROPIC_API_KEY": KEY, "PATH": "/usr/bin:/bin"})
    with pytest.raises(LLMError) as caught:
        summarizer.summarize(HISTORY)
    assert KEY not in str(caught.value)


# ---------------------------------------------------------------------------------------------
# ExtractiveSummarizer
# ---------------------------------------------------------------------------------------------


def test_extractive_has_nine_sections_in_order():
    summary = ExtractiveSummarizer().summarize(HISTORY)
    positions = [summary.index(section_heading(n)) for n in range(1, 10)]
    assert positions == sorted(positions)


def test_extractive_lists_every_user_message_and_nothing_else_as_one():
    summary = ExtractiveSummarizer().summarize(HISTORY)
    section6 = summary.split(section_heading(6))[1].split(section_heading(7))[0]
    assert "- Fix the failing test in src/app.py, please." in section6
    assert "- Great. Now also update the changelog." in section6
    assert "The date is" not in summary  # system reminders are not user messages
    assert "1 passed" not in section6  # tool results are not user messages


def test_extractive_names_files_with_edits_first():
    history = [
        {"role": "user", "content": "look around"},
        {"role": "assistant", "content": [tool_use("a", "Read", file_path="docs/readme.md"),
                                          tool_use("b", "Grep", pattern="def ", path="lib")]},
        {"role": "user", "content": [tool_result("a", "..."), tool_result("b", "...")]},
        {"role": "assistant", "content": [tool_use("c", "Write", file_path="lib/new.py", content="X = 1\n"),
                                          tool_use("d", "MultiEdit", file_path="lib/core.py",
                                                   edits=[{"old_string": "a", "new_string": "b = 2"}])]},
        {"role": "user", "content": [tool_result("c", "ok"), tool_result("d", "ok")]},
    ]
    summary = ExtractiveSummarizer().summarize(history)
    section3 = summary.split(section_heading(3))[1].split(section_heading(4))[0]
    order = [section3.index(p) for p in ("lib/core.py (edited", "lib/new.py (written", "docs/readme.md (read")]
    assert order == sorted(order)
    assert "b = 2" in section3 and "MultiEdit" in section3
    section2 = summary.split(section_heading(2))[1].split(section_heading(3))[0]
    assert "Python" in section2 and "Markdown" in section2 and "Read (1)" in section2


def test_extractive_records_errors_fixes_tasks_and_current_work():
    summary = ExtractiveSummarizer().summarize(HISTORY)
    section4 = summary.split(section_heading(4))[1].split(section_heading(5))[0]
    assert "Bash `pytest -x tests/test_app.py` failed: ModuleNotFoundError" in section4
    assert "then succeeded: Bash `PYTHONPATH=. pytest -x tests/test_app.py`" in section4
    section7 = summary.split(section_heading(7))[1].split(section_heading(8))[0]
    assert "[in_progress] Run the test suite" in section7 and "[pending] Update CHANGELOG.md" in section7
    assert "Fix add()" not in section7
    section8 = summary.split(section_heading(8))[1].split(section_heading(9))[0]
    assert "Tests pass now." in section8
    section9 = summary.split(section_heading(9))[1]
    assert "Great. Now also update the changelog." in section9  # in line with the latest request


def test_extractive_todo_lines_when_no_todo_tool():
    history = [{"role": "user", "content": "TODO: rename the module\nand then ship"},
               {"role": "assistant", "content": "Noted.\n- TODO add tests"}]
    section7 = ExtractiveSummarizer().summarize(history).split(section_heading(7))[1].split(section_heading(8))[0]
    assert "TODO: rename the module" in section7 and "TODO add tests" in section7


def test_extractive_is_deterministic_and_does_not_mutate_input():
    history = copy.deepcopy(HISTORY)
    first = ExtractiveSummarizer().summarize(history, instructions="tests")
    assert history == HISTORY
    assert ExtractiveSummarizer().summarize(copy.deepcopy(HISTORY), instructions="tests") == first
    assert "[Focus requested: tests]" in first


def test_extractive_keeps_2000_chars_of_each_user_message_and_bounds_the_rest():
    long_message = "word " * 2000  # 10,000 characters
    history = [{"role": "user", "content": long_message.strip()}]
    for i in range(300):
        history.append({"role": "assistant", "content": [{"type": "text", "text": f"remark {i} " + "x" * 500},
                                                         tool_use(f"t{i}", "Read", file_path=f"f{i}.py")]})
        history.append({"role": "user", "content": [tool_result(f"t{i}", "y" * 1000)]})
    summary = ExtractiveSummarizer().summarize(history)
    assert long_message.strip()[:2000] in summary
    assert "more characters" in summary
    assert len(summary) < 9 * 6000 + 3 * 2100  # every section capped; section 6 holds one long message


def test_extractive_carries_an_earlier_summary_forward():
    earlier = continuation_message(
        "1. Primary Request and Intent:\n   Build the parser.\n\n6. All user messages:\n- Build the parser.\n"
        "- Use recursive descent.\n\n7. Pending Tasks:\n- none",
        transcript_hint="/tmp/t.jsonl",
    )
    history = [{"role": "user", "content": earlier}, {"role": "assistant", "content": "Continuing."},
               {"role": "user", "content": "Now add error recovery."}]
    summary = ExtractiveSummarizer().summarize(history)
    section6 = summary.split(section_heading(6))[1].split(section_heading(7))[0]
    assert "- Use recursive descent." in section6 and "- Now add error recovery." in section6
    assert CONTINUATION_PREFIX not in section6
    assert "Build the parser." in summary.split(section_heading(2))[0]


def test_extractive_has_no_model():
    with pytest.raises(LLMError):
        ExtractiveSummarizer().complete([], system=None, max_tokens=10)


user_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"),
    min_size=1, max_size=2500,
).map(str.strip).filter(lambda t: t and "<system-reminder>" not in t and not t.startswith(CONTINUATION_PREFIX)
                            # text the harness writes (a bash-mode echo, a task notice) is not a prompt: left out on purpose
                            and not t.startswith(HARNESS_PREFIXES) and "<command-name>" not in t)


@settings(max_examples=60, deadline=None)
@given(st.lists(user_text, min_size=1, max_size=8))
def test_extractive_every_user_message_survives(texts):
    history = []
    for i, text in enumerate(texts):
        history.append({"role": "user", "content": text})
        history.append({"role": "assistant", "content": [{"type": "text", "text": f"ack {i}"}]})
    summary = ExtractiveSummarizer().summarize(history)
    for text in texts:
        assert text[:2000] in summary
    assert summary == ExtractiveSummarizer().summarize(copy.deepcopy(history))


# ---------------------------------------------------------------------------------------------
# The prompt, format_summary, continuation_message
# ---------------------------------------------------------------------------------------------


def test_prompt_lists_the_nine_sections_and_forbids_tools():
    prompt = build_compact_prompt()
    positions = [prompt.index(section_heading(n)) for n in range(1, 10)]
    assert positions == sorted(positions) and len(SECTION_TITLES) == 9
    assert "Do not call any tool" in prompt
    assert "<analysis>" in prompt and "<summary>" in prompt
    assert "Section 6 must list all user messages" in prompt
    assert "most recent" in prompt
    assert build_compact_prompt("  the API layer  ").endswith("the API layer")
    assert build_compact_prompt("   ") == prompt


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("<analysis>notes</analysis>\n<summary>\nThe summary.\n</summary>", "The summary."),
        ("<ANALYSIS>notes</ANALYSIS><Summary>Case.</Summary>", "Case."),
        ("Plain text with no tags.", "Plain text with no tags."),
        ("<analysis>notes</analysis>\n\nUntagged summary after analysis.", "Untagged summary after analysis."),
        ("<analysis>a</analysis><summary>Cut off by the output lim", "Cut off by the output lim"),
        ("Intro.\n<analysis>never closed, no summary", "Intro."),
        ("<summary>One.</summary> and <summary>Two.</summary>", "One.\n\nTwo."),
        ("<summary>\n\n  a  \n\n\n\n  b\t\n</summary>", "a\n\n  b"),
        ("<summary>x\r\ny</summary>", "x\ny"),
        ("<analysis>I will wrap it in <summary> tags.</analysis><summary>Real.</summary>", "Real."),
    ],
)
def test_format_summary(raw, expected):
    assert format_summary(raw) == expected


@pytest.mark.parametrize("raw", ["", "   \n", "<analysis>only thinking</analysis>", "<summary>  </summary>",
                                 "<analysis>unclosed"])
def test_format_summary_refuses_empty_answers(raw):
    with pytest.raises(LLMError, match="malformed summary"):
        format_summary(raw)


def test_continuation_message():
    text = continuation_message("  1. Primary Request and Intent:\n   x  ", transcript_hint="/logs/session.jsonl")
    assert text.startswith(
        "This session is being continued from a previous conversation that ran out of context. "
        "The summary below covers the earlier portion of the conversation.\n\nSummary:\n"
        "1. Primary Request and Intent:\n   x\n\n"
    )
    assert "/logs/session.jsonl" in text
    assert text.endswith("without asking the user any further questions. Resume the last task you were working on.")
    assert "/logs" not in continuation_message("s", transcript_hint=None)


# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "overflow"),
    [
        ("prompt is too long: 210000 tokens > 200000 maximum", 10_000),
        ("Prompt is too long: 200,251 tokens > 200,000 maximum", 251),
        ("input length and `max_tokens` exceed context limit: 190000 + 21333 > 200000", 11_333),
        ("prompt is too long", None),
        ("something else", None),
    ],
)
def test_prompt_overflow_tokens(message, overflow):
    assert prompt_overflow_tokens(message) == overflow


def test_text_only_messages_is_valid_and_idempotent():
    messages = [
        {"role": "assistant", "content": "orphan start", "uuid": "x"},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "t", "signature": "s"}]},
        {"role": "user", "content": ""},
        {"role": "user", "content": [{"type": "text", "text": "q1"}]},
        {"role": "user", "content": "q2"},
    ]
    once = text_only_messages(messages)
    assert once == [
        {"role": "user", "content": [{"type": "text", "text": "[earlier conversation omitted]"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "orphan start"}]},
        {"role": "user", "content": [{"type": "text", "text": "q1"}, {"type": "text", "text": "q2"}]},
    ]
    assert text_only_messages(once) == once


def test_summary_request_appends_the_prompt_to_a_final_user_turn():
    request = build_summary_request(HISTORY, "focus")
    assert request[-1]["role"] == "user"
    assert request[-1]["content"][-2]["text"] == "Great. Now also update the changelog."
    assert request[-1]["content"][-1]["text"] == build_compact_prompt("focus")
    ending_with_assistant = build_summary_request(HISTORY[:-1])
    assert ending_with_assistant[-2]["role"] == "assistant" and ending_with_assistant[-1]["role"] == "user"


def test_render_transcript_is_plain_text():
    text = render_transcript(HISTORY)
    assert "<system-reminder>" in text  # the model-backed summarizers see the history as it was
    assert "[Tool call Read id=t1] {\"file_path\": \"src/app.py\"}" in text
    assert "Assistant:\nI'll read the file first." in text


def test_extractive_carries_forward_a_summary_claude_code_wrote():
    """Claude Code writes "1. Primary Request and Intent: text" on one line; a second compaction keeps it."""
    from ctxkit.summarize import ExtractiveSummarizer

    earlier = ("This session is being continued from a previous conversation that ran out of context. The summary "
               "below covers the earlier portion of the conversation.\n\nSummary:\n1. Primary Request and Intent: "
               "inspect app/models.py and list its functions.\n6. All user messages: \"Inspect the app\"\n")
    out = ExtractiveSummarizer().summarize([
        {"role": "user", "content": earlier},
        {"role": "assistant", "content": [{"type": "text", "text": "Continuing."}]},
        {"role": "user", "content": "Now add tests."},
    ])
    assert "inspect app/models.py and list its functions." in out
    assert '"Inspect the app"' in out and "Now add tests." in out


def test_extractive_leaves_harness_echoes_out_of_the_user_messages():
    from ctxkit.summarize import ExtractiveSummarizer

    out = ExtractiveSummarizer().summarize([
        {"role": "user", "content": [
            {"type": "text", "text": "<local-command-caveat>Caveat: The messages below were generated by the user "
                                     "while running local commands.</local-command-caveat>"},
            {"type": "text", "text": "<command-name>/compact</command-name>\n<command-message>compact</command-message>"
                                     "\n<command-args>focus on tests</command-args>"},
            {"type": "text", "text": "<local-command-stdout>Compacted</local-command-stdout>"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
    ])
    section6 = out.split("6. All user messages:", 1)[1].split("7. ", 1)[0]
    assert section6.strip() == "No user messages."  # /compact is a local command, not a request (issue 11)
    assert "Caveat" not in out and "Compacted" not in out and "/compact" not in out
