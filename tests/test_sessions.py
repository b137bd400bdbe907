"""``ctxkit sessions``: every agent's sessions under a fake home, one line each, filtered by agent and
date, and its JSON the input of a batch. Run from the command line."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import cline_tasks
import codex_rollouts
import gemini_sessions
import opencode_sessions

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "session.jsonl"


def ctxkit(*args: str, home: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "XDG_DATA_HOME",
                                                                "APPDATA")}
    env["HOME"] = str(home)
    return subprocess.run([sys.executable, "-m", "ctxkit.cli.main", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=180, env=env)


def _home(tmp_path: Path) -> tuple[Path, Path]:
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir(parents=True)
    claude = home / ".claude" / "projects" / "-work-app" / "0b5c7e2a-1111-4222-8333-944445555666.jsonl"
    claude.parent.mkdir(parents=True)
    claude.write_bytes(EXAMPLE.read_bytes())
    rollout = home / ".codex" / "sessions" / "2026" / "03" / "01" / "rollout-2026-03-01T10-00-00-abc.jsonl"
    rollout.parent.mkdir(parents=True)
    codex_rollouts.write(rollout, codex_rollouts.opening() + codex_rollouts.turn(1, "list files", [], "Done.",
                                                                                 usage=(9_000, 100)))
    gem = home / ".gemini" / "tmp" / "9f86d081" / "chats" / "session-2026-03-01T10-00-5a1e2b3c.jsonl"
    gem.parent.mkdir(parents=True)
    gemini_sessions.write(gem, [gemini_sessions.metadata(), gemini_sessions.user("u1", "hi"),
                                gemini_sessions.gemini("g1", "Hello.", tokens=4_400)])
    db = home / ".local" / "share" / "opencode" / "opencode.db"
    db.parent.mkdir(parents=True)
    opencode_sessions.database(db, [opencode_sessions.user(1, "hi"),
                                    opencode_sessions.assistant(2, 1, "Hello.", tokens=7_000)], wal=False)
    task = (home / ".config" / "Code" / "User" / "globalStorage" / "saoudrizwan.claude-dev" / "tasks" / "1767000000000"
            / "api_conversation_history.json")
    task.parent.mkdir(parents=True)
    cline_tasks.write(task, [cline_tasks.task("fix it"), cline_tasks.say("Fixed.")])
    cursor = home / ".cursor" / "projects" / "work-app" / "agent-transcripts" / "c0ffee00" / "c0ffee00.jsonl"
    cursor.parent.mkdir(parents=True)
    cursor.write_text(json.dumps({"role": "user", "message": {"content": [{"type": "text", "text": "hi"}]}}) + "\n")
    (work / ".aider.chat.history.md").write_text("\n# aider chat started at 2026-03-01 10:00:00\n\n#### hi\n\nHello.\n")
    old = 1_700_000_000  # 2023-11-14: before --since below
    for path in (claude, rollout):
        os.utime(path, (old, old))
    return home, work


def test_every_agents_sessions_are_listed(tmp_path):
    home, work = _home(tmp_path)
    done = ctxkit("sessions", "--json", home=home, cwd=work)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert sorted(s["agent"] for s in found) == sorted(["claude-code", "codex", "gemini", "opencode", "cline",
                                                         "cursor", "aider"])
    by_agent = {s["agent"]: s for s in found}
    assert by_agent["codex"]["tokens"] == 9_100 and by_agent["gemini"]["tokens"] == 4_400
    assert by_agent["opencode"]["tokens"] == 7_000
    assert by_agent["opencode"]["path"].endswith(f"opencode.db#{opencode_sessions.SESSION}")
    assert all(s["size"] > 0 and s["error"] is None and s["tokens"] for s in found)
    assert by_agent["claude-code"]["last_used"] == "2023-11-14T22:13:20Z"
    lines = ctxkit("sessions", home=home, cwd=work).stdout.splitlines()
    assert len(lines) == 7  # one line each, newest first: the two files touched in 2023 last
    assert {ln.split()[1] for ln in lines[-2:]} == {"codex", "claude-code"}
    assert lines[-1].endswith(by_agent["claude-code"]["path"]) or lines[-1].endswith(by_agent["codex"]["path"])


def test_agent_and_since_filter_and_the_json_feeds_a_batch(tmp_path):
    home, work = _home(tmp_path)
    codex = json.loads(ctxkit("sessions", "--agent", "codex", "--json", home=home, cwd=work).stdout)
    assert [s["agent"] for s in codex] == ["codex"]
    recent = json.loads(ctxkit("sessions", "--since", "2024-01-01", "--json", home=home, cwd=work).stdout)
    assert {s["agent"] for s in recent} == {"gemini", "opencode", "cline", "cursor", "aider"}
    files = [s["path"] for s in recent if s["agent"] != "opencode"]
    batch = ctxkit("stats", "--json", *files, home=home, cwd=work)
    assert batch.returncode == 0, batch.stderr
    bad = ctxkit("sessions", "--agent", "nosuch", home=home, cwd=work)
    assert bad.returncode == 2 and "unknown agent" in bad.stderr
    bad = ctxkit("sessions", "--since", "last tuesday", home=home, cwd=work)
    assert bad.returncode == 2 and "--since" in bad.stderr


def test_a_batch_takes_task_folders_and_a_database_session(tmp_path):
    home, work = _home(tmp_path)
    tasks = home / ".config" / "Code" / "User" / "globalStorage" / "saoudrizwan.claude-dev" / "tasks"
    db = json.loads(ctxkit("sessions", "--agent", "opencode", "--json", home=home, cwd=work).stdout)[0]["path"]
    done = ctxkit("stats", "--json", str(tasks), db, home=home, cwd=work)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["sessions"] == 2 and out["messages"] == 4  # the task's two messages, the session's two


def test_since_reads_no_session_older_than_it(tmp_path, monkeypatch):
    # counting a session's tokens reads it whole: the filter came after, so every old session was read
    from ctxkit.reports import sessions

    home, work = _home(tmp_path)
    read = []
    real = sessions.read_transcript
    monkeypatch.setattr(sessions, "read_transcript", lambda path, **kw: read.append(Path(path).name) or real(path, **kw))
    found = sessions.find_sessions(home=home, env={}, cwd=work, since=sessions.parse_since("2024-01-01"))
    assert {s.agent for s in found} == {"gemini", "opencode", "cline", "cursor", "aider"}
    assert len(read) == 4 and not any(name.startswith("rollout-") or name.startswith("0b5c7e2a") for name in read)


def test_an_opencode_session_updated_at_a_time_no_clock_reaches_is_listed_at_the_databases_time(tmp_path):
    import sqlite3

    home, work = _home(tmp_path)
    db = home / ".local" / "share" / "opencode" / "opencode.db"
    for value in (1e300, 99_999_999_999_999_999, -99_999_999_999_999_999):
        with sqlite3.connect(db) as con:
            con.execute("UPDATE session SET time_updated = ?", (value,))
        con.close()
        os.utime(db, (1_800_000_000, 1_800_000_000))
        done = ctxkit("sessions", "--agent", "opencode", "--json", home=home, cwd=work)
        assert done.returncode == 0, done.stderr  # was exit 4 (OverflowError, year out of range)
        assert [s["last_used"] for s in json.loads(done.stdout)] == ["2027-01-15T08:00:00Z"]

def test_cursors_older_transcripts_are_listed_too(tmp_path):
    # agent-transcripts/<id>.txt and <id>.json, side by side (as found in public repositories); not the
    # agent-tools/ outputs beside them
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    folder = home / ".cursor" / "projects" / "home-me-app" / "agent-transcripts"
    folder.mkdir(parents=True)
    (folder / "1abf84fa.txt").write_text("user:\n<user_query>\nhi\n</user_query>\n\nassistant:\nHello.\n")
    (folder / "1abf84fa.json").write_text(json.dumps([{"role": "user", "text": "<user_query>\nhi\n</user_query>"},
                                                      {"role": "assistant", "text": "Hello."}], indent=2))
    tools = home / ".cursor" / "projects" / "home-me-app" / "agent-tools"
    tools.mkdir()
    (tools / "0cd9e488.txt").write_text("total 0\n")
    done = ctxkit("sessions", "--agent", "cursor", "--json", home=home, cwd=work)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert sorted(Path(s["path"]).name for s in found) == ["1abf84fa.json", "1abf84fa.txt"]
    assert all(s["error"] is None and s["tokens"] for s in found)

def test_gemini_clis_checkpoints_and_older_sessions_are_listed_as_gemini(tmp_path):
    home, work = _home(tmp_path)
    project = home / ".gemini" / "tmp" / "9f86d081"
    (project / "checkpoint-before-refactor.json").write_text(json.dumps(
        {"history": [{"role": "user", "parts": [{"text": "hi"}]}, {"role": "model", "parts": [{"text": "Hello."}]}],
         "authType": "gemini-api-key"}, indent=2))
    (project / "chats" / "session-2025-09-01T10-00-1a2b3c4d.json").write_text(json.dumps(
        {**gemini_sessions.metadata(), "messages": [gemini_sessions.user("u1", "hi")]}, indent=2))
    done = ctxkit("sessions", "--json", "--agent", "gemini", home=home, cwd=work)
    assert done.returncode == 0, done.stderr
    found = {Path(s["path"]).name: s for s in json.loads(done.stdout)}
    assert set(found) == {"checkpoint-before-refactor.json", "session-2025-09-01T10-00-1a2b3c4d.json",
                          "session-2026-03-01T10-00-5a1e2b3c.jsonl"}
    assert all(s["agent"] == "gemini" and s["error"] is None and s["tokens"] for s in found.values())
