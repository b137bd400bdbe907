"""Cursor agent transcripts: read as ``cursor`` (lines split on \\n only), tool calls without ids shown
as text so the view is a valid request, and compact + expand byte for byte. Run from the command line."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ctxkit.transcript import pairing_problems, read_transcript


def ctxkit(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ctxkit.cli.main", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=120)


def user(text: str) -> dict:
    return {"role": "user", "message": {"content": [{"type": "text", "text": f"<user_query>\n{text}\n</user_query>"}]}}


def assistant(text: str, tool: tuple[str, dict] | None = None) -> dict:
    content = [{"type": "text", "text": text}] if text else []
    if tool is not None:
        content.append({"type": "tool_use", "name": tool[0], "input": tool[1]})
    return {"role": "assistant", "message": {"content": content}}


def write(path: Path, lines: list[dict]) -> None:
    # as Cursor writes them: JSON with U+2028 left unescaped (JSON allows it; Python's splitlines would cut there)
    path.write_bytes(b"".join(json.dumps(d, ensure_ascii=False).encode() + b"\n" for d in lines))


def _transcript(tmp_path: Path) -> Path:
    path = tmp_path / "0b5c7e2a-1111-4222-8333-944445555666.jsonl"
    write(path, [user("why does\u2028this fail?"), assistant("Let me look.", ("Read", {"path": "a.py"})),
                 assistant("It divides by zero.")])
    return path


def test_stats_names_cursor_and_the_view_shows_calls_as_text(tmp_path):
    path = _transcript(tmp_path)
    done = ctxkit("stats", "--json", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["format"] == "cursor"
    t = read_transcript(path)
    msgs = t.view().api_messages()
    assert not pairing_problems(msgs) and t.n_lines == 3  # U+2028 inside a line does not split it
    texts = [b["text"] for m in msgs for b in m["content"]]
    assert texts == ["<user_query>\nwhy does\u2028this fail?\n</user_query>", "Let me look.",
                     '[Tool call] Read {"path": "a.py"}', "It divides by zero."]


def test_compact_then_expand_gives_the_transcript_back_byte_for_byte(tmp_path):
    lines = []
    for k in range(30):
        lines += [user(f"read f{k}"), assistant(f"f{k} holds " + f"line {k} " * 800, ("Read", {"path": f"f{k}"}))]
    path = tmp_path / "t.jsonl"
    write(path, lines)
    done = ctxkit("compact", "--force", "-p", "no-llm", str(path), "-o", "c.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "autocompact: applied" in done.stderr
    first = json.loads((tmp_path / "c.jsonl").read_text().splitlines()[0])
    assert first["message"]["content"][0]["text"].startswith("This session is being continued")
    assert json.loads(ctxkit("stats", "--json", "c.jsonl", cwd=tmp_path).stdout)["format"] == "cursor"
    done = ctxkit("expand", "c.jsonl", "-o", "e.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "e.jsonl").read_bytes() == path.read_bytes()


def test_a_line_whose_role_is_missing_or_no_string_is_named_not_an_internal_error(tmp_path):
    # the projection and the line index key on the role: a line without one (or with a list) was exit 4
    for name, bad in (("missing.jsonl", {"message": {"content": [{"type": "text", "text": "look"}]}}),
                      ("list.jsonl", {"role": [[]], "message": {"content": "hi"}})):
        path = tmp_path / name
        write(path, [user("why"), assistant("look"), bad])
        for args in (("view", "--to", "anthropic-request"), ("compact", "--force", "-p", "no-llm")):
            done = ctxkit(*args, name, cwd=tmp_path)
            assert done.returncode == 3, done.stderr
            assert f"{name}:3: role must be \"user\" or \"assistant\", got" in done.stderr
