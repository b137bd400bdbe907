"""A compaction with the offline summarizer quotes a long pasted prompt whole when it still frees room.

Held-out sessions lost the end of a 39,247-character workflow and an 11,092-character plan to the
cut: the agent after the compaction read the first pages of the user's request. autocompact asks
for every typed prompt whole first, and writes the summary again with the prompts cut only when the
whole quotes leave the context too big (ctxkit.stages.autocompact.whole_prompts).
"""
from __future__ import annotations

import json
from pathlib import Path

import codex_rollouts as codex
from builders import Session
from mock_messages_api import MockMessagesAPI

from ctxkit.cli.main import app
from ctxkit.stages.autocompact.whole_prompts import longest_to_cut
from ctxkit.transcript import read_transcript

NOW = "2026-11-29T23:30:00Z"


def plan(steps: int) -> str:
    """A plan of ``steps`` steps (76 characters each), its last step the one a cut loses."""
    return "".join(f"Step {k}: move checkpoint {k} into the repository and note why in CHANGES.md.\n"
                   for k in range(steps))


SPEC = plan(420)  # about 32,000 characters


def spec_session(tmp_path: Path, reads: int, spec: str = SPEC) -> Path:
    """The spec pasted as the first prompt, then ``reads`` file reads of 3,000 characters each."""
    s = Session(tmp_path)
    s.prompt("Implement the following plan:\n" + spec)
    for k in range(reads):
        s.tool("Read", {"file_path": f"/w/m{k}.py"}, "".join(f"def f{k}_{j}(): return {j}\n" for j in range(150)))
    s.say("Started on the plan.")
    s.prompt("go on")
    s.say("Going on.")
    path = tmp_path / "s.jsonl"
    s.write(path)
    return path


def compact(runner, path: Path, *args: str) -> tuple[int, dict, str]:
    """compact offline with --report json: the exit code, autocompact's report, the output's view as text."""
    out = path.with_name("out.jsonl")
    r = runner.invoke(app, ["compact", str(path), "--now", NOW, "-o", str(out), "--report", "json",
                            "--set", "overhead_tokens=0", *args])
    report = json.loads(r.stderr[r.stderr.index("{"):])
    stage = next(s for s in report["stages"] if s["use"] == "autocompact")
    text = "\n".join(b.get("text", "") for m in read_transcript(out).view().messages for b in m.content
                     if b.get("type") == "text")
    return r.exit_code, stage, text


def test_a_forced_compaction_quotes_a_pasted_plan_whole(runner, tmp_path):
    code, stage, text = compact(runner, spec_session(tmp_path, reads=40), "--force")
    assert code == 0 and stage["action"] == "applied", stage["reason"]
    assert stage["details"]["post_tokens"] < stage["details"]["tokens"]
    assert SPEC in text  # every step, the last one included
    assert stage["details"]["prompts_quoted"] == "whole"


def test_a_compaction_that_would_not_shrink_enough_cuts_the_paste(runner, tmp_path):
    """A session made of the paste: quoted whole, a forced compaction would not be smaller. It is made,
    with the paste cut; the user's other prompt stays whole."""
    code, stage, text = compact(runner, spec_session(tmp_path, reads=0), "--force")
    assert code == 0 and stage["action"] == "applied", stage["reason"]
    assert stage["details"]["prompts_quoted"] == "cut" and SPEC not in text and SPEC[:9000] in text
    assert "more characters omitted]" in text and stage["details"]["post_tokens"] < stage["details"]["tokens"]


def test_only_the_longest_pastes_are_cut_when_that_is_enough(runner, tmp_path):
    """Four logs of 6,000 characters and one of 120,000: quoted whole, the summary would not be smaller than
    the session. Cutting the longest frees enough; the four others stay whole, and the report says so."""
    s = Session(tmp_path)
    logs = ["\n".join(f"ERROR {k}-{j}: worker {j * 7 % 13} lost lease {k * 31 + j}" for j in range(n))
            for k, n in enumerate((170, 175, 180, 185, 3400))]
    for k, log in enumerate(logs):
        s.prompt(f"Log {k}, please look:\n" + log)
        s.say(f"Looked at log {k}.")
    path = tmp_path / "s.jsonl"
    s.write(path)
    code, stage, text = compact(runner, path, "--force")
    assert code == 0 and stage["action"] == "applied", stage["reason"]
    assert stage["details"]["prompts_quoted"] == "partly" and stage["details"]["prompts_cut"] == 1
    assert all(log in text for log in logs[:4]) and logs[4] not in text and logs[4][:5000] in text
    assert "the longest typed prompt cut, the others quoted whole" in stage["reason"]


def test_a_session_made_of_its_prompts_keeps_them_all_whole(runner, tmp_path):
    """A session driven by another program (held-out claude-mem observer sessions): its prompts, pastes of
    6,000 to 8,500 characters, are most of the history. Section 1 quoting the first and the latest again took
    the summary past what it replaced, and the longest was cut; opened there and quoted once in section 6,
    every prompt stays whole and the compaction still frees room."""
    s = Session(tmp_path)
    pastes = ["\n".join(f"<observed tool='Edit' n='{k}-{j}'>changed line {j * 11 % 97} of part{k}.js</observed>"
                        for j in range(n)) for k, n in enumerate((90, 110, 120, 100))]
    for k, paste in enumerate(pastes):
        s.prompt(paste)
        s.say(f"<observation>part{k}.js: {k + 3} lines changed, the loop guarded against an empty list; "
              + "the caller now passes the queue it drained. " * 50 + "</observation>")
    path = tmp_path / "s.jsonl"
    s.write(path)
    code, stage, text = compact(runner, path, "--force")
    assert code == 0 and stage["action"] == "applied", stage["reason"]
    assert stage["details"]["prompts_quoted"] == "whole", stage["reason"]
    assert all(paste in text for paste in pastes)
    assert stage["details"]["post_tokens"] < stage["details"]["tokens"]


def test_the_longest_to_cut_are_counted_once_each_and_ties_are_cut_together():
    """Which prompts to cut is worked out counting each once, the part its cut leaves out, and no further
    than enough is freed (with the ``anthropic`` estimator each count is a request); prompts of one length
    are cut together, and a single long prompt cannot be cut alone."""
    counted: list[str] = []

    def count(text: str) -> int:
        counted.append(text)
        return len(text) // 4

    prompts = ["a" * 9000, "b" * 9000, "c" * 5000, "d" * 4000, "e" * 3000]
    assert longest_to_cut(prompts, 2000, 2000, count) == 5000  # the two of 9,000 cut, together
    assert counted == ["a" * 7000, "b" * 7000]
    assert longest_to_cut(prompts, 2000, 3200, count) == 4000  # and the one of 5,000 as well
    assert longest_to_cut(prompts[:1], 2000, 10, count) is None  # the only one: every long prompt cut


def test_an_automatic_compaction_leaves_room_to_work(runner, tmp_path):
    """Over the threshold of a small window, the whole paste would leave the context over half of the
    threshold, and the next turns would compact again: an automatic compaction cuts it; /compact
    (--force) on the same session keeps it whole."""
    spec = plan(2200)  # about 170,000 characters: quoted whole, most of what a compaction leaves
    path = spec_session(tmp_path, reads=300, spec=spec)
    _, forced, _ = compact(runner, path, "--force")
    window = forced["details"]["tokens"] + 33_000 - 1_000  # a threshold 1,000 tokens under the session
    code, stage, text = compact(runner, path, "--context-window", str(window))
    assert code == 0 and stage["reason"].startswith("auto compaction"), stage["reason"]
    assert forced["details"]["post_tokens"] > stage["details"]["threshold"] // 2  # the whole quote: too big
    assert stage["details"]["prompts_quoted"] == "cut" and spec not in text
    assert stage["details"]["post_tokens"] < stage["details"]["threshold"] // 2
    code, forced, text = compact(runner, path, "--context-window", str(window), "--force")
    assert forced["details"]["prompts_quoted"] == "whole" and spec in text


def outside_session(tmp_path: Path, reads: int) -> tuple[Path, Path]:
    """:func:`spec_session` in ``tmp_path/proj`` with a read of a file beside that folder, not in it
    (re-injection skips it, with a warning); the session and the file."""
    (tmp_path / "proj").mkdir()
    outside = tmp_path / "notes.py"
    outside.write_text("print('notes')\n")
    s = Session(tmp_path / "proj")
    s.prompt("Implement the following plan:\n" + SPEC)
    s.read(outside, "print('notes')\n")
    for k in range(reads):
        s.tool("Read", {"file_path": f"/w/m{k}.py"}, "".join(f"def f{k}_{j}(): return {j}\n" for j in range(150)))
    s.say("Started on the plan.")
    s.prompt("go on")
    s.say("Going on.")
    path = tmp_path / "proj" / "s.jsonl"
    s.write(path)
    return path, outside


def compact_report(runner, path: Path, *args: str) -> tuple[int, dict, str]:
    """compact --force offline with --report json: the exit code, the whole report, stderr."""
    r = runner.invoke(app, ["compact", str(path), "--force", "--now", NOW, "-o", str(path.with_name("out.jsonl")),
                            "--report", "json", "--set", "overhead_tokens=0", *args])
    return r.exit_code, json.loads(r.stderr[r.stderr.index("{"):]), r.stderr


def test_a_summary_written_again_with_the_paste_cut_warns_once(runner, tmp_path):
    """The compaction with the paste whole is thrown away and written again cut: the re-injection's
    warning about a file it skipped is the kept compaction's, said once, not once per attempt."""
    path, outside = outside_session(tmp_path, reads=0)
    code, report, stderr = compact_report(runner, path)
    stage = next(s for s in report["stages"] if s["use"] == "autocompact")
    assert code == 0 and stage["details"]["prompts_quoted"] == "cut", stage["reason"]
    skipped = [w for w in report["warnings"] if "re-injection skipped" in w]
    assert skipped == [f"compact: re-injection skipped 1 file outside the session's folder: {outside}"]
    assert stderr.count("re-injection skipped") == 1


def test_the_fallback_after_a_rejected_model_summary_quotes_the_paste_whole_and_warns_once(
        runner, tmp_path, monkeypatch):
    """min_retention rejects a model summary that lost the prompts; the extractive one written instead
    quotes the pasted plan whole (it still shrinks the context), and the skipped file is said once."""
    path, outside = outside_session(tmp_path, reads=40)
    with MockMessagesAPI(default_text=None) as api:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
        api.reply_text("<summary>\n1. Primary Request and Intent:\n   The user wants a plan done.\n</summary>")
        code, report, stderr = compact_report(runner, path, "--set", "summarizer.use=anthropic",
                                              "--set", "stages.autocompact.options.min_retention=0.8")
    stage = next(s for s in report["stages"] if s["use"] == "autocompact")
    assert code == 0 and stage["details"]["rejected_summary"]["summarizer"] == "anthropic", stage["reason"]
    assert stage["details"]["summarizer"] == "extractive" and stage["details"]["prompts_quoted"] == "whole"
    summary = next(json.loads(x) for x in path.with_name("out.jsonl").read_text().splitlines()
                   if json.loads(x).get("isCompactSummary"))["message"]["content"]
    assert SPEC in summary
    assert stderr.count("re-injection skipped") == 1, stderr


def test_a_compaction_not_made_says_nothing_of_how_it_quoted(runner, tmp_path):
    """A paste and little else: even cut, the summary is not smaller than what it would replace, and
    nothing is compacted; the report does not say the prompts were cut (nothing was quoted)."""
    s = Session(tmp_path)
    s.prompt("Implement the following plan:\n" + plan(160))  # about 12,000 characters: past the 10,000 cut
    s.say("Started on the plan.")
    s.prompt("go on")
    s.say("Going on.")
    path = tmp_path / "s.jsonl"
    s.write(path)
    code, stage, _ = compact(runner, path, "--force")
    assert code == 0 and stage["action"] == "nothing-to-do", stage["reason"]
    assert stage["reason"].startswith("a compacted context") and "prompts_quoted" not in stage["details"]


def test_a_codex_session_quotes_its_prompts_cut_at_two_thousand_characters(runner, tmp_path):
    """What docs/summarizer.md says: whole quotes need the transcript's own list of typed prompts (Claude
    Code's); a Codex rollout's prompts are read off the summarized messages and cut at 2,000 characters."""
    spec = plan(150)  # about 11,400 characters
    lines = [*codex.opening(), *codex.turn(1, "Implement the following plan:\n" + spec,
                                           [(f"c{k}", f"cat m{k}.py", "x = 1\n" * 400) for k in range(20)],
                                           "Started."), *codex.turn(2, "go on", [], "Going on.", second=30)]
    path = tmp_path / "rollout.jsonl"
    codex.write(path, lines)
    code, stage, _ = compact(runner, path, "--force")
    assert code == 0 and stage["action"] == "applied", stage["reason"]
    assert "prompts_quoted" not in stage["details"]
    compacted = next(json.loads(x) for x in path.with_name("out.jsonl").read_text().splitlines()
                     if json.loads(x)["type"] == "compacted")
    summary = compacted["payload"]["message"]
    omitted = len("Implement the following plan:\n" + spec) - 2000
    assert spec[:1900] in summary and spec not in summary and f"{omitted:,} more characters omitted" in summary


def test_the_text_report_says_how_the_typed_prompts_were_quoted(runner, tmp_path):
    """The line a user reads says why a /compact freed less than it could (the paste kept whole), or
    that the paste was cut to make room; a session with no long prompt says neither."""
    lines = {}
    for name, reads in (("whole", 40), ("cut", 0)):
        folder = tmp_path / name
        folder.mkdir()
        path = spec_session(folder, reads=reads)
        r = runner.invoke(app, ["compact", str(path), "--force", "--now", NOW, "-o", str(folder / "out.jsonl"),
                                "--set", "overhead_tokens=0"])
        assert r.exit_code == 0, r.stderr
        lines[name] = next(x for x in r.stderr.splitlines() if x.startswith("autocompact: applied"))
    assert "every typed prompt quoted whole" in lines["whole"] and "cut" not in lines["whole"]
    assert "long typed prompts cut (quoted whole, the context would not have shrunk enough)" in lines["cut"]
    short = spec_session(tmp_path, reads=40, spec=plan(20))  # 1,500 characters: under any cut
    r = runner.invoke(app, ["compact", str(short), "--force", "--now", NOW, "-o", str(tmp_path / "o.jsonl")])
    line = next(x for x in r.stderr.splitlines() if x.startswith("autocompact: applied"))
    assert "quoted whole" not in line and "prompts cut" not in line
