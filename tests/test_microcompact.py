"""microcompact: clearing old tool results once the cache is cold (ledger, store, expand), frozen
decisions, the keep boundary, thinking after a clearing, and the API-native context_management edits."""
from __future__ import annotations

import json
from datetime import timedelta

import pytest
from builders import Call, Turn, conversation, last_time, load, write, written
from conftest import needs_corpus

from ctxkit.stages.microcompact import PLACEHOLDER, Microcompact, betas_for, context_management
from ctxkit.stages.tool_result_budget import ToolResultBudget
from ctxkit.store.expand import expand
from ctxkit.store.offload import decision_scope
from ctxkit.tokens import RoughCounter
from ctxkit.transcript import pairing_problems, read_transcript
from ctxkit.transcript.edits import restore_archived

OUTPUT = "".join(f"line {i}: output\n" for i in range(40))


def _results(t) -> dict[str, object]:
    return {b["tool_use_id"]: b["content"] for m in t.view().messages for b in m.tool_results()}


def _tool_uses(t) -> list[str]:
    return [b["id"] for m in t.view().messages for b in m.tool_uses()]


def _turns(n_reads=7, thinking=False):
    return [Turn("look around", [[Call("Read", {"file_path": f"/w/{k}.py"}, OUTPUT)] for k in range(n_reads)],
                 "Seen.", thinking=thinking),
            Turn("and the docs", [[Call("WebSearch", {"query": "x"}, OUTPUT), Call("Task", {"prompt": "p"}, OUTPUT)]],
                 "Done.", thinking=thinking)]


def test_cold_cache_clears_old_compactable_results_keeping_the_recent_ones(tmp_path, make_context):
    entries = conversation(_turns())
    t = read_transcript(write(tmp_path / "t.jsonl", entries))
    ctx = make_context(now=last_time(entries) + timedelta(minutes=61))
    out = Microcompact("microcompact", {}).run(t, ctx)
    shown = _results(out.transcript)
    ids = list(shown)
    # 8 compactable results (7 Read, 1 WebSearch); Task is not compactable; the 5 most recent stay
    cleared = ids[:3]
    assert [tid for tid in ids if shown[tid] == PLACEHOLDER] == cleared
    assert out.report.details["cleared"] == cleared
    assert shown[ids[-1]] == OUTPUT  # Task
    assert _tool_uses(out.transcript) == _tool_uses(t)  # every call stays, paired with its (short) result
    assert pairing_problems(out.transcript.view().api_messages()) == []
    assert out.report.action == "applied" and out.report.reason == "cleared 3 old tool result(s)"
    assert out.report.details["gap_minutes"] == 61.0 and out.report.details["threshold_crossed"]


def test_the_ledger_keeps_the_original_and_expand_restores_it(tmp_path, make_context):
    entries = conversation(_turns())
    t = read_transcript(write(tmp_path / "t.jsonl", entries))
    ctx = make_context(now=last_time(entries) + timedelta(hours=3))
    out = Microcompact("mc", {}).run(t, ctx)
    tid = out.report.details["cleared"][0]
    record = ctx.store.decision(tid, scope=decision_scope(t))
    assert set(record) == {"state", "replacement", "blob", "original", "by", "accepts"}
    assert record["state"] == "cleared" and record["replacement"] == PLACEHOLDER
    assert record["original"] == "text" and record["by"] == "mc"
    ctx.store.flush()  # the original is held until the store is saved (the CLI saves it before the output)
    assert open(record["blob"]).read() == OUTPUT
    back, report = expand(out.transcript, ctx.store)
    assert sorted(report.restored) == sorted(out.report.details["cleared"])
    assert back.view().api_messages() == t.view().api_messages()


def test_list_content_is_stored_as_json(tmp_path, make_context):
    blocks = [{"type": "text", "text": OUTPUT}]
    turns = [Turn("go", [[Call("Bash", {"command": "ls"}, blocks)], [Call("Read", {"file_path": "x"}, "ok")]])]
    entries = conversation(turns)
    t = read_transcript(write(tmp_path / "t.jsonl", entries))
    ctx = make_context(now=last_time(entries) + timedelta(hours=2))
    out = Microcompact("mc", {"keep_recent": 1}).run(t, ctx)
    record = ctx.store.decision(out.report.details["cleared"][0], scope=decision_scope(t))
    ctx.store.flush()
    assert record["original"] == "json" and json.loads(open(record["blob"]).read()) == blocks


def test_a_warm_cache_leaves_every_byte(tmp_path, make_context):
    entries = conversation(_turns())
    t = read_transcript(write(tmp_path / "t.jsonl", entries))
    out = Microcompact("mc", {}).run(t, make_context(now=last_time(entries) + timedelta(minutes=59)))
    assert out.transcript is t and out.report.action == "nothing-to-do"
    assert out.report.reason == "the prompt cache is warm"


def test_a_clearing_is_frozen_even_when_the_cache_is_warm_again(tmp_path, make_context):
    """The agent keeps writing the original transcript; the view must keep showing the cleared results."""
    entries = conversation(_turns())
    t = read_transcript(write(tmp_path / "t.jsonl", entries))
    store = tmp_path / "store"
    cold = make_context(now=last_time(entries) + timedelta(hours=2), store_dir=store)
    first = Microcompact("mc", {}).run(t, cold)
    cold.store.flush()
    grown = entries + conversation([Turn("next", [[Call("Read", {"file_path": "/w/n.py"}, OUTPUT)]])],
                                   start=last_time(entries) + timedelta(hours=2), session="s-2", after=entries)
    t2 = read_transcript(write(tmp_path / "t2.jsonl", grown))
    warm = make_context(now=last_time(grown) + timedelta(minutes=1), store_dir=store)
    second = Microcompact("mc", {}).run(t2, warm)
    assert second.report.details["replayed"] == first.report.details["cleared"]
    assert second.report.details["cleared"] == [] and not second.report.details["threshold_crossed"]
    earlier = first.transcript.view().api_messages()
    assert second.transcript.view().api_messages()[:len(earlier)] == earlier


def test_the_keep_boundary_may_fall_between_parallel_calls(tmp_path, make_context):
    turns = [Turn("go", [[Call("Read", {"file_path": f"/w/{k}"}, OUTPUT) for k in range(3)],
                         [Call("Grep", {"pattern": "p"}, OUTPUT)]])]
    entries = conversation(turns)
    t = read_transcript(write(tmp_path / "t.jsonl", entries))
    out = Microcompact("mc", {"keep_recent": 2}).run(t, make_context(now=last_time(entries) + timedelta(hours=2)))
    shown = list(_results(out.transcript).values())
    assert shown == [PLACEHOLDER, PLACEHOLDER, OUTPUT, OUTPUT]  # the third parallel result is among the 2 kept
    assert pairing_problems(out.transcript.view().api_messages()) == []


def test_results_shorter_than_the_placeholder_are_left_alone(tmp_path, make_context):
    turns = [Turn("go", [[Call("Bash", {"command": "true"}, "")], [Call("Bash", {"command": "pwd"}, "/w")],
                         [Call("Read", {"file_path": "x"}, OUTPUT)]])]
    entries = conversation(turns)
    t = read_transcript(write(tmp_path / "t.jsonl", entries))
    out = Microcompact("mc", {"keep_recent": 0}).run(t, make_context(now=last_time(entries) + timedelta(hours=2)))
    assert list(_results(out.transcript).values()) == ["", "/w", PLACEHOLDER]


def test_a_result_that_counts_less_than_the_placeholder_is_left_alone(tmp_path, make_context):
    """Longer than the placeholder, but fewer tokens: the estimate counts the placeholder, which looks like
    JSON, at 2 characters a token (a Claude Code 1.0.17 session's Grep result grew the count by 3)."""
    found = "Found 1 file\n/home/dev/system-conf/home/dev/home.nix"
    entries = conversation([Turn("go", [[Call("Grep", {"pattern": "obs"}, found)],
                                        [Call("Read", {"file_path": "x"}, OUTPUT)]])])
    t = read_transcript(write(tmp_path / "t.jsonl", entries))
    ctx = make_context(now=last_time(entries) + timedelta(hours=2))
    out = Microcompact("mc", {"keep_recent": 0}).run(t, ctx)
    assert len(found) > len(PLACEHOLDER)
    assert list(_results(out.transcript).values()) == [found, PLACEHOLDER]
    rough = RoughCounter()
    assert rough.count_messages(out.transcript.view().api_messages()) < rough.count_messages(t.view().api_messages())


def test_a_persisted_result_is_cleared_with_the_true_original_kept(tmp_path, make_context):
    big = "x\n" * 40_000
    turns = [Turn("go", [[Call("Bash", {"command": "seq"}, big)], [Call("Read", {"file_path": "x"}, OUTPUT)]])]
    entries = conversation(turns)
    t = read_transcript(write(tmp_path / "t.jsonl", entries))
    ctx = make_context(now=last_time(entries) + timedelta(hours=2))
    budgeted = ToolResultBudget("budget", {}).run(t, ctx).transcript
    out = Microcompact("mc", {"keep_recent": 1}).run(budgeted, ctx)
    tid = out.report.details["cleared"][0]
    assert open(ctx.store.decision(tid, scope=decision_scope(t))["blob"]).read() == big
    assert expand(out.transcript, ctx.store)[0].view().api_messages() == t.view().api_messages()


def test_thinking_from_the_first_cleared_result_on_is_dropped_and_archived(tmp_path, make_context):
    entries = conversation(_turns(n_reads=3, thinking=True))
    t = read_transcript(write(tmp_path / "t.jsonl", entries))
    ctx = make_context(now=last_time(entries) + timedelta(hours=2))
    out = Microcompact("mc", {"keep_recent": 2}).run(t, ctx)
    msgs = out.transcript.view().messages
    first_cleared = next(i for i, m in enumerate(msgs) if any(b.get("content") == PLACEHOLDER
                                                              for b in m.tool_results()))
    assert any(b["type"] == "thinking" for m in msgs[:first_cleared] for b in m.content)
    assert not any(b["type"] == "thinking" for m in msgs[first_cleared:] for b in m.content)
    assert out.report.details["thinking_stripped"] == 5
    ctx.store.flush()
    back = restore_archived(expand(out.transcript, ctx.store)[0], ctx.store)
    assert back.view().api_messages() == t.view().api_messages()


def test_plain_messages_have_no_clock_so_only_force_clears(tmp_path, make_context):
    t = load(tmp_path, _turns(), fmt="anthropic")
    out = Microcompact("mc", {}).run(t, make_context())
    assert out.report.reason == "the transcript has no timestamps (use --force to clear anyway)"
    forced = Microcompact("mc", {}).run(t, make_context(force=True))
    assert len(forced.report.details["cleared"]) == 3
    assert list(_results(forced.transcript).values()).count(PLACEHOLDER) == 3


# -- API-native ----------------------------------------------------------------------------------------
def test_api_native_mode_leaves_the_transcript_and_reports_the_edits(tmp_path, make_context):
    entries = conversation(_turns())
    t = read_transcript(write(tmp_path / "t.jsonl", entries))
    out = Microcompact("mc", {"mode": "api-native"}).run(t, make_context(now=last_time(entries) + timedelta(hours=2)))
    assert out.transcript is t and out.report.action == "nothing-to-do"
    # Claude Code's thinking edit (the cache is cold: the last thinking turn kept); clear_tool_uses only on request
    assert out.report.details["context_management"] == {"edits": [
        {"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 1}}]}
    out = Microcompact("mc", {"mode": "api-native", "api_native": {"clear_tool_uses": {"enabled": True}}}).run(
        t, make_context(now=last_time(entries) + timedelta(minutes=5)))
    assert out.report.details["context_management"] == {"edits": [
        {"type": "clear_thinking_20251015", "keep": "all"},
        {"type": "clear_tool_uses_20250919", "trigger": {"type": "input_tokens", "value": 180_000},
         "clear_at_least": {"type": "input_tokens", "value": 140_000}}]}


def test_context_management_edits_follow_the_options():
    options = {"mode": "both", "api_native": {
        "clear_tool_uses": {"enabled": True, "trigger": 100_000, "keep": 4, "clear_at_least": None, "exclude_tools": ["Task"],
                            "clear_tool_inputs": ["Edit"]},
        "clear_thinking": {"enabled": True},
        "compact": {"enabled": True, "instructions": "Keep file paths."}}}
    warm = context_management(options)
    assert warm == {"edits": [
        {"type": "clear_thinking_20251015", "keep": "all"},
        {"type": "clear_tool_uses_20250919", "trigger": {"type": "input_tokens", "value": 100_000},
         "keep": {"type": "tool_uses", "value": 4}, "exclude_tools": ["Task"], "clear_tool_inputs": ["Edit"]},
        {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 150_000},
         "instructions": "Keep file paths."}]}
    cold = context_management(options, cold=True)
    assert cold["edits"][0] == {"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 1}}
    assert betas_for(cold) == ["context-management-2025-06-27", "compact-2026-01-12"]
    # what Claude Code sends in every mode, when thinking is on; nothing without thinking
    assert context_management({"mode": "time-based"}) == {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]}
    assert context_management({"mode": "time-based"}, thinking=False) is None
    assert context_management({"mode": "time-based", **options["api_native"]}, thinking=False) is None
    assert context_management({"mode": "api-native", "api_native": {"clear_thinking": {"enabled": False}}}) is None


# -- genuine sessions ---------------------------------------------------------------------------------
@needs_corpus
@pytest.mark.parametrize("name,cleared", [("multi-prompt", 23), ("explore-edit", 0), ("big-outputs", 0)])
def test_recorded_sessions_after_a_long_pause(corpus_session, make_context, name, cleared):
    t = read_transcript(corpus_session(name))
    entries_end = max(m.timestamp for m in t.view().messages if m.timestamp)
    from ctxkit.clock import parse_instant

    ctx = make_context(now=parse_instant(entries_end) + timedelta(minutes=90))
    out = Microcompact("microcompact", {}).run(t, ctx)
    assert len(out.report.details.get("cleared", [])) == cleared
    assert pairing_problems(out.transcript.view().api_messages()) == []
    before = ctx.tokens.count_messages(t.view().api_messages())
    after = ctx.tokens.count_messages(out.transcript.view().api_messages())
    assert after <= before
    assert expand(out.transcript, ctx.store)[0].view().api_messages() == t.view().api_messages()
    if cleared:
        assert written(out.transcript) != written(t)
