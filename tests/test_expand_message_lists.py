"""``ctxkit expand`` gives a compacted Anthropic / OpenAI message list back byte for byte.

A message list has no room for records: a compaction replaces the history by one summary line whose
last paragraph names the history blob in the store. expand puts the blob's lines back in the summary's
place (a compaction of a compaction one level at a time), takes out the lines it re-injected after
the kept tail, and restores from the ledger what earlier stages cleared in those lines. Run end to end,
as a user does, from the command line.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "session.jsonl"


def ctxkit(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ctxkit.cli.main", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=120)


@pytest.mark.parametrize("to", ["anthropic", "openai"])
def test_a_compacted_message_list_comes_back_byte_for_byte(tmp_path, to):
    view = ctxkit("view", "--to", to, str(EXAMPLE), cwd=tmp_path)
    assert view.returncode == 0, view.stderr
    (tmp_path / "m.json").write_text(view.stdout)
    compacted = ctxkit("compact", "--force", "m.json", "-o", "c.json", cwd=tmp_path)
    assert compacted.returncode == 0, compacted.stderr
    assert "manual compaction" in compacted.stderr and "cleared 3 old tool result(s)" in compacted.stderr
    assert len((tmp_path / "c.json").read_text().splitlines()) < len(view.stdout.splitlines())
    back = ctxkit("expand", "c.json", "-o", "r.json", cwd=tmp_path)
    assert back.returncode == 0, back.stderr
    assert back.stderr == "restored 3 tool output(s)\n"  # the three cleared, the persisted log among them
    assert (tmp_path / "r.json").read_bytes() == (tmp_path / "m.json").read_bytes()


@pytest.mark.parametrize("to", ["anthropic", "openai"])
def test_a_compaction_of_a_compaction_comes_back_too(tmp_path, to):
    """The second summary's history holds the first summary: both are undone, and the lines the agent
    added between the two runs stay where they were."""
    lines = ctxkit("view", "--to", to, str(EXAMPLE), cwd=tmp_path).stdout.splitlines(keepends=True)
    (tmp_path / "m.json").write_text("".join(lines))
    assert ctxkit("compact", "--force", "m.json", "-o", "c.json", cwd=tmp_path).returncode == 0
    later = lines[-6:]  # the agent goes on: more turns after the compacted list
    (tmp_path / "c1.json").write_text((tmp_path / "c.json").read_text() + "".join(later))
    again = ctxkit("compact", "--force", "--format", to, "c1.json", "-o", "c2.json", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert ctxkit("expand", "--format", to, "c2.json", "-o", "r.json", cwd=tmp_path).returncode == 0
    assert (tmp_path / "r.json").read_text() == "".join(lines + later)


def test_the_lines_a_compaction_re_injected_are_taken_out_again(tmp_path):
    """A file the history read, inside the list's folder, is read again after the summary; expand
    removes that line with the rest of the compaction."""
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    read = {"type": "tool_use", "id": "toolu_r1", "name": "Read", "input": {"file_path": str(tmp_path / "calc.py")}}
    messages = [
        {"role": "user", "content": "Look at calc.py and tell me what add does."},
        {"role": "assistant", "content": [{"type": "text", "text": "Reading it."}, read]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_r1",
                                      "content": "1\tdef add(a, b):\n2\t    return a + b\n"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "add returns the sum of a and b. " * 300}]},
        {"role": "user", "content": "Thanks. Now add a docstring."},
        {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
    ]
    original = "".join(json.dumps(m, separators=(",", ":")) + "\n" for m in messages)
    (tmp_path / "m.json").write_text(original)
    compacted = ctxkit("compact", "--force", "m.json", "-o", "c.json", cwd=tmp_path)
    assert compacted.returncode == 0, compacted.stderr
    out = (tmp_path / "c.json").read_text()
    assert "return a + b" in out.splitlines()[-1]  # the file, re-read after the kept tail
    back = ctxkit("expand", "c.json", "-o", "r.json", cwd=tmp_path)
    assert back.returncode == 0, back.stderr
    assert (tmp_path / "r.json").read_text() == original


def test_a_summary_ctxkit_did_not_write_stays(tmp_path):
    """A Claude Code session's own summary, in its view as a message list, names the session's file:
    not a blob of the store, so not a compaction for expand to undo, and nothing is reported missing."""
    summary = ("This session is being continued from a previous conversation that ran out of context. The summary "
               "below covers the earlier portion of the conversation.\n\nSummary:\n1. Primary Request: fix it.\n\n"
               "If you need exact details from before the compaction (code snippets, error messages, content you "
               "produced), read the full transcript at: /home/dev/.claude/projects/-w/0b5e.jsonl")
    text = (json.dumps({"role": "user", "content": summary}) + "\n"
            + json.dumps({"role": "assistant", "content": "Going on."}) + "\n")
    (tmp_path / "m.json").write_text(text)
    back = ctxkit("expand", "m.json", "-o", "r.json", "--store", str(tmp_path / "store"), cwd=tmp_path)
    assert back.returncode == 0, back.stderr
    assert (tmp_path / "r.json").read_text() == text


def test_a_history_blob_gone_from_the_store_leaves_the_summary_and_says_so(tmp_path):
    (tmp_path / "m.json").write_text(ctxkit("view", "--to", "anthropic", str(EXAMPLE), cwd=tmp_path).stdout)
    assert ctxkit("compact", "--force", "m.json", "-o", "c.json", cwd=tmp_path).returncode == 0
    summary = json.loads((tmp_path / "c.json").read_text().splitlines()[0])["content"][0]["text"]
    blob = Path(summary.split("read the full transcript at: ")[1].split()[0])
    blob.unlink()
    back = ctxkit("expand", "c.json", "-o", "r.json", cwd=tmp_path)
    assert back.returncode == 1
    assert f"record(s) left in place, their originals not restored (store {tmp_path / '.ctxkit'}): compaction " \
           f"{blob}: stored original not found in the store" in " ".join(back.stderr.split())
    assert (tmp_path / "r.json").read_text().splitlines()[0] == (tmp_path / "c.json").read_text().splitlines()[0]
