"""aider chat histories: read (by content) as aider restores them, read-only. Run from the command line."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ctxkit.transcript import read_transcript

# as aider's io.py writes it: a header per run, #### user input, > tool output, the replies as they are
HISTORY = """
# aider chat started at 2026-03-01 10:00:00

> Aider v0.86.0
> Main model: claude-sonnet-4-5 with diff edit format

#### add a --verbose flag
#### to the CLI

I'll add it to `cli.py`.

cli.py
```python

parser.add_argument("--verbose")
```

> Applied edit to cli.py

#### /run pytest

> 3 passed

# aider chat started at 2026-03-02 09:00:00

#### thanks

You're welcome.
"""


def ctxkit(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ctxkit.cli.main", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=120)


def test_the_history_is_read_as_aider_restores_it(tmp_path):
    path = tmp_path / "notes.md"  # read by its content, whatever it is called
    path.write_text(HISTORY)
    done = ctxkit("stats", "--json", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["format"] == "aider"
    msgs = read_transcript(path).view().api_messages()
    assert [m["role"] for m in msgs] == ["user", "assistant", "user", "assistant"]
    texts = [[b["text"] for b in m["content"]] if isinstance(m["content"], list) else [m["content"]] for m in msgs]
    assert texts[0] == ["add a --verbose flag\nto the CLI\n"]  # two #### lines: one input
    assert "parser.add_argument" in "".join(texts[1]) and "Applied edit" not in "".join(texts[1])
    assert texts[2] == ["/run pytest\n", "thanks\n"]  # (the tool output between them left out)
    assert "".join(texts[3]).strip() == "You're welcome."


def test_compact_is_refused_and_writes_nothing(tmp_path):
    path = tmp_path / ".aider.chat.history.md"
    path.write_text(HISTORY)
    done = ctxkit("compact", "--force", "-p", "no-llm", str(path), "-o", "out.md", cwd=tmp_path)
    assert done.returncode == 2 and "read-only" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "out.md").exists() and path.read_text() == HISTORY


def test_doctor_takes_a_last_reply_ending_in_a_newline_for_no_problem(tmp_path):
    # aider adds the next input after the history it restores: its last reply is never sent as a prefill,
    # so the newline every Markdown reply ends with is no "final assistant content" error (it was, on a
    # real history)
    path = tmp_path / ".aider.chat.history.md"
    path.write_text(HISTORY)
    done = ctxkit("doctor", "--json", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not [f for f in json.loads(done.stdout)["findings"] if f["severity"] == "error"]

def test_the_model_is_the_newest_runs_announcement(tmp_path):
    """aider announces its model when it starts (``Main model: <name> with <format> edit format``, or
    ``Model:`` without a weak model): the newest run's names the model, its window and its prices."""
    path = tmp_path / ".aider.chat.history.md"
    path.write_text(HISTORY + "\n# aider chat started at 2026-03-03 09:00:00\n\n> Aider v0.86.1\n"
                              "> Model: openrouter/openai/gpt-4o with whole edit format\n\n#### more\n\nSure.\n")
    budget = json.loads(ctxkit("stats", "--json", str(path), cwd=tmp_path).stdout)["budget"]
    assert budget["model"] == "gpt-4o" and budget["context_window"] == 128_000  # (the provider's path dropped)
    path.write_text(HISTORY)
    budget = json.loads(ctxkit("stats", "--json", str(path), cwd=tmp_path).stdout)["budget"]
    assert budget["model"] == "claude-sonnet-4-5"
