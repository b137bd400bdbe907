"""autocompact: when it triggers, what the compacted view holds, LLM failures, PTL retry, the breaker,
re-injection, and the corpus sessions compacted with a small window."""
from __future__ import annotations

import io
import json
import math
import random
from pathlib import Path

import pytest
from conftest import cc_sessions, public_transcripts
from mock_messages_api import MockMessagesAPI

from ctxkit.pipeline import compile_pipeline
from ctxkit.stages.autocompact.compaction import TAIL_NOTE
from ctxkit.stages.autocompact.ptl_retry import PTL_RETRY_MARKER, group_by_round
from ctxkit.stages.autocompact.stage import Autocompact
from ctxkit.summarize import AnthropicSummarizer
from ctxkit.summarize.prompt import CONTINUATION_PREFIX
from ctxkit.tokens import make_counter
from ctxkit.transcript import pairing_problems, read_transcript
from ctxkit.transcript.view import SUMMARY

EXTRACTIVE = {"summarizer": {"use": "extractive"}, "overhead_tokens": 0}  # the sessions here stand for whole requests: no system prompt or tools beside them
MODEL_SUMMARY = "<analysis>scratch notes nobody needs</analysis>\n<summary>\n1. Primary Request and Intent:\n   Refactor billing.\n</summary>"
WINDOW_ABOVE = 40_000  # autocompact threshold 7,000 tokens: the sessions below exceed it


# -- building sessions ------------------------------------------------------------------------------
def words(n: int, tag: str = "w") -> str:
    return " ".join(f"{tag}{i}" for i in range(n))


def plain_session(rounds: int = 8, size: int = 1_500, prompt: str = "Refactor the billing module",
                  files: list[Path] | None = None, final: str = "Done refactoring.") -> list[dict]:
    """An Anthropic-format session: one prompt, ``rounds`` tool rounds of ~``size`` tokens, a final reply."""
    lines: list[dict] = [{"role": "user", "content": prompt}]
    for k in range(rounds):
        tid = f"toolu_{k:02d}"
        if files:
            call = {"type": "tool_use", "id": tid, "name": "Read", "input": {"file_path": str(files[k % len(files)])}}
        else:
            call = {"type": "tool_use", "id": tid, "name": "Bash", "input": {"command": f"step {k}"}}
        lines.append({"role": "assistant", "content": [{"type": "text", "text": f"Step {k}."}, call]})
        lines.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid,
                                                   "content": words(size, f"r{k}_")}]})
    lines.append({"role": "assistant", "content": [{"type": "text", "text": final}]})
    return lines


def write_lines(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def out_bytes(t) -> bytes:
    buf = io.BytesIO()
    t.write(buf)
    return buf.getvalue()


def reread(tmp_path: Path, t, name: str = "out.jsonl"):
    """The written transcript read back, as the next tool in a pipe would (orphans are errors)."""
    p = tmp_path / name
    p.write_bytes(out_bytes(t))
    return read_transcript(p)


def view_texts(t) -> str:
    out = []
    for m in t.view().messages:
        for b in m.content:
            if b.get("type") == "text":
                out.append(b["text"])
            elif b.get("type") == "tool_result":
                c = b.get("content")
                out.append(c if isinstance(c, str) else json.dumps(c))
    return "\n".join(out)


def run(t, ctx, options=None):
    return Autocompact("autocompact", options or {}).run(t, ctx)


def assert_conforms(tmp_path, result, kept_ids=()):
    """Core conformance: the output reads back (no orphan results), pairs, opens with the summary."""
    t2 = reread(tmp_path, result.transcript)
    view = t2.view()
    assert pairing_problems(view.api_messages()) == []
    convo = [m for m in view.messages if m.role != "system"]
    assert convo[0].role == "user" and convo[0].kind == SUMMARY
    assert convo[0].text().startswith(CONTINUATION_PREFIX)
    assert sum(1 for m in view.messages if m.kind == SUMMARY) == 1
    ids = [b["id"] for m in convo for b in m.tool_uses()]
    assert list(kept_ids) == ids[:len(kept_ids)]
    return t2


# -- when it runs ------------------------------------------------------------------------------------
def test_under_the_threshold_nothing_changes(tmp_path, make_context):
    t = read_transcript(write_lines(tmp_path / "s.jsonl", plain_session(rounds=2)))
    r = run(t, make_context(EXTRACTIVE))
    assert r.report.action == "nothing-to-do"
    assert "under the autocompact threshold (167,000)" in r.report.reason
    assert r.transcript is t


def test_over_the_threshold_it_summarizes_and_keeps_the_last_round(tmp_path, make_context):
    src = write_lines(tmp_path / "s.jsonl", plain_session())
    t = read_transcript(src)
    ctx = make_context(EXTRACTIVE, context_window=WINDOW_ABOVE)
    r = run(t, ctx)
    assert r.report.action == "applied", r.report.reason
    d = r.report.details
    assert d["tokens"] > d["threshold"] == 7_000
    assert d["post_tokens"] < d["threshold"]
    assert d["method"] == "summary" and d["summarizer"] == "extractive"
    t2 = assert_conforms(tmp_path, r)
    msgs = t2.view().messages
    # summary first, then the last round verbatim
    assert msgs[0].text().startswith(CONTINUATION_PREFIX) and TAIL_NOTE in msgs[0].text()
    assert "Refactor the billing module" in msgs[0].text()  # the user's words are in the summary
    assert msgs[-1].role == "assistant" and msgs[-1].text() == "Done refactoring."
    # nothing lost: the summarized lines are archived in the store and the summary names the archive
    archive = Path(d["archive"])
    assert str(archive) in msgs[0].text()
    archived = json.loads(archive.read_text())["messages"]
    assert archived == [json.loads(x) for x in src.read_text().splitlines()[:-1]]


def test_force_compacts_under_the_threshold_and_instructions_reach_the_summary(tmp_path, make_context):
    t = read_transcript(write_lines(tmp_path / "s.jsonl", plain_session(rounds=2)))
    r = run(t, make_context(EXTRACTIVE, force=True, instructions="the billing tests"))
    assert r.report.action == "applied"
    assert r.report.reason.startswith("manual compaction")
    assert "[Focus requested: the billing tests]" in reread(tmp_path, r.transcript).view().messages[0].text()


def test_earlier_stages_are_counted_before_the_threshold_check(tmp_path, make_context):
    """A huge tool output that tool-result-budget persists no longer counts against autocompact."""
    lines = plain_session(rounds=2, size=200)
    lines[2]["content"][0]["content"] = "x" * 120_000  # ~60k tokens raw, a 2 KB preview after the budget stage
    t = read_transcript(write_lines(tmp_path / "s.jsonl", lines))
    ctx = make_context({**EXTRACTIVE, "stages": [{"id": "tool-result-budget"}, {"id": "autocompact"}]},
                       context_window=60_000)  # threshold 27,000
    result = compile_pipeline(ctx.policy).run(t, ctx)
    budget, auto = result.reports
    assert budget.tokens_freed > 27_000
    assert auto.action == "nothing-to-do"
    assert auto.details["freed_by_earlier_stages"] == budget.tokens_freed
    assert auto.details["tokens"] < auto.details["threshold"] < auto.tokens_before + budget.tokens_freed


def test_collapse_owning_proactive_compaction_skips_it(tmp_path, make_context):
    """With ``proactive: collapse`` autocompact leaves the threshold to collapse, and acts only reactively:
    when the view would not fit at all (over the blocking limit)."""
    t = read_transcript(write_lines(tmp_path / "s.jsonl", plain_session(rounds=3)))
    doc = {**EXTRACTIVE, "proactive": "collapse", "stages": [{"id": "collapse"}, {"id": "autocompact"}]}
    r = run(t, make_context(doc, context_window=WINDOW_ABOVE))
    assert r.report.action == "skipped" and r.transcript is t
    assert "under the blocking limit" in r.report.reason
    big = read_transcript(write_lines(tmp_path / "big.jsonl", plain_session(rounds=16)))
    r = run(big, make_context(doc, context_window=WINDOW_ABOVE))
    assert r.report.action == "applied" and r.report.details["reactive"] is True


def test_same_input_and_clock_give_the_same_bytes(tmp_path, make_context):
    src = write_lines(tmp_path / "s.jsonl", plain_session())
    a = run(read_transcript(src), make_context(EXTRACTIVE, context_window=WINDOW_ABOVE))
    b = run(read_transcript(src), make_context(EXTRACTIVE, context_window=WINDOW_ABOVE))
    assert out_bytes(a.transcript) == out_bytes(b.transcript)


def test_openai_format_keeps_the_system_prompt_first(tmp_path, make_context):
    lines = [{"role": "system", "content": "You are a billing assistant."},
             {"role": "user", "content": "Refactor the billing module"}]
    for k in range(6):
        lines.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{k}", "type": "function", "function": {"name": "bash", "arguments": json.dumps({"k": k})}}]})
        lines.append({"role": "tool", "tool_call_id": f"call_{k}", "content": words(1_500)})
    lines.append({"role": "user", "content": "Now add tests"})
    t = read_transcript(write_lines(tmp_path / "s.jsonl", lines))
    r = run(t, make_context(EXTRACTIVE, context_window=WINDOW_ABOVE))
    assert r.report.action == "applied"
    written = [json.loads(x) for x in out_bytes(r.transcript).decode().splitlines()]
    assert written[0] == lines[0]
    assert written[1]["role"] == "user" and written[1]["content"].startswith(CONTINUATION_PREFIX)
    assert written[-1] == {"role": "user", "content": "Now add tests"}  # the kept tail: the pending prompt
    assert pairing_problems(reread(tmp_path, r.transcript).view().api_messages()) == []


# -- Claude Code output -----------------------------------------------------------------------------
def test_claude_code_compaction_is_appended_the_way_claude_code_writes_it(corpus_session, tmp_path, make_context):
    src = corpus_session("explore-edit")
    t = read_transcript(src)
    old_leaf = t.entry(max(i for i in t.live_indexes() if t.entry(i).get("type") == "assistant"))
    ctx = make_context(EXTRACTIVE, force=True, cwd=src.parent / "workdir")
    r = run(t, ctx, {"keep_tail": {"min_rounds": 2}})
    assert r.report.action == "applied"
    data = out_bytes(r.transcript)
    original = src.read_bytes()
    assert data.startswith(original)  # append-only: every earlier byte is still there
    new = [json.loads(x) for x in data[len(original):].decode().splitlines()]
    boundary, summary = new[0], new[1]
    assert boundary["type"] == "system" and boundary["subtype"] == "compact_boundary"
    assert boundary["parentUuid"] is None and boundary["content"] == "Conversation compacted"
    assert boundary["logicalParentUuid"] == old_leaf["uuid"]
    meta = boundary["compactMetadata"]
    assert meta["trigger"] == "manual" and meta["preTokens"] == r.report.details["tokens"]
    assert meta["postTokens"] == r.report.details["post_tokens"]
    seg = meta["preservedSegment"]
    assert seg["anchorUuid"] == summary["uuid"] and seg["tailUuid"] == old_leaf["uuid"]
    assert summary["type"] == "user" and summary["parentUuid"] == boundary["uuid"]
    assert summary["isCompactSummary"] is True and summary["isVisibleInTranscriptOnly"] is True
    assert summary["sessionId"] == old_leaf["sessionId"]
    attachments = [e for e in new if e.get("type") == "attachment"]
    assert attachments[0]["parentUuid"] == summary["uuid"]
    assert all(a["rendered"] and a["renderedRole"] in ("user", "system") for a in attachments)
    t2 = assert_conforms(tmp_path, r, kept_ids=[b["id"] for b in t.view().messages[-3].tool_uses()])
    view = t2.view()
    assert view.messages[0].text() == summary["message"]["content"]


def test_auto_trigger_and_a_second_compaction_on_top_of_a_first(corpus_session, tmp_path, make_context):
    src = corpus_session("manual-compact")  # already compacted once by Claude Code itself
    t = read_transcript(src)
    r = run(t, make_context(EXTRACTIVE, context_window=34_000, cwd=src.parent / "workdir"))
    assert r.report.action == "applied"
    boundary = r.transcript.entry(t.n_entries)
    assert boundary["compactMetadata"]["trigger"] == "auto"
    t2 = assert_conforms(tmp_path, r)
    text = t2.view().messages[0].text()
    # the user's words since Claude Code's own compaction are in the new summary
    assert "Now add a discount parameter to Order.total" in text
    # compacting the output again with --force stacks a third boundary that still resumes cleanly
    r3 = run(t2, make_context(EXTRACTIVE, force=True, cwd=src.parent / "workdir", store_dir=tmp_path / "s3"))
    assert r3.report.action == "applied"
    assert_conforms(tmp_path, r3)


def test_deltas_are_announced_again_once(corpus_session, tmp_path, make_context):
    src = corpus_session("explore-edit")
    t = read_transcript(src)
    before = view_texts(t)
    r = run(t, make_context(EXTRACTIVE, force=True, cwd=src.parent / "workdir"))
    after = view_texts(reread(tmp_path, r.transcript))
    marker = "The following deferred tools are now available via ToolSearch"
    assert before.count(marker) == 1 and after.count(marker) == 1
    assert r.report.details["reinjected"]["deltas"] == ["deferred_tools_delta", "agent_listing_delta"]
    # keeping a tail that still holds the announcements: nothing is announced twice
    r2 = run(t, make_context(EXTRACTIVE, force=True, cwd=src.parent / "workdir", store_dir=tmp_path / "b"),
             {"keep_tail": {"min_rounds": 50, "max_tokens": 100_000}})
    assert view_texts(reread(tmp_path, r2.transcript, "b.jsonl")).count(marker) == 1


def test_plain_transcripts_get_their_deltas_back_and_the_state_file_wins(tmp_path, make_context):
    header = "The following deferred tools are now available via ToolSearch."
    lines = plain_session()
    lines[0] = {"role": "user", "content": [
        {"type": "text", "text": f"<system-reminder>\n{header} Their schemas are NOT loaded — calling them directly "
                                 "will fail with InputValidationError. Use ToolSearch with query "
                                 "\"select:<name>[,<name>...]\" to load tool schemas before calling them:\n"
                                 "WebFetch\nWebSearch\n</system-reminder>"},
        {"type": "text", "text": "Refactor the billing module"}]}
    t = read_transcript(write_lines(tmp_path / "s.jsonl", lines))
    r = run(t, make_context(EXTRACTIVE, context_window=WINDOW_ABOVE))
    assert r.report.details["reinjected"]["deltas"] == ["deferred_tools_delta"]
    last = json.loads(out_bytes(r.transcript).decode().splitlines()[-1])
    assert last["role"] == "user" and header in last["content"][0]["text"]
    assert last["content"][0]["text"].endswith("WebFetch\nWebSearch\n</system-reminder>")
    # with --state, what the harness offers now is announced instead
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"deferred_tools": ["NotebookEdit", "WebFetch"]}))
    r = run(t, make_context(EXTRACTIVE, context_window=WINDOW_ABOVE, state_file=state, store_dir=tmp_path / "b"))
    last = json.loads(out_bytes(r.transcript).decode().splitlines()[-1])
    assert last["content"][0]["text"].endswith("NotebookEdit\nWebFetch\n</system-reminder>")


# -- the summarizer over HTTP: the real SDK against a local Messages API -----------------------------
@pytest.fixture
def api():
    with MockMessagesAPI(default_text=None) as server:
        yield server


def with_api(ctx, api, **options):
    kwargs = {"base_url": api.base_url, "env": {"ANTHROPIC_API_KEY": "sk-ant-test"}, "sleep": lambda s: None,
              "rng": random.Random(0), "max_retries": 2, **options}
    ctx.summarizer_factory = lambda policy, c: AnthropicSummarizer("claude-test", **kwargs)
    return ctx


def big_session(tmp_path):
    return read_transcript(write_lines(tmp_path / "s.jsonl", plain_session()))


def assert_unchanged(result, t):
    assert result.transcript is t


@pytest.mark.parametrize("failure", ["rate_limited", "overloaded", "timeout"])
def test_transient_failures_are_retried_then_the_summary_is_used(failure, tmp_path, make_context, api):
    t = big_session(tmp_path)
    ctx = with_api(make_context(EXTRACTIVE, context_window=WINDOW_ABOVE), api, timeout_seconds=0.5)
    if failure == "rate_limited":
        api.reply_rate_limited(retry_after=1)
    elif failure == "overloaded":
        api.reply_overloaded()
    else:
        api.reply_delayed(3.0)
    api.reply_text(MODEL_SUMMARY)
    r = run(t, ctx)
    assert r.report.action == "applied", r.report.reason
    assert len(api.message_requests) == 2
    assert r.report.details["summarizer_retries"] == 1
    text = reread(tmp_path, r.transcript).view().messages[0].text()
    assert "1. Primary Request and Intent:\n   Refactor billing." in text
    assert "scratch notes" not in text and "<summary>" not in text
    body = api.message_requests[0].body
    assert "tools" not in body  # one text-only request, no tools
    assert "nine" not in body["system"] and "<analysis>" in body["messages"][-1]["content"][-1]["text"]


def test_prompt_too_long_with_the_overflow_figure_drops_enough_old_rounds(tmp_path, make_context, api):
    t = big_session(tmp_path)
    ctx = with_api(make_context(EXTRACTIVE, context_window=WINDOW_ABOVE), api)
    counter = make_counter("rough")
    round_tokens = counter.count_messages([m.api() for m in t.view().messages[1:3]])
    api.reply_prompt_too_long(tokens=200_000 + round_tokens * 3 // 2, maximum=200_000)
    api.reply_text(MODEL_SUMMARY)
    r = run(t, ctx)
    assert r.report.action == "applied"
    assert r.report.details["ptl_retries"] == 1
    first, second = (json.dumps(q.body["messages"]) for q in api.message_requests)
    # the prompt group and two rounds cover 1.5 rounds of overflow; the rest is summarized
    assert "id=toolu_00" in first and "id=toolu_01" in first
    assert "id=toolu_00" not in second and "id=toolu_01" not in second and "id=toolu_02" in second
    assert r.report.details["dropped_rounds"] == 3
    lead = api.message_requests[1].body["messages"][0]["content"][0]["text"]
    assert lead == PTL_RETRY_MARKER


def test_prompt_too_long_without_a_figure_drops_a_fifth_of_the_rounds(tmp_path, make_context, api):
    t = read_transcript(write_lines(tmp_path / "s.jsonl", plain_session(rounds=14, size=700)))
    ctx = with_api(make_context(EXTRACTIVE, context_window=WINDOW_ABOVE), api)
    api.reply_prompt_too_long()
    api.reply_text(MODEL_SUMMARY)
    r = run(t, ctx)
    assert r.report.action == "applied"
    history = [m.api() for m in t.view().messages[:r.report.details["summarized_messages"]]]
    groups = group_by_round(history)  # the prompt, then one group per round
    assert len(groups) == 15
    assert r.report.details["dropped_rounds"] == math.floor(15 * 0.2) == 3
    first, second = (json.dumps(q.body["messages"]) for q in api.message_requests)
    assert "Refactor the billing module" in first and "Refactor the billing module" not in second
    assert "id=toolu_01" not in second and "id=toolu_02" in second


def test_prompt_too_long_gives_up_after_three_retries(tmp_path, make_context, api):
    t = big_session(tmp_path)
    ctx = with_api(make_context(EXTRACTIVE, context_window=WINDOW_ABOVE), api)
    for _ in range(4):
        api.reply_prompt_too_long(tokens=200_100, maximum=200_000)
    r = run(t, ctx)
    assert r.report.action == "failed"
    assert len(api.message_requests) == 4
    assert "after dropping" in r.report.reason
    assert_unchanged(r, t)


@pytest.mark.parametrize("reply", ["empty", "analysis-only"])
def test_a_malformed_summary_never_replaces_the_history(reply, tmp_path, make_context, api):
    t = big_session(tmp_path)
    ctx = with_api(make_context(EXTRACTIVE, context_window=WINDOW_ABOVE), api)
    if reply == "empty":
        api.reply_malformed()
    else:
        api.reply_text("<analysis>I ran out of room before the summary")
    r = run(t, ctx)
    assert r.report.action == "failed" and "malformed summary" in r.report.reason
    assert_unchanged(r, t)
    assert any(w.endswith("; autocompact changed nothing") for w in ctx.warnings)


def test_three_failures_open_the_breaker_until_force_succeeds(tmp_path, make_context, api):
    t = big_session(tmp_path)
    store = tmp_path / "store"

    def ctx_for(**inputs):
        return with_api(make_context(EXTRACTIVE, context_window=WINDOW_ABOVE, store_dir=store, **inputs), api)

    for n in range(1, 4):
        api.reply_error(400, "invalid_request_error", "messages: bad request")
        ctx = ctx_for()
        r = run(t, ctx)
        ctx.store.flush()  # what the CLI does once the (unchanged) output is written
        assert r.report.action == "failed" and r.report.details["consecutive_failures"] == n
        assert_unchanged(r, t)
    assert "now off for this session" in ctx.warnings[0]
    ctx = ctx_for()
    r = run(t, ctx)
    assert r.report.action == "breaker-open"
    assert len(api.message_requests) == 3  # no request once the breaker is open
    assert "failed 3 times in a row" in ctx.warnings[0] and "ctxkit compact --force" in ctx.warnings[0]
    assert_unchanged(r, t)
    # --force always tries; its success closes the breaker
    api.reply_text(MODEL_SUMMARY)
    ctx = ctx_for(force=True)
    r = run(t, ctx)
    ctx.store.flush()
    assert r.report.action == "applied"
    api.reply_text(MODEL_SUMMARY)
    r = run(t, ctx_for())
    assert r.report.action == "applied"


# -- re-injection --------------------------------------------------------------------------------------
def test_recent_files_are_re_read_from_disk_within_budget(tmp_path, make_context):
    files = [tmp_path / f"f{k}.py" for k in range(7)]
    for k, f in enumerate(files):
        f.write_text(f"VALUE_{k} = 'as read'\n")
    lines = plain_session(rounds=7, files=files)
    files[6].write_text("VALUE_6 = 'changed on disk since'\n")
    files[5].unlink()  # deleted since: skipped
    files[4].write_text("\n".join(words(40, f"big{i}_") for i in range(200)))  # too large to re-inject
    t = read_transcript(write_lines(tmp_path / "s.jsonl", lines))
    r = run(t, make_context(EXTRACTIVE, context_window=WINDOW_ABOVE))
    d = r.report.details["reinjected"]
    # most recent first, at most five: f6, (f5 deleted), (f4 over budget: dropped), f3, f2, f1, f0
    assert d["files"] == [str(files[k]) for k in (6, 3, 2, 1, 0)]
    assert d["files_over_budget"] == [str(files[4])]
    assert d["files_missing"] == [str(files[5])]
    text = view_texts(reread(tmp_path, r.transcript))
    assert "1\tVALUE_6 = 'changed on disk since'" in text  # as it is now, with the Read tool's line numbers
    assert f"Note: {files[4]} was read before the conversation was summarized" not in text
    assert f'Called the Read tool with the following input: {{"file_path":"{files[6]}"}}' in text


def test_skills_plan_file_and_plan_mode_are_re_injected(tmp_path, make_context):
    plan = tmp_path / "plan.md"
    plan.write_text("# Plan\n1. Split the billing module\n")
    lines = plain_session(rounds=6)
    lines[1:1] = [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_sk", "name": "Skill",
                                           "input": {"skill": "billing-style"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_sk",
                                      "content": "Launching skill: billing-style"},
                                     {"type": "text", "text": "Base directory for this skill: /skills/billing-style"
                                                              "\n\n# Billing style\nAlways use Decimal for money."}]},
    ]
    t = read_transcript(write_lines(tmp_path / "s.jsonl", lines))
    ctx = make_context(EXTRACTIVE, context_window=WINDOW_ABOVE, plan_mode=True, plan_file=str(plan))
    r = run(t, ctx)
    d = r.report.details["reinjected"]
    assert d["skills"] == ["billing-style"] and d["plan_file"] == str(plan) and d["plan_mode"] is True
    text = view_texts(reread(tmp_path, r.transcript))
    assert ("The following skills were invoked in this session. Continue to follow these guidelines:\n\n"
            "### Skill: billing-style\nPath: /skills/billing-style/SKILL.md\n\n# Billing style\n"
            "Always use Decimal for money.") in text
    assert f"A plan file exists from plan mode at: {plan}\n\nPlan contents:\n\n# Plan\n1. Split the billing" in text
    assert "Plan mode is active." in text and f"A plan file already exists at {plan}" in text


def test_nothing_is_appended_after_a_turn_waiting_for_tool_results(tmp_path, make_context):
    f = tmp_path / "a.py"
    f.write_text("A = 1\n")
    lines = plain_session(rounds=6, files=[f])[:-1]
    lines.append({"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_live", "name": "Bash",
                                                    "input": {"command": "pytest"}}]})
    t = read_transcript(write_lines(tmp_path / "s.jsonl", lines))
    r = run(t, make_context(EXTRACTIVE, context_window=WINDOW_ABOVE))
    assert r.report.action == "applied"
    view = reread(tmp_path, r.transcript).view()
    assert view.messages[-1].role == "assistant" and [b["id"] for b in view.messages[-1].tool_uses()] == ["toolu_live"]
    assert "waits for tool results" in r.report.details["reinjected"]["skipped"]


# -- the corpus: every session compacts with a small window ---------------------------------------------
CORPUS = [p / "session.jsonl" for p in cc_sessions()] + public_transcripts()


@pytest.mark.skipif(not CORPUS, reason="shared corpus not found")
@pytest.mark.parametrize("path", CORPUS, ids=lambda p: f"{p.parent.name}/{p.name[:12]}")
def test_corpus_sessions_compact_with_a_small_window(path, tmp_path, make_context):
    t = read_transcript(path)
    view = t.view()
    tokens = make_counter("rough").count_messages(view.api_messages())
    window = 33_000 + tokens * 3 // 4  # threshold at three quarters of the session
    workdir = path.parent / "workdir"
    ctx = make_context(EXTRACTIVE, context_window=window, cwd=workdir if workdir.is_dir() else tmp_path)
    r = run(t, ctx)
    if r.report.action == "nothing-to-do":  # a tiny session (spotter/short: 275 tokens) gains nothing from it
        assert (r.report.reason == "nothing new since the last compaction"
                or r.report.reason.endswith("would not be smaller than the "
                                            f"{r.report.details['tokens']:,} tokens it replaces; left as it is"))
        return
    assert r.report.action == "applied", r.report.reason
    t2 = assert_conforms(tmp_path, r)
    summary = t2.view().messages[0].content[0]["text"]
    summarized = view.messages[:r.report.details["summarized_messages"]]
    # the summary quotes every message the user wrote and names every file that was edited
    for m in summarized:
        if m.kind == "prompt" and m.role == "user":
            for b in m.content:
                if b.get("type") == "text" and b["text"].strip() and not b["text"].lstrip().startswith(
                        ("<", "[Request interrupted by user")):  # harness notices are not the user's words
                    assert b["text"].strip()[:300] in summary
        for b in m.tool_uses() if m.role == "assistant" else ():
            if b.get("name") in ("Edit", "Write", "MultiEdit") and (b.get("input") or {}).get("file_path"):
                assert b["input"]["file_path"] in summary
    # idempotent: once under the threshold, compacting the output again changes nothing
    if r.report.details["post_tokens"] < r.report.details["threshold"]:
        again = run(t2, make_context(EXTRACTIVE, context_window=window, store_dir=tmp_path / "again"))
        assert again.report.action == "nothing-to-do"


def test_a_compaction_that_would_not_shrink_the_view_is_not_made(tmp_path, make_context):
    """/compact on a few short messages: the summary would be longer than what it replaces."""
    src = write_lines(tmp_path / "s.jsonl", [{"role": "user", "content": "hi"},
                                             {"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
                                             {"role": "user", "content": "bye"}])
    t = read_transcript(src)
    r = run(t, make_context(EXTRACTIVE, force=True))
    assert r.report.action == "nothing-to-do" and r.transcript is t
    assert "would not be smaller than" in r.report.reason
