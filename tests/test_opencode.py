"""OpenCode session exports: read as ``opencode``, the messages OpenCode sends on (its compactions and
pruned outputs honoured, a call still running answered as OpenCode does), its step usage, and a
compaction OpenCode reads back, which ``expand`` takes out byte for byte. Run from the command line."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from opencode_sessions import assistant, tool, user, write

from ctxkit.transcript import pairing_problems, read_transcript


def ctxkit(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ctxkit.cli.main", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=120)


def _long(tmp_path: Path) -> tuple[Path, list[dict]]:
    msgs, n = [], 1
    for k in range(30):
        msgs += [user(n, f"read f{k}"),
                 assistant(n + 1, n, "", [tool(n + 1, 0, "read", {"filePath": f"f{k}"}, f"line {k} " * 800)],
                           tokens=2_000 * (k + 1))]
        n += 2
    msgs += [user(n, "run the tests"),
             assistant(n + 1, n, "Running.", [tool(n + 1, 0, "bash", {"command": "pytest"}, None, status="running")])]
    path = tmp_path / "session-export.json"
    write(path, msgs)
    return path, msgs


def test_stats_names_opencode_and_counts_by_its_step_usage(tmp_path):
    path, _ = _long(tmp_path)
    done = ctxkit("stats", "--json", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    stats = json.loads(done.stdout)
    assert stats["format"] == "opencode"
    assert stats["tokens_source"] == "usage" and stats["tokens_reported"] == 60_000


def test_the_view_is_what_opencode_sends(tmp_path):
    path = tmp_path / "e.json"
    write(path, [user(1, "fix it"),
                 assistant(2, 1, "Looking.", [tool(2, 0, "read", {"filePath": "a.py"}, "old output", pruned=True),
                                              tool(2, 1, "grep", {"pattern": "x"}, "no match", status="error")],
                           tokens=3_000),
                 assistant(3, 1, "", error={"name": "APIError", "data": {"message": "overloaded"}}),
                 user(4, "go on"),
                 assistant(5, 4, "On it.", [tool(5, 0, "bash", {"command": "make"}, None, status="pending")])])
    msgs = read_transcript(path).view().api_messages()
    assert not pairing_problems(msgs)
    results = {b["tool_use_id"]: b["content"] for m in msgs for b in m["content"] if b.get("type") == "tool_result"}
    assert results == {"toolu_2_0": "[Old tool result content cleared]", "toolu_2_1": "no match",
                       "toolu_5_0": "[Tool execution was interrupted]"}
    texts = [b["text"] for m in msgs for b in m["content"] if b.get("type") == "text"]
    assert texts == ["fix it", "Looking.", "go on", "On it."]  # the failed response is not sent


def test_an_opencode_compaction_replaces_what_it_summarized(tmp_path):
    path = tmp_path / "e.json"
    marker = user(5, "")
    marker["parts"] = [{"id": "prt_c", "sessionID": marker["info"]["sessionID"], "messageID": marker["info"]["id"],
                        "type": "compaction", "auto": True, "tail_start_id": "msg_000000000003AbCdEfGhIjKlMn"}]
    write(path, [user(1, "old question"), assistant(2, 1, "old answer"), user(3, "recent question"),
                 assistant(4, 3, "recent answer"), marker, assistant(6, 5, "The summary.", summary=True),
                 user(7, "next")])
    msgs = read_transcript(path).view().api_messages()
    texts = [b["text"] for m in msgs for b in m["content"] if b.get("type") == "text"]
    assert texts == ["What did we do so far?", "The summary.", "recent question", "recent answer", "next"]


def test_compact_appends_what_opencode_reads_and_expand_gives_the_export_back(tmp_path):
    path, msgs = _long(tmp_path)
    done = ctxkit("compact", "--force", "-p", "no-llm", str(path), "-o", "c.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "autocompact: applied" in done.stderr
    out = json.loads((tmp_path / "c.json").read_text())
    assert out["messages"][:len(msgs)] == msgs  # nothing before changed
    marker, summary = out["messages"][len(msgs):]
    assert marker["parts"][0]["type"] == "compaction" and summary["info"]["summary"] is True
    assert summary["info"]["parentID"] == marker["info"]["id"] > msgs[-1]["info"]["id"]  # ids sort after
    view = read_transcript(tmp_path / "c.json").view().api_messages()
    assert view[0]["content"][0]["text"] == "What did we do so far?" and not pairing_problems(view)
    done = ctxkit("expand", "c.json", "-o", "e.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "e.json").read_bytes() == path.read_bytes()


def test_the_database_is_read_while_opencode_holds_it_open_and_never_written(tmp_path):
    import sqlite3

    from opencode_sessions import SESSION, database

    _, msgs = _long(tmp_path)
    db = tmp_path / "opencode.db"
    database(db, msgs)
    writer = sqlite3.connect(db)  # OpenCode, mid-write: a transaction not yet committed
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO message VALUES ('msg_zzzz', ?, 0, 0, '{\"role\": \"user\"}')", (SESSION,))
    try:
        before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("opencode.db")}
        done = ctxkit("stats", "--json", str(db), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        stats = json.loads(done.stdout)
        assert stats["format"] == "opencode" and stats["tokens_reported"] == 60_000
        exported = ctxkit("view", f"{db}#{SESSION}", "--to", "anthropic", cwd=tmp_path)
        assert exported.returncode == 0, exported.stderr
        assert len(exported.stdout.splitlines()) == len(read_transcript(_long(tmp_path)[0]).view().api_messages())
        refused = ctxkit("compact", "--force", "-p", "no-llm", str(db), "-o", "out.json", cwd=tmp_path)
        assert refused.returncode == 2 and "read-only" in refused.stderr and "Traceback" not in refused.stderr
        assert not (tmp_path / "out.json").exists()
        missing = ctxkit("stats", f"{db}#ses_missing", cwd=tmp_path)
        assert missing.returncode == 2 and "no session 'ses_missing'" in missing.stderr
        after = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("opencode.db")}
        assert after == before
    finally:
        writer.rollback()
        writer.close()


def test_doctor_finds_no_problem_in_calls_opencode_answers_itself(tmp_path):
    path, _ = _long(tmp_path)
    done = ctxkit("doctor", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 errors" in done.stdout + done.stderr


def test_the_sessions_own_model_sets_the_budget(tmp_path):
    path = tmp_path / "e.json"
    write(path, [user(1, "hi"), assistant(2, 1, "Hello.", tokens=3_000, modelID="gpt-5", providerID="openai")])
    stats = json.loads(ctxkit("stats", "--json", str(path), cwd=tmp_path).stdout)
    assert stats["budget"]["model"] == "gpt-5"


def test_a_database_row_nested_too_deeply_is_read_as_an_empty_one(tmp_path):
    # json.loads raised RecursionError on a message's data column: exit 4
    import sqlite3

    from opencode_sessions import database

    _, msgs = _long(tmp_path)
    db = tmp_path / "opencode.db"
    database(db, msgs, wal=False)
    with sqlite3.connect(db) as con:
        con.execute("UPDATE part SET data = ? WHERE id = (SELECT min(id) FROM part)", ("[" * 100_000 + "]" * 100_000,))
    con.close()
    done = ctxkit("stats", "--json", str(db), cwd=tmp_path)
    assert done.returncode == 0, done.stderr


def test_a_compaction_over_the_threshold_counts_the_view_it_leaves_not_the_kept_tails_usage(tmp_path):
    """The kept tail's answers came before the compaction: their step tokens counted the whole history. Counted
    by them, the compacted view was as large as before, and compact declined ("would not be smaller")."""
    msgs, n = [], 1
    for k in range(50):  # the newest step reports 100,000 tokens: over the threshold of a 120,000 window (87,000)
        msgs += [user(n, f"read f{k}"),
                 assistant(n + 1, n, "", [tool(n + 1, 0, "read", {"filePath": f"f{k}"}, f"line {k} " * 800)],
                           tokens=2_000 * (k + 1))]
        n += 2
    write(tmp_path / "e.json", msgs)
    done = ctxkit("compact", "-p", "no-llm", "--set", "stages.microcompact.enabled=false", "--context-window",
                  "120000", "e.json", "-o", "c.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "autocompact: applied" in done.stderr, done.stderr
    stats = json.loads(ctxkit("stats", "--json", "--context-window", "120000", "c.json", cwd=tmp_path).stdout)
    assert stats["tokens_source"] == "estimate" and stats["tokens"] < 87_000  # under the threshold it crossed

def test_the_older_go_opencode_s_database_is_refused_naming_what_it_is(tmp_path):
    """A project's ``.opencode/opencode.db`` committed publicly is most often the older Go OpenCode's
    (opencode-ai/opencode, now Crush: ``sessions``/``messages`` tables by goose migrations, found so on 5
    real ones): refused naming what it is and where OpenCode keeps its sessions, not "no such table"."""
    import sqlite3

    db = tmp_path / "opencode.db"
    with sqlite3.connect(db) as con:
        con.executescript("CREATE TABLE goose_db_version (id INTEGER PRIMARY KEY, version_id INTEGER);"
                          "CREATE TABLE sessions (id TEXT PRIMARY KEY, title TEXT, message_count INTEGER);"
                          "CREATE TABLE messages (id TEXT PRIMARY KEY, session_id TEXT, role TEXT, parts TEXT);"
                          "INSERT INTO sessions VALUES ('s1', 'fix it', 1);"
                          "INSERT INTO messages VALUES ('m1', 's1', 'user', '[]');")
    con.close()
    before = db.read_bytes()
    done = ctxkit("stats", "--json", str(db), cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert "older Go OpenCode (opencode-ai/opencode" in done.stderr and "~/.local/share/opencode" in done.stderr
    assert "Traceback" not in done.stderr and db.read_bytes() == before
