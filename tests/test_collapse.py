"""collapse: which calls form a run, the thresholds, the read-time projection on Claude Code
transcripts, materialized summaries on plain ones, LLM summaries, and undoing it."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders import Call, Turn, load, written
from conftest import needs_corpus

from ctxkit.errors import LLMError
from ctxkit.stages.collapse.rules import is_search_command, rule_summary, run_headline
from ctxkit.stages.collapse.stage import Collapse, uncollapse
from ctxkit.transcript import pairing_problems, read_transcript
from ctxkit.transcript.collapse_view import SUMMARY_HEAD
from ctxkit.transcript.edits import restore_archived

OUT = "".join(f"src/app.py:{i}: def handler_{i}(request):\n" for i in range(60))
SEARCH = [Turn("find the handler", [[Call("Grep", {"pattern": "def handler", "path": "/w"}, OUT)],
                                    [Call("Read", {"file_path": "/w/src/app.py"}, OUT),
                                     Call("Glob", {"pattern": "**/*.py"}, "src/app.py\nsrc/db.py")]],
                  "It is in src/app.py."),
          Turn("now fix it", [[Call("Read", {"file_path": "/w/src/db.py"}, OUT)],
                              [Call("Edit", {"file_path": "/w/src/app.py"}, "ok")]], "Fixed.")]
FORCE = {"force": True}


def _summaries(t) -> list[str]:
    return [b["text"] for m in t.view().messages for b in m.content
            if b.get("type") == "text" and b["text"].startswith(SUMMARY_HEAD)]


def _reread(tmp_path: Path, t, name="out.jsonl"):
    p = tmp_path / name
    p.write_bytes(written(t))
    return read_transcript(p)


@pytest.mark.parametrize("command,search", [
    ("ls -la /work", True), ("grep -rn 'def ' src | head -20", True), ("find . -name '*.py'", True),
    ("git log --oneline -5", True), ("cd /w && rg handler", True), ("cat a.py 2>/dev/null", True),
    ("pytest -q", False), ("echo hi > out.txt", False), ("sed -i s/a/b/ f", False), ("find . -delete", False),
    ("git commit -m x", False), ("rm -rf build", False), ("ls $(pwd)", False), ("", False),
])
def test_search_only_shell_commands(command, search):
    assert is_search_command(command) is search


def test_rule_summary_counts_calls_by_kind():
    calls = [{"id": "a", "name": "Grep", "input": {"pattern": "x"}}, {"id": "b", "name": "Glob", "input": {"pattern": "*"}},
             {"id": "c", "name": "Read", "input": {"file_path": "/w/a.py"}},
             {"id": "d", "name": "Bash", "input": {"command": "ls /w"}}]
    assert run_headline(calls) == "Searched 2 patterns, read 1 file, listed 1 directory"
    text = rule_summary(calls, {"c": {"content": "1\n2\n3"}, "d": {"content": "x", "is_error": True}})
    assert text == ("[Earlier tool calls, collapsed: Searched 2 patterns, read 1 file, listed 1 directory]\n"
                    "- Grep 'x' (no output)\n- Glob '*' (no output)\n- Read /w/a.py (3 lines)\n"
                    "- Bash ls /w (1 line, error)")


def test_runs_end_at_text_state_changing_tools_and_new_prompts(tmp_path, make_context):
    t = load(tmp_path, SEARCH)
    staged = Collapse("collapse", {}).staged_runs(t.view(), make_context())
    msgs = t.view().messages
    assert [(s, e) for s, e in staged] == [(1, 5), (7, 9)]
    assert [b["name"] for s, e in staged for m in msgs[s:e] for b in m.tool_uses()] == ["Grep", "Read", "Glob", "Read"]


def test_a_run_still_open_at_the_end_is_left_alone(tmp_path, make_context):
    t = load(tmp_path, [Turn("look", [[Call("Read", {"file_path": "/w/a"}, OUT)]], None)])
    assert Collapse("collapse", {}).staged_runs(t.view(), make_context()) == []
    out = Collapse("collapse", {}).run(t, make_context(**FORCE))
    assert out.report.action == "nothing-to-do" and out.report.reason == "no finished run of read/search calls " \
                                                                         "to collapse"


def test_no_collapsible_calls_means_an_empty_staging(tmp_path, make_context):
    t = load(tmp_path, [Turn("edit", [[Call("Edit", {"file_path": "x"}, "ok")], [Call("Bash", {"command": "make"},
                                                                                        OUT)]])])
    assert Collapse("collapse", {}).staged_runs(t.view(), make_context()) == []


def test_mcp_tools_declared_in_the_policy_collapse(tmp_path, make_context):
    t = load(tmp_path, [Turn("docs", [[Call("mcp__docs__search", {"query": "auth"}, OUT)]])])
    assert Collapse("collapse", {}).staged_runs(t.view(), make_context()) == []
    ctx = make_context({"tools": {"collapsible": ["Read", "mcp__*__search"]}})
    assert Collapse("collapse", {}).staged_runs(t.view(), ctx) == [(1, 3)]


# -- thresholds -------------------------------------------------------------------------------------
def test_below_the_commit_ratio_nothing_happens(tmp_path, make_context):
    t = load(tmp_path, SEARCH)
    out = Collapse("collapse", {}).run(t, make_context())
    assert out.transcript is t and out.report.action == "nothing-to-do"
    assert out.report.reason.endswith("below the commit threshold 162,000")
    assert out.report.details["staged"] == 2


def test_at_the_commit_ratio_every_staged_run_is_committed(tmp_path, make_context):
    t = load(tmp_path, SEARCH)
    tokens = make_context().tokens.count_messages(t.view().api_messages())
    # effective window = context_window - min(max_output_tokens, 20,000); commit at 90% of it
    ctx = make_context({"context_window": int(tokens / 0.9) + 1_000, "max_output_tokens": 1_000})
    out = Collapse("collapse", {}).run(t, ctx)
    assert out.report.action == "applied" and len(_summaries(out.transcript)) == 2
    assert out.report.details["threshold_crossed"]


def test_proactive_autocompact_keeps_collapse_passive(tmp_path, make_context):
    t = load(tmp_path, SEARCH)
    out = Collapse("collapse", {}).run(t, make_context({"proactive": "autocompact"}, **FORCE))
    assert out.transcript is t and out.report.action == "skipped"
    assert out.report.reason.startswith("proactive: autocompact")


# -- Claude Code: records and the projection --------------------------------------------------------
def test_claude_code_runs_are_projected_not_rewritten(tmp_path, make_context):
    t = load(tmp_path, SEARCH)
    out = Collapse("collapse", {}).run(t, make_context(**FORCE))
    view = out.transcript.view()
    assert pairing_problems(view.api_messages()) == []
    # each run became text in the user message before it: prompt+summary, answer, prompt+summary, edit, result, answer
    assert [m.role for m in view.messages] == ["user", "assistant", "user", "assistant", "user", "assistant"]
    assert view.api_messages()[0] == {"role": "user", "content": [
        {"type": "text", "text": "find the handler"},
        {"type": "text", "text": "[Earlier tool calls, collapsed: Searched 2 patterns, read 1 file]\n"
                                 "- Grep 'def handler' in /w (60 lines)\n- Read /w/src/app.py (60 lines)\n"
                                 "- Glob '**/*.py' (2 lines)"}]}
    assert view.api_messages()[1] == {"role": "assistant", "content": [{"type": "text",
                                                                        "text": "It is in src/app.py."}]}
    # the original lines are all still there, byte for byte; a record was appended
    assert written(out.transcript).startswith(written(t))
    record = json.loads(written(out.transcript).splitlines()[-1])
    assert record["record"] == "collapse" and [r["by"] for r in record["runs"]] == ["rule", "rule"]
    # the projection replays the record when the file is read again
    assert _reread(tmp_path, out.transcript).view().api_messages() == view.api_messages()
    # and expand (dropping the records) shows every call again
    assert uncollapse(out.transcript, None).view().api_messages() == t.view().api_messages()


def test_a_run_that_no_longer_matches_is_shown_in_full(tmp_path, make_context):
    t = load(tmp_path, SEARCH)
    out = _reread(tmp_path, Collapse("collapse", {}).run(t, make_context(**FORCE)).transcript)
    lines = written(out).splitlines()
    record = json.loads(lines[-1])
    record["runs"][0]["toolUseIds"].append("toolu_unknown")
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(b"\n".join(lines[:-1] + [json.dumps(record).encode()]) + b"\n")
    view = read_transcript(broken).view()
    assert len([1 for m in view.messages for b in m.content if b.get("text", "").startswith(SUMMARY_HEAD)]) == 1
    assert any("no longer matches the view" in n for n in view.notes)


def test_thinking_after_a_collapsed_run_is_dropped(tmp_path, make_context):
    turns = [Turn(x.prompt, x.rounds, x.answer, thinking=True) for x in SEARCH]
    t = load(tmp_path, turns)
    ctx = make_context(**FORCE)
    out = Collapse("collapse", {}).run(t, ctx)
    assert not any(b["type"] == "thinking" for m in out.transcript.view().messages for b in m.content)
    ctx.store.flush()
    back = uncollapse(restore_archived(_reread(tmp_path, out.transcript), ctx.store), ctx.store)
    assert back.view().api_messages() == t.view().api_messages()


# -- plain formats ------------------------------------------------------------------------------------
def test_plain_runs_are_replaced_by_a_summary_line_and_archived(tmp_path, make_context):
    t = load(tmp_path, SEARCH, fmt="anthropic")
    ctx = make_context(**FORCE)
    out = Collapse("collapse", {}).run(t, ctx)
    lines = [json.loads(x) for x in written(out.transcript).splitlines()]
    assert len(lines) == 10 - 4 + 2  # two runs of two messages each -> one line each
    summary = lines[1]["content"][0]["text"]
    archive = out.report.details["archives"][0]
    assert summary.startswith("[Earlier tool calls, collapsed: Searched 2 patterns, read 1 file]\n- Grep")
    assert summary.endswith(f"\nOriginal calls and results: {archive}")
    saved = json.loads(Path(archive).read_text())
    assert [x["line"] for x in saved["lines"]] == [2, 3, 4, 5]
    assert pairing_problems(out.transcript.view().api_messages()) == []
    assert uncollapse(out.transcript, ctx.store).view().api_messages() == t.view().api_messages()


# -- LLM summaries ----------------------------------------------------------------------------------------
class FakeSummarizer:
    name = "fake"

    def __init__(self, fail=False):
        self.fail = fail
        self.prompts = []

    def complete(self, messages, *, system, max_tokens):
        self.prompts.append(messages[0]["content"])
        if self.fail:
            raise LLMError("boom")
        return "The handler lives in src/app.py (handler_0..59)."

    def summarize(self, messages, *, instructions=None):  # pragma: no cover - not used by collapse
        return ""


def _llm_context(make_context, summarizer, tokens, **inputs):
    ctx = make_context({"context_window": int(tokens / 0.95) + 10, "max_output_tokens": 10}, **inputs)
    ctx.summarizer_factory = lambda policy, c: summarizer
    return ctx


def test_above_the_llm_ratio_the_summarizer_writes_the_summaries(tmp_path, make_context):
    t = load(tmp_path, SEARCH)
    tokens = make_context().tokens.count_messages(t.view().api_messages())
    fake = FakeSummarizer()
    out = Collapse("collapse", {}).run(t, _llm_context(make_context, fake, tokens))
    assert _summaries(out.transcript)[0] == ("[Earlier tool calls, collapsed: Searched 2 patterns, read 1 file]\n"
                                             "The handler lives in src/app.py (handler_0..59).")
    assert "[Tool call Grep" in fake.prompts[0] and "src/app.py:0: def handler_0" in fake.prompts[0]
    assert {r["by"] for r in out.report.details["committed"]} == {"llm"}


def test_rule_summaries_committed_earlier_are_rewritten_above_the_llm_ratio(tmp_path, make_context):
    t = load(tmp_path, SEARCH)
    first = _reread(tmp_path, Collapse("collapse", {}).run(t, make_context(**FORCE)).transcript)
    tokens = make_context().tokens.count_messages(first.view().api_messages())
    out = Collapse("collapse", {}).run(first, _llm_context(make_context, FakeSummarizer(), tokens))
    assert len(out.report.details["upgraded"]) == 2
    assert all(s.endswith("The handler lives in src/app.py (handler_0..59).") for s in _summaries(out.transcript))
    assert pairing_problems(out.transcript.view().api_messages()) == []


def test_without_a_model_or_when_it_fails_the_rule_summary_stands(tmp_path, make_context):
    t = load(tmp_path, SEARCH)
    tokens = make_context().tokens.count_messages(t.view().api_messages())
    ctx = make_context({"context_window": int(tokens / 0.95) + 10, "max_output_tokens": 10,
                        "summarizer": {"use": "extractive"}})
    out = Collapse("collapse", {}).run(t, ctx)
    assert out.report.reason.endswith("; the summarizer has no model (use: extractive); rule-based summaries stand")
    failing = Collapse("collapse", {}).run(t, _llm_context(make_context, FakeSummarizer(fail=True), tokens))
    assert failing.report.warnings == ["the summarizer failed for 2 run(s); their rule-based summaries stand"]
    assert all("\n- " in s for s in _summaries(failing.transcript))


# -- genuine sessions ----------------------------------------------------------------------------------
@needs_corpus
def test_collapse_a_recorded_session(corpus_session, tmp_path, make_context):
    t = read_transcript(corpus_session("multi-prompt"))
    ctx = make_context({"summarizer": {"use": "extractive"}}, **FORCE)
    out = Collapse("collapse", {}).run(t, ctx)
    assert len(out.report.details["committed"]) == 12
    view = out.transcript.view()
    assert pairing_problems(view.api_messages()) == []
    assert ctx.tokens.count_messages(view.api_messages()) < ctx.tokens.count_messages(t.view().api_messages())
    assert "[Earlier tool calls, collapsed: Searched 1 pattern, read 1 file]\n- Read " in _summaries(out.transcript)[0]
    assert _reread(tmp_path, out.transcript).view().api_messages() == view.api_messages()
    assert uncollapse(out.transcript, ctx.store).view().api_messages() == t.view().api_messages()
