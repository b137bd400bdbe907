"""``ctxkit sessions``: the agent sessions on this machine, where each agent keeps them.

Where each agent writes its sessions (under the user's home, or the folder the agent's own setting
names):

| agent | where |
| --- | --- |
| claude-code | ``$CLAUDE_CONFIG_DIR/projects`` or ``~/.claude/projects``: ``<project>/<session>.jsonl`` |
| codex | ``$CODEX_HOME/sessions`` or ``~/.codex/sessions``: ``YYYY/MM/DD/rollout-*.jsonl`` (and ``.jsonl.zst``) |
| gemini | ``~/.gemini/tmp/<project>/chats/session-*.jsonl`` (and the older ``.json``); ``/chat save`` checkpoints, ``~/.gemini/tmp/<project>/checkpoint-*.json`` |
| opencode | ``$XDG_DATA_HOME/opencode/opencode.db`` or ``~/.local/share/opencode/opencode.db``: each session, as ``opencode.db#<id>`` |
| cline | VS Code's (and VSCodium's, Cursor's, Windsurf's) ``globalStorage`` of Cline (``saoudrizwan.claude-dev``) and Roo Code (``rooveterinaryinc.roo-cline``): ``tasks/<id>/api_conversation_history.json``; the Cline CLI's ``~/.cline/data/tasks`` |
| cursor | ``~/.cursor/projects/<project>/agent-transcripts/<id>/<id>.jsonl``, and the older ``<id>.txt`` and ``<id>.json`` |
| aider | ``.aider.chat.history.md`` in the working folder (aider keeps it in each project: there is no one place) |

Each session: its path, agent, size in bytes, last use (the file's modification time; an OpenCode
session's own ``time_updated``) and the tokens of its view as ``ctxkit stats`` counts them (what the
agent last reported plus a rough estimate of the rest; None when the file cannot be read, with why).
"""
from __future__ import annotations

import glob
import os
import stat
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

from ..errors import CtxkitError, UsageError
from ..quoting import quote
from ..tokens import make_counter
from ..tokens.view_count import count_view
from ..transcript import read_transcript
from ..transcript.opencode import database as opencode_database

AGENTS = ("claude-code", "codex", "gemini", "opencode", "cline", "cursor", "aider")
_EDITORS = ("Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf")
_EXTENSIONS = ("saoudrizwan.claude-dev", "rooveterinaryinc.roo-cline")


@dataclass
class Session:
    path: str
    agent: str
    size: int
    last_used: str  # ISO 8601, UTC
    tokens: int | None
    error: str | None = None

    def to_json(self) -> dict:
        return asdict(self)


def _globs(agent: str, home: Path, env: Mapping[str, str], cwd: Path) -> list[str]:
    if agent == "claude-code":
        base = Path(env["CLAUDE_CONFIG_DIR"]) if env.get("CLAUDE_CONFIG_DIR") else home / ".claude"
        return [str(base / "projects" / "*" / "*.jsonl")]
    if agent == "codex":
        base = Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else home / ".codex"
        return [str(base / "sessions" / "**" / "rollout-*.jsonl"), str(base / "sessions" / "**" / "rollout-*.jsonl.zst")]
    if agent == "gemini":
        return [str(home / ".gemini" / "tmp" / "*" / "chats" / "session-*.json"),
                str(home / ".gemini" / "tmp" / "*" / "chats" / "session-*.jsonl"),
                str(home / ".gemini" / "tmp" / "*" / "checkpoint-*.json")]
    if agent == "cline":
        roots = [home / ".config", home / "Library" / "Application Support", home / ".vscode-server" / "data"]
        if env.get("APPDATA"):
            roots.append(Path(env["APPDATA"]))
        out = [str(home / ".cline" / "data" / "tasks" / "*" / "api_conversation_history.json")]
        for root in roots:
            for editor in _EDITORS if root.name != "data" else ("",):
                for ext in _EXTENSIONS:
                    out.append(str(root / editor / "User" / "globalStorage" / ext / "tasks" / "*" /
                                   "api_conversation_history.json"))
        return out
    if agent == "cursor":
        transcripts = home / ".cursor" / "projects" / "*" / "agent-transcripts"
        # the JSONL ones in a folder each; the older plain-text and JSON ones (and some JSONL) beside them
        return [str(transcripts / "*" / "*.jsonl"), *(str(transcripts / f"*.{ext}") for ext in ("jsonl", "txt", "json"))]
    if agent == "aider":
        return [str(cwd / ".aider.chat.history.md")]
    return []


def _when(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def _recent(seconds: float, since: datetime | None) -> bool:
    return since is None or datetime.fromtimestamp(seconds, timezone.utc) >= since


def _tokens(path: str) -> tuple[int | None, str | None]:
    try:
        t = read_transcript(path, check_pairing=False)
        return count_view(t, make_counter("rough"), 0).total, None
    except CtxkitError as exc:
        return None, str(exc)


def _files(agent: str, home: Path, env: Mapping[str, str], cwd: Path, since: datetime | None) -> Iterator[Session]:
    for pattern in _globs(agent, home, env, cwd):
        for name in sorted(glob.glob(glob.escape(pattern[:pattern.index("*")]) + pattern[pattern.index("*"):]
                                     if "*" in pattern else glob.escape(pattern), recursive=True)):
            try:
                st = os.stat(name)
            except OSError:
                continue  # gone since the folder was listed (the agent rotated it), or a dangling link
            if not stat.S_ISREG(st.st_mode) or not _recent(st.st_mtime, since):
                continue  # an old session is not read: counting its tokens is the command's whole cost
            tokens, error = _tokens(name)
            yield Session(name, agent, st.st_size, _when(st.st_mtime), tokens, error)


def _opencode(home: Path, env: Mapping[str, str], since: datetime | None) -> Iterator[Session]:
    base = Path(env["XDG_DATA_HOME"]) if env.get("XDG_DATA_HOME") else home / ".local" / "share"
    db = base / "opencode" / "opencode.db"
    if not db.is_file():
        return
    try:
        found = opencode_database.sessions(db)
    except Exception as exc:  # noqa: BLE001 - a database OpenCode is migrating, or not OpenCode's: said, not fatal
        yield Session(str(db), "opencode", db.stat().st_size, _when(db.stat().st_mtime), None, str(exc))
        return
    for s in found:
        if not s["size"]:
            continue  # a session opened and left without a message: nothing to read
        last = s["time_updated"] / 1000 if isinstance(s["time_updated"], (int, float)) else db.stat().st_mtime
        try:
            when = _when(last)
        except (OverflowError, ValueError, OSError):  # a time no clock reaches: the database's own
            last = db.stat().st_mtime
            when = _when(last)
        if _recent(last, since):
            yield Session(f"{db}#{s['id']}", "opencode", s["size"], when, s["tokens"] or None)


def parse_since(text: str) -> datetime:
    """``--since``: a date (``2026-03-01``) or a time (``2026-03-01T10:00``, UTC unless it says otherwise)."""
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"--since takes a date such as 2026-03-01 (or a time, 2026-03-01T10:00), got {quote(text)}") \
            from None
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)


def find_sessions(*, home: Path | None = None, env: Mapping[str, str] | None = None, cwd: Path | None = None,
                  agent: str | None = None, since: datetime | None = None) -> list[Session]:
    """The sessions on this machine (see the module docstring), newest first."""
    env = os.environ if env is None else env
    home = home if home is not None else Path(env.get("HOME") or Path.home())
    cwd = cwd if cwd is not None else Path.cwd()
    if agent is not None and agent not in AGENTS:
        raise UsageError(f"unknown agent {quote(agent)}; choose one of {', '.join(AGENTS)}")
    out: list[Session] = []
    for name in AGENTS if agent is None else (agent,):
        out += _opencode(home, env, since) if name == "opencode" else _files(name, home, env, cwd, since)
    out.sort(key=lambda s: (s.last_used, s.path), reverse=True)
    return out
