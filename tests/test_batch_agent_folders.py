"""A batch given a folder takes every agent's sessions in it, found by their content (Codex rollouts plain
and compressed, Gemini CLI sessions and checkpoints, Cline histories, OpenCode exports, aider histories),
and leaves alone what is not one: an agent's settings, Cline's UI log, a project's ``package.json``, a
README, and ctxkit's own stores, hidden or named by ``--store``."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import cline_tasks
import codex_rollouts
import gemini_sessions
import opencode_sessions
import pytest
import zstandard

from ctxkit.batch.inputs import expand_inputs

AIDER = "# aider chat started at 2026-03-01 10:00:00\n\n> Main model: gpt-4o\n\n#### hello\n\nHi.\n"


def _mixed(root: Path) -> dict[str, str]:
    """The folder, and the format ``stats`` names for each session in it."""
    (root / "codex" / "2026" / "03").mkdir(parents=True)
    rollout = root / "codex" / "2026" / "03" / "rollout-a.jsonl"
    codex_rollouts.write(rollout, codex_rollouts.opening() + codex_rollouts.turn(1, "hi", [("c1", "ls", "a\n")], "ok"))
    packed = root / "codex" / "2026" / "03" / "rollout-b.jsonl.zst"
    packed.write_bytes(zstandard.ZstdCompressor(level=3).compress(rollout.read_bytes()))
    (root / "gemini" / "chats").mkdir(parents=True)
    g = gemini_sessions
    recs = [g.user("u1", "hi"), g.gemini("g1", "hello")]
    (root / "gemini" / "chats" / "session-2025-09-01T10-00-5a1e2b3c.json").write_text(
        json.dumps({**g.metadata(), "messages": recs}, indent=2))
    turns = [[{"role": "user", "parts": [{"text": f"question {k} " * 200}]},
              {"role": "model", "parts": [{"text": f"answer {k} " * 200}]}] for k in range(4)]
    (root / "gemini" / "checkpoint-mine.json").write_text(json.dumps(
        {"history": [c for turn in turns for c in turn], "authType": "gemini-api-key"}, indent=2))
    (root / "gemini" / "settings.json").write_text(json.dumps({"security": {"auth": {"selectedType": "x"}}}))
    (root / "cline" / "tasks" / "1767").mkdir(parents=True)
    task = root / "cline" / "tasks" / "1767"
    (task / "api_conversation_history.json").write_text(json.dumps([cline_tasks.task("fix it"),
                                                                    {"role": "assistant", "content": [
                                                                        {"type": "text", "text": "done"}]}]))
    (task / "ui_messages.json").write_text(json.dumps([{"ts": 1, "type": "say", "say": "text", "text": "fix it"}]))
    (task / "task_metadata.json").write_text(json.dumps({"files_in_context": [], "model_usage": []}))
    (root / "opencode").mkdir()
    o = opencode_sessions
    o.write(root / "opencode" / "ses_1.json", [o.user(0, "hi"), o.assistant(1, 0, "hello")])
    (root / "project").mkdir()
    (root / "project" / ".aider.chat.history.md").write_text(AIDER)
    (root / "project" / "notes.md").write_text(AIDER)  # an aider history by its content, whatever its name
    (root / "project" / "README.md").write_text("# A project\n\nNothing to see.\n")
    (root / "project" / "package.json").write_text(json.dumps({"name": "app", "version": "1.0.0",
                                                               "messages": "not a list"}))
    (root / "project" / "tsconfig.json").write_text("{\n  \"compilerOptions\": {}\n}\n")
    return {"codex/2026/03/rollout-a.jsonl": "codex", "codex/2026/03/rollout-b.jsonl.zst": "codex",
            "gemini/chats/session-2025-09-01T10-00-5a1e2b3c.json": "gemini",
            "gemini/checkpoint-mine.json": "gemini-checkpoint",
            "cline/tasks/1767/api_conversation_history.json": "cline", "opencode/ses_1.json": "opencode",
            "project/.aider.chat.history.md": "aider", "project/notes.md": "aider"}


def test_a_folder_of_every_agents_sessions_is_one_batch_and_nothing_else_is_read(tmp_path):
    root = tmp_path / "sessions"
    want = _mixed(root)
    # a compaction's store beside them, named by --store (not hidden), and the default one (hidden)
    done = subprocess.run([sys.executable, "-m", "ctxkit.cli.main", "compact", "--force", "-p", "no-llm",
                           "--store", str(root / "store"), str(root / "gemini" / "checkpoint-mine.json"), "-o",
                           str(tmp_path / "c.json")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert any((root / "store" / "blobs").rglob("*.json"))  # archived messages: JSON of messages, no session
    # (and were a store to hold a file laid out as a session is, it is still the store's, not a session)
    (root / "store" / "blobs" / "a.json").write_text((root / "gemini" / "checkpoint-mine.json").read_text())
    (root / ".ctxkit").mkdir()
    (root / ".ctxkit" / "x.jsonl").write_text("{}\n")
    found = sorted(item.rel for item in expand_inputs([str(root)]))
    assert found == sorted(want)
    stats = subprocess.run([sys.executable, "-m", "ctxkit.cli.main", "stats", "sessions", "--report-file", "r.jsonl",
                            "-j", "1"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert stats.returncode == 0, stats.stderr
    docs = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert sorted(d["file"].removeprefix("sessions/") for d in docs[:-1]) == sorted(want)
    assert docs[-1]["totals"]["files"] == len(want) and all(d["status"] == "ok" for d in docs[:-1])


def test_a_bucket_folder_is_walked_by_content_too(tmp_path):
    """(A folder given as a URL, ``memory://`` here as ``s3://`` in a fleet: the same files, found the same way.)"""
    fsspec = pytest.importorskip("fsspec", reason="the dask extra is not installed: pip install 'ctxkit[dask]'")
    fs, root = fsspec.filesystem("memory"), f"/ctxkit-test-{tmp_path.name[-24:]}"
    local = tmp_path / "sessions"
    want = _mixed(local)
    (local / "store" / "blobs").mkdir(parents=True)
    (local / "store" / ".ctxkit-store").write_text('{"format": 1}')
    (local / "store" / "blobs" / "a.json").write_text((local / "gemini" / "checkpoint-mine.json").read_text())
    for path in local.rglob("*"):
        if path.is_file():
            fs.pipe_file(f"{root}/{path.relative_to(local).as_posix()}", path.read_bytes())
    found = sorted(item.rel for item in expand_inputs([f"memory://{root}"]))
    assert found == sorted(want)
