"""One projection per transcript version: the active chain is computed once and carried over by edits
that only rewrite content; the session facts come from the indexing pass; writing copies unchanged
lines as byte ranges."""
from __future__ import annotations

import io

import pytest
from builders import Call, Turn, conversation, write
from conftest import cc_sessions

from ctxkit.transcript import read_transcript
from ctxkit.transcript.claude_code import chain as claude_code_chain
from ctxkit.transcript.claude_code.session import SessionFacts, current_facts, session_facts
from ctxkit.transcript.model import Transcript

TURNS = [Turn(f"step {k}", [[Call("Bash", {"command": f"ls {k}"}, f"out {k}\n" * 20),
                             Call("Read", {"file_path": f"/w/{k}.py"}, f"line {k}\n" * 20)]], f"Done {k}.")
         for k in range(4)]


def _result_line(t: Transcript) -> int:
    return next(i for i in t.live_indexes() if t.entry(i).get("type") == "user"
                and isinstance(t.entry(i)["message"]["content"], list))


def test_a_content_edit_carries_the_chain_over_and_a_routing_edit_does_not(tmp_path):
    t = read_transcript(write(tmp_path / "t.jsonl", conversation(TURNS)))
    order, facts = claude_code_chain.active_entries(t)
    assert claude_code_chain.active_entries(t)[0] is order  # computed once per version
    i = _result_line(t)
    entry = t.entry(i)
    block = {**entry["message"]["content"][0], "content": "[cleared]"}
    cleared = t.with_edits(replace={i: {**entry, "message": {**entry["message"], "content": [block]}}})
    assert claude_code_chain.active_entries(cleared)[0] is order  # carried over, not walked again
    # an edit of a routing field is walked again, and the walk sees it: the entry is now a root
    cut = t.with_edits(replace={i: {**entry, "parentUuid": "nowhere"}})
    new_order, _ = claude_code_chain.active_entries(cut)
    assert order[0] == 0 and new_order[0] == i
    # an appended entry is walked again too
    more = t.with_edits(append=conversation([Turn("and then?")], session="s-2",
                                            after=[t.entry(j) for j in t.live_indexes()]))
    assert len(claude_code_chain.active_entries(more)[0]) == len(order) + 2


def test_clearing_results_carries_the_chain_without_reading_the_edited_entries_again(tmp_path, monkeypatch):
    """What replace_blocks records (tool results whose content alone changed) is enough to carry the
    chain: what the walk reads of each edited entry is not compared again; an edit of a tool_use id is."""
    from ctxkit.transcript.edits import replace_blocks
    from ctxkit.transcript.view import BlockRef

    t = read_transcript(write(tmp_path / "t.jsonl", conversation(TURNS)))
    order = claude_code_chain.active_entries(t)[0]
    view = t.view()
    blocks = [(b, ref) for m in view.messages for b, ref in zip(m.content, m.refs, strict=True)]
    results = {ref: {**b, "content": "[cleared]"} for b, ref in blocks if b.get("type") == "tool_result"}
    read = []
    real = claude_code_chain._walk_key
    monkeypatch.setattr(claude_code_chain, "_walk_key", lambda d: read.append(d) or real(d))
    facts = current_facts(t)
    cleared = replace_blocks(t, results)
    assert claude_code_chain.active_entries(cleared)[0] is order and read == []
    assert current_facts(cleared) is facts  # content blocks are not facts of the session either
    assert [b.get("content") for m in cleared.view().messages for b in m.content
            if b.get("type") == "tool_result"] == ["[cleared]"] * len(results)
    # a tool_use id is what the walk pairs results by: that edit is compared, and walked again
    i, k = next((ref.entry, ref.block) for b, ref in blocks if b.get("type") == "tool_use")
    renamed = replace_blocks(t, {BlockRef(i, k): {**t.entry(i)["message"]["content"][k], "id": "toolu_other"}})
    assert claude_code_chain.active_entries(renamed)[0] is not order and read


def test_session_facts_are_read_from_the_indexing_pass_not_from_the_lines(tmp_path, monkeypatch):
    entries = conversation(TURNS)
    entries.insert(3, {"type": "queue-operation", "operation": "enqueue", "content": "also run tests",
                       "timestamp": "2026-11-29T09:00:30.000Z", "sessionId": "s-1"})
    entries.insert(5, {"type": "permission-mode", "permissionMode": "plan", "sessionId": "s-1"})
    t = read_transcript(write(tmp_path / "t.jsonl", entries))
    parsed = []
    monkeypatch.setattr(Transcript, "_parse", lambda self, i: parsed.append(i) or pytest.fail("a line was parsed"))
    facts = session_facts(t)
    assert parsed == []
    assert facts == {"modes": [(5, "plan")], "cwd": "/work", "session_id": "s-1",
                     "queue_ops": [{"operation": "enqueue", "content": "also run tests",
                                    "timestamp": "2026-11-29T09:00:30.000Z"}]}


@pytest.mark.skipif(not cc_sessions(), reason="shared corpus not found")
@pytest.mark.parametrize("path", [p / "session.jsonl" for p in cc_sessions()], ids=lambda p: p.parent.name)
def test_the_indexed_session_facts_are_those_of_every_line_read_again(path):
    t = read_transcript(path)
    again = SessionFacts()
    for i in t.live_indexes():
        again.add(i, t.peek(i))
    assert session_facts(t) == again.as_dict()


def test_writing_copies_runs_of_unchanged_lines_as_byte_ranges(tmp_path):
    path = write(tmp_path / "t.jsonl", conversation(TURNS))
    t = read_transcript(path)
    size, n = path.stat().st_size, len(t.lines)
    assert t.write_plan() == [(0, n, 0, size)]  # one range: the whole file
    i = _result_line(t)
    entry = t.entry(i)
    edited = t.with_edits(replace={i: {**entry, "message": {**entry["message"], "content": "x"}}})
    start, length = t.lines.span(i)
    plan = edited.write_plan()
    assert [p[:2] for p in plan] == [(0, i), (i, plan[1][1]), (i + 1, n)]
    assert plan[0][2:] == (0, start) and plan[2][2:] == (start + length, size - start - length)

    copies = []

    class Out(io.BytesIO):
        def copy_from(self, src, offset, length):
            copies.append((offset, length))
            src.seek(offset)
            self.write(src.read(length))

    out, plain = Out(), io.BytesIO()
    edited.write(out)
    edited.write(plain)  # no copy_from: through a buffer
    assert copies == [(0, start), (start + length, size - start - length)]
    assert out.getvalue() == plain.getvalue()
    lines = path.read_bytes().splitlines(keepends=True)
    assert out.getvalue() == b"".join(lines[:i]) + plan[1][1] + b"".join(lines[i + 1:])


# -- the view carried over, and what the read pass keeps ------------------------------------------------
def _fresh(t: Transcript) -> Transcript:
    """The same entries as ``t``, with no earlier version to carry anything over from."""
    return Transcript(t.source, t.lines, t.format, t.info, overrides=dict(t.overrides), appended=t.appended,
                      removed=t.removed)


def _shown(view) -> list:
    return [(m.role, m.kind, m.api(), m.refs, m.entries, m.uuid, m.timestamp) for m in view.messages]


def _clear_results(t: Transcript, every: int) -> Transcript:
    from ctxkit.transcript.edits import replace_blocks

    changes = {}
    for m in t.view().messages:
        for b, ref in zip(m.content, m.refs, strict=True):
            if b.get("type") == "tool_result" and ref is not None and len(changes) % every == 0:
                changes[ref] = {**b, "content": "[cleared]"}
            elif b.get("type") == "tool_result" and ref is not None:
                changes.setdefault(ref, b)
    return replace_blocks(t, {r: b for r, b in changes.items() if b.get("content") == "[cleared]"})


def test_clearing_tool_results_carries_the_view_over_with_the_new_results(tmp_path, monkeypatch):
    t = read_transcript(write(tmp_path / "t.jsonl", conversation(TURNS)))
    before = t.view()
    cleared = _clear_results(t, every=2)
    from ctxkit.transcript.claude_code import projection as claude_code

    built = []
    real = claude_code.build_messages
    monkeypatch.setattr(claude_code, "build_messages", lambda *a: built.append(1) or real(*a))
    view = cleared.view()
    assert built == []  # not built again
    assert _shown(view) == _shown(_fresh(cleared).view())
    assert "[cleared]" in str([m.api() for m in view.messages])
    assert "[cleared]" not in str([m.api() for m in before.messages])  # the earlier version's view is as it was
    # an edit that is not a tool result's content (here: a prompt's text) builds the view again
    i = next(i for i in t.live_indexes() if t.entry(i).get("type") == "user"
             and isinstance(t.entry(i)["message"]["content"], str))
    entry = t.entry(i)
    t.view()
    built.clear()
    retyped = t.with_edits(replace={i: {**entry, "message": {**entry["message"], "content": "other words"}}})
    assert "other words" in str([m.api() for m in retyped.view().messages]) and built == [1]


def test_results_cleared_by_whole_entries_carry_the_view_over_too(tmp_path, monkeypatch):
    """An edit that replaces whole entries (not through replace_blocks, which says which blocks it
    replaced) is compared entry by entry: still carried over, still the view built from scratch."""
    t = read_transcript(write(tmp_path / "t.jsonl", conversation(TURNS)))
    t.view()
    by_blocks = _clear_results(t, every=2)
    whole = t.with_edits(replace={i: by_blocks.entry(i) for i in by_blocks.overrides})
    from ctxkit.transcript.claude_code import projection as claude_code

    built = []
    real = claude_code.build_messages
    monkeypatch.setattr(claude_code, "build_messages", lambda *a: built.append(1) or real(*a))
    assert _shown(whole.view()) == _shown(by_blocks.view()) == _shown(_fresh(whole).view())
    assert built == [1]  # only the fresh one was built


def _first_result(t: Transcript):
    return next((b, ref) for m in t.view().messages for b, ref in zip(m.content, m.refs, strict=True)
                if b.get("type") == "tool_result" and ref is not None)


@pytest.mark.parametrize("change", ["text", "is_error", "loads tools", "was loading tools", "content"])
def test_replaced_blocks_that_are_more_than_new_results_build_the_view_again(tmp_path, monkeypatch, change):
    """replace_blocks says which blocks it replaced; the view is carried over only when each is a tool
    result whose content alone changed and that loads no tools (a result with tool_reference blocks
    is followed by a "Tool loaded." text): otherwise it is built again, and is the fresh view."""
    from ctxkit.transcript.claude_code import projection as claude_code
    from ctxkit.transcript.edits import replace_blocks

    t = read_transcript(write(tmp_path / "t.jsonl", conversation(TURNS)))
    block, ref = _first_result(t)
    refs = [{"type": "tool_reference", "tool_name": "WebFetch"}]
    if change == "was loading tools":
        t = replace_blocks(t, {ref: {**block, "content": refs}})
        t.view()
        block = {**block, "content": refs}
    new = {"text": {"type": "text", "text": "not a result"}, "is_error": {**block, "is_error": True},
           "loads tools": {**block, "content": refs}, "was loading tools": {**block, "content": "[cleared]"},
           "content": {**block, "content": "[cleared]"}}[change]
    built = []
    real = claude_code.build_messages
    monkeypatch.setattr(claude_code, "build_messages", lambda *a: built.append(1) or real(*a))
    edited = replace_blocks(t, {ref: new})
    view = edited.view()
    assert built == ([] if change == "content" else [1])
    assert _shown(view) == _shown(_fresh(edited).view())
    if change == "loads tools":
        assert claude_code.TOOL_LOADED_TEXT in str([m.api() for m in view.messages])


@pytest.mark.skipif(not cc_sessions(), reason="shared corpus not found")
@pytest.mark.parametrize("path", [p / "session.jsonl" for p in cc_sessions()], ids=lambda p: p.parent.name)
def test_a_carried_over_view_is_the_view_built_from_scratch(path):
    t = read_transcript(path)
    for every in (1, 3):
        cleared = _clear_results(t, every)
        assert _shown(cleared.view()) == _shown(_fresh(cleared).view())
    # what the read pass kept (entries, attachment summaries) gives the view a read without them gives
    bare = Transcript(t.source, t.lines, t.format, t.info)
    assert _shown(t.view()) == _shown(bare.view())


def test_what_the_read_pass_keeps_is_dropped_at_each_compact_boundary(tmp_path):
    first = conversation(TURNS[:2])
    boundary = {"type": "system", "subtype": "compact_boundary", "uuid": "b-1", "parentUuid": None,
                "logicalParentUuid": first[-1]["uuid"], "isSidechain": False, "content": "Conversation compacted",
                "timestamp": "2026-11-29T10:00:00.000Z", "sessionId": "s-1"}
    second = conversation(TURNS[2:], session="s-2", after=[boundary])
    t = read_transcript(write(tmp_path / "t.jsonl", [*first, boundary, *second]))
    kept = sorted(t._cache)
    assert kept and min(kept) >= len(first)  # only the boundary (the walk reads it) and what follows
    assert all("toolUseResult" not in t._cache[i] for i in kept)


def test_edits_behind_a_boundary_are_written_as_read_and_the_view_carried_over(tmp_path, monkeypatch):
    """What a stage edited and a compaction then put behind its boundary is dropped (edits.history_as_read):
    the view is the one before, not built again, and equals a fresh projection; the lines are as read."""
    from ctxkit.transcript.claude_code import projection as claude_code
    from ctxkit.transcript.edits import history_as_read, replace_blocks

    first = conversation(TURNS[:2])
    path = write(tmp_path / "t.jsonl", first)
    t = read_transcript(path)
    cleared = _clear_results(t, every=1)
    behind = set(cleared.overrides)
    boundary = {"type": "system", "subtype": "compact_boundary", "uuid": "b-1", "parentUuid": None,
                "logicalParentUuid": first[-1]["uuid"], "isSidechain": False, "content": "Conversation compacted",
                "timestamp": "2026-11-29T10:00:00.000Z", "sessionId": "s-1"}
    compacted = cleared.with_edits(append=[boundary, *conversation(TURNS[2:], session="s-2", after=[boundary])])
    block, ref = _first_result(compacted)
    compacted = replace_blocks(compacted, {ref: {**block, "content": "[cleared]"}})  # in the view: kept
    assert _first_result(compacted)[0]["content"] == "[cleared]"

    built = []
    real = claude_code.build_messages
    monkeypatch.setattr(claude_code, "build_messages", lambda *a: built.append(1) or real(*a))
    as_read, dropped = history_as_read(compacted)
    assert set(dropped) == behind and dropped
    assert set(compacted.overrides) == behind and as_read.overrides == {}
    assert _shown(as_read.view()) == _shown(compacted.view())
    assert _first_result(as_read)[0]["content"] == "[cleared]"  # the edit in the view stays
    assert built == []  # carried over
    assert _shown(as_read.view()) == _shown(_fresh(as_read).view())
    n = len(first)
    out = io.BytesIO()
    as_read.write(out)
    assert out.getvalue().splitlines(keepends=True)[:n] == path.read_bytes().splitlines(keepends=True)
    assert history_as_read(as_read) == (as_read, [])
    # edits the run started with are the caller's, not a stage's: kept
    assert history_as_read(compacted, before=cleared) == (compacted, [])
    # an edit behind the boundary that changed what the walk reads: nothing is dropped (the walk, and the
    # view, could differ without it)
    i = min(behind)
    moved = compacted.with_edits(replace={i: {**compacted.entry(i), "parentUuid": None}})
    assert history_as_read(moved) == (moved, [])
    # one that took an entry of the view out of the walk: dropping it would bring the entry back
    order, _ = claude_code_chain.active_entries(t)
    mid = order[len(order) // 2]
    hidden = t.with_edits(replace={mid: {**t.entry(mid), "isSidechain": True}})
    assert len(hidden.view().messages) < len(t.view().messages)
    kept, dropped = history_as_read(hidden, t.with_edits())
    assert (kept, dropped) == (hidden, []) and _shown(kept.view()) == _shown(hidden.view())


def test_fields_set_aside_for_the_writer_are_only_the_harness_ones(tmp_path):
    """What is kept beside a line for the writer (its harness-only fields) answers for those fields only:
    an attachment's data is still read from the line, before and after its bytes were kept for expand."""
    import json

    from ctxkit.store.original_lines import _uncompact

    envelope = {"isSidechain": False, "sessionId": "s", "timestamp": "2026-01-01T00:00:00Z"}
    data = {"type": "file", "filename": "f.py", "content": "x" * 10_000}
    lines = [{**envelope, "type": "user", "uuid": "a", "parentUuid": None, "message": {"role": "user", "content": "hi"}},
             {**envelope, "type": "attachment", "uuid": "b", "parentUuid": "a", "attachment": data},
             {**envelope, "type": "user", "uuid": "c", "parentUuid": "b", "toolUseResult": {"stdout": "out"},
              "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "o"}]}}]
    path = tmp_path / "spaced.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))  # spaced JSON: kept for expand when rewritten
    t = read_transcript(str(path), check_pairing=False)
    assert t.field_reader(1, "attachment")() == data
    assert t.field_reader(2, "toolUseResult")() == {"stdout": "out"} and "toolUseResult" not in t.entry(2)
    for i in (1, 2):
        _uncompact(t, i)  # what keeping an edited line's bytes does (it parses the whole line)
    assert t.field_reader(1, "attachment")() == data
    assert t.field_reader(2, "toolUseResult")() == {"stdout": "out"}
    assert t.full_entry(2) == lines[2] and list(t.full_entry(2)) == list(lines[2])


def _routing(m):
    return ({i: (x.type, x.uuid, x.parent, x.sidechain, x.msg_id, x.source_assistant) for i, x in m.edited.items()},
            m.rerouted(), m.renamed(), m.records)


def test_routing_fields_of_an_edited_version_start_from_the_earlier_one_and_equal_a_fresh_reading(tmp_path):
    """A compaction makes several versions that each keep a thousand edited results: only what an edit
    changed is read again, and what comes out is what reading every edited entry gives."""
    from ctxkit.transcript.claude_code.metas import Metas

    t = read_transcript(write(tmp_path / "t.jsonl", conversation(TURNS)))
    cleared = _clear_results(t, every=1)
    first = Metas.of(cleared)
    _routing(first)  # the sets worked out on the earlier version, so the next one derives them too
    i = _result_line(t)
    record = {"type": "ctxkit-record", "record": "snip", "uuid": "r-1", "removedUuids": []}
    moved = cleared.with_edits(replace={i: {**cleared.entry(i), "parentUuid": "nowhere", "uuid": "renamed"}},
                               append=[record])
    derived = Metas.of(moved)
    assert derived.edited is not first.edited and derived.edited[i].uuid == "renamed"
    fresh = Metas(moved)
    assert _routing(derived) == _routing(fresh)
    assert i in derived.rerouted() and i in derived.renamed() and moved.n_entries - 1 in derived.records
    # and back: the line's own routing again leaves the sets
    back = moved.with_edits(replace={i: t.entry(i)})
    assert _routing(Metas.of(back)) == _routing(Metas(back)) and i not in Metas.of(back).renamed()


def test_a_view_message_shared_by_two_versions_is_counted_once(tmp_path):
    from ctxkit.tokens.counters import RoughCounter

    t = read_transcript(write(tmp_path / "t.jsonl", conversation(TURNS)))
    cleared = _clear_results(t, every=2)
    before, after = t.view().messages, cleared.view().messages
    shared = [m for m in after if any(m is b for b in before)]
    assert shared and len(shared) < len(after)  # the results' messages are new, the rest the same objects
    counter, counted = RoughCounter(), []
    real = counter.count_message
    counter.count_message = lambda msg: counted.append(msg) or real(msg)
    total_before = counter.count_view_messages(before)
    assert len(counted) == len(before)
    counted.clear()
    assert counter.count_view_messages(after) == RoughCounter().count_messages(m.api() for m in after)
    assert len(counted) == len(after) - len(shared)
    assert total_before == RoughCounter().count_messages(m.api() for m in before)
