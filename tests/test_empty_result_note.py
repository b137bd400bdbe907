"""tool-result-budget's note for an empty tool result: only on results the model has not read yet.

Claude Code writes `(Bash completed with no output)` when it makes the result, before the model sees it
(its 2.1.328 transcripts and the requests it sent hold the note, never an empty string), and never
rewrites a result the model has answered. A note on an answered result would add tokens to a stage
that takes content out, and change the bytes of a prefix the provider's prompt cache holds.
"""
from __future__ import annotations

import json

from builders import Call, Turn, conversation, write, written

from ctxkit.cli.main import app
from ctxkit.stages.tool_result_budget import ToolResultBudget
from ctxkit.transcript import read_transcript

NOTE = "(Bash completed with no output)"
EMPTY = Call("Bash", {"command": "git status --porcelain"}, "")
LISTING = Call("Bash", {"command": "ls"}, "models.py\ntests\n")


def _results(t) -> dict[str, object]:
    return {b["tool_use_id"]: b.get("content") for m in t.view().messages for b in m.content
            if b.get("type") == "tool_result"}


def _turns(answered: bool) -> list[Turn]:
    """A session with an empty `git status` the model answered, then one more empty result: answered too
    when ``answered``, else the last line of the transcript (the model has not read it yet)."""
    return [Turn("Is the tree clean?", [[EMPTY], [LISTING]], answer="Clean; two entries."),
            Turn("And now?", [[EMPTY]], answer="Still clean." if answered else None)]


def test_an_answered_empty_result_keeps_its_bytes_and_an_unread_one_gets_the_note(tmp_path, make_context):
    for fmt in ("claude-code", "anthropic"):
        path = write(tmp_path / f"{fmt}.jsonl", conversation(_turns(answered=False), fmt))
        t = read_transcript(path)
        out = ToolResultBudget("budget", {}).run(t, make_context(store_dir=tmp_path / f"store-{fmt}"))
        before, after = list(_results(t).items()), list(_results(out.transcript).items())
        assert [c for _, c in after] == ["", "models.py\ntests\n", NOTE], fmt  # the read one as it was
        assert out.report.details["empty_notes"] == [before[2][0]]
        # the answered result's line is written back as it was read
        first = path.read_bytes().splitlines(keepends=True)
        written_lines = written(out.transcript).splitlines(keepends=True)
        answered_line = next(k for k, line in enumerate(first) if before[0][0].encode() in line
                             and b"tool_result" in line)
        assert written_lines[answered_line] == first[answered_line], fmt


def test_the_note_made_before_the_model_read_the_result_stays_once_it_has(tmp_path, make_context):
    """Frozen: the run before the model's answer notes the result; the run after, on the grown session,
    gives the same note back (the view the model read does not change under it)."""
    store = tmp_path / "store"
    unread = read_transcript(write(tmp_path / "a.jsonl", conversation(_turns(answered=False))))
    ctx = make_context(store_dir=store)
    first = ToolResultBudget("budget", {}).run(unread, ctx)
    ctx.store.flush()  # as the CLI does once the output is safely written
    grown = read_transcript(write(tmp_path / "b.jsonl", conversation(_turns(answered=True))))
    second = ToolResultBudget("budget", {}).run(grown, make_context(store_dir=store))
    assert list(_results(second.transcript).values()) == ["", "models.py\ntests\n", NOTE]
    assert second.report.details["replayed"] == first.report.details["empty_notes"]
    old = first.transcript.view().api_messages()
    assert second.transcript.view().api_messages()[:len(old)] == old


def test_compact_on_a_session_whose_only_empty_result_is_answered_changes_nothing(runner, tmp_path):
    """The only thing the budget could do is a note on a result the model has read: it leaves it, reports
    nothing to do, no stage reports more tokens after than before, and the input's lines are written as read."""
    path = write(tmp_path / "s.jsonl", conversation([Turn("Is the tree clean?", [[EMPTY]], answer="Clean.")]))
    r = runner.invoke(app, ["compact", str(path), "-o", "out.jsonl", "--store", "st", "--report", "json"])
    assert r.exit_code == 0, r.stderr
    report = json.loads(r.stderr)
    budget = next(s for s in report["stages"] if s["use"] == "tool-result-budget")
    assert (budget["action"], budget["details"]["empty_notes"]) == ("nothing-to-do", [])
    assert [s["id"] for s in report["stages"] if s["tokens_after"] > s["tokens_before"]] == []
    assert report["tokens_after"] <= report["tokens_before"]
    out = (tmp_path / "out.jsonl").read_bytes()
    assert out.startswith(path.read_bytes())  # every line as it was (the prompt cache's prefix with it) ...
    added = [json.loads(line) for line in out[len(path.read_bytes()):].splitlines()]
    assert {e["type"] for e in added} <= {"ctxkit-record"}  # ... and only ctxkit's note of where its store is
