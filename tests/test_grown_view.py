"""simulate carries each read's active chain and view forward to the next read of the grown file
(ctxkit/transcript/claude_code/grown.py): at every request of corpus sessions, and at every line of
sessions that branch, compact, stitch parallel results or answer with nothing visible, the carried chain
and view are the ones a fresh read of the same bytes projects; a policy's steps likewise."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders import Session, assistant_message, entry, user_message, written
from conftest import CC_CORPUS, PUBLIC_CORPUS

from ctxkit import load_policy
from ctxkit.reports import replay
from ctxkit.reports.usage import recorded_requests
from ctxkit.tokens import make_counter
from ctxkit.tokens.session import session_policy
from ctxkit.transcript import read_transcript
from ctxkit.transcript.claude_code import projection
from ctxkit.transcript.claude_code.grown import GROWN

SPOTTER = PUBLIC_CORPUS / "spotter" / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"


def _shown(view) -> tuple:
    return ([(m.role, m.content, m.kind, m.refs, m.entries, m.uuid, m.timestamp, m.was_string, m.msg_id)
             for m in view.messages], view.notes, view.orphans)


def _fresh(path: Path):
    t = read_transcript(str(path), on_bad_line="skip")
    return _shown(t.view()), t.memo["chain"]


def _same_as_fresh(t, fresh_path: Path) -> None:
    shown, (order, facts) = _fresh(fresh_path)
    got_order, got_facts = t.memo["chain"]
    assert got_order == order
    assert {k: v for k, v in got_facts.items() if k != "growth"} == facts
    assert _shown(t.view()) == shown


@pytest.fixture
def carried(monkeypatch):
    """How many projections carried the earlier view (the rest were built in full)."""
    counts = {"view": 0}
    original = projection._grown_view

    def counting(t):
        view = original(t)
        counts["view"] += view is not None
        return view

    monkeypatch.setattr(projection, "_grown_view", counting)
    return counts


def _grow(lines: list[bytes], cuts: list[int], tmp_path: Path) -> tuple[int, int]:
    """Read the file grown to each cut, checking each read against a fresh one; (steps, chains grown)."""
    tmp_path.mkdir(exist_ok=True)
    growing, done, grown = replay.GrowingRead(tmp_path / "grown.jsonl"), 0, 0
    for cut in cuts:
        t = growing.add(lines[done:cut])
        done = cut
        t.view()
        grown += GROWN in t.memo
        (tmp_path / "fresh.jsonl").write_bytes(b"".join(lines[:cut]))
        _same_as_fresh(t, tmp_path / "fresh.jsonl")
    return len(cuts), grown


def _requests(path: Path) -> tuple[list[bytes], list[int]]:
    t = read_transcript(str(path))
    lines = [t.raw_line(i)[0] + b"\n" for i in range(t.n_lines)]
    return lines, [p.first_entry for p in recorded_requests(t) if not p.sidechain]


@pytest.mark.parametrize("path", [SPOTTER, CC_CORPUS / "manual-compact" / "session.jsonl",
                                  CC_CORPUS / "parallel-tools" / "session.jsonl"], ids=lambda p: p.parent.name)
def test_at_every_request_of_a_corpus_session_the_carried_view_is_a_fresh_projection(path, tmp_path, carried):
    if not path.exists():
        pytest.skip(f"corpus session not found at {path}")
    lines, cuts = _requests(path)
    steps, grown = _grow(lines, cuts, tmp_path)
    # nearly every request only extends the chain; the session's own compaction does not (walked in full)
    assert grown >= steps - 3 and carried["view"] >= steps - 3
    assert grown < steps


def _lines(entries: list[dict]) -> list[bytes]:
    return [json.dumps(e).encode() + b"\n" for e in entries]


def _every_line(entries: list[dict], tmp_path: Path) -> tuple[int, int]:
    lines = _lines(entries)
    return _grow(lines, list(range(1, len(lines) + 1)), tmp_path)


def test_a_branch_a_rewind_and_a_compaction_are_walked_in_full(tmp_path, carried):
    s = Session(tmp_path)
    s.prompt("first task")
    s.tool("Bash", {"command": "ls"}, "a.py b.py")
    fork = s.say("Two files.")
    s.prompt("second task")
    s.say("Done with the second.")
    entries = list(s.entries)
    # a rewind: the next prompt chains onto an earlier answer, not onto the leaf
    entries.append(entry("user", user_message("second task, again"), uuid="u-rewind", parent=fork["uuid"]))
    entries.append(entry("assistant", assistant_message([{"type": "text", "text": "Again."}], msg_id="m-rw"),
                         uuid="a-rewind", parent="u-rewind"))
    s.entries, s.parent = entries, "a-rewind"
    s.boundary()
    s.prompt("after the compaction")
    s.say("Fine.")
    steps, grown = _every_line(s.entries, tmp_path)
    assert 0 < grown < steps - 3  # the rewind and the boundary fell back; the lines around them grew
    assert carried["view"] > 0


def _two_calls(tool: str, ext: str) -> list[dict]:
    """Two parallel calls of ``tool`` (``toolu_1``, ``toolu_2``), each on a file of its own."""
    return [{"type": "tool_use", "id": f"toolu_{k}", "name": tool, "input": {"file_path": f"/w/{k}.{ext}"}}
            for k in (1, 2)]


def _both_results(first: str, second: str) -> list[dict]:
    """Their results as Claude Code writes them: both hang off the answer's last fragment (``a2``), each
    naming the fragment that made its call."""
    return [entry("user", user_message([{"type": "tool_result", "tool_use_id": f"toolu_{k}", "content": text}]),
                  uuid=f"r{k}", parent="a2", sourceToolAssistantUUID=f"a{k}") for k, text in ((1, first), (2, second))]


def test_parallel_results_left_off_the_chain_are_stitched_as_a_full_walk_does(tmp_path, carried):
    use = _two_calls("Read", "py")
    entries = [entry("user", user_message("read both"), uuid="u1"),
               entry("assistant", assistant_message([use[0]], msg_id="m1"), uuid="a1", parent="u1"),
               entry("assistant", assistant_message([use[1]], msg_id="m1"), uuid="a2", parent="a1"),
               # both results hang off the last fragment: the first is a dead end the walk stitches back
               *_both_results("one", "two"),
               entry("assistant", assistant_message([{"type": "thinking", "thinking": "hm", "signature": "s"}],
                                                    msg_id="m2"), uuid="a3", parent="r2"),
               # an answer that shows nothing (thinking only) is left out: the prompt after it is built in full
               entry("user", user_message("go on"), uuid="u2", parent="a3"),
               entry("assistant", assistant_message([{"type": "text", "text": "Both read."}], msg_id="m3"),
                     uuid="a4", parent="u2"),
               entry("user", user_message("thanks"), uuid="u3", parent="a4"),
               entry("assistant", assistant_message([{"type": "text", "text": "Welcome."}], msg_id="m4"),
                     uuid="a5", parent="u3")]
    # line by line, a fragment of an earlier message and a sibling of the earlier leaf are walked in full
    steps, grown = _every_line(entries, tmp_path)
    assert grown == steps - 3
    # cut as a request is (after the answer's fragments): both results come in one growth, and the one off
    # the chain is stitched back by the growth itself; the prompt after the answer that shows nothing comes
    # with it, and joins the results' message (the view is built in full there)
    steps, grown = _grow(_lines(entries), [1, 3, 5, 7, 9, 10], tmp_path / "requests")
    assert grown == steps - 1 and carried["view"] > 0


def test_a_policy_step_carries_the_previous_output_s_view(tmp_path, monkeypatch, carried):
    """Each step reads the previous step's output plus the new lines: its chain and view go on from the
    output's (whose stages edited it), and are those a fresh read of the step's file gives; that file
    holds exactly the output, though only what may differ from the file's old bytes was written."""
    path = CC_CORPUS / "multi-prompt" / "session.jsonl"
    if not path.exists():
        pytest.skip(f"corpus session not found at {path}")
    lines, cuts = _requests(path)
    read = []
    original = replay.read_transcript
    monkeypatch.setattr(replay, "read_transcript", lambda *a, **k: read.append(original(*a, **k)) or read[-1])
    pol = session_policy(load_policy(None, ["thresholds.summary_reserve=5000"], cwd=tmp_path),
                         read_transcript(str(path)))
    run = replay.PolicyReplay(pol, tmp_path, context_window=60_000, cwd=tmp_path, transcript_path=str(path),
                              counter=make_counter(pol.estimator, model=pol.model))
    done, grown, compacted = 0, 0, 0
    for cut in cuts:
        step = run.step(lines[done:cut], None)
        done = cut
        replay.request_segments(step.transcript, pol, run.counter, None)  # as simulate does: the output's view
        # the output, written over the file two steps old from the first byte that may differ, is the output
        assert run.files[run.turn].read_bytes() == written(step.transcript)
        t = read[-1]
        grown += GROWN in t.memo
        compacted += any(r.use == "autocompact" and r.action == "applied" for r in step.result.reports)
        _same_as_fresh(t, Path(t.source.name))
    run.finish()
    # the policy compacted (an output whose chain was walked in full): the next step still grows from it
    assert compacted >= 1
    assert grown == len(cuts) - 1 and carried["view"] >= len(cuts) - 1 - compacted


def test_a_hooks_lines_after_a_parallel_result_left_off_the_chain_are_stitched_as_a_full_walk_does(tmp_path, carried):
    """Claude Code 2.1.150 chains a PostToolUse hook's lines onto its call's result, a dead end of the
    chain for all but the last call to finish: a growth that brings them stitches them as a full walk."""
    s = Session(tmp_path)
    s.prompt("Inspect the app please")
    s.parallel_with_hooks(["echo alpha", "echo beta"])
    s.say("Turn one done.")
    s.prompt("Now the second turn please")
    s.say("Turn two done.")
    lines = _lines(s.entries)
    answers = [k for k, e in enumerate(s.entries) if e["type"] == "assistant"]
    steps, grown = _grow(lines, [answers[0], answers[2], answers[3], len(lines)], tmp_path)
    assert grown == steps - 1  # (the first read is walked in full)


def test_an_answer_fragment_written_before_its_parent_is_ordered_as_a_full_walk_does(tmp_path, carried):
    """held-out 88ea4c87 (Claude Code 2.1.1xx): the two fragments of one answer written in the reverse of their
    chain order (the second call's line above the first's, its parentUuid the line below). A fresh read
    orders them along the chain; the growth kept the file's order, so simulate's replay had the message
    change under it four requests later (a cache miss the session never had: +86.7% on writes)."""
    use = _two_calls("Edit", "xml")
    entries = [entry("user", user_message("edit both"), uuid="u1"),
               entry("assistant", assistant_message([{"type": "thinking", "thinking": "", "signature": "s"}],
                                                    msg_id="m1"), uuid="a0", parent="u1"),
               entry("assistant", assistant_message([use[1]], msg_id="m1"), uuid="a2", parent="a1"),
               entry("assistant", assistant_message([use[0]], msg_id="m1"), uuid="a1", parent="a0"),
               *_both_results("ok", "ok"),
               entry("assistant", assistant_message([{"type": "text", "text": "Both edited."}], msg_id="m2"),
                     uuid="a3", parent="r2"),
               entry("user", user_message("thanks"), uuid="u2", parent="a3"),
               entry("assistant", assistant_message([{"type": "text", "text": "Welcome."}], msg_id="m3"),
                     uuid="a4", parent="u2")]
    steps, grown = _grow(_lines(entries), [1, 6, 7, 8, 9], tmp_path)
    assert grown >= 1
    first_call = [m for m in read_transcript(str(tmp_path / "grown.jsonl")).view().messages
                  if m.role == "assistant"][0]
    assert [b["id"] for b in first_call.content if b.get("type") == "tool_use"] == ["toolu_1", "toolu_2"]


def test_a_compaction_grown_line_by_line_puts_its_preserved_segment_after_the_summary(tmp_path):
    """The autocompact session's boundary keeps a preserved segment (the last tool call and its result) after
    its anchor, the summary written three lines later. Read before the summary, the walk puts the segment
    right after the boundary; the growth that brought the summary appended it after the segment, where a
    fresh read of the same bytes puts the segment after it."""
    path = CC_CORPUS / "autocompact" / "session.jsonl"
    if not path.exists():
        pytest.skip(f"corpus session not found at {path}")
    lines = path.read_bytes().splitlines(keepends=True)
    boundary = next(k for k, line in enumerate(lines) if b'"compact_boundary"' in line)
    summary = next(k for k, line in enumerate(lines) if b'"isCompactSummary":true' in line)
    assert summary > boundary + 1
    _grow(lines, list(range(boundary, summary + 3)), tmp_path)
