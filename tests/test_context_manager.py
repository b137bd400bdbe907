"""``ctxkit.ContextManager``: the policy's pipeline across an agent's calls, through the documented API only.

An agent calls ``prepare`` with its whole, growing message list before each model call. What comes back
holds fewer tokens, keeps every tool call paired, and keeps its prefix byte for byte from one call to the
next until a threshold is crossed (the provider's prompt cache stays warm); ``restore`` gives every
original back; the caller's list is never changed; a new manager on the same store goes on where the
last one stopped.
"""
from __future__ import annotations

import asyncio
import copy
import hashlib
import itertools
import subprocess
import sys

import orjson
import pytest
from conftest import CC_CORPUS
from live_conversations import from_corpus, synthetic
from mock_messages_api import MockMessagesAPI

from ctxkit import ContextManager
from ctxkit.errors import UsageError
from ctxkit.transcript import pairing_problems

NOW = "2026-12-01T12:00:00Z"


def tokens(cm: ContextManager) -> tuple[int, int]:
    return cm.reports.tokens_before, cm.reports.tokens_after


def grow(cm: ContextManager, full: list[dict], start: int = 3, step: int = 2):
    """prepare on ``full[:n]`` for n growing by ``step``: yields (given, returned, report) of each call,
    checking that what comes back is a valid request and (every tenth call) that the given list is left
    as it was."""
    for call, n in enumerate(range(start, len(full) + 1, step)):
        given = full[:n]
        before = copy.deepcopy(given) if call % 10 == 0 else None
        out = cm.prepare(given)
        assert before is None or given == before, "prepare changed the caller's messages"
        assert pairing_problems(out) == [], pairing_problems(out)[:3]
        yield given, out, cm.reports


def size(messages: list[dict]) -> int:
    """What a list weighs as JSON: a token count's proxy that depends on no ctxkit code."""
    return len(orjson.dumps(messages))


def check_growing_conversation(cm: ContextManager, full: list[dict]) -> dict:
    """The 'Done when' of issue 31 on one conversation: fewer tokens sent than given, a byte-identical
    prefix from call to call until a stage that crosses a threshold applies, every original back."""
    previous: list[bytes] | None = None
    thresholds = 0
    last = None
    for given, out, report in grow(cm, full):
        lines = [orjson.dumps(m) for m in out]
        if previous is not None and lines[:len(previous)] != previous:
            # only a stage acting on a threshold may rewrite what was sent before
            assert set(report.applied()) & {"autocompact", "microcompact", "collapse", "snip"}, report.to_json()
            thresholds += 1
        previous, last = lines, (given, out, report)
    given, out, report = last
    assert size(out) < 0.8 * size(given)
    back = cm.restore(out)
    assert back == given, "restore did not give back every original"
    return {"thresholds": thresholds, "given": len(given), "sent": len(out)}
def test_a_growing_tool_heavy_conversation_is_sent_smaller_with_a_frozen_prefix(tmp_path):
    full = synthetic(150, size=6_000, big_every=25)
    cm = ContextManager(policy="no-llm", store=tmp_path / "store", now=NOW)
    seen = check_growing_conversation(cm, full)
    assert seen["thresholds"] >= 1 and seen["sent"] < seen["given"]  # an autocompaction happened, once or so
    assert seen["thresholds"] <= 3
    first = cm.prepare(full[:60])
    assert orjson.dumps(first) != orjson.dumps(full[:60])  # the big results went to the store early


@pytest.mark.skipif(not CC_CORPUS.is_dir(), reason=f"shared corpus not found at {CC_CORPUS}")
def test_a_long_conversation_from_the_corpus(tmp_path):
    full = from_corpus(1_000)[:1_000]
    cm = ContextManager(policy="no-llm", store=tmp_path / "store", now=NOW)
    seen = check_growing_conversation(cm, full)
    assert 1 <= seen["thresholds"] <= 5 and seen["sent"] < seen["given"]


def test_big_tool_results_go_to_the_store_and_stay_there_across_calls(tmp_path):
    full = synthetic(10, size=500, big_every=3)
    cm = ContextManager(policy="no-llm", store=tmp_path / "store", now=NOW)
    out = cm.prepare(full[:7])
    assert cm.reports.ran and "tool-result-budget" in cm.reports.applied()
    persisted = out[6]["content"][0]["content"]
    assert "<persisted-output>" in str(persisted) and len(str(persisted)) < 10_000
    assert tokens(cm)[1] < tokens(cm)[0]
    again = cm.prepare(full)
    assert again[:7] == out  # the same preview, byte for byte
    assert cm.reports.new_messages == len(full) - 7
    assert cm.prepare(full) == again and not cm.reports.ran  # nothing new: the same answer, nothing run


def test_openai_messages_come_back_as_openai_messages(tmp_path):
    big = "error line\n" * 6_000
    full = [{"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": "Run the tests."},
            {"role": "assistant", "content": None,
             "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": big},
            {"role": "assistant", "content": "They fail."}]
    cm = ContextManager(policy="no-llm", store=tmp_path / "store", now=NOW)
    out = cm.prepare(full)
    assert [m["role"] for m in out] == ["system", "user", "assistant", "tool", "assistant"]
    assert out[3]["tool_call_id"] == "call_1" and len(out[3]["content"]) < len(big)
    assert cm.restore(out) == full


def test_a_new_manager_on_the_same_store_goes_on_where_the_last_one_stopped(tmp_path):
    full = synthetic(150, size=6_000)
    first = ContextManager(policy="no-llm", store=tmp_path / "store", now=NOW)
    for _ in grow(first, full[:281], start=201, step=40):
        pass
    assert any(m == full[0] for m in full[:1])
    sent = first.prepare(full[:281])
    later = ContextManager(policy="no-llm", store=tmp_path / "store", now=NOW)
    out = later.prepare(full[:283])
    assert later.reports.new_messages == 2  # it ran on what the first one sent, plus the two new messages
    assert out[:len(sent)] == sent


def test_the_reported_usage_counts(tmp_path):
    """A usage far above the estimate (a large system prompt and tools) makes the next call compact."""
    full = synthetic(30, size=3_000)
    cm = ContextManager(policy="no-llm", store=tmp_path / "store", now=NOW)
    cm.prepare(full[:41])
    assert cm.reports.applied() == []
    cm.record_usage({"input_tokens": 2, "cache_read_input_tokens": 180_000, "output_tokens": 50})
    out = cm.prepare(full[:43])
    assert "autocompact" in cm.reports.applied() and len(out) < 43
    assert cm.reports.tokens_before > 180_000


def test_aprepare_gives_what_prepare_gives(tmp_path):
    full = synthetic(20, size=500, big_every=4)
    sync = ContextManager(policy="no-llm", store=tmp_path / "a", now=NOW).prepare(full)
    cm = ContextManager(policy="no-llm", store=tmp_path / "b", now=NOW)
    out = asyncio.run(cm.aprepare(full))
    assert orjson.dumps(out).replace(b"/b/blobs/", b"/a/blobs/") == orjson.dumps(sync)
    assert "<persisted-output>" in str(out)


@pytest.mark.parametrize("messages, message", [
    ("hello", "prepare: messages must be a list of message dicts, got str"),
    ([{"role": "user", "content": "hi"}, 3], "prepare: message 2 must be a dict, got int"),
    ([{"role": "user", "content": object()}], "prepare: message 1 is not JSON"),
])
def test_bad_messages_are_a_usage_error_naming_the_message(tmp_path, messages, message):
    cm = ContextManager(policy="no-llm", store=tmp_path / "store", now=NOW)
    with pytest.raises(UsageError, match="^" + message.replace("(", r"\(")):
        cm.prepare(messages)


def test_record_usage_before_prepare_and_a_bad_usage_are_usage_errors(tmp_path):
    cm = ContextManager(policy="no-llm", store=tmp_path / "store", now=NOW)
    with pytest.raises(UsageError, match="no prepare call yet"):
        cm.record_usage({"input_tokens": 10, "output_tokens": 1})
    cm.prepare(synthetic(2))
    with pytest.raises(UsageError, match="not an API usage"):
        cm.record_usage({"tokens": 3})


def calls_in_full(cm: ContextManager) -> ContextManager:
    cm._incremental = False  # every call runs on the whole conversation (the reference)
    return cm


CORPUS_ONLY = pytest.mark.skipif(not CC_CORPUS.is_dir(), reason=f"shared corpus not found at {CC_CORPUS}")


@pytest.mark.parametrize("build, step", [
    pytest.param(lambda: synthetic(150, size=6_000, big_every=7), 1, id="synthetic-by-1"),
    pytest.param(lambda: synthetic(150, size=6_000, big_every=7), 3, id="synthetic-by-3"),
    pytest.param(lambda: from_corpus(1_000)[:1_000], 4, id="corpus-by-4", marks=CORPUS_ONLY),
])
def test_a_call_on_the_tail_gives_the_bytes_a_call_in_full_gives(tmp_path, build, step):
    """The incremental run (ctxkit.live.incremental) is an optimisation only: call by call, on conversations
    that cross the autocompact threshold, its answers are the reference's byte for byte."""
    full = build()
    store = tmp_path / "store"

    def answers(cm: ContextManager) -> list[tuple[str, int, bool]]:
        got = []
        for call, n in enumerate(range(1, len(full) + 1, step)):
            out = cm.prepare(full[:n])
            got.append((hashlib.sha256(orjson.dumps(out)).hexdigest(), cm.reports.tokens_after, cm.reports.incremental))
            if call % 5 == 4:  # now and then the API's word on what was sent: a system prompt of 3,000 tokens
                cm.record_usage({"input_tokens": 3_000 + size(out) // 4, "output_tokens": 50})
        return got

    # one after the other in the same folder: the answers name the store's files (persisted outputs, histories)
    reference = answers(calls_in_full(ContextManager(policy="no-llm", store=store, now=NOW)))
    store.rename(tmp_path / "reference")
    fast = answers(ContextManager(policy="no-llm", store=store, now=NOW))
    for n, (want, got) in enumerate(zip(reference, fast, strict=True)):
        assert got[:2] == want[:2], f"call {n + 1}"
    assert sum(incremental for _, _, incremental in fast) > len(fast) // 2  # most calls ran on the tail
    assert not any(incremental for _, _, incremental in reference)
    assert any(b[1] < a[1] for a, b in itertools.pairwise(fast))  # a compaction: the count went down


def test_a_new_manager_given_what_the_last_one_was_given_answers_the_same(tmp_path):
    full = synthetic(8, size=500, big_every=3)
    sent = ContextManager(policy="no-llm", store=tmp_path / "store", now=NOW).prepare(full[:13])
    later = ContextManager(policy="no-llm", store=tmp_path / "store", now=NOW)
    assert later.prepare(full[:13]) == sent and not later.reports.ran
    assert later.prepare(full)[:13] == sent and later.reports.incremental and later.reports.new_messages == 4


def test_a_caller_that_keeps_the_managed_list_goes_on_from_it(tmp_path):
    """An agent that replaces its history by what prepare returned (and appends to that) is not started over."""
    full = synthetic(12, size=500, big_every=3)
    cm = ContextManager(policy="no-llm", store=tmp_path / "store", now=NOW)
    managed = cm.prepare(full[:7])
    assert managed != full[:7]  # a result went to the store
    out = cm.prepare(managed + full[7:9])
    assert cm.reports.new_messages == 2 and out[:7] == managed
    later = ContextManager(policy="no-llm", store=tmp_path / "store", now=NOW)
    assert later.prepare(managed + full[7:11])[:9] == out and later.reports.new_messages == 2
    assert cm.restore(out) == full[:9]


def test_a_journal_cut_short_loses_only_its_last_call(tmp_path):
    full = synthetic(12, size=500, big_every=3)
    store = tmp_path / "store"
    first = ContextManager(policy="no-llm", store=store, now=NOW)
    first.prepare(full[:5])
    kept = first.prepare(full[:7])
    first.prepare(full[:9])
    first.close()
    [journal] = (store / "live").iterdir()
    journal.write_bytes(journal.read_bytes()[:-10])  # killed while writing the last call's record
    later = ContextManager(policy="no-llm", store=store, now=NOW)
    again = later.prepare(full[:9])
    assert later.reports.new_messages == 2 and again[:7] == kept


@pytest.mark.parametrize("field, bad", [("out", '["{not json"]'), ("out", "[5]"), ("out", '["[1]"]'),
                                        ("overhead", '"many"'), ("overhead", "-3")])
def test_a_journal_that_is_not_ctxkits_is_a_conversation_that_starts_over(tmp_path, field, bad):
    # each was an exception out of prepare (JSONDecodeError, AttributeError, TypeError), which the proxy
    # turned into a conversation never managed again
    full = synthetic(8, size=500, big_every=3)
    store = tmp_path / "store"
    first = ContextManager(policy="no-llm", store=store, now=NOW)
    sent = first.prepare(full[:5])
    first.close()
    [journal] = (store / "live").iterdir()
    lines = journal.read_bytes().splitlines()
    record = orjson.loads(lines[1])
    record[field] = orjson.loads(bad)
    journal.write_bytes(b"\n".join([lines[0], orjson.dumps(record)]) + b"\n")
    later = ContextManager(policy="no-llm", store=store, now=NOW)
    assert later.prepare(full[:7])[:5] == sent  # from the start again: the ledger froze every decision
    assert later.reports.new_messages == 7


def test_ctxkit_expand_restores_a_saved_managed_list(tmp_path):
    """What a manager sent, saved as a message list, comes back whole through the command line too."""
    full = synthetic(8, size=500, big_every=3)
    cm = ContextManager(policy="no-llm", store=tmp_path / "store", now=NOW)
    sent = cm.prepare(full)
    cm.close()
    assert sent != full
    (tmp_path / "sent.jsonl").write_bytes(b"".join(orjson.dumps(m) + b"\n" for m in sent))
    done = subprocess.run([sys.executable, "-m", "ctxkit.cli.main", "expand", "--store", str(tmp_path / "store"),
                           "sent.jsonl", "-o", "back.jsonl"], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    assert [orjson.loads(line) for line in (tmp_path / "back.jsonl").read_bytes().splitlines()] == full


def test_aprepare_summarizes_in_a_worker_thread_while_the_loop_goes_on(tmp_path, monkeypatch):
    """The default policy's summarizer (the Anthropic SDK, against the local mock of the Messages API) runs
    when autocompact fires; awaited, the loop serves other tasks meanwhile; the summary is made once."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789abcdef")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    full = synthetic(60, size=6_000)
    with MockMessagesAPI() as api:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
        api.reply_text("<summary>1. Primary Request and Intent:\n   Fix the failing tests.</summary>", delay=1.0)
        cm = ContextManager(policy="default", store=tmp_path / "store", now=NOW, context_window=60_000)

        async def main():
            ticks = 0

            async def ticker():
                nonlocal ticks
                while True:
                    await asyncio.sleep(0.02)
                    ticks += 1

            task = asyncio.create_task(ticker())
            out = await cm.aprepare(full)
            task.cancel()
            return out, ticks

        out, ticks = asyncio.run(main())
        assert "autocompact" in cm.reports.applied() and len(api.message_requests) == 1
        assert ticks >= 20  # the loop went on during the summary's second
        assert "Fix the failing tests." in str(out[0]) and len(out) < len(full)
        later = cm.prepare(full + synthetic(62, size=6_000)[121:123])
        assert later[:len(out)] == out and len(api.message_requests) == 1


@pytest.mark.parametrize("kwargs, message", [
    ({"context_window": -3}, "ContextManager: context_window must be a positive number of tokens, got -3"),
    ({"now": 5}, "ContextManager: now must be a datetime or an ISO-8601 string, got int"),
    ({"store": 5}, "ContextManager: store must be a path, got int"),
    ({"model": 4}, "ContextManager: model must be a model name, got int"),
    ({"policy": 4}, "ContextManager: policy must be a policy name, a file or a Policy, got int"),
])
def test_bad_arguments_are_usage_errors_naming_them(kwargs, message):
    with pytest.raises(UsageError) as raised:
        ContextManager(**kwargs)
    assert str(raised.value) == message


def test_conversations_sharing_a_system_prompt_keep_their_own_state(tmp_path):
    """OpenAI lists often start with the same system message: each conversation still goes on in a new process."""
    system = {"role": "system", "content": "You are a coding agent."}

    def conversation(topic: str) -> list[dict]:
        return [system, {"role": "user", "content": f"Fix {topic}."},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": f"call_{topic}", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": f"call_{topic}", "content": f"{topic} failed\n" * 8_000},
                {"role": "assistant", "content": "Looking."}, {"role": "user", "content": "Go on."}]

    a, b = conversation("parser"), conversation("lexer")
    cm = ContextManager(policy="no-llm", store=tmp_path / "store", now=NOW)
    sent_a, sent_b = cm.prepare(a[:4]), cm.prepare(b[:4])
    later = ContextManager(policy="no-llm", store=tmp_path / "store", now=NOW)
    assert later.prepare(a)[:4] == sent_a and later.reports.new_messages == 2
    assert later.prepare(b)[:4] == sent_b and later.reports.new_messages == 2


def test_a_bad_item_after_many_good_calls_is_still_named(tmp_path):
    full = synthetic(40, size=200)
    cm = ContextManager(policy="no-llm", store=tmp_path / "store", now=NOW)
    cm.prepare(full[:75])
    with pytest.raises(UsageError, match="^prepare: message 78 must be a dict, got str$"):
        cm.prepare([*full[:77], "oops"])
    assert cm.prepare(full[:77])[:75] == cm.prepare(full[:75])  # nothing of the bad call was kept


def test_the_store_stays_where_it_was_named_when_the_agent_changes_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cm = ContextManager(policy="no-llm", store=".ctxkit", now=NOW)
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    sent = cm.prepare(synthetic(3, size=500, big_every=2))
    assert str(tmp_path / ".ctxkit" / "blobs") in str(sent) and not (tmp_path / "elsewhere" / ".ctxkit").exists()
