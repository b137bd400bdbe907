"""``bench/cache_misses.py``: the count docs/simulate.md rests its "the transcript gives no cause" on.
A miss is counted where it happened (after tool results, a typed prompt, an interrupt), and a request
the transcript explains (a pause past the lifetime, another directory) is not counted at all."""
from __future__ import annotations

import json
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

from test_simulate_session_prefix import Session

ROOT = Path(__file__).resolve().parent.parent


def _call_and_result(s: Session, k: int, at: int, read: int, write: int) -> None:
    """An answer that calls a tool, its result, and the request that answers it."""
    s._add({"type": "assistant", "message": {
        "id": f"msg_call{k}", "type": "message", "role": "assistant", "model": "claude-opus-4-6",
        "content": [{"type": "tool_use", "id": f"toolu_{k}", "name": "Read", "input": {"file_path": f"/a{k}"}}],
        "usage": {"input_tokens": 1, "cache_read_input_tokens": read, "cache_creation_input_tokens": write,
                  "output_tokens": 20}}}, timedelta(seconds=at))
    s._add({"type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": f"toolu_{k}", "content": "x " * 50}]}}, timedelta(seconds=at + 1))


def _counts(tmp_path, s: Session) -> dict:
    path = tmp_path / "projects" / "session.jsonl"
    path.parent.mkdir(exist_ok=True)
    path.write_text("".join(json.dumps(x) + "\n" for x in s.lines))
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "cache_misses.py"), str(path.parent), "--json"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_misses_are_counted_by_what_came_before_them(tmp_path):
    s = Session()
    s.prompt("read the files", timedelta(seconds=0))
    _call_and_result(s, 1, 3, 0, 20_000)                       # the first request: not counted
    s.answer("read", timedelta(seconds=8), 20_000, 200)        # after tool results: read all
    s.prompt("now the next one", timedelta(seconds=20))
    s.answer("ok", timedelta(seconds=24), 12_000, 8_500)       # a typed prompt: read only 12,000 of 20,201
    s.prompt("[Request interrupted by user]", timedelta(seconds=30))
    s.prompt("go on", timedelta(seconds=31))
    s.answer("ok", timedelta(seconds=35), 20_500, 300)         # after an interrupt: read all
    s.prompt("much later", timedelta(seconds=2_000))
    s.answer("ok", timedelta(seconds=2_004), 12_000, 9_000)   # past the 5-minute lifetime: not counted
    kinds = _counts(tmp_path, s)["kinds"]
    assert kinds["tool results"] == {"requests": 1, "missed": 0}
    assert kinds["new prompt"] == {"requests": 1, "missed": 1}
    assert kinds["interrupted"] == {"requests": 1, "missed": 0}


def test_a_turn_begun_in_another_directory_is_an_explained_miss_and_not_counted(tmp_path):
    s = Session(version="1.0.85")
    s.prompt("first", timedelta(seconds=0))
    s.answer("ok", timedelta(seconds=3), 0, 20_000)
    s.prompt("second", timedelta(seconds=20))
    s.lines[-1]["cwd"] = "/elsewhere"                           # Claude Code 1.x names the directory in its prompt
    s.answer("ok", timedelta(seconds=24), 12_000, 8_300)
    for line in s.lines:
        line.setdefault("cwd", "/project")
    assert _counts(tmp_path, s)["kinds"]["new prompt"] == {"requests": 0, "missed": 0}
