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
