"""simulate in linear time: each request step reads only the lines written since the previous one (the
`none` row's prefix and each policy step's input resume from the previous read, as a run resumes from
compact's checkpoints), and the result is the one a full read of every step gives."""
from __future__ import annotations

from pathlib import Path

import pytest
from builders import Call, Turn, conversation, write
from conftest import CC_CORPUS, CORPUS, cc_sessions, public_transcripts

from ctxkit import load_policy
from ctxkit.reports import replay
from ctxkit.reports.pricing import load_pricing
from ctxkit.reports.simulate import simulate
from ctxkit.tokens import make_counter
from ctxkit.transcript.lineindex import LineIndex
from ctxkit.transcript.view import ViewMessage

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "session.jsonl"


def _session(tmp_path: Path, turns: int) -> Path:
    return write(tmp_path / f"s{turns}.jsonl", conversation([
        Turn(f"task {k}", [[Call("Bash", {"command": f"step {k}"}, f"out {k} " * 300)],
                           [Call("Read", {"file_path": f"/w/{k}.py"}, f"x = {k}\n" * 40)]], f"done {k}")
        for k in range(turns)]))


def _simulate(path: Path, tmp_path: Path) -> dict:
    pol = load_policy(None, [], cwd=tmp_path)
    doc, _ = simulate([str(path)], [("default", pol)], load_pricing(), cwd=tmp_path)
    return doc


def test_each_line_is_read_once_per_row(tmp_path, monkeypatch):
    path = _session(tmp_path, 12)
    lines = len(path.read_text().splitlines())
    added = []
    original = LineIndex.add

    def counting(self, offset):
        added.append(offset)
        return original(self, offset)

    monkeypatch.setattr(LineIndex, "add", counting)
    doc = _simulate(path, tmp_path)
    requests = doc["sessions"][0]["none"]["requests"]
    assert requests == 36
    # the session's own read, the `none` row's prefixes, the policy's steps: each line about once each
    # (reading every prefix again, as before, indexed 2,664 lines for these 72)
    assert len(added) <= 3 * lines + requests


def test_resumed_reads_give_what_full_reads_give(tmp_path, monkeypatch):
    path = _session(tmp_path, 8)
    resumed = _simulate(path, tmp_path)
    monkeypatch.setattr(replay.GrowingRead, "_resume", lambda self: None)
    monkeypatch.setattr(replay.PolicyReplay, "_output_resume", lambda self, read, out: None)
    assert _simulate(path, tmp_path) == resumed


def test_a_block_sent_before_is_hashed_once_with_the_same_pieces(tmp_path, monkeypatch):
    """Each step's request repeats the blocks of the one before at the same places: their piece digests
    are kept with the block, so a replay hashes each block about once, and the pieces are the ones a
    fresh count of every request gives."""
    path = _session(tmp_path, 10)
    lines = path.read_bytes().splitlines(keepends=True)
    pol = load_policy(None, [], cwd=tmp_path)
    counter = make_counter(pol.estimator, model=pol.model)
    hashed = []
    original = replay._digest
    monkeypatch.setattr(replay, "_digest", lambda *parts: hashed.append(parts) or original(*parts))
    growing, memo, shared, fresh = replay.GrowingRead(tmp_path / "grown.jsonl"), {}, [], []
    for k in range(0, len(lines), 4):
        t = growing.add(lines[k:k + 4])
        shared.append(replay.request_segments(t, pol, counter, None, memo))
        fresh.append(replay.request_segments(t, pol, counter, None, {}))
    assert shared == fresh
    sent = sum(len(ps) for ps in fresh)
    blocks = len(fresh[-1])
    hashed_shared = len(hashed) - sent  # the fresh counts hash every block of every request
    # (each prompt, a string, is a new block at every request: hashed again)
    assert hashed_shared < 3 * blocks < sent / 2


def test_a_request_s_prefix_digests_are_those_a_fresh_cache_works_out():
    """The cache model carries the chained digests of the prefix a request shares with the one before:
    whatever the two share (all, a part, nothing; longer or shorter), the chain is the one worked out
    from nothing."""
    from ctxkit.reports.cache_model import PromptCache

    base = [bytes([k]) * 16 for k in range(40)]
    requests = [base[:10], base[:25], base[:25], base[:5] + [b"x" * 16] + base[6:30], base[:3], [], base,
                base[:20] + [b"y" * 16], base[:21]]
    carried = PromptCache()
    for digests in requests:
        assert carried._chain(list(digests)) == PromptCache()._chain(list(digests))


def _from_nothing(monkeypatch) -> None:
    """Every step worked out from nothing: no request goes on from the one before (nothing is shared)."""
    from ctxkit.reports import request, session_prefix

    for module in (replay, request, session_prefix):
        monkeypatch.setattr(module, "same_leading", lambda a, b: 0)


def _requests(results: list) -> list:
    rows = results[0]["rows"]
    return [(row.policy, [(r.context, r.usage, r.cost, r.failed) for r in row.requests], row.compactions)
            for row in [rows["replayed"], rows["none"], *rows["policies"]]]


@pytest.mark.parametrize("session", ["example", "autocompact", "multi-prompt"])
def test_each_request_goes_on_from_the_one_before_and_costs_what_one_from_nothing_does(session, tmp_path,
                                                                                        monkeypatch):
    """Each request's messages, pieces, calibration and sizes go on from the request before (what it sent
    first, the same objects, is taken whole): request by request, every row is the one a replay that works
    each request out from nothing gives, through the policy's compactions (which rewrite the history) and
    the session's own (after which `none` replays the whole history)."""
    path = EXAMPLE if session == "example" else CC_CORPUS / session / "session.jsonl"
    if not path.is_file():
        pytest.skip(f"shared corpus not found at {CC_CORPUS}")
    pol = load_policy(None, ["thresholds.summary_reserve=5000", "thresholds.autocompact_buffer=3000",
                             "stages.tool-result-budget.enabled=false"], cwd=tmp_path)

    def run() -> tuple:
        doc, results = simulate([str(path)], [("default", pol)], load_pricing(), context_window=40000, cwd=tmp_path)
        return doc, _requests(results)

    carried = run()
    assert carried[1][2][2], "the policy compacts: the steps after it send a rewritten history"
    _from_nothing(monkeypatch)
    assert run() == carried


def _message(role: str, *texts: str, kind: str = "text") -> ViewMessage:
    return ViewMessage(role, [{"type": "text", "text": x} for x in texts], kind)


def test_request_messages_go_on_from_where_the_call_before_stood():
    """api_messages takes the view messages the call before was given (the same objects, first) as it made
    them, and goes on from there: system texts pending, a user message merged into, a view that changed
    before its end or got shorter: each call's messages are the ones a call from nothing makes."""
    from ctxkit.reports.request import api_messages

    m = [_message("user", "p0"), _message("system", "s1"), _message("assistant", "a2"), _message("system", "s3"),
         _message("user", "u4"), _message("user", "u5"), _message("system", "s6"), _message("assistant", "a7"),
         _message("user", "p8")]
    other = _message("user", "changed")
    views = [m[:1], m[:2], m[:3], m[:4], m[:5], m[:6], m[:7], m[:9], m[:3] + [other] + m[4:9], m[:2], m[:9], m[:0]]
    for keep in (False, True):
        memo: dict = {}
        for msgs in views:
            assert api_messages(msgs, keep_system=keep, memo=memo) == api_messages(msgs, keep_system=keep)


def test_a_cut_off_call_is_answered_as_an_answer_from_nothing_answers_it():
    """A request's cut-off calls are answered going on from the request before, whatever the two share."""
    from ctxkit.reports.request import _answered
    from ctxkit.transcript.view import answer_cut_off_calls

    def call(k: int) -> dict:
        return {"role": "assistant", "content": [{"type": "tool_use", "id": f"c{k}", "name": "Bash", "input": {}}]}

    m = [{"role": "user", "content": "go"}, call(1), call(2), {"role": "system", "content": "s"}, call(3),
         {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c3", "content": "ok"}]}, call(4)]
    memo: dict = {}
    for msgs in [m[:2], m[:3], m[:4], m[:5], m[:7], m[:3] + [{"role": "user", "content": "x"}] + m[3:], m[:1], m]:
        assert _answered(msgs, memo) == answer_cut_off_calls(msgs)


def test_sizes_kept_from_the_request_before_are_those_worked_out_again():
    """consistent without a size to make up goes on from the call before: a piece it was given at the same
    place keeps what it made, unless that is not the size first held for its digest (one digest sent twice
    at two sizes in a request): then, as everything the call adds, it is worked out again."""
    from ctxkit.reports.cache_model import Piece
    from ctxkit.reports.session_prefix import consistent

    head = [Piece(b"overhead", 100.0, True, True)]
    a, b, twin, c = Piece(b"a", 10.0), Piece(b"b", 20.0), Piece(b"a", 15.0), Piece(b"c", 5.0)
    requests = [[a, twin], [a, twin, b], [a, twin, b, c], [a, b], [a, twin, b, c]]
    carried_sizes, carried_memo = {}, {}
    fresh_sizes = {}
    sent = []
    for pieces in requests:
        carried = consistent([*head, *pieces], carried_sizes, 0, carried_memo)
        assert carried == consistent([*head, *pieces], fresh_sizes, 0, {})
        sent.append([p.tokens for p in carried[1:]])
    # the twin is first sent at its own size (nothing held yet), then at the size a was first sent with
    assert sent == [[10.0, 15.0], [10.0, 10.0, 20.0], [10.0, 10.0, 20.0, 5.0], [10.0, 20.0], [10.0, 10.0, 20.0, 5.0]]


def test_a_round_of_results_sent_again_changed_keeps_the_order_of_the_calls_before_it():
    """The pieces of a request's messages go on from the request before; a message it did not send as it
    is here (a round of results a reminder was merged into: a new message) is cut anew, its results in the
    order of the calls of the message before it, which the two requests share: as a request from nothing."""
    pol = load_policy(None, [])
    counter = make_counter(pol.estimator, model=pol.model)

    def result(k: int) -> dict:
        return {"type": "tool_result", "tool_use_id": f"c{k}", "content": f"out {k} " * (20 + 30 * k)}

    calls = {"role": "assistant", "content": [{"type": "tool_use", "id": f"c{k}", "name": "Bash",
                                               "input": {"command": str(k)}} for k in range(3)]}
    prompt = {"role": "user", "content": "run them"}
    results = [result(2), result(0), result(1)]  # as they finished
    reminder = {"type": "text", "text": "<system-reminder>later</system-reminder>"}
    requests = [[prompt, calls, {"role": "user", "content": results}],
                [prompt, calls, {"role": "user", "content": [*results, reminder]}]]
    memo: dict = {}
    for messages in requests:
        carried = replay._messages_pieces(messages, counter, memo)
        assert carried == replay._messages_pieces(messages, counter, {})
    pieces, ends, _, _ = carried
    fresh_results = replay._messages_pieces([prompt, calls, {"role": "user", "content": [result(k) for k in range(3)]}],
                                            counter, {})[0][2:5]
    assert [p.tokens for p in pieces[2:5]] == [p.tokens for p in fresh_results]  # (in the order of the calls)


def _rewritten_history(tmp_path: Path) -> Path:
    """A session whose earlier messages change between requests: parallel calls whose hook contexts fold
    into their results when the next turn opens (2.1.150), a call cut off and begun again, a model switch,
    the session's own compaction, a sidechain line."""
    import copy
    from datetime import timedelta

    from builders import Session

    s = Session(tmp_path)
    for k in range(6):
        s.prompt(f"turn {k} " + "words " * 150)
        s.parallel_with_hooks([f"echo a{k}", f"echo b{k}", f"echo c{k}"])
        s.tool("Bash", {"command": f"cat f{k}"}, f"line {k} " * 400)
        s.hook_context(f"Context {k}.")
        if k == 1:  # a call cut off: the next answer begins again without its result
            s._chain("assistant", message={"id": "msg_cut", "role": "assistant", "model": "m", "content": [
                {"type": "tool_use", "id": "toolu_cut", "name": "Bash", "input": {"command": "sleep 9"}}]})
        s.say(f"Turn {k} done.")
        if k == 2:
            s.boundary("Summary: turns 0 to 2.")
        if k == 3:
            s.clock += timedelta(hours=2)  # (a cold cache: microcompact clears)
    for e in s.entries[len(s.entries) // 2:]:
        if e["type"] == "assistant":
            e["message"]["model"] = "claude-sonnet-4-5"
    s.entries.insert(5, {**copy.deepcopy(s.entries[4]), "isSidechain": True, "uuid": "side-1", "parentUuid": None})
    path = tmp_path / "rewritten.jsonl"
    s.write(path)
    return path


@pytest.mark.parametrize("policy", ["default", "no-llm", "claude-code-full"])
def test_a_history_rewritten_between_requests_costs_what_requests_from_nothing_do(policy, tmp_path, monkeypatch):
    """Where an earlier message changes between two requests (hook contexts folded when a turn opens, a
    cut-off call answered, a compaction, microcompact's clearing), the request that goes on from the one
    before takes only what both still share: every row, request by request, is the one a replay that
    works each request out from nothing, and reads each file whole, gives."""
    from ctxkit.transcript.claude_code import projection

    path = _rewritten_history(tmp_path)
    pol = load_policy(None if policy == "default" else policy, [
        "thresholds.summary_reserve=2000", "thresholds.autocompact_buffer=1000"], cwd=tmp_path)

    def run() -> tuple:
        doc, results = simulate([str(path)], [(policy, pol)], load_pricing(), context_window=12000, cwd=tmp_path)
        return doc, _requests(results)

    carried = run()
    contexts = [r[0] for r in carried[1][2][1]]
    assert any(b < a for a, b in zip(contexts, contexts[1:], strict=False)), "the policy's steps rewrite the history"
    _from_nothing(monkeypatch)
    monkeypatch.setattr(projection, "_grown_view", lambda t: None)
    assert run() == carried


_EVERY_SESSION = [p / "session.jsonl" for p in cc_sessions()] + public_transcripts()


@pytest.mark.skipif(not _EVERY_SESSION, reason=f"shared corpus not found at {CORPUS}")
@pytest.mark.parametrize("path", _EVERY_SESSION, ids=lambda p: str(p.relative_to(CORPUS)))
def test_every_corpus_session_costs_under_three_policies_what_requests_from_nothing_do(path, tmp_path, monkeypatch):
    """Every session of the corpus (Claude Code 1.0.x to 2.1.328, subagents' files, the session's own
    compactions), in a window small enough for the policies to compact: each row, request by request,
    is the one a replay that works each request out from nothing and reads each file whole gives."""
    from ctxkit.transcript.claude_code import projection

    sets = ["thresholds.summary_reserve=5000", "thresholds.autocompact_buffer=3000"]
    policies = [(name, load_policy(None if name == "default" else name, sets, cwd=tmp_path))
                for name in ("default", "no-llm", "claude-code-full")]

    def run() -> tuple:
        doc, results = simulate([str(path)], policies, load_pricing(), context_window=40000, cwd=tmp_path)
        return doc, [_requests([r]) for r in results]

    carried = run()
    _from_nothing(monkeypatch)
    monkeypatch.setattr(projection, "_grown_view", lambda t: None)
    assert run() == carried
