"""snip: short ids, tagging, removing whole turns (Claude Code records and relinks, plain archives),
refusals, the snip tool, thinking after a snip, the nudge, and undoing it all."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders import Call, Turn, conversation, load, write, written
from conftest import needs_corpus

from ctxkit.errors import UsageError
from ctxkit.pipeline import compile_pipeline
from ctxkit.policy.model import Policy
from ctxkit.reports.tool_definitions import tool_definition
from ctxkit.stages.snip import NUDGE_HEAD, Snip, tags_enabled, unsnip
from ctxkit.transcript import pairing_problems, read_transcript
from ctxkit.transcript.claude_code.records import RECORD_TYPE
from ctxkit.transcript.edits import restore_archived
from ctxkit.transcript.snip_ids import message_ids, parse_ids, short_id, tag_view


def _ids_by_text(t) -> dict[str, str]:
    """prompt text -> its short id."""
    view = t.view()
    return {view.messages[where[0]].text(): sid for sid, where in message_ids(view).items()}


def _texts(t) -> list[str]:
    return [m.text() for m in t.view().messages if m.role == "user" and m.kind == "prompt"]


def _entries(t) -> list[dict]:
    return [t.entry(i) for i in t.live_indexes()]


def _reread(tmp_path: Path, t, name="out.jsonl"):
    p = tmp_path / name
    p.write_bytes(written(t))
    return read_transcript(p)


FOUR_TURNS = [Turn("first task", [[Call("Read", {"file_path": "/w/a.py"}, "a = 1\n" * 50)]], "Read it."),
              Turn("a detour", [[Call("Grep", {"pattern": "x"}, "hit\n" * 80), Call("Bash", {"command": "ls"}, "a.py")]],
                   "Nothing there."),
              Turn("another detour", [[Call("Read", {"file_path": "/w/b.py"}, "b = 2\n" * 40)]], "Fine."),
              Turn("current work", [[Call("Edit", {"file_path": "/w/a.py"}, "ok")]], "Edited.")]


# -- ids ---------------------------------------------------------------------------------------------
def test_short_id_is_base36_of_the_first_ten_hex_digits():
    # 0xd5de957f5b = 918,562,373,467 = "bpzcbjh7" in base 36; the id is its first 6 characters
    assert short_id("d5de957f-5b03-4b8b-9e58-14146715baef") == "bpzcbj"
    assert short_id("00000000-0000-4000-8000-000000000000") == "0"
    assert short_id("d5de957f-5b03-4b8b-9e58-14146715baef") == short_id("D5DE957F-5B03-0000-0000-000000000000")


def test_parse_ids_accepts_what_models_and_people_write():
    assert parse_ids("abc123, [id:k8f3z1] id:zz") == ["abc123", "k8f3z1", "zz"]
    assert parse_ids(["abc123", "abc123"]) == ["abc123"]


def test_only_real_user_messages_are_tagged_and_the_transcript_is_untouched(tmp_path):
    t = load(tmp_path, FOUR_TURNS)
    tagged = tag_view(t.view())
    prompts = [m for m in tagged.messages if m.kind == "prompt"]
    assert len(prompts) == 4
    for m in prompts:
        assert m.api()["content"].endswith(f"\n[id:{short_id(m.uuid)}]")  # string content stays a string
    results = [m for m in tagged.messages if m.kind == "tool_results"]
    assert results and all("[id:" not in json.dumps(m.content) for m in results)
    assert "[id:" not in written(t).decode()  # a decoration of the view only
    assert "[id:" not in json.dumps(t.view().api_messages())


def test_tags_follow_the_policy():
    assert not tags_enabled(Policy.from_mapping({"stages": [{"id": "snip"}]}))
    assert tags_enabled(Policy.from_mapping({"stages": [{"id": "snip", "options": {"tag_ids": True}}]}))
    assert not tags_enabled(Policy.from_mapping({"stages": [{"id": "snip", "enabled": False,
                                                              "options": {"tag_ids": True}}]}))


def test_the_tool_definition_is_an_api_tool():
    tool = tool_definition("snip")
    assert tool["name"] == "snip" and tool["input_schema"]["required"] == ["ids"]
    with pytest.raises(UsageError, match="unknown tool 'nope'; known: snip"):
        tool_definition("nope")


# -- Claude Code: records, relinks, resume -------------------------------------------------------------
def test_snip_by_ids_removes_whole_turns_and_records_them(tmp_path, make_context):
    t = load(tmp_path, FOUR_TURNS)
    ids = _ids_by_text(t)
    ctx = make_context(snip_ids=(ids["a detour"], ids["another detour"]))
    out = Snip("snip", {"nudge": False}).run(t, ctx)
    assert _texts(out.transcript) == ["first task", "current work"]
    view = out.transcript.view()
    assert pairing_problems(view.api_messages()) == []
    assert [m.role for m in view.messages] == ["user", "assistant", "user", "assistant", "user", "assistant",
                                               "user", "assistant"]
    report = out.report
    assert report.action == "applied" and report.details["threshold_crossed"]
    assert set(report.details["snipped"]) == {ids["a detour"], ids["another detour"]}
    assert report.details["tokens_freed"] == ctx.tokens.count_messages(t.view().api_messages()) - \
        ctx.tokens.count_messages(view.api_messages()) > 200
    # the file keeps every original line (appended records only) ...
    original = written(t)
    assert written(out.transcript).startswith(original[:original.index(b'"a detour"')])
    records = [json.loads(x) for x in written(out.transcript).splitlines() if b'"ctxkit-record"' in x]
    snip_record = next(r for r in records if r["record"] == "snip")
    assert snip_record["ids"] == sorted(report.details["snipped"])
    # every entry of both turns: 2 prompts, 5 assistant fragments (one block each), 3 tool results
    assert len(snip_record["removedUuids"]) == 10
    # ... and reading it back gives the snipped view
    again = _reread(tmp_path, out.transcript)
    assert again.view().api_messages() == view.api_messages()


def test_a_resumed_claude_code_sees_the_snipped_view_without_the_records(tmp_path, make_context):
    t = load(tmp_path, FOUR_TURNS)
    ids = _ids_by_text(t)
    out = Snip("snip", {"nudge": False}).run(t, make_context(snip_ids=(ids["a detour"],))).transcript
    # Claude Code does not read ctxkit records: the surviving chain alone must skip the removed turn
    lines = [x for x in written(out).splitlines() if RECORD_TYPE.encode() not in x]
    bare = tmp_path / "bare.jsonl"
    bare.write_bytes(b"\n".join(lines) + b"\n")
    assert _texts(read_transcript(bare)) == ["first task", "another detour", "current work"]
    relinked = [json.loads(x) for x in lines if b'"another detour"' in x][0]
    first_answer = [json.loads(x) for x in lines if b'"Read it."' in x][0]
    assert relinked["parentUuid"] == first_answer["uuid"]


def test_expand_undoes_a_snip(tmp_path, make_context):
    t = load(tmp_path, FOUR_TURNS)
    ids = _ids_by_text(t)
    ctx = make_context(snip_ids=(ids["a detour"],))
    out = _reread(tmp_path, Snip("snip", {"nudge": False}).run(t, ctx).transcript)
    ctx.store.flush()
    back = unsnip(restore_archived(out, ctx.store))
    assert _entries(back) == _entries(t)  # the same lines (re-serialized where they were rewritten)


def test_first_and_current_turns_and_unknown_ids_are_refused_from_the_command_line(tmp_path, make_context):
    t = load(tmp_path, FOUR_TURNS)
    ids = _ids_by_text(t)
    with pytest.raises(UsageError) as err:
        Snip("snip", {}).run(t, make_context(snip_ids=(ids["first task"], ids["current work"], "zzzzzz")))
    message = err.value.message
    assert message.startswith("cannot snip: ")
    assert f"[id:{ids['first task']}] is the first user message (the task); it cannot be snipped" in message
    assert f"[id:{ids['current work']}] opens the turn in progress; it cannot be snipped" in message
    assert "no user message has id 'zzzzzz'" in message


def test_a_snip_of_the_last_turn_is_refused(tmp_path, make_context):
    t = load(tmp_path, FOUR_TURNS[:2])
    with pytest.raises(UsageError, match="opens the turn in progress"):
        Snip("snip", {}).run(t, make_context(snip_ids=(_ids_by_text(t)["a detour"],)))


# -- the snip tool -----------------------------------------------------------------------------------
def _with_snip_call(turns, ids_for, fmt="claude-code"):
    """The turns with the last one calling the snip tool (its result not yet written)."""
    *done, last = turns
    return [*done, Turn(last.prompt, last.rounds, None, open_call=Call("snip", {"ids": ids_for}))]


def test_a_snip_tool_call_of_the_current_turn_is_carried_out_once(tmp_path, make_context):
    probe = load(tmp_path, FOUR_TURNS, name="probe.jsonl")
    sid = _ids_by_text(probe)["a detour"]
    t = load(tmp_path, _with_snip_call(FOUR_TURNS, [f"[id:{sid}]"]))
    ctx = make_context()
    out = Snip("snip", {"nudge": False}).run(t, ctx)
    assert _texts(out.transcript) == ["first task", "another detour", "current work"]
    # the call waits for its result: the view ends with it, still valid
    assert out.transcript.view().messages[-1].role == "assistant"
    assert pairing_problems(out.transcript.view().api_messages()) == []
    record = json.loads([x for x in written(out.transcript).splitlines() if b'"record":"snip"' in x][0])
    assert record["toolUseIds"] == out.report.details["tool_calls"]
    # compacting the output again does not snip twice
    second = Snip("snip", {"nudge": False}).run(_reread(tmp_path, out.transcript), make_context())
    assert second.report.action == "nothing-to-do" and second.report.reason == "no snip requested"


def test_a_refused_tool_call_is_reported_not_raised(tmp_path, make_context):
    probe = load(tmp_path, FOUR_TURNS, name="probe.jsonl")
    first = _ids_by_text(probe)["first task"]
    t = load(tmp_path, _with_snip_call(FOUR_TURNS, [first]))
    ctx = make_context()
    out = Snip("snip", {"nudge": False}).run(t, ctx)
    assert out.report.action == "nothing-to-do"
    assert out.report.details["refused"] == {first: f"[id:{first}] is the first user message (the task); it "
                                                    "cannot be snipped"}
    assert out.report.warnings == [f"snip: [id:{first}] is the first user message (the task); it cannot be snipped"]
    assert _texts(out.transcript) == _texts(t)


# -- plain formats -----------------------------------------------------------------------------------
def test_plain_messages_are_removed_and_archived(tmp_path, make_context):
    t = load(tmp_path, FOUR_TURNS, fmt="anthropic")
    sid = _ids_by_text(t)["another detour"]
    ctx = make_context(snip_ids=(sid,))
    out = Snip("snip", {"nudge": False}).run(t, ctx)
    assert _texts(out.transcript) == ["first task", "a detour", "current work"]
    lines = [json.loads(x) for x in written(out.transcript).splitlines()]
    assert len(lines) == 16 - 4  # four lines a turn
    archive = json.loads(Path(out.report.details["archive"]).read_text())
    assert sorted(archive) == ["10", "11", "12", "9"]  # input line numbers
    assert archive["9"] == {"role": "user", "content": "another detour"}
    assert out.report.details["removed_lines"] == [9, 10, 11, 12]


def test_thinking_after_the_snip_is_dropped_and_archived(tmp_path, make_context):
    turns = [Turn(x.prompt, x.rounds, x.answer, thinking=True) for x in FOUR_TURNS]
    for fmt in ("claude-code", "anthropic"):
        t = load(tmp_path, turns, fmt=fmt, name=f"{fmt}.jsonl")
        ctx = make_context(snip_ids=(_ids_by_text(t)["a detour"],))
        out = Snip("snip", {"nudge": False}).run(t, ctx)
        kinds = [[b["type"] for b in m.content] for m in out.transcript.view().messages if m.role == "assistant"]
        assert kinds[0][0] == "thinking" and kinds[1][0] == "thinking"  # before the snip: untouched
        assert all("thinking" not in k for k in kinds[2:])  # from the snip on: dropped
        assert out.report.details["thinking_stripped"] == 4  # entries: two turns of two assistant messages
        assert pairing_problems(out.transcript.view().api_messages()) == []
        archived = json.loads(Path(out.report.details["archive"]).read_text())
        assert any(b.get("type") == "thinking" for e in archived.values()
                   for b in (e.get("message", e).get("content") or []) if isinstance(b, dict))


# -- the nudge ---------------------------------------------------------------------------------------
def test_a_nudge_is_appended_when_the_context_grew_and_not_again_right_after(tmp_path, make_context):
    for fmt in ("claude-code", "anthropic"):
        t = load(tmp_path, FOUR_TURNS, fmt=fmt, name=f"{fmt}.jsonl")
        out = Snip("snip", {"nudge_every_tokens": 200}).run(t, make_context())
        assert out.report.action == "applied" and out.report.reason.startswith("nudged: the context grew by ")
        last = out.transcript.view().messages[-1]
        assert last.role == "user" and last.text().startswith(f"<system-reminder>\n{NUDGE_HEAD} the conversation "
                                                              "has grown by about ")
        assert "call the snip tool with the [id:...] tags" in last.text()
        assert written(out.transcript).startswith(written(t))  # appended at the tail, nothing before it changed
        again = Snip("snip", {"nudge_every_tokens": 200}).run(_reread(tmp_path, out.transcript, f"n{fmt}"),
                                                               make_context())
        assert again.report.action == "nothing-to-do"


def test_no_nudge_below_the_growth_or_while_a_call_waits(tmp_path, make_context):
    t = load(tmp_path, FOUR_TURNS)
    assert Snip("snip", {}).run(t, make_context()).report.action == "nothing-to-do"  # < 10,000 tokens
    waiting = load(tmp_path, [*FOUR_TURNS[:3], Turn("go", [], None, open_call=Call("Read", {"file_path": "x"}))],
                   name="w.jsonl")
    out = Snip("snip", {"nudge_every_tokens": 10}).run(waiting, make_context())
    assert out.report.action == "nothing-to-do" and written(out.transcript) == written(waiting)


def test_the_pipeline_counts_the_tokens_a_snip_freed(tmp_path, make_context):
    t = load(tmp_path, FOUR_TURNS)
    ctx = make_context({"stages": [{"id": "snip", "options": {"nudge": False}}]},
                       snip_ids=(_ids_by_text(t)["a detour"],))
    result = compile_pipeline(ctx.policy, only=["snip"]).run(t, ctx)
    report = result.reports[0]
    assert report.tokens_freed == report.details["tokens_freed"] > 0
    assert ctx.tokens_freed == report.tokens_freed


# -- genuine sessions ---------------------------------------------------------------------------------
@needs_corpus
def test_snip_a_turn_of_a_recorded_session(corpus_session, tmp_path, make_context):
    t = read_transcript(corpus_session("multi-prompt"))
    ids = _ids_by_text(t)
    assert list(ids) == ["Do part 0 of the review", "Do part 1 of the review", "Do part 2 of the review",
                         "Do part 3 of the review"]
    ctx = make_context(snip_ids=(ids["Do part 1 of the review"],))
    out = Snip("snip", {"nudge": False}).run(t, ctx)
    assert _texts(out.transcript) == ["Do part 0 of the review", "Do part 2 of the review",
                                      "Do part 3 of the review"]
    assert pairing_problems(out.transcript.view().api_messages()) == []
    assert len(t.view().messages) - len(out.transcript.view().messages) == 17
    back = _reread(tmp_path, out.transcript)
    assert back.view().api_messages() == out.transcript.view().api_messages()
    ctx.store.flush()
    assert unsnip(restore_archived(back, ctx.store)).view().api_messages() == t.view().api_messages()


@needs_corpus
def test_tagged_view_of_a_recorded_session(corpus_session):
    t = read_transcript(corpus_session("explore-edit"))
    first = tag_view(t.view()).messages[0].api()
    assert first == {"role": "user", "content": "Add a docstring to Order.total\n[id:bpzcbj]"}


def test_unsnip_leaves_other_records_alone(tmp_path, make_context):
    entries = conversation(FOUR_TURNS)
    entries.append({"type": RECORD_TYPE, "record": "other", "timestamp": "2026-11-29T10:00:00.000Z"})
    t = read_transcript(write(tmp_path / "r.jsonl", entries))
    out = Snip("snip", {"nudge": False}).run(t, make_context(snip_ids=(_ids_by_text(t)["a detour"],)))
    assert written(out.transcript).count(b'"record":"snip"') == 1
    undone = written(unsnip(out.transcript))
    assert b'"record":"snip"' not in undone and b'"record": "other"' in undone
