"""OpenCode's SQLite store (``opencode.db``, since OpenCode 1.2), read-only: one session of it as the
export ``opencode export`` would print.

The tables, as ``packages/opencode/src/session/session.sql.ts`` defines them: ``session`` (``id``,
``title``, ``directory``, ``time_created``, ``time_updated``, ...), ``message`` (``id``,
``session_id``, ``time_created``, ``time_updated``, ``data``: the message's ``info`` without its
``id`` and ``sessionID``) and ``part`` (``id``, ``message_id``, ``session_id``, ..., ``data``: the part
without ``id``, ``sessionID``, ``messageID``); a session's messages and parts come in the order of their
ids (OpenCode's ids sort by creation). The file is opened with a ``mode=ro`` URI: nothing is written
to it, and a database OpenCode holds open in WAL mode is read as of its last commit. ctxkit never
writes to it: OpenCode caches what it reads, and a row changed under it could be lost or undone, so
the output of a run is refused (write the session out with ``ctxkit view --to``, or export it with
``opencode export`` and work on that).

A database holds many sessions: ``opencode.db#<session id>`` names one; ``opencode.db`` alone is the
session used last.
"""
from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from urllib.parse import quote

from ...errors import InputError
from ...side_files import parse_json

MAGIC = b"SQLite format 3\x00"
READ_ONLY = ("an OpenCode database is read-only for ctxkit (OpenCode may hold it open, and a row changed under "
             "it could be lost): write the session with `ctxkit view --to anthropic`, or run on "
             "`opencode export <session>`'s output instead")


def split_session(path: str) -> tuple[str, str | None]:
    """``opencode.db#ses_x`` as the database's path and the session's id (None: no ``#`` part)."""
    if "#" in path and not os.path.exists(path):
        base, _, session = path.rpartition("#")
        if os.path.isfile(base):
            return base, session or None
    return path, None


def _connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True)


def _loads(text) -> dict:
    try:
        value = parse_json(text) if isinstance(text, (str, bytes)) else None
    except ValueError:
        value = None
    return value if isinstance(value, dict) else {}


def sessions(path: Path) -> list[dict]:
    """Every session of the database: ``id``, ``title``, ``directory``, ``time_updated`` (ms), the
    ``tokens`` of its newest assistant message (0 when none recorded), and ``size`` (the bytes of its
    messages' and parts' data)."""
    con = _connect(path)
    try:
        rows = con.execute("SELECT id, title, directory, time_updated FROM session ORDER BY time_updated DESC")
        out = [{"id": r[0], "title": r[1], "directory": r[2], "time_updated": r[3]} for r in rows]
        for s in out:
            row = con.execute("SELECT data FROM message WHERE session_id = ? AND json_extract(data, '$.role') = "
                              "'assistant' ORDER BY id DESC LIMIT 1", (s["id"],)).fetchone()
            tokens = _loads(row[0]).get("tokens") if row else None
            s["tokens"] = _total(tokens)
            size = con.execute("SELECT (SELECT coalesce(sum(length(data)), 0) FROM message WHERE session_id = ?) + "
                               "(SELECT coalesce(sum(length(data)), 0) FROM part WHERE session_id = ?)",
                               (s["id"], s["id"])).fetchone()
            s["size"] = size[0] if size else 0
        return out
    finally:
        con.close()


def _total(tokens) -> int:
    if not isinstance(tokens, dict):
        return 0
    cache = tokens.get("cache") if isinstance(tokens.get("cache"), dict) else {}
    return sum(v for v in (tokens.get("input"), tokens.get("output"), tokens.get("reasoning"), cache.get("read"),
                           cache.get("write")) if isinstance(v, int) and not isinstance(v, bool) and v > 0)


def export(path: Path, name: str, session: str | None) -> bytes:
    """The session ``session`` (None: the one used last) as ``opencode export`` prints it."""
    try:
        con = _connect(path)
        try:
            if session is None:
                row = con.execute("SELECT id FROM session ORDER BY time_updated DESC LIMIT 1").fetchone()
                if row is None:
                    raise InputError(name, 0, "an OpenCode database without any session")
                session = row[0]
            cols = [c[1] for c in con.execute("PRAGMA table_info(session)")]
            row = con.execute("SELECT * FROM session WHERE id = ?", (session,)).fetchone()
            if row is None:
                raise InputError(name, 0, f"no session {session!r} in this OpenCode database")
            info = {k: v for k, v in zip(cols, row, strict=True) if v is not None}
            parts: dict[str, list[dict]] = {}
            for pid, mid, data in con.execute("SELECT id, message_id, data FROM part WHERE session_id = ? "
                                              "ORDER BY id", (session,)):
                parts.setdefault(mid, []).append({"id": pid, "sessionID": session, "messageID": mid, **_loads(data)})
            messages = [{"info": {"id": mid, "sessionID": session, **_loads(data)}, "parts": parts.get(mid, [])}
                        for mid, data in con.execute("SELECT id, data FROM message WHERE session_id = ? ORDER BY id",
                                                     (session,))]
        finally:
            con.close()
    except sqlite3.Error as exc:
        if _is_go_opencode(path):
            raise InputError(name, 0, GO_OPENCODE) from None
        raise InputError(name, 0, f"not a readable OpenCode database ({exc})") from None
    return (json.dumps({"info": info, "messages": messages}, indent=2, ensure_ascii=False) + "\n").encode()


#: what the older Go OpenCode's database is (its ``sessions`` and ``messages`` tables, by goose migrations):
#: committed publicly in projects' ``.opencode/`` folders far more often than sst/opencode's
GO_OPENCODE = ("the database of the older Go OpenCode (opencode-ai/opencode, now Crush: tables `sessions` and "
               "`messages`), not a format ctxkit reads; OpenCode (sst/opencode) keeps its sessions in "
               "~/.local/share/opencode/opencode.db (or `opencode export <session>` prints one)")


def _is_go_opencode(path: Path) -> bool:
    try:
        con = _connect(path)
        try:
            tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            con.close()
    except sqlite3.Error:
        return False
    return {"sessions", "messages"} <= tables and "session" not in tables
