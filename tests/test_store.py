"""The store: decisions scoped per session (transcripts of one folder reuse tool ids), older ledgers,
concurrent runs sharing a store, dry runs that write nothing, and ``ctxkit expand`` on what it finds."""
from __future__ import annotations

import json
import multiprocessing
import sys

import orjson
import pytest

from ctxkit.cli.main import app
from ctxkit.stages.microcompact import PLACEHOLDER, Microcompact
from ctxkit.stages.registry import undo_steps
from ctxkit.stages.tool_result_budget import ToolResultBudget
from ctxkit.store.disk import Store, StoreError
from ctxkit.store.expand import AMBIGUOUS, FILE_GONE, NO_RECORD, expand, expand_all
from ctxkit.store.offload import decision_scope, store_original, to_openai_content
from ctxkit.transcript import read_transcript

BIG_A = "A" * 60_000


def _write(path, lines):
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def _plain(path, task: str, result, tid: str = "call_0", tool: str = "Bash"):
    """A plain Anthropic transcript: one tool call and its result."""
    return _write(path, [
        {"role": "user", "content": [{"type": "text", "text": task}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": tid, "name": tool, "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid, "content": result}]},
        {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
    ])


def _lines(path):
    return [json.loads(x) for x in path.read_text().splitlines()]


def _result(t, tid="call_0"):
    return next(b["content"] for m in t.view().messages for b in m.content
                if b.get("type") == "tool_result" and b.get("tool_use_id") == tid)


def invoke(runner, args):
    return runner.invoke(app, args)


# -- bug: decisions of one transcript leaked into another sharing the folder ----------------------
def test_transcripts_sharing_a_folder_and_tool_ids_keep_their_own_decisions(runner, tmp_path):
    a = _plain(tmp_path / "a.jsonl", "task a", BIG_A)
    b = _plain(tmp_path / "b.jsonl", "task b", "short b")
    r = invoke(runner, ["compact", str(a), "-o", str(tmp_path / "a.out")])
    assert r.exit_code == 0, r.stderr
    r = invoke(runner, ["compact", str(b), "-o", str(tmp_path / "b.out")])
    assert r.exit_code == 0, r.stderr
    assert "replayed 1" not in r.stderr
    assert _lines(tmp_path / "b.out") == _lines(b)  # b's short result, not a's preview
    r = invoke(runner, ["expand", str(tmp_path / "b.out"), "-o", str(tmp_path / "b.back")])
    assert r.exit_code == 0, r.stderr
    assert _lines(tmp_path / "b.back") == _lines(b)
    r = invoke(runner, ["expand", str(tmp_path / "a.out"), "-o", str(tmp_path / "a.back")])
    assert r.exit_code == 0, r.stderr
    assert _lines(tmp_path / "a.back") == _lines(a)
    ledger = json.loads((tmp_path / ".ctxkit" / "ledger.json").read_text())
    assert ledger["format"] == 2 and set(ledger) == {"format", "sessions"}
    ta, tb = read_transcript(a), read_transcript(b)
    assert ledger["sessions"][decision_scope(ta)]["call_0"]["state"] == "replaced"
    assert ledger["sessions"][decision_scope(tb)]["call_0"] ["state"] == "seen"


def test_the_scope_of_a_claude_code_transcript_is_its_first_session_id(tmp_path):
    entry = {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s-1", "timestamp": "2026-01-01T00:00:00Z",
             "message": {"role": "user", "content": "hi"}}
    later = {**entry, "uuid": "u2", "parentUuid": "u1", "sessionId": "s-2"}  # resumed under a new id
    t = read_transcript(_write(tmp_path / "cc.jsonl", [entry, later]))
    assert t.format == "claude-code" and decision_scope(t) == "s-1"


def test_a_plain_transcript_whose_first_line_changed_is_restored_from_its_earlier_scope(tmp_path, make_context):
    t = read_transcript(_plain(tmp_path / "t.jsonl", "task", BIG_A))
    ctx = make_context()
    out = ToolResultBudget("budget", {}).run(t, ctx)
    ctx.store.flush()
    lines = [out.transcript.entry(i) for i in out.transcript.live_indexes()]
    lines[0] = {"role": "user", "content": [{"type": "text", "text": "a summary now opens the conversation"}]}
    moved = read_transcript(_write(tmp_path / "moved.jsonl", lines))
    assert decision_scope(moved) != decision_scope(t)
    back, report = expand(moved, Store(ctx.store.root))
    assert report.restored == ["call_0"] and report.missing == []
    assert _result(back) == BIG_A


def test_records_of_other_scopes_with_different_originals_are_ambiguous(tmp_path):
    store = Store(tmp_path / "store")
    for scope, original in (("s-a", "a" * 100), ("s-b", "b" * 100)):
        blob, kind = store_original(store, original)
        store.record_decision("call_0", {"state": "cleared", "replacement": PLACEHOLDER, "blob": blob,
                                         "original": kind, "by": "mc"}, scope=scope)
    store.flush()
    t = read_transcript(_plain(tmp_path / "t.jsonl", "a third task", PLACEHOLDER))
    back, report = expand(t, Store(store.root))
    assert report.restored == [] and report.missing == [("call_0", AMBIGUOUS)]
    assert _result(back) == PLACEHOLDER  # no guess
    # one other scope (or several with the same original) is no ambiguity
    blob, kind = store_original(store, "a" * 100)
    store.record_decision("call_0", {"state": "cleared", "replacement": PLACEHOLDER, "blob": blob,
                                     "original": kind, "by": "mc"}, scope="s-b")
    store.flush()
    back, report = expand(t, Store(store.root))
    assert report.restored == ["call_0"] and _result(back) == "a" * 100


def test_a_result_persisted_then_cleared_under_another_scope_is_restored_in_full(tmp_path, make_context):
    t = read_transcript(_plain(tmp_path / "t.jsonl", "task", BIG_A, tool="Read"))
    ctx = make_context(force=True)
    persisted = ToolResultBudget("budget", {"exempt_tools": []}).run(t, ctx).transcript
    lines = [persisted.entry(i) for i in persisted.live_indexes()]
    lines[0] = {"role": "user", "content": [{"type": "text", "text": "new first line"}]}
    moved = read_transcript(_write(tmp_path / "moved.jsonl", lines))
    cleared = Microcompact("mc", {"keep_recent": 0}).run(moved, ctx).transcript
    assert _result(cleared) == PLACEHOLDER
    ctx.store.flush()
    back, report = expand(cleared, Store(ctx.store.root))
    assert report.restored == ["call_0"] and _result(back) == BIG_A


# -- ledgers written before scopes ----------------------------------------------------------------
def test_an_unscoped_ledger_is_read_by_expand_only_on_an_exact_match(tmp_path, make_context):
    store_dir = tmp_path / "store"
    old = Store(store_dir)
    blob, kind = store_original(old, BIG_A)
    replacement = "<persisted-output>\nsaved elsewhere\n</persisted-output>"
    (store_dir / "ledger.json").write_bytes(orjson.dumps({"call_0": {
        "state": "replaced", "replacement": replacement, "blob": blob, "original": kind, "by": "budget"}}))
    # the same id with other content: untouched
    other = read_transcript(_plain(tmp_path / "b.jsonl", "task b", "short b"))
    back, report = expand(other, Store(store_dir))
    assert report.restored == [] and _result(back) == "short b"
    # the exact replacement: restored
    mine = read_transcript(_plain(tmp_path / "a.jsonl", "task a", replacement))
    back, report = expand(mine, Store(store_dir))
    assert report.restored == ["call_0"] and _result(back) == BIG_A
    # a stage never replays an unscoped record; a flush keeps it for expand
    ctx = make_context(store_dir=store_dir)
    out = ToolResultBudget("budget", {}).run(other, ctx)
    assert out.report.details["replayed"] == [] and _result(out.transcript) == "short b"
    ctx.store.flush()
    ledger = json.loads((store_dir / "ledger.json").read_text())
    assert ledger["unscoped"]["call_0"]["replacement"] == replacement
    assert ledger["sessions"][decision_scope(other)]["call_0"] ["state"] == "seen"


# -- concurrent runs ------------------------------------------------------------------------------
ROUNDS = 40


def _flush_many(root: str, worker: str) -> None:
    for i in range(ROUNDS):
        store = Store(root)
        store.record_decision(f"{worker}-{i}", {"state": "seen"}, scope=f"scope-{i % 3}")
        store.update_session_state(f"{worker}-{i}", n=i)
        store.flush()


@pytest.mark.skipif(sys.platform == "win32", reason="the store's lock is POSIX flock")
def test_concurrent_flushes_keep_every_decision(tmp_path):
    root = tmp_path / "store"
    mp = multiprocessing.get_context("spawn")
    workers = [mp.Process(target=_flush_many, args=(str(root), f"w{k}")) for k in range(2)]
    for p in workers:
        p.start()
    for p in workers:
        p.join(120)
        assert p.exitcode == 0
    store = Store(root)
    found = {tid for records in store.sessions.values() for tid in records}
    expected = {f"w{k}-{i}" for k in range(2) for i in range(ROUNDS)}
    assert found == expected
    assert set(store.state) == expected
    assert not list(root.glob("*.tmp")) and not list(root.glob(".*.tmp"))


def test_a_flush_applies_only_what_this_run_changed(tmp_path):
    root = tmp_path / "store"
    first, second = Store(root), Store(root)
    assert first.decision("t", scope="s") is None and second.decision("u", scope="s") is None  # both loaded
    first.record_decision("t", {"state": "seen"}, scope="s")
    first.update_session_state("a", x=1)
    first.flush()
    second.record_decision("u", {"state": "seen"}, scope="s")
    second.update_session_state("b", y=2)
    second.flush()
    again = Store(root)
    assert again.decision("t", scope="s") == again.decision("u", scope="s") == {"state": "seen"}
    assert again.state == {"a": {"x": 1}, "b": {"y": 2}}


# -- dry runs write nothing -----------------------------------------------------------------------
def test_a_damaged_ledger_is_an_error_naming_it_and_is_never_moved_or_reset(tmp_path):
    root = tmp_path / "store"
    root.mkdir()
    (root / "ledger.json").write_text("{not json")
    for dry_run in (True, False):
        store = Store(root, dry_run=dry_run)
        with pytest.raises(StoreError) as exc:
            store.decision("t", scope="s")
        assert exc.value.path == str(root / "ledger.json")
        assert "not JSON" in exc.value.message
    assert sorted(p.name for p in root.iterdir()) == ["ledger.json"]
    assert (root / "ledger.json").read_text() == "{not json"


def test_stats_writes_nothing_with_a_damaged_ledger_and_names_it(runner, tmp_path):
    t = _plain(tmp_path / "t.jsonl", "task", BIG_A)
    root = tmp_path / ".ctxkit"
    root.mkdir()
    (root / "ledger.json").write_text("{not json")
    r = invoke(runner, ["stats", str(t), "--policy", "no-llm"])
    assert r.exit_code == 2, r.stderr
    assert r.stderr.startswith(f"ctxkit: error: store file {root / 'ledger.json'}: not JSON (")
    assert sorted(p.name for p in root.iterdir()) == ["ledger.json"]


# -- ctxkit expand: what it could not restore -----------------------------------------------------
def test_expand_with_a_missing_store_warns_and_exits_1_on_unrestored_placeholders(runner, tmp_path):
    t = _plain(tmp_path / "t.jsonl", "task", PLACEHOLDER)
    nowhere = tmp_path / "nowhere"
    r = invoke(runner, ["expand", str(t), "--store", str(nowhere), "-o", str(tmp_path / "back.jsonl")])
    assert r.exit_code == 1
    assert r.stderr == (
        f"ctxkit: warning: store folder {nowhere} does not exist (--store names the folder compact used)\n"
        "restored 0 tool output(s)\n"
        f"ctxkit: warning: 1 tool output(s) could not be restored (store {nowhere}): 1 placeholder with no record in "
        "the store [call_0]\n")
    assert f"1 tool output(s) could not be restored (store {nowhere}): 1 {NO_RECORD} [call_0]" in " ".join(
        r.stderr.split())
    assert _lines(tmp_path / "back.jsonl") == _lines(t)  # written anyway
    assert not nowhere.exists()


def test_expand_reports_a_persisted_output_whose_file_is_gone(runner, tmp_path):
    gone = f"<persisted-output>\nOutput too large (1.0KB). Full output saved to: /nowhere/ab/ab{'c' * 62}.txt\n</persisted-output>"
    t = _plain(tmp_path / "t.jsonl", "task", gone)
    r = invoke(runner, ["expand", str(t), "-o", str(tmp_path / "back.jsonl")])
    assert r.exit_code == 1
    assert FILE_GONE in r.stderr


def test_expand_exits_0_when_everything_was_restored_or_there_is_nothing_to_restore(runner, tmp_path):
    t = _plain(tmp_path / "t.jsonl", "task", "plain output")
    r = invoke(runner, ["expand", str(t), "-o", str(tmp_path / "back.jsonl")])
    assert r.exit_code == 0, r.stderr
    # no .ctxkit beside it: said, but nothing was lost
    assert r.stderr == (f"ctxkit: warning: store folder {tmp_path / '.ctxkit'} does not exist (--store names the "
                        "folder compact used)\nrestored 0 tool output(s)\n")
    r = invoke(runner, ["expand", "--help"])
    assert "exit 1 when some outputs could not be restored" in " ".join(r.stdout.split()).lower()


# -- OpenAI tool messages keep their parts --------------------------------------------------------
IMAGE_URL = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"


def _openai(path):
    lines = [{"role": "system", "content": "You are helpful."}, {"role": "user", "content": "look"}]
    for k in range(7):
        content = ([{"type": "text", "text": f"screenshot {k} of the page " * 5},
                    {"type": "image_url", "image_url": {"url": IMAGE_URL}}] if k == 0 else f"file {k} " * 20)
        lines += [{"role": "assistant", "content": None, "tool_calls": [
                      {"id": f"call_{k}", "type": "function", "function": {"name": "Read", "arguments": "{}"}}]},
                  {"role": "tool", "tool_call_id": f"call_{k}", "content": content}]
    lines.append({"role": "assistant", "content": "done"})
    return _write(path, lines)


def test_openai_tool_message_with_an_image_is_restored_exactly(runner, tmp_path):
    t = _openai(tmp_path / "t.jsonl")
    out, back = tmp_path / "out.jsonl", tmp_path / "back.jsonl"
    r = invoke(runner, ["compact", str(t), "--stage", "microcompact", "--force", "-o", str(out)])
    assert r.exit_code == 0, r.stderr
    cleared = _lines(out)[3]
    assert cleared["role"] == "tool" and cleared["content"] == PLACEHOLDER
    r = invoke(runner, ["expand", str(out), "-o", str(back)])
    assert r.exit_code == 0, r.stderr
    assert _lines(back) == _lines(t)


def test_openai_originals_from_older_ledgers_become_openai_parts():
    blocks = [{"type": "text", "text": "x"},
              {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
              {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}]
    assert to_openai_content(blocks) == [
        {"type": "text", "text": "x"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]
    parts = to_openai_content(blocks)
    assert to_openai_content(parts) == parts and to_openai_content("text") == "text"


def test_expand_all_prefers_the_scope_of_the_transcript_it_was_given(tmp_path, make_context):
    t = read_transcript(_plain(tmp_path / "t.jsonl", "task", BIG_A))
    ctx = make_context()
    out = ToolResultBudget("budget", {}).run(t, ctx)
    ctx.store.flush()
    back, report = expand_all(out.transcript, Store(ctx.store.root), undo=undo_steps())
    assert report.restored == ["call_0"] and _result(back) == BIG_A


def test_a_decision_about_another_result_with_the_same_id_is_never_replayed(tmp_path, make_context):
    """Two conversations that start alike (same first line: same scope) and reuse ``call_0``: the second
    one's result is not the first one's, so the first one's frozen replacement must not cover it."""
    from ctxkit.stages.tool_result_budget import ToolResultBudget
    from ctxkit.transcript import read_transcript

    def session(name, result):
        lines = [{"role": "user", "content": "same start"},
                 {"role": "assistant", "content": [{"type": "tool_use", "id": "call_0", "name": "Bash", "input": {}}]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_0", "content": result}]}]
        p = tmp_path / name
        p.write_text("".join(json.dumps(x) + "\n" for x in lines))
        return read_transcript(p)

    ctx = make_context(store_dir=tmp_path / "store")
    first = ToolResultBudget("b", {}).run(session("a.jsonl", "A" * 60_000), ctx)
    assert first.report.details["persisted"] == ["call_0"]
    ctx.store.flush()
    second = ToolResultBudget("b", {}).run(session("b.jsonl", "the answer in B is 42"),
                                           make_context(store_dir=tmp_path / "store"))
    assert second.report.details["replayed"] == []
    shown = [b["content"] for m in second.transcript.view().messages for b in m.content if b.get("type") == "tool_result"]
    assert shown == ["the answer in B is 42"]
