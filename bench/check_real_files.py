#!/usr/bin/env python3
"""Run issue 29's checks on a folder of real agent sessions and print one row per file.

    nice python bench/check_real_files.py FOLDER [--json] [--timeout S]
    nice python bench/check_real_files.py --not-sessions FOLDER


For sessions found where their users committed them (none is kept in this repository): every file
below FOLDER (an OpenCode database's ``-wal``/``-shm`` companions aside) goes through the ctxkit of
this interpreter, in a scratch folder, as a user would run it:

- ``stats --json``: exit 0, and the agent ``format`` it names;
- ``view --to anthropic-request``: the tool calls the file itself holds (counted here from its raw
  JSON, independently of ctxkit's readers) against those in the view, and every ``tool_use`` answered
  by a ``tool_result`` in the next message; a Cursor transcript's calls are text (``[Tool call]``);
- ``doctor`` and ``simulate``: any exit but 0 or 1 (findings) is reported;
- ``compact --force -p no-llm --store S`` then ``expand --store S``, compared byte for byte with the
  file. A file too full for the policy to compact (exit 2, "would compact again") is compacted again
  under a 1,000,000-token window. A read-only format (aider, Cursor's older transcripts, an
  ``opencode.db``) must refuse to write its own format (exit 2).

``--not-sessions``: a folder of files found beside the sessions, or named like them, that are none (an
agent's UI log or prompt log, another program's database, a headless run's output): each must be refused
by ``stats`` naming the file and what it is (exit 2 or 3, nothing on standard output), never read as a
session nor answered with an internal error.

A call missing from the view is a failure only where nothing in the file compacted, rolled back,
rewound or condensed the history (``history`` column). Exit 4 (ctxkit's internal error), a traceback,
a timeout, no agent format, an unanswered call, a lost call or a byte difference fails the file; the
exit status is 1 when any file failed.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

AGENTS = ("codex", "gemini", "opencode", "cline", "cursor", "aider")
READ_ONLY = ("aider",)
CODEX_CALLS = ("function_call", "custom_tool_call", "local_shell_call", "tool_search_call")


def ctxkit(args: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess:
    """Run ctxkit's CLI with this interpreter (the checkout's ctxkit)."""
    cmd = [sys.executable, "-c", "from ctxkit.cli.main import run; run()", *args]
    try:
        return subprocess.run(cmd, cwd=cwd, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(cmd, -9, b"", b"timeout")


def _documents(text: str) -> list | None:
    """The message array of a one-document session (a Cline history, an export, a checkpoint)."""
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    if isinstance(doc, dict):
        doc = doc.get("messages", doc.get("history"))
    return doc if isinstance(doc, list) else None


def file_calls(path: Path) -> tuple[list, set[str]]:
    """The tool calls the file holds as its agent wrote them (ids, or ``"cursor"`` for Cursor's
    id-less ones), and what in it changed the history (``compacted``, ``rollback``, ``rewind``,
    ``condensed``)."""
    calls: list = []
    history: set[str] = set()
    if path.name.endswith(".db"):
        with sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True) as db:
            try:
                rows = db.execute("select data from part").fetchall()
            except sqlite3.Error:
                return calls, history
        for (data,) in rows:
            part = json.loads(data)
            if part.get("type") == "tool":
                calls.append(part.get("callID"))
            history |= {"compacted"} if part.get("type") == "compaction" else set()
        return calls, history
    raw = path.read_bytes()
    if path.name.endswith(".zst"):
        import zstandard
        raw = zstandard.ZstdDecompressor().stream_reader(raw).read()
    boms = ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"))
    bom, how = next(((b, h) for b, h in boms if raw.startswith(b)), (b"", "utf-8"))
    text = raw[len(bom):].decode(how, "replace")
    stripped = text.lstrip()
    messages = _documents(text) if stripped[:1] in "[{" and "\n{" not in stripped[:4096] else None
    if messages is None and not stripped.startswith("{"):  # Cursor's older plain-text transcript
        return ["cursor"] * sum(line.startswith("[Tool call]") for line in text.split("\n")), history
    if messages is None:
        messages = []
        for line in text.split("\n"):
            try:
                messages.append(json.loads(line))
            except ValueError:
                continue
    for m in messages:
        if not isinstance(m, dict):
            continue
        payload = m.get("payload") if isinstance(m.get("payload"), dict) else m
        kind = payload.get("type")
        if kind in CODEX_CALLS:
            calls.append(payload.get("call_id") or payload.get("id"))
        if m.get("type") == "compacted" or kind in ("context_compacted", "compaction"):
            history.add("compacted")
        if kind == "thread_rolled_back":
            history.add("rollback")
        if "$rewindTo" in m:
            history.add("rewind")
        if m.get("isSummary") or m.get("isTruncationMarker") or m.get("condenseParent"):
            history.add("condensed")
        if m.get("type") == "gemini":
            calls += [c.get("id") for c in m.get("toolCalls") or [] if isinstance(c, dict)]
        for part in m.get("parts") or []:
            if isinstance(part, dict) and part.get("type") == "tool":
                calls.append(part.get("callID"))
            if isinstance(part, dict) and part.get("type") == "compaction":
                history.add("compacted")
            if isinstance(part, dict) and isinstance(part.get("functionCall"), dict):
                calls.append(part["functionCall"].get("id") or "checkpoint")
        calls += ["cursor" for c in m.get("toolCalls") or [] if isinstance(c, dict) and "toolName" in c]  # Cursor's older JSON array
        content = m.get("content")
        if isinstance(m.get("message"), dict):  # a Cursor transcript line
            content = m["message"].get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                calls.append(block.get("id") or "cursor")
    return calls, history


def view_calls(request: dict) -> tuple[list[str], list[str], int]:
    """The view's tool_use ids, those the next message does not answer, and calls shown as text."""
    messages = request.get("messages", [])
    ids, unanswered, as_text = [], [], 0
    for i, message in enumerate(messages):
        content = message.get("content")
        if isinstance(content, str):
            as_text += content.count("[Tool call]")
            continue
        following = messages[i + 1].get("content") if i + 1 < len(messages) else None
        answers = {b.get("tool_use_id") for b in following if isinstance(b, dict)} \
            if isinstance(following, list) else set()
        for block in content or []:
            if block.get("type") == "tool_use":
                ids.append(block["id"])
                if block["id"] not in answers:
                    unanswered.append(block["id"])
            elif block.get("type") == "text":
                as_text += block.get("text", "").count("[Tool call]")
    return ids, unanswered, as_text


def crashed(run: subprocess.CompletedProcess) -> bool:
    """An internal error: exit 4, a traceback, or a timeout."""
    return run.returncode in (4, -9) or b"Traceback (most recent call last)" in run.stderr


def check(path: Path, root: Path, timeout: float) -> dict:
    """Every check on one file; ``problems`` lists what failed."""
    row: dict = {"file": str(path.relative_to(root)), "bytes": path.stat().st_size, "problems": []}
    problems = row["problems"]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        src = work / path.name
        shutil.copy(path, src)
        for extra in ("-wal", "-shm"):
            if Path(str(path) + extra).exists():
                shutil.copy(str(path) + extra, str(src) + extra)
        stats = ctxkit(["stats", "--json", str(src)], work, timeout)
        try:
            found = json.loads(stats.stdout)
            row["format"] = (found[0] if isinstance(found, list) else found).get("format")
        except (ValueError, AttributeError, IndexError):
            row["format"] = None
        agent = next((a for a in AGENTS if a in (row["format"] or "")), None)
        if stats.returncode != 0 or agent is None:
            problems.append(f"stats exit {stats.returncode}, format {row['format']}: "
                            f"{stats.stderr.decode(errors='replace')[-200:].strip()}")
        calls, history = file_calls(src)
        row["history"] = sorted(history)
        row["file_calls"] = len(calls)
        view = ctxkit(["view", "--to", "anthropic-request", str(src)], work, timeout)
        if view.returncode == 0:
            ids, unanswered, as_text = view_calls(json.loads(view.stdout))
            row["view_calls"] = len(ids) + as_text
            row["unanswered"] = len(unanswered)
            if unanswered:
                problems.append(f"{len(unanswered)} calls unanswered in the view")
            lost = len(calls) - as_text if agent == "cursor" else len(set(calls) - set(ids))
            row["lost"] = lost
            if lost > 0 and not history:
                problems.append(f"{lost} calls of the file not in the view")
        else:
            problems.append(f"view exit {view.returncode}: {view.stderr.decode(errors='replace')[-200:].strip()}")
        for command in ("doctor", "simulate"):
            run = ctxkit([command, str(src)], work, timeout)
            row[command] = run.returncode
            if run.returncode not in (0, 1):
                problems.append(f"{command} exit {run.returncode}: "
                                f"{run.stderr.decode(errors='replace')[-200:].strip()}")
        row["roundtrip"] = roundtrip(src, work, agent, row, timeout)
    if row["roundtrip"] is False:
        problems.append("expand did not give the file back byte for byte")
    return row


def roundtrip(src: Path, work: Path, agent: str | None, row: dict, timeout: float) -> bool | str:
    """``compact --force`` then ``expand``: True when the file comes back byte for byte."""
    suffix = ".jsonl.zst" if src.name.endswith(".jsonl.zst") else src.suffix
    out, back, store = work / f"compacted{suffix}", work / f"back{suffix}", work / "store"
    compact = ["compact", "--force", "-p", "no-llm", "--store", str(store), str(src), "-o", str(out)]
    run = ctxkit(compact, work, timeout)
    if run.returncode == 2 and b"would compact again" in run.stderr:
        run = ctxkit([*compact, "--context-window", "1000000"], work, timeout)
    read_only = agent in READ_ONLY or src.name.endswith(".db") or run.returncode == 2 and b"read-only" in run.stderr
    if read_only:
        if run.returncode != 2:
            row["problems"].append(f"a read-only format written (compact exit {run.returncode})")
        return "read-only"
    if run.returncode != 0:
        row["problems"].append(f"compact exit {run.returncode}: {run.stderr.decode(errors='replace')[-300:].strip()}")
        return False if crashed(run) else "refused"
    row["compacted"] = out.read_bytes() != src.read_bytes()
    run = ctxkit(["expand", "--store", str(store), str(out), "-o", str(back)], work, timeout)
    if run.returncode != 0:
        row["problems"].append(f"expand exit {run.returncode}: {run.stderr.decode(errors='replace')[-300:].strip()}")
        return False
    return back.read_bytes() == src.read_bytes()


def refused(path: Path, root: Path, timeout: float) -> dict:
    """``--not-sessions``: ``stats`` on a file that is no session refuses it, naming it."""
    row: dict = {"file": str(path.relative_to(root)), "bytes": path.stat().st_size, "problems": []}
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / path.name
        shutil.copy(path, src)
        run = ctxkit(["stats", "--json", str(src)], Path(tmp), timeout)
    message = run.stderr.decode(errors="replace").strip()
    row["format"], row["message"] = f"exit {run.returncode}", message.replace(str(src), path.name)[:160]
    if run.returncode not in (2, 3) or run.stdout or crashed(run) or path.name not in message:
        row["problems"].append(f"not refused clearly: exit {run.returncode}, {message[-200:]}")
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--json", action="store_true", help="one JSON object a file instead of the table")
    parser.add_argument("--timeout", type=float, default=600, help="seconds a command may take")
    parser.add_argument("--not-sessions", action="store_true", help="every file must be refused, naming what it is")
    args = parser.parse_args()
    root = args.folder.resolve()
    files = sorted(p for p in root.rglob("*") if p.is_file() and not p.name.endswith(("-wal", "-shm")))
    failed = 0
    if not args.json and args.not_sessions:
        print(f"{'file':58} {'stats':8} what ctxkit says")
    elif not args.json:
        print(f"{'file':58} {'format':18} {'calls':>11} {'unans':>5} {'doctor':>6} {'sim':>3} {'back':>9}  problems")
    for path in files:
        row = refused(path, root, args.timeout) if args.not_sessions else check(path, root, args.timeout)
        failed += bool(row["problems"])
        if args.json:
            print(json.dumps(row), flush=True)
            continue
        if args.not_sessions:
            print(f"{row['file'][-58:]:58} {row['format']:8} {'; '.join(row['problems']) or row['message']}", flush=True)
            continue
        calls = f"{row['file_calls']}/{row.get('view_calls', '-')}"
        back = {True: "same", False: "DIFFERENT"}.get(row["roundtrip"], row["roundtrip"])
        print(f"{row['file'][-58:]:58} {str(row['format']):18} {calls:>11} {row.get('unanswered', '-'):>5} "
              f"{row.get('doctor', '-'):>6} {row.get('simulate', '-'):>3} {back:>9}  "
              f"{'; '.join(row['problems']) or 'ok'}{' (' + ','.join(row['history']) + ')' if row['history'] else ''}",
              flush=True)
    print(f"{len(files)} files, {failed} failed", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
