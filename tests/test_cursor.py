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

# Cursor's plain-text transcript (agent-transcripts/<uuid>.txt), laid out as every one found committed
# publicly: turns after a blank line, <think> or [Thinking] reasoning, tool calls as text, empty results
PLAIN_TEXT = """user:
<user_query>
rename the helper; the log said:

user:
assistant:
</user_query>

assistant:
<think>
Find the helper first.
</think>
Looking for it.

[Tool call] Grep
  pattern: def helper
  path: /home/me/proj

[Tool result] Grep

assistant:
[Thinking] **Renaming**
[Tool call] StrReplace
  path: /home/me/proj/utils.py
  old_string: def helper():
  new_string: def compute():

[Tool result] StrReplace

user:
<attached_files>

<code_selection path="/home/me/proj/utils.py" lines="1-2">

user:
</code_selection>

</attached_files>
<user_query>
thanks
</user_query>

assistant:
Done: `helper` is now `compute`.
"""


def test_a_plain_text_transcript_is_read_as_cursor_read_only(tmp_path):
    path = tmp_path / "5d0c9e1a-2222-4333-8444-955556666777.txt"
    path.write_text(PLAIN_TEXT)
    done = ctxkit("stats", "--json", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr  # was exit 3: "not valid JSON"
    assert json.loads(done.stdout)["format"] == "cursor"
    msgs = read_transcript(path).view().api_messages()
    assert not pairing_problems(msgs)
    texts = [(m["role"], b["text"]) for m in msgs for b in m["content"]]
    # a "user:" line inside the prompt or the attachments opens no turn; <think> is left out
    assert [r for r, _ in texts] == ["user", "assistant", "assistant", "user", "assistant"]
    assert texts[0][1] == "<user_query>\nrename the helper; the log said:\n\nuser:\nassistant:\n</user_query>"
    assert texts[1][1].startswith("Looking for it.\n\n[Tool call] Grep\n  pattern: def helper")
    assert "Find the helper" not in texts[1][1]
    assert texts[2][1].startswith("[Thinking] **Renaming**\n[Tool call] StrReplace")
    assert texts[3][1].endswith("<user_query>\nthanks\n</user_query>") and "<code_selection" in texts[3][1]
    assert texts[4][1] == "Done: `helper` is now `compute`."
    assert ctxkit("check", str(path), cwd=tmp_path).returncode == 0
    refused = ctxkit("compact", "--force", "-p", "no-llm", str(path), "-o", "c.txt", cwd=tmp_path)
    assert refused.returncode == 2 and "read-only" in refused.stderr and not (tmp_path / "c.txt").exists()
    assert path.read_text() == PLAIN_TEXT


def test_a_json_array_transcript_is_read_as_cursor_read_only(tmp_path):
    # Cursor's JSON layout (agent-transcripts/<uuid>.json, indented by two): calls in toolCalls, results
    # holding only the tool's name
    turns = [{"role": "user", "text": "<user_query>\nlist the files\n</user_query>"},
             {"role": "assistant", "text": "<think>\nUse ls.\n</think>\nListing them.",
              "toolCalls": [{"toolName": "list_dir", "args": {"target_directory": "/home/me"}}]},
             {"role": "tool", "toolResult": {"toolName": "list_dir"}},
             {"role": "assistant", "text": "Two files: a.py and b.py."}]
    path = tmp_path / "5d0c9e1a-2222-4333-8444-955556666777.json"
    path.write_text(json.dumps(turns, indent=2, ensure_ascii=False))
    done = ctxkit("stats", "--json", str(path), cwd=tmp_path)
    # was exit 3: 'tool_result "" answers no tool_use before it'
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["format"] == "cursor"
    msgs = read_transcript(path).view().api_messages()
    assert not pairing_problems(msgs)
    texts = [(m["role"], b["text"]) for m in msgs for b in m["content"]]
    assert texts == [("user", "<user_query>\nlist the files\n</user_query>"), ("assistant", "Listing them."),
                     ("assistant", '[Tool call] list_dir {"target_directory": "/home/me"}'),
                     ("assistant", "Two files: a.py and b.py.")]
    refused = ctxkit("compact", "--force", "-p", "no-llm", str(path), "-o", "c.json", cwd=tmp_path)
    assert refused.returncode == 2 and "read-only" in refused.stderr and not (tmp_path / "c.json").exists()


def test_a_json_array_of_other_messages_is_not_taken_for_cursor(tmp_path):
    # same opening, but a key Cursor's layout does not have: read as what it is (an Anthropic list)
    path = tmp_path / "m.json"
    path.write_text(json.dumps([{"role": "user", "text": "x", "content": "hi"}]))
    done = ctxkit("stats", "--json", str(path), cwd=tmp_path)
    assert done.returncode in (0, 3) and "Traceback" not in done.stderr
    assert done.returncode != 0 or json.loads(done.stdout)["format"] != "cursor"


def test_a_json_array_transcript_nested_too_deeply_is_a_bad_file_not_an_internal_error(tmp_path):
    # it opens as an older Cursor transcript; json.loads recursed past its limit (exit 4)
    deep = "[" * 100_000 + "1" + "]" * 100_000
    (tmp_path / "t.json").write_text('[{"role":"user","text":"hi"},' + deep + "]")
    done = ctxkit("stats", "t.json", cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert done.stderr.startswith("ctxkit: error: t.json:1: ") and "internal error" not in done.stderr
