"""simulate carries each read of a Codex rollout or Gemini CLI recording forward to the next read of the
grown file (ctxkit/transcript/carried.py): the read resumes from the previous one's line index and the
view goes on from the previous projection. At every line of sessions that roll back, compact, answer a
call after it was answered "aborted", upsert, rewind and replace their messages, the carried view is
the one a fresh read of the same bytes projects; a policy's steps likewise; and simulate's rows are the
same bytes as with every view projected afresh."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from codex_rollouts import call, line, message, opening, output, turn
from gemini_sessions import gemini, metadata, tool_call, user

from ctxkit import load_policy
from ctxkit.reports import replay
from ctxkit.reports.pricing import load_pricing
from ctxkit.reports.simulate import session_json, simulate_session
from ctxkit.tokens import make_counter
from ctxkit.tokens.session import session_policy
from ctxkit.transcript import carried, read_transcript


def _codex_lines() -> list[bytes]:
    """A rollout that rolls turns back, compacts (with and without a replacement history), leaves a call
    unanswered until a later line answers it, and holds a record type this ctxkit does not know."""
    lines = opening()
    for k in range(14):  # (from the 7th turn on: past the lines detection reads, after which reads resume)
        lines += turn(k, f"task {k}", [(f"c{k}", f"cat f{k}", f"x{k} " * 50)], f"done {k}", usage=(4000 + 500 * k, 90),
                      second=k * 5)
        if k == 7:  # a call answered "aborted" by the next message, its output written after that
            lines += [line("response_item", call("late", "sleep 9")),
                      line("response_item", message("user", "go on")),
                      line("response_item", output("late", "slept"))]
        if k == 8:
            lines += [line("response_item", message("user", "undo that")),
                      line("event_msg", {"type": "thread_rolled_back", "num_turns": 2}),
                      line("world_model_v9", {"note": "a record type from a newer Codex"})]
        if k == 10:
            lines.append(line("compacted", {"message": "summary", "replacement_history": [
                message("user", "task 0"), message("user", "SUMMARY: the tasks so far")]}))
        if k == 12:
            lines.append(line("compacted", {"message": "an older Codex's summary"}))
    return [x.encode() + b"\n" for x in lines]


def _gemini_lines() -> list[bytes]:
    records = [metadata()]
    for k in range(24):  # (more lines than detection reads: a read of fewer is not resumed from)
        call_k = tool_call(f"t{k}", "read_file", {"path": f"f{k}"}, f"x{k} " * 50)
        records += [user(f"u{k}", f"task {k}"), gemini(f"g{k}", "", [call_k]),
                    gemini(f"g{k}", f"done {k}", [call_k], tokens=4000 + 500 * k)]  # the same record, put again
        if k == 4:
            records.append({"$rewindTo": "u3"})
        if k == 6:
            records.append({"$set": {"lastUpdated": "2026-03-01T10:05:00.000Z"}})
        if k == 7:
            records.append({"$set": {"messages": [user("s1", "the question"), gemini("s2", "the answer")]}})
        if k == 8:
            records.append({"$frobnicate": {"from": "a newer Gemini CLI"}})
    return [json.dumps(r).encode() + b"\n" for r in records]


def _rewrites(data: bytes) -> bool:
    return any(k in data for k in (b'"compacted"', b'"thread_rolled_back"', b'"$rewindTo"', b'"messages"'))


@pytest.mark.parametrize("lines", [_codex_lines(), _gemini_lines()], ids=["codex", "gemini"])
def test_at_every_line_the_carried_view_is_a_fresh_projection(lines, tmp_path):
    growing, previous, carried_views = replay.GrowingRead(tmp_path / "grown.jsonl"), None, 0
    for n in range(1, len(lines) + 1):
        t = growing.add(lines[n - 1:n])
        view = t.view()
        (tmp_path / "fresh.jsonl").write_bytes(b"".join(lines[:n]))
        fresh = read_transcript(str(tmp_path / "fresh.jsonl"), on_bad_line="skip")
        assert t.format == fresh.format
        assert view == fresh.view(), f"after line {n}"
        if t.info.resumed:
            assert t.info.resumed == (n - 1, sum(map(len, lines[:n - 1])))  # only the new line was read
        if previous is not None and previous.messages and view.messages \
                and view.messages[0] is previous.messages[0]:
            carried_views += 1  # (the same message objects: gone on from the earlier view)
        previous = view
    # every read after the format was settled resumed, and all but the few that rewrote the history (and the
    # late output of the rollout) carried the view on
    assert carried_views >= len(lines) - 50 - sum(map(_rewrites, lines)) - 1


def test_a_policy_step_carries_the_previous_output_s_view(tmp_path, monkeypatch):
    """Each step reads the previous step's output (compacted by the policy, its tool results budgeted)
    plus the new lines: its view is the one a fresh read of the step's file gives."""
    lines = _codex_lines()
    for k in range(14, 40):  # long enough for the policy's own compactions
        lines += [x.encode() + b"\n" for x in turn(k, f"task {k}", [(f"c{k}", f"cat f{k}", f"y{k} " * 3000)],
                                                   f"done {k}", usage=(4000 + 9000 * k, 90), second=k * 5)]
    path = tmp_path / "rollout.jsonl"
    path.write_bytes(b"".join(lines))
    read = []
    original = replay.read_transcript
    monkeypatch.setattr(replay, "read_transcript", lambda *a, **k: read.append(original(*a, **k)) or read[-1])
    pol = session_policy(load_policy(None, [], cwd=tmp_path), read_transcript(str(path)))
    run = replay.PolicyReplay(pol, tmp_path, context_window=None, cwd=tmp_path, transcript_path=str(path),
                              counter=make_counter(pol.estimator, model=pol.model))
    cuts = [i + 1 for i, x in enumerate(lines) if b'"task_complete"' in x]
    done, compacted, resumed = 0, 0, 0
    for cut in cuts:
        step = run.step(lines[done:cut], None)
        done = cut
        t = read[-1]
        resumed += t.info.resumed is not None
        compacted += any(r.use == "autocompact" and r.action == "applied" for r in step.result.reports)
        assert t.view() == read_transcript(t.source.name, on_bad_line="skip").view()
    run.finish()
    assert compacted >= 1 and resumed >= len(cuts) - 5


@pytest.mark.parametrize("lines", [_codex_lines(), _gemini_lines()], ids=["codex", "gemini"])
def test_simulate_gives_the_same_rows_with_every_view_projected_afresh(lines, tmp_path, monkeypatch):
    path = tmp_path / "session.jsonl"
    path.write_bytes(b"".join(lines))
    policies = [("default", load_policy(None, [], cwd=tmp_path))]

    def rows() -> str:
        return json.dumps(session_json(simulate_session(str(path), policies, load_pricing(), cwd=tmp_path)))

    taken = []
    original = carried.take
    monkeypatch.setattr(carried, "take", lambda t, kind: taken.append(original(t, kind)) or taken[-1])
    with_carried = rows()
    assert any(x is not None for x in taken)
    monkeypatch.setattr(carried, "take", lambda t, kind: None)
    assert with_carried == rows()


def _document_lines(tmp_path: Path, fmt: str) -> list[bytes]:
    """The lines simulate's steps read of a Cline history, an OpenCode export or a Cursor transcript: one
    message a line, as the read lays the document out."""
    path = tmp_path / f"{fmt}.json"
    if fmt == "cline":
        import cline_tasks
        msgs = [cline_tasks.task("fix the bug")]
        for k in range(40):
            msgs += [cline_tasks.native_call(f"c{k}", "read_file", {"path": f"f{k}"}),
                     cline_tasks.native_result(f"c{k}", f"x{k} " * 40)]
        cline_tasks.write(path, msgs)
    elif fmt == "opencode":
        import opencode_sessions as oc
        msgs = []
        for k in range(40):
            n = 2 * k + 1
            msgs += [oc.user(n, f"read f{k}"), oc.assistant(n + 1, n, "", [oc.tool(n + 1, 0, "read", {"filePath": f"f{k}"},
                                                                                  f"x{k} " * 40)], tokens=2_000 + k)]
        oc.write(path, msgs)
    else:
        import test_cursor
        test_cursor.write(path, [m for k in range(40) for m in (test_cursor.user(f"task {k}"),
                                                                  test_cursor.assistant("Let me look.", ("Read", {"path": f"f{k}"})))])
    t = read_transcript(str(path))
    return [t.raw_line(i)[0] + b"\n" for i in range(t.n_lines)]


@pytest.mark.parametrize("fmt", ["cline", "opencode", "cursor"])
def test_a_document_agent_s_lines_are_read_once_and_viewed_as_a_fresh_read_does(fmt, tmp_path):
    lines = _document_lines(tmp_path, fmt)
    growing, resumed = replay.GrowingRead(tmp_path / "grown.jsonl"), 0
    for n in range(1, len(lines) + 1):
        t = growing.add(lines[n - 1:n])
        (tmp_path / "fresh.jsonl").write_bytes(b"".join(lines[:n]))
        fresh = read_transcript(str(tmp_path / "fresh.jsonl"), on_bad_line="skip")
        assert (t.format, t.view()) == (fresh.format, fresh.view()), f"after line {n}"
        resumed += t.info.resumed == (n - 1, sum(map(len, lines[:n - 1])))
    assert t.format == fmt and resumed == len(lines) - 50  # every read once detection had its 50 lines
