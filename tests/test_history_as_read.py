"""Lines a stage edited and a later stage of the same run took out of the view are written as read.

Microcompact clears old results on a cold cache; when autocompact then compacts, the cleared entries
end up behind the new boundary: the model is never sent them again, so the output keeps them as the
agent wrote them (as Claude Code's own compaction leaves its history), and says so in its report.
"""
from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from builders import T0, Session, iso

from ctxkit import read_transcript
from ctxkit.cli.main import app
from ctxkit.transcript.claude_code import chain as claude_code_chain

CLEARED = "[Old tool result content cleared]"
LATER = iso(T0 + timedelta(hours=3))  # the cache is cold: microcompact clears


def _session(tmp_path: Path) -> Path:
    s = Session(tmp_path)
    s.prompt("read every part")
    for k in range(8):
        s.tool("Bash", {"command": f"cat part{k}.txt"}, f"part {k}: " + "data " * 300)
    s.say("All parts read.")
    s.write(tmp_path / "s.jsonl")
    return tmp_path / "s.jsonl"


def _compact(runner, path: Path, *extra: str, report: str = "json", out: str = "out.jsonl"):
    r = runner.invoke(app, ["compact", str(path), *extra, "--now", LATER, "--policy", "no-llm", "--report", report,
                            "-o", out])
    assert r.exit_code == 0, r.stderr
    return r


def test_results_cleared_then_compacted_stay_as_read_behind_the_boundary(runner, tmp_path):
    path = _session(tmp_path)
    r = _compact(runner, path, "--force")
    report = json.loads(r.stderr)
    stages = {s["id"]: s for s in report["stages"]}
    assert stages["microcompact"]["reason"] == "cleared 3 old tool result(s)"
    assert stages["autocompact"]["action"] == "applied"

    before = path.read_bytes().splitlines(keepends=True)
    after = (tmp_path / "out.jsonl").read_bytes().splitlines(keepends=True)
    out = read_transcript(tmp_path / "out.jsonl")
    in_view = set(claude_code_chain.active_entries(out)[0])
    rewritten = {i for i, line in enumerate(before) if after[i] != line}
    assert rewritten <= in_view  # nothing outside the view was rewritten
    results_behind = [i for i, line in enumerate(before) if i not in in_view and b'"tool_result"' in line]
    assert len(results_behind) >= 3  # the three cleared results among them
    assert CLEARED.encode() not in (tmp_path / "out.jsonl").read_bytes()
    assert report["lines_kept_as_read"] == 3


def test_the_text_report_says_how_many_lines_were_kept_as_read(runner, tmp_path):
    r = _compact(runner, _session(tmp_path), "--force", report="text")
    assert "history: 3 edited line(s) out of the view (behind a boundary, snipped) written as read\n" in r.stderr


def test_cleared_results_still_in_the_view_are_written_cleared(runner, tmp_path):
    """No compaction: what microcompact cleared is in the view, so the output carries its placeholders."""
    path = _session(tmp_path)
    r = _compact(runner, path)
    report = json.loads(r.stderr)
    stages = {s["id"]: s for s in report["stages"]}
    assert stages["microcompact"]["reason"] == "cleared 3 old tool result(s)"
    assert stages["autocompact"]["action"] == "nothing-to-do"
    assert report["lines_kept_as_read"] == 0
    assert (tmp_path / "out.jsonl").read_text().count(CLEARED) == 3


def test_expand_after_a_compaction_has_nothing_to_give_back_behind_the_boundary(runner, tmp_path):
    path = _session(tmp_path)
    _compact(runner, path, "--force")
    r = runner.invoke(app, ["expand", "out.jsonl", "-o", "expanded.jsonl"])
    assert r.exit_code == 0, r.stderr
    n = len(path.read_bytes().splitlines())
    assert (tmp_path / "expanded.jsonl").read_bytes().splitlines()[:n] == path.read_bytes().splitlines()


def test_a_callers_own_edit_behind_the_boundary_is_kept(tmp_path):
    """An edit the transcript had before the run (a redaction an embedding framework made) is not the run's
    to drop, even when a compaction puts its line behind the boundary."""
    from ctxkit import compile_pipeline, load_policy, make_context
    from ctxkit.transcript.edits import replace_blocks
    from ctxkit.transcript.view import BlockRef

    t = read_transcript(_session(tmp_path))
    i = next(i for i in t.live_indexes() if t.entry(i).get("type") == "user"
             and isinstance(t.entry(i)["message"]["content"], list))  # the first tool result
    block = t.entry(i)["message"]["content"][0]
    t = replace_blocks(t, {BlockRef(i, 0): {**block, "content": "[redacted by the caller]"}})
    policy = load_policy("no-llm")
    ctx = make_context(policy, store_dir=tmp_path / "store", now=T0 + timedelta(hours=3), force=True)
    result = compile_pipeline(policy, only=["microcompact", "autocompact"]).run(t, ctx)
    out = result.transcript
    assert i not in claude_code_chain.active_entries(out)[0]  # behind the boundary
    assert out.entry(i)["message"]["content"][0]["content"] == "[redacted by the caller]"
    assert result.lines_kept_as_read > 0  # the run's own clearings, not the caller's edit


def _store_files(store: Path) -> tuple[list[Path], dict]:
    blobs = sorted(p for p in (store / "blobs").rglob("*") if p.is_file()) if (store / "blobs").exists() else []
    ledger = json.loads((store / "ledger.json").read_text()) if (store / "ledger.json").exists() else {}
    return blobs, ledger


def _cleared_records(ledger: dict) -> list[dict]:
    return [d for records in ledger.get("sessions", {}).values() for d in records.values()
            if d.get("state") == "cleared"]


def test_the_originals_of_results_put_behind_the_boundary_are_not_stored(runner, tmp_path):
    """Nothing names them: the output keeps those lines as read. The store gets no blob and no decision
    for them, rather than a copy of every result a compaction summarized."""
    _compact(runner, _session(tmp_path), "--force", "--store", "store")
    blobs, ledger = _store_files(tmp_path / "store")
    assert _cleared_records(ledger) == []
    assert not [b for b in blobs if b.read_bytes().startswith(b"part ")]


def test_the_originals_of_results_cleared_in_the_view_are_stored_and_expand_gives_them_back(runner, tmp_path):
    path = _session(tmp_path)
    _compact(runner, path, "--store", "store")
    blobs, ledger = _store_files(tmp_path / "store")
    records = _cleared_records(ledger)
    assert len(records) == 3 and all(Path(r["blob"]).is_file() for r in records)
    r = runner.invoke(app, ["expand", "out.jsonl", "-o", "expanded.jsonl", "--store", "store"])
    assert r.exit_code == 0, r.stderr
    assert (tmp_path / "expanded.jsonl").read_bytes() == path.read_bytes()


def test_a_decision_an_earlier_run_made_stays_when_this_run_puts_its_line_behind_the_boundary(runner, tmp_path):
    """The first run clears three results and keeps them in the view; the second, on the same input,
    clears them again and compacts: the first output still needs the first run's records and blobs."""
    path = _session(tmp_path)
    _compact(runner, path, "--store", "store", out="first.jsonl")
    _, before = _store_files(tmp_path / "store")
    _compact(runner, path, "--force", "--store", "store", out="second.jsonl")
    blobs, after = _store_files(tmp_path / "store")
    assert _cleared_records(after) == _cleared_records(before) and len(_cleared_records(after)) == 3
    r = runner.invoke(app, ["expand", "first.jsonl", "-o", "expanded.jsonl", "--store", "store"])
    assert r.exit_code == 0, r.stderr
    assert (tmp_path / "expanded.jsonl").read_bytes() == path.read_bytes()


def test_held_writes_are_read_back_in_the_run_and_written_by_the_flush(tmp_path):
    """A library caller running a stage alone: the store holds the originals until it is saved, reads
    them back meanwhile, and a dropped line's decision is put back as it was."""
    from ctxkit.store.disk import Store

    store = Store(tmp_path / "store")
    store.record_decision("t1", {"state": "kept"}, scope="s")
    with store.held_for(7):
        name = store.put_blob_file(b"the original", ".txt")
        store.record_decision("t1", {"state": "cleared", "blob": name}, scope="s")
    with store.held_for(8):
        other = store.put_blob_file(b"another original", ".txt")
        store.record_decision("t2", {"state": "cleared", "blob": other}, scope="s")
    assert not Path(name).exists() and store.fetch_blob(name) == b"the original"
    store.drop_held([7])
    assert store.decision("t1", scope="s") == {"state": "kept"}
    store.flush()
    assert not Path(name).exists() and Path(other).read_bytes() == b"another original"
    ledger = json.loads((tmp_path / "store" / "ledger.json").read_text())
    assert ledger["sessions"]["s"] == {"t1": {"state": "kept"}, "t2": {"state": "cleared", "blob": other}}


def test_a_tool_id_on_two_lines_keeps_the_record_the_line_left_in_the_view_relies_on(tmp_path):
    """Tool ids may repeat in a session: a decision held for two lines gives way, when one line's edit
    is dropped, to the other's; when both are dropped, to what the ledger had before; one recorded for
    good since stands."""
    from ctxkit.store.disk import Store

    store = Store(tmp_path / "store")
    store.record_decision("t", {"state": "seen"}, scope="s")
    cleared = {"state": "cleared", "blob": "b"}
    for line in (3, 9):
        with store.held_for(line):
            store.record_decision("t", cleared, scope="s")  # the same record for the second line
    store.drop_held([3])
    assert store.decision("t", scope="s") == cleared  # line 9's placeholder still needs it
    store.drop_held([9])
    assert store.decision("t", scope="s") == {"state": "seen"}

    for line in (3, 3):
        with store.held_for(line):
            store.record_decision("u", {"state": "cleared", "n": line}, scope="s")
    store.drop_held([3])
    assert store.decision("u", scope="s") is None
    with store.held_for(4):
        store.record_decision("v", cleared, scope="s")
    store.record_decision("v", cleared, scope="s")  # recorded for good (not for a line)
    store.drop_held([4])
    assert store.decision("v", scope="s") == cleared
    store.flush()
    ledger = json.loads((tmp_path / "store" / "ledger.json").read_text())
    assert ledger["sessions"]["s"] == {"t": {"state": "seen"}, "v": cleared}


def test_a_blob_held_then_stored_for_good_no_longer_counts_against_what_may_be_held(tmp_path, monkeypatch):
    from ctxkit.store import disk

    monkeypatch.setattr(disk, "HELD_AT_MOST", 100)
    store = disk.Store(tmp_path / "store")
    with store.held_for(1):
        first = store.put_blob_file(b"x" * 80)
    store.put_blob_file(b"x" * 80)  # the same bytes, for good: written now
    assert Path(first).is_file()
    with store.held_for(2):
        second = store.put_blob_file(b"y" * 80)
    assert not Path(second).exists()  # held: the room the first took is free again
    store.drop_held([2])
    store.flush()
    assert not Path(second).exists()


def test_a_repeated_tool_id_cleared_behind_the_boundary_and_in_the_tail_still_expands(runner, tmp_path):
    """The same tool id, with the same output, early (put behind the boundary) and late (kept in the
    tail, cleared): the late placeholder's record and original stay in the store."""
    s = Session(tmp_path)
    s.prompt("read every part")
    same = "part: " + "data " * 300
    for k in range(8):
        s.tool("Bash", {"command": f"cat part{k}.txt"}, same if k in (0, 6) else f"part {k}: " + "data " * 300)
        s.say(f"read {k}: " + " ".join(f"w{k}x{j}" for j in range(1500)))
    s.prompt("thanks")
    s.say("All parts read.")
    uses = [e for e in s.entries if e["type"] == "assistant" and e["message"]["content"][0]["type"] == "tool_use"]
    results = [e for e in s.entries if e["type"] == "user" and isinstance(e["message"]["content"], list)]
    uses[6]["message"]["content"][0]["id"] = uses[0]["message"]["content"][0]["id"]
    results[6]["message"]["content"][0]["tool_use_id"] = uses[0]["message"]["content"][0]["id"]
    s.write(tmp_path / "s.jsonl")
    r = _compact(runner, tmp_path / "s.jsonl", "--force", "--store", "store",
                 "--set", "stages.microcompact.options.keep_recent=0",
                 "--set", "stages.autocompact.options.keep_tail.min_rounds=6")
    report = json.loads(r.stderr)
    assert report["lines_kept_as_read"] > 0
    assert CLEARED in (tmp_path / "out.jsonl").read_text()
    r = runner.invoke(app, ["expand", "out.jsonl", "-o", "expanded.jsonl", "--store", "store"])
    assert r.exit_code == 0, r.stderr
    before = (tmp_path / "s.jsonl").read_bytes().splitlines()
    assert (tmp_path / "expanded.jsonl").read_bytes().splitlines()[:len(before)] == before


def test_a_second_pipeline_run_before_the_flush_keeps_what_the_first_one_held(tmp_path):
    """A library caller runs two pipelines on one store and saves it once: what the first held is its
    own for good, whatever lines the second drops (held writes are keyed by line, and lines are the
    transcript's)."""
    from ctxkit import compile_pipeline, load_policy, make_context
    from ctxkit.store.expand import expand

    t = read_transcript(_session(tmp_path))
    policy = load_policy("no-llm")
    ctx = make_context(policy, store_dir=tmp_path / "store", now=T0 + timedelta(hours=3), force=True)
    first = compile_pipeline(policy, only=["microcompact"]).run(t, ctx)
    second = compile_pipeline(policy, only=["microcompact", "autocompact"]).run(t, ctx)
    assert second.lines_kept_as_read == 3
    ctx.store.flush()
    _, report = expand(first.transcript, ctx.store)
    assert len(report.restored) == 3 and not report.missing
