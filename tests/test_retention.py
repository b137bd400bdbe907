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


# -- redaction: retention measures against what the summarizer was allowed to see -----------------------
TOKEN = "ghp_R4nd0mT0k3nV4lu3Xy2Wq8Lk5Jh7Gf3Ds1Az9Q"


def test_a_prompt_whose_secret_was_redacted_is_retained_not_lost(runner):
    """The summary quotes the prompt with its token redacted (it must): that prompt is kept, and the
    token is no identifier the summary should have kept."""
    lines = [{"role": "user", "content": f"Push the release with the token {TOKEN} and tag it v2.1"},
             {"role": "assistant", "content": "Working on it. " + "Details of the release steps. " * 400},
             {"role": "user", "content": "Now update the changelog."},
             {"role": "assistant", "content": "Done."}]
    Path("m.json").write_text("".join(json.dumps(x) + "\n" for x in lines))
    result = runner.invoke(app, ["compact", "--force", "m.json", "-o", "c.json"])
    assert result.exit_code == 0, result.stderr
    assert TOKEN not in Path("c.json").read_text() and "token [REDACTED:github-token] and tag it" in \
        Path("c.json").read_text()
    line = next(x for x in result.stderr.splitlines() if x.startswith("autocompact:"))
    assert "retained prompts 2/2 [" in line, line


def test_probing_the_redacted_history_redacts_only_what_probes_read_with_the_same_probes(monkeypatch):
    """The summarizer's copy was redacted whole; retention redacts only the blocks probes come from
    (not every file read again), and finds the same probes, on the corpus sessions."""
    from ctxkit.summarize import retention
    from ctxkit.summarize.redact import Redactor

    views = _corpus_views()
    if not views:
        pytest.skip("shared corpus not found")
    for messages in views:
        redactor = Redactor()
        whole = redactor.messages(messages)  # what the summarizer was given
        assert retention.probes(redactor.messages(retention._probed_parts(messages))) == retention.probes(whole)
    strings: list[int] = []
    texts = Redactor.texts
    monkeypatch.setattr(Redactor, "texts", lambda self, items: strings.append(len(items)) or texts(self, items))
    history = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"w{i}"} for i in range(1000)]
    measure(history, history[500:], redactor=Redactor())
    assert strings == [500]  # the prompts; not the assistant's words


def test_retention_probes_the_history_as_redacted_only_when_redaction_is_on():
    from ctxkit.summarize.redact import Redactor

    history = [user(f"deploy with {TOKEN} now"), {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}]
    summary = [user("The user asked: deploy with [REDACTED:github-token] now")]
    assert measure(history, summary, redactor=Redactor()).kept["user_prompts"] == 1
    assert measure(history, summary, redactor=Redactor(enabled=False)).kept["user_prompts"] == 0
    assert measure(history, summary).kept["user_prompts"] == 0


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
    # (the session's files, under /work/src, are outside the folder the test runs in: re-injection skips them)
    assert [w for w in report["warnings"] if w.startswith("autocompact:")] == [
        f"autocompact: {why}; the extractive summary is used instead (1 of 3 failures in a row)"]
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


# -- linear probing: the same answers, a bounded number of scans ------------------------------------
def _measure_one_scan_per_probe(history, after):
    """What :func:`measure` answered when it looked for each probe on its own (a regex compiled and run
    over the whole view per identifier): the reference the linear search must agree with."""
    from ctxkit.summarize.retention import KINDS, Retention, _squash, view_text

    found = probes(history)
    raw = view_text(after)
    squashed = _squash(raw)
    folded = squashed.casefold()
    kept = {
        "user_prompts": sum(1 for p in found["user_prompts"] if p.casefold() in folded),
        "file_paths": sum(1 for p in found["file_paths"] if p in raw),
        "commands": sum(1 for c in found["commands"] if c in squashed),
        "errors": sum(1 for e in found["errors"] if e in squashed),
        "identifiers": sum(1 for i in found["identifiers"]
                           if re.search(r"(?<![\w$])" + re.escape(i) + r"(?![\w$])", raw)),
    }
    return Retention(total={k: len(found[k]) for k in KINDS}, kept=kept)


def _corpus_views():
    from conftest import cc_sessions, public_transcripts

    paths = [p / "session.jsonl" for p in cc_sessions()] + public_transcripts()[:4]
    return [read_transcript(p).view().api_messages() for p in paths]


def test_linear_probing_gives_what_one_scan_per_probe_gave_on_corpus_sessions(monkeypatch):
    from ctxkit.summarize import retention

    views = _corpus_views()
    if not views:
        pytest.skip("shared corpus not found")
    for messages in views:
        for cut in (len(messages) // 3, len(messages) // 2, len(messages) - 2):
            history, after = messages[:cut], messages[cut // 2:]  # the view after holds part of the history
            want = _measure_one_scan_per_probe(history, after)
            assert measure(history, after) == want
            monkeypatch.setattr(retention, "DIRECT_WORK", 0)  # the indexed search, on the same probes
            assert measure(history, after) == want
            monkeypatch.undo()


def test_whole_word_and_substring_search_agree_with_regex_and_in_on_awkward_probes():
    from ctxkit.summarize.retention import held_substrings, held_words

    text = ("call parse_args() then Order.total; $x.y and a::b->c, `--force` or -- x, 3.14 and 1,000 abc $abc "
            "parse_argsx xparse_args Order.totals foo(bar) ++ é_1 été")
    words = ["parse_args", "Order.total", "$x.y", "a::b->c", "--force", "--", "3.14", "1,000", "abc", "$abc",
             "foo(bar)", "++", "é_1", "été", "args", "total", "x.y", "b->c", "Order", "1,0", "14 and", "nope"]
    want = {w for w in words if re.search(r"(?<![\w$])" + re.escape(w) + r"(?![\w$])", text)}
    assert held_words(words, text) == want
    assert {"parse_args", "--force", "--", "été", "total"} <= want and not {"args", "x.y", "1,0", "nope"} & want
    subs = [*words, "", "e", "s x", "args() th", "t"]
    assert held_substrings(subs, text, direct_work=0) == {s for s in subs if s in text}


class CountingText(str):
    """A text that counts the whole-text searches made in it (``in``, ``find``, ``index``, ``count``)."""

    scans = 0

    def __contains__(self, item):
        CountingText.scans += 1
        return super().__contains__(item)

    def find(self, *args):
        CountingText.scans += 1
        return super().find(*args)

    def index(self, *args):
        CountingText.scans += 1
        return super().index(*args)

    def count(self, *args):
        CountingText.scans += 1
        return super().count(*args)


def test_many_probes_do_not_each_search_the_whole_view(monkeypatch):
    """30,000 one-word messages: 15,000 prompt probes and as many identifiers. The view is searched a
    bounded number of times, not once per probe (which took 45 s; 100,000 messages took 484 s)."""
    from ctxkit.summarize import retention

    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"w{i}"} for i in range(30_000)]
    history, after = messages, messages[15_000:]
    view_text, squash = retention.view_text, retention._squash
    monkeypatch.setattr(retention, "view_text", lambda msgs: CountingText(view_text(msgs)))
    monkeypatch.setattr(retention, "_squash", lambda text: CountingText(squash(text)))
    compiled = []
    real_compile = re.compile
    monkeypatch.setattr(retention.re, "compile", lambda *a, **k: compiled.append(a) or real_compile(*a, **k))
    monkeypatch.setattr(retention.re, "search", lambda *a, **k: compiled.append(a) or real_compile(a[0]).search(*a[1:]))
    CountingText.scans = 0
    kept = measure(history, after)
    assert kept.total["user_prompts"] == 15_000 and kept.total["identifiers"] == 14_995
    assert kept.kept["user_prompts"] == 8_333 and kept.kept["identifiers"] == 7_500  # "w1" is in "w15000"
    assert CountingText.scans <= 10
    assert compiled == []  # no pattern per probe

