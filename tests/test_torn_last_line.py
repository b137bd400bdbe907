"""A session file whose last line is cut short (the agent was killed mid-write, or is writing it now), in
each agent's line format: read as it is, the line is named with its file and number (exit 3); under
``--on-bad-line skip`` every command goes on without it and keeps its bytes in the output. Gemini CLI's
model lookup parsed every line, the cut one too: stats, compact and view were exit 3 under skip."""
from __future__ import annotations

import json
from pathlib import Path

import codex_rollouts as codex
import gemini_sessions as gem
import pytest
from builders import Session

from ctxkit.cli.main import app


def _lines(fmt: str, tmp_path: Path) -> bytes:
    if fmt == "codex":
        lines = codex.opening()
        for k in range(8):
            lines += codex.turn(k, f"task {k}", [(f"c{k}", f"cat f{k}", f"x{k} " * 400)], f"done {k}",
                                usage=(4000 + 2000 * k, 90), second=k)
        return "".join(x + "\n" for x in lines).encode()
    if fmt == "gemini":
        records = [gem.metadata()]
        for k in range(8):
            call = gem.tool_call(f"t{k}", "read_file", {"path": f"f{k}"}, f"x{k} " * 400)
            records += [gem.user(f"u{k}", f"task {k}"), gem.gemini(f"g{k}", f"done {k}", [call], tokens=4000 + 2000 * k)]
        return "".join(json.dumps(r) + "\n" for r in records).encode()
    s = Session(tmp_path)
    s.prompt("look")
    for k in range(8):
        s.tool("Bash", {"command": f"cat {k}"}, f"l{k}\n" * 400)
    s.say("done")
    s.write(tmp_path / "cc.jsonl")
    return (tmp_path / "cc.jsonl").read_bytes()


@pytest.mark.parametrize("fmt", ["claude-code", "codex", "gemini"])
def test_a_last_line_cut_short_is_named_or_skipped_in_every_line_format(runner, tmp_path, fmt):
    whole = _lines(fmt, tmp_path)
    path = tmp_path / "session.jsonl"
    path.write_bytes(whole + whole.splitlines()[-1][:40])
    n = whole.count(b"\n") + 1
    r = runner.invoke(app, ["stats", str(path), "--json"])
    assert r.exit_code == 3 and f"session.jsonl:{n}: truncated last line" in r.stderr, r.stderr
    for args in (["stats", "--json"], ["view"], ["compact", "--force", "--policy", "no-llm", "-o", "out.jsonl"]):
        r = runner.invoke(app, [args[0], str(path), "--on-bad-line", "skip", "--store", "st", *args[1:]])
        assert r.exit_code == 0, (args, r.stderr)
        assert f"skipped 1 unreadable line(s); first: {path}:{n}: truncated last line" in r.stderr
    out = Path("out.jsonl").read_bytes()
    assert out.startswith(whole) and whole.splitlines()[-1][:40] in out  # the cut line kept, its bytes as read
    r = runner.invoke(app, ["expand", "out.jsonl", "--store", "st", "--on-bad-line", "skip", "-o", "back.jsonl"])
    assert r.exit_code == 0, r.stderr
    # every byte back (the cut line ended with a newline: the compacted output went on after it); Claude Code's
    # own compaction lines stay after the history they put behind their boundary
    back = Path("back.jsonl").read_bytes()
    assert back.startswith(path.read_bytes() + b"\n") if fmt == "claude-code" else back == path.read_bytes() + b"\n"
