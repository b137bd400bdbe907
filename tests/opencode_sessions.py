"""OpenCode session exports for the tests, written from the format as OpenCode's source defines it
(sst/opencode ``packages/opencode/src/cli/cmd/export.ts``, ``packages/opencode/src/session/message-v2.ts``):
nothing here is copied from a real session."""
from __future__ import annotations

import json

SESSION = "ses_5a1e2b3c4d5e6f7a8b9c0d1e2f"
T0 = 1_767_000_000_000


def _mid(n: int) -> str:
    return f"msg_{n:012x}AbCdEfGhIjKlMn"


def user(n: int, text: str) -> dict:
    mid = _mid(n)
    return {"info": {"id": mid, "sessionID": SESSION, "role": "user", "time": {"created": T0 + n},
                     "agent": "build", "model": {"providerID": "anthropic", "modelID": "claude-sonnet-4-5"}},
            "parts": [{"id": f"prt_{n:012x}a", "sessionID": SESSION, "messageID": mid, "type": "text", "text": text}]}


def tool(n: int, k: int, name: str, args: dict, output: str | None, status: str = "completed",
         pruned: bool = False) -> dict:
    state: dict = {"status": status, "input": args}
    if status == "completed":
        state.update(output=output, title=name, metadata={}, time={"start": T0 + n, "end": T0 + n + 1})
        if pruned:
            state["time"]["compacted"] = T0 + 99
    elif status == "error":
        state.update(error=output, time={"start": T0 + n, "end": T0 + n + 1})
    return {"id": f"prt_{n:012x}t{k}", "sessionID": SESSION, "messageID": _mid(n), "type": "tool",
            "callID": f"toolu_{n}_{k}", "tool": name, "state": state}


def assistant(n: int, parent: int, text: str = "", tools: list[dict] = (), tokens: int | None = None,
              **info) -> dict:
    mid = _mid(n)
    parts: list[dict] = [{"id": f"prt_{n:012x}s", "sessionID": SESSION, "messageID": mid, "type": "step-start"}]
    if text:
        parts.append({"id": f"prt_{n:012x}x", "sessionID": SESSION, "messageID": mid, "type": "text", "text": text})
    parts += list(tools)
    usage = {"input": (tokens or 0) - 200, "output": 150, "reasoning": 50, "cache": {"read": 0, "write": 0}}
    if tokens is not None:
        parts.append({"id": f"prt_{n:012x}f", "sessionID": SESSION, "messageID": mid, "type": "step-finish",
                      "reason": "tool-calls" if tools else "stop", "cost": 0.01, "tokens": usage})
    return {"info": {"id": mid, "sessionID": SESSION, "role": "assistant", "parentID": _mid(parent),
                     "time": {"created": T0 + n, "completed": T0 + n + 1}, "modelID": "claude-sonnet-4-5",
                     "providerID": "anthropic", "mode": "build", "agent": "build", "cost": 0.01,
                     "tokens": usage if tokens is not None else {"input": 0, "output": 0, "reasoning": 0,
                                                                  "cache": {"read": 0, "write": 0}},
                     "finish": "stop", **info},
            "parts": parts}


def export(messages: list[dict]) -> dict:
    return {"info": {"id": SESSION, "slug": "quiet-river", "projectID": "a1b2c3", "directory": "/work/app",
                     "title": "Fix the tests", "version": "1.2.3", "time": {"created": T0, "updated": T0 + 500}},
            "messages": messages}


def write(path, messages: list[dict]) -> None:
    """As ``opencode export`` prints it: ``JSON.stringify(data, null, 2)``."""
    path.write_text(json.dumps(export(messages), indent=2, ensure_ascii=False) + "\n")


def database(path, messages: list[dict], wal: bool = True) -> None:
    """An ``opencode.db`` holding the session, in the tables ``session.sql.ts`` defines (a message's
    ``data`` without ``id``/``sessionID``, a part's without ``id``/``sessionID``/``messageID``)."""
    import sqlite3

    con = sqlite3.connect(path)
    if wal:
        con.execute("PRAGMA journal_mode=WAL")
    con.executescript("""
        CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT NOT NULL, parent_id TEXT, slug TEXT NOT NULL,
            directory TEXT NOT NULL, title TEXT NOT NULL, version TEXT NOT NULL, time_created INTEGER NOT NULL,
            time_updated INTEGER NOT NULL);
        CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, time_created INTEGER NOT NULL,
            time_updated INTEGER NOT NULL, data TEXT NOT NULL);
        CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT NOT NULL, session_id TEXT NOT NULL,
            time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);
    """)
    con.execute("INSERT INTO session VALUES (?, 'a1b2c3', NULL, 'quiet-river', '/work/app', 'Fix the tests', "
                "'1.2.3', ?, ?)", (SESSION, T0, T0 + 500))
    con.execute("INSERT INTO session VALUES ('ses_older', 'a1b2c3', NULL, 'old', '/work/app', 'Older', '1.2.3', ?, ?)",
                (T0 - 900, T0 - 800))
    for m in messages:
        info = {k: v for k, v in m["info"].items() if k not in ("id", "sessionID")}
        con.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)",
                    (m["info"]["id"], SESSION, T0, T0, json.dumps(info)))
        for p in m["parts"]:
            data = {k: v for k, v in p.items() if k not in ("id", "sessionID", "messageID")}
            con.execute("INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                        (p["id"], m["info"]["id"], SESSION, T0, T0, json.dumps(data)))
    con.commit()
    con.close()
