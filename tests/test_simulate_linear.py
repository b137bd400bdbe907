"""simulate in linear time: each request step reads only the lines written since the previous one (the
`none` row's prefix and each policy step's input resume from the previous read, as a run resumes from
compact's checkpoints), and the result is the one a full read of every step gives."""
from __future__ import annotations

from pathlib import Path

from builders import Call, Turn, conversation, write

from ctxkit import load_policy
from ctxkit.reports import replay
from ctxkit.reports.pricing import load_pricing
from ctxkit.reports.simulate import simulate
from ctxkit.tokens import make_counter
from ctxkit.transcript.lineindex import LineIndex


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
