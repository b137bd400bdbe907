"""Retention: what a compaction kept of the history it replaced, reported per compaction; and
autocompact's ``min_retention``, which rejects a model summary that dropped the user's prompts."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from builders import Call, Turn, conversation, write
from helpers import breaker_failures
from mock_messages_api import MockMessagesAPI

from ctxkit.cli.main import app
from ctxkit.pipeline import compile_pipeline
from ctxkit.summarize import AnthropicSummarizer
from ctxkit.summarize.retention import identifiers, measure, probes
from ctxkit.transcript import read_transcript

pytestmark = pytest.mark.usefixtures("no_overhead")  # sized against small windows, before counts had an overhead

WINDOW = "40000"  # autocompact threshold 7,000 tokens: the session below is over it
#: that threshold from a summary reserve and buffer a compaction fits under (compact refuses a window it cannot fit)
FITS = ["--set", "thresholds.summary_reserve=3000", "--set", "thresholds.autocompact_buffer=30000"]
NOW = "2026-11-30T12:00:00Z"
#: A model summary in the right shape that names none of the user's prompts and none of the files.
FORGETFUL_SUMMARY = ("<analysis>draft</analysis>\n<summary>\n1. Primary Request and Intent:\n   The user wants "
                     "some work done on the code.\n</summary>")
PROMPTS = ["Rename parse_args to parse_options in cli.py", "Then fix the bug in Order.total (issue 4711)",
           "Finally run the test suite"]


def user(text):
    return {"role": "user", "content": text}


def call(tid, name, inp):
    return {"role": "assistant", "content": [{"type": "tool_use", "id": tid, "name": name, "input": inp}]}


def result(tid, text, is_error=False):
    block = {"type": "tool_result", "tool_use_id": tid, "content": text}
    return {"role": "user", "content": [block | ({"is_error": True} if is_error else {})]}


# -- the probes and the measure -------------------------------------------------------------------------
HISTORY = [
    user("Fix   the failing test in\ntests/test_models.py, see `Order.total` and issue 4711"),
    call("t1", "Read", {"file_path": "/repo/app/models.py"}),
    result("t1", "class Order:\n    def total(self): raise ValueError('never an error line: a Read')"),
    call("t2", "Bash", {"command": "python -m pytest -q\n  tests/test_models.py"}),
    result("t2", "collected 3 items\nE   AssertionError: assert 41 == 42\n1 failed, 2 passed", is_error=True),
    call("t3", "Edit", {"file_path": "/repo/app/models.py", "old_string": "a", "new_string": "b"}),
    result("t3", "ok"),
    call("t4", "Grep", {"pattern": "total", "path": "/repo/tests"}),
    result("t4", "tests/test_models.py:3"),
    user("<system-reminder>not typed by the user</system-reminder>Now commit it"),
]


def test_probes_are_taken_from_prompts_tool_calls_and_error_output():
    assert probes(HISTORY) == {
        "user_prompts": ["Fix the failing test in tests/test_models.py, see `Order.total` and issue 4711",
                         "Now commit it"],
        "file_paths": ["/repo/app/models.py", "/repo/tests"],
        "commands": ["python -m pytest -q tests/test_models.py"],
        "errors": ["E AssertionError: assert 41 == 42", "1 failed, 2 passed"],
        "identifiers": ["Order.total", "test_models.py", "4711"],
    }


def test_the_fractions_count_what_the_view_after_still_holds():
    after = [user("Summary: the user asked to FIX THE FAILING TEST in tests/test_models.py, see `Order.total` "
                  "and issue 4711. Read /repo/app/models.py. Ran `python -m pytest -q   tests/test_models.py`: "
                  "E AssertionError: assert 41 == 42"),
             {"role": "assistant", "content": "Order.totals is next"}]
    r = measure(HISTORY, after)
    assert r.fractions() == {"user_prompts": 0.5, "file_paths": 0.5, "commands": 1.0, "errors": 0.5,
                             "identifiers": 1.0}
    assert r.counts()["errors"] == {"kept": 1, "total": 2}
    assert r.short() == "retained prompts 1/2, paths 1/2, commands 1/1, errors 1/2, identifiers 3/3"


def test_a_kind_the_history_did_not_have_is_null_and_left_out_of_the_line():
    r = measure([user("hello there")], [user("something else")])
    assert r.fractions() == {"user_prompts": 0.0, "file_paths": None, "commands": None, "errors": None,
                             "identifiers": None}
    assert r.short() == "retained prompts 0/1"
    assert measure([], []).short() == "nothing to retain"


def test_identifiers_are_whole_words_and_plain_words_are_not_identifiers():
    assert identifiers("Refactor the billing module, e.g. getUser and x_y; utf8 at 3 or 25 ms") == \
        ["getUser", "x_y", "utf8", "25"]
    r = measure([user("look at getUser")], [user("getUserName was renamed")])
    assert r.fractions()["identifiers"] == 0.0


# -- every compaction reports it ------------------------------------------------------------------------------
def session_file(path: Path) -> Path:
    """A Claude Code session over the 7,000-token threshold: three prompts, each reading files."""
    turns = [Turn(prompt, rounds=[[Call("Read", {"file_path": f"/work/src/mod{k}_{r}.py"},
                                        " ".join(f"line{k}_{r}_{i}" for i in range(1_200)))] for r in range(2)],
                  answer=f"Done with step {k}.")
             for k, prompt in enumerate(PROMPTS)]
    return write(path, conversation(turns))


def compact_json(runner, *args):
    result = runner.invoke(app, ["compact", "s.jsonl", "-o", "out.jsonl", "--context-window", WINDOW, *FITS, "--now", NOW,
                                 "--report", "json", *args])
    return result, json.loads(result.stderr[result.stderr.index("{"):])


def test_compact_report_json_gives_the_retention_of_the_compaction(runner):
    session_file(Path("s.jsonl"))
    result, report = compact_json(runner, "--set", "summarizer.use=extractive")
    assert result.exit_code == 0, result.stderr
    auto = next(s for s in report["stages"] if s["id"] == "autocompact")
    assert auto["action"] == "applied"
    assert auto["details"]["retention"] == {"user_prompts": 1.0, "file_paths": 1.0, "commands": None,
                                            "errors": None, "identifiers": 1.0}
    assert auto["details"]["retention_counts"]["file_paths"] == {"kept": 6, "total": 6}


def test_the_report_line_says_what_was_retained(runner):
    session_file(Path("s.jsonl"))
    result = runner.invoke(app, ["compact", "s.jsonl", "-o", "out.jsonl", "--context-window", WINDOW, *FITS, "--now", NOW,
                                 "--set", "summarizer.use=extractive"])
    line = next(x for x in result.stderr.splitlines() if x.startswith("autocompact:"))
    assert re.fullmatch(r"autocompact: applied: auto compaction \(summary by extractive\): [\d,]+ -> [\d,]+ tokens, "
                        r"17 messages summarized, 1 kept; retained prompts 3/3, paths 6/6, identifiers 5/5 "
                        r"\[[\d,]+ -> [\d,]+ tokens\]", line), line


# -- min_retention: the real SDK against a local Messages API ---------------------------------------------
@pytest.fixture
def api():
    with MockMessagesAPI(default_text=None) as server:
        yield server


def test_min_retention_rejects_a_summary_that_drops_the_prompts_and_falls_back_to_extractive(
        runner, api, monkeypatch):
    session_file(Path("s.jsonl"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
    api.reply_text(FORGETFUL_SUMMARY)
    result, report = compact_json(runner, "--set", "summarizer.use=anthropic",
                                  "--set", "stages.autocompact.options.min_retention=0.8")

    assert result.exit_code == 0, result.stderr
    assert len(api.requests) == 1  # the model was asked once; the fallback needs no model
    auto = next(s for s in report["stages"] if s["id"] == "autocompact")
    why = ("the anthropic summary was rejected: it kept 0 of 3 user prompts and 0 of 6 file paths "
           "(min_retention 0.8)")
    assert auto["reason"].startswith(f"auto compaction (summary by extractive; {why}): ")
    assert auto["details"]["summarizer"] == "extractive"
    assert auto["details"]["rejected_summary"] == {
        "summarizer": "anthropic", "min_retention": 0.8, "below": ["user_prompts", "file_paths"],
        "retention": {"user_prompts": 0.0, "file_paths": 0.0, "commands": None, "errors": None,
                      "identifiers": 0.0},
        "retention_counts": {"user_prompts": {"kept": 0, "total": 3}, "file_paths": {"kept": 0, "total": 6},
                             "commands": {"kept": 0, "total": 0}, "errors": {"kept": 0, "total": 0},
                             "identifiers": {"kept": 0, "total": 5}},
        "why": why}
    assert auto["details"]["retention"]["user_prompts"] == 1.0  # the extractive summary quotes them
    assert report["warnings"] == [f"autocompact: {why}; the extractive summary is used instead "
                                  "(1 of 3 failures in a row)"]
    assert breaker_failures() == [1]  # counted by the circuit breaker like any summarizer failure
    entries = [json.loads(x) for x in Path("out.jsonl").read_text().splitlines()]
    summary = next(e for e in entries if e.get("isCompactSummary"))["message"]["content"]
    assert all(p in summary for p in PROMPTS)
    record = next(e for e in entries if e.get("record") == "compaction")
    assert (record["summarizer"], record["rejectedSummarizer"]) == ("extractive", "anthropic")


def test_without_min_retention_the_same_summary_is_used(runner, api, monkeypatch):
    session_file(Path("s.jsonl"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
    api.reply_text(FORGETFUL_SUMMARY)
    result, report = compact_json(runner, "--set", "summarizer.use=anthropic")
    auto = next(s for s in report["stages"] if s["id"] == "autocompact")
    assert result.exit_code == 0, result.stderr
    assert auto["details"]["summarizer"] == "anthropic" and "rejected_summary" not in auto["details"]
    assert auto["details"]["retention"]["user_prompts"] == 0.0
    assert breaker_failures() == []


def test_a_summary_that_keeps_the_prompts_and_files_passes_and_closes_the_breaker(tmp_path, make_context, api):
    t = read_transcript(session_file(tmp_path / "s.jsonl"))
    good = ("<summary>\n1. Primary Request and Intent:\n" + "\n".join(PROMPTS) + "\n3. Files and Code Sections:\n"
            + "\n".join(f"/work/src/mod{k}_{r}.py" for k in range(3) for r in range(2)) + "\n</summary>")
    api.reply_text(good)
    doc = {"summarizer": {"use": "anthropic"}, "stages": [{"id": "autocompact", "options": {"min_retention": 1}}]}
    ctx = make_context(doc, context_window=int(WINDOW))
    ctx.summarizer_factory = lambda policy, c: AnthropicSummarizer(
        "claude-test", base_url=api.base_url, env={"ANTHROPIC_API_KEY": "k"}, sleep=lambda s: None, max_retries=0)
    report = compile_pipeline(ctx.policy).run(t, ctx).reports[0]
    assert report.details["summarizer"] == "anthropic" and "rejected_summary" not in report.details
    assert report.reason.endswith("; retained prompts 3/3, paths 6/6, identifiers 5/5")


def test_collapse_reports_what_the_view_still_names_of_the_calls_it_folded(tmp_path, make_context):
    from ctxkit.stages.collapse.stage import Collapse

    turn = Turn("Where is the handler?", rounds=[
        [Call("Grep", {"pattern": "def handler", "path": "/work/src"}, "src/app.py:3")],
        [Call("Read", {"file_path": "/work/src/app.py"}, "\n".join(f"line {i}" for i in range(400)))],
        [Call("Bash", {"command": "ls /work/src"}, "app.py\nutil.py")]], answer="It is in src/app.py.")
    t = read_transcript(write(tmp_path / "t.jsonl", conversation([turn, Turn("Thanks")])))
    report = Collapse("collapse", {"llm": False}).run(t, make_context(force=True)).report
    assert report.action == "applied"
    counts = report.details["retention_counts"]
    assert (counts["file_paths"]["total"], counts["commands"]["total"], counts["user_prompts"]["total"]) == (2, 1, 0)
    assert report.details["retention"]["user_prompts"] is None
    assert report.reason == ("collapsed 1 run(s) of read/search calls (rule summaries); retained paths 2/2, "
                             "commands 1/1")  # the rule summary names each file and quotes each command


def test_rejections_in_a_row_open_the_circuit_breaker(tmp_path, make_context, api):
    t = read_transcript(session_file(tmp_path / "s.jsonl"))
    doc = {"summarizer": {"use": "anthropic"},
           "stages": [{"id": "autocompact", "options": {"min_retention": 0.5, "max_consecutive_failures": 2}}]}
    reports = []
    for _ in range(3):
        api.reply_text(FORGETFUL_SUMMARY)
        ctx = make_context(doc, context_window=int(WINDOW), store_dir=tmp_path / "store")
        ctx.summarizer_factory = lambda policy, c: AnthropicSummarizer(
            "claude-test", base_url=api.base_url, env={"ANTHROPIC_API_KEY": "k"}, sleep=lambda s: None,
            max_retries=0)
        reports.append(compile_pipeline(ctx.policy).run(t, ctx).reports[0])
        ctx.store.flush()  # as the CLI does after each run
    assert [r.action for r in reports] == ["applied", "applied", "breaker-open"]
    assert [r.details.get("consecutive_failures") for r in reports] == [1, 2, 2]
    assert reports[2].reason == "circuit breaker open after 2 failures"
    assert len(api.requests) == 2  # the open breaker asks the model no more
