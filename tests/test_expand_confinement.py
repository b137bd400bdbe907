"""``ctxkit expand`` reads only the store and the session's own ``tool-results/`` folder.

A transcript is data from elsewhere: whatever path a ``<persisted-output>`` block or a record names
(``/etc/passwd``, ``/proc/self/environ``, a FIFO, ``/dev/zero``, a link out of ``tool-results/``, an
archive blob outside the store), expand must not read it, must say so, leave the line as it was and
exit 1 ("expand incomplete").
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import orjson
import pytest
from builders import assistant_message, entry, user_message

from ctxkit import confined
from ctxkit.cli.main import app

SID = "5f0c1c2e-1111-4222-8333-944455556666"
SECRET = "sk-ant-api03-do-not-leak-this-0123456789"
OUTSIDE = "CONTENT-OUTSIDE-THE-SESSION-FOLDER"
INJECTED = "INJECTED-BY-A-FOREIGN-ARCHIVE"


def _persisted(path: str) -> str:
    return (f"<persisted-output>\nOutput too large (50.0KB). Full output saved to: {path}\n\n"
            "Preview (first 2KB):\nhead\n...\n</persisted-output>")


def _entry(kind: str, uid: str, parent: str | None, content, **extra) -> dict:
    message = (assistant_message(content, f"msg_{uid}", stop_reason=None, stop_sequence=None) if kind == "assistant"
               else user_message(content))
    return entry(kind, message, uuid=uid, parent=parent, session=SID, **extra)


def _transcript(target, named: dict[str, str], records: list[dict] = ()) -> bytes:
    """A Claude Code session whose tool results are ``<persisted-output>`` blocks naming ``named``
    (tool id -> path), followed by ``records``; returns the bytes written."""
    lines = [_entry("user", "u0", None, "run the tools")]
    parent = "u0"
    for k, (tid, path) in enumerate(named.items()):
        lines.append(_entry("assistant", f"a{k}", parent, [{"type": "tool_use", "id": tid, "name": "Bash",
                                                            "input": {"command": "x"}}]))
        lines.append(_entry("user", f"r{k}", f"a{k}", [{"type": "tool_result", "tool_use_id": tid,
                                                         "content": _persisted(path)}]))
        parent = f"r{k}"
    lines.append(_entry("assistant", "done", parent, [{"type": "text", "text": "done"}]))
    data = b"".join(orjson.dumps(x) + b"\n" for x in [*lines, *records])
    target.write_bytes(data)
    return data


def _archive(blob: str) -> dict:
    return {"type": "ctxkit-record", "record": "archive", "timestamp": "2026-11-30T10:00:00.000Z",
            "sessionId": SID, "blob": blob, "uuids": ["u0"], "reason": "thinking stripped"}


@pytest.fixture
def session(tmp_path):
    """A project folder as Claude Code lays it out, with hostile things inside and around it."""
    project = tmp_path / "projects" / "-w"
    results = project / SID / "tool-results"
    results.mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(OUTSIDE)
    os.mkfifo(results / "fifo.txt")
    os.mkfifo(outside / "pipe")
    (results / "link.txt").symlink_to(outside / "secret.txt")
    (results / "good.txt").write_text("the real persisted output\n")
    # an archive payload outside the store that would replace the first prompt
    (outside / "archive.json").write_bytes(orjson.dumps({"u0": _entry("user", "u0", None, INJECTED)}))
    return project, outside


def test_expand_reads_nothing_a_transcript_names_outside_the_store_and_tool_results(session, tmp_path):
    project, outside = session
    recorded = f"/home/someone/.claude/projects/-w/{SID}/tool-results"  # where Claude Code was
    named = {
        "call_passwd": "/etc/passwd",
        "call_environ": "/proc/self/environ",
        "call_fifo": f"{recorded}/fifo.txt",
        "call_fifo_abs": str(outside / "pipe"),
        "call_zero": "/dev/zero",
        "call_link": f"{recorded}/link.txt",
        "call_dotdot": f"{recorded}/../../../../../../etc/passwd",
        "call_good": f"{recorded}/good.txt",
    }
    relative = os.path.relpath(outside / "archive.json", project / ".ctxkit")
    records = [_archive(str(outside / "archive.json")), _archive(relative)]
    source = project / f"{SID}.jsonl"
    original = _transcript(source, named, records)
    back = tmp_path / "back.jsonl"
    env = {**os.environ, "CTXKIT_TEST_SECRET": SECRET}
    started = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "ctxkit.cli.main", "expand", str(source), "-o", str(back),
                        "--inline-agent-outputs"],
                       capture_output=True, env=env, timeout=60)
    assert time.monotonic() - started < 60
    stderr = " ".join(p.stderr.decode().split())
    assert p.returncode == 1, stderr
    out = back.read_bytes()
    for leaked in (b"root:", SECRET.encode(), OUTSIDE.encode(), INJECTED.encode(), b"\x00"):
        assert leaked not in out
    # only the good one changed, every other line is byte for byte what it was
    out_lines, in_lines = out.splitlines(keepends=True), original.splitlines(keepends=True)
    changed = [json.loads(b)["message"]["content"][0]["tool_use_id"] for a, b in zip(in_lines, out_lines, strict=True) if a != b]
    assert changed == ["call_good"]
    assert b'"content":"the real persisted output\\n"' in out
    # each refusal is named on stderr, with what named it
    for tid in ("call_passwd", "call_environ", "call_fifo", "call_fifo_abs", "call_zero", "call_link", "call_dotdot"):
        assert f"(named by tool result {tid})" in stderr
    assert f"did not read {recorded}/fifo.txt (named by tool result call_fifo): not a regular file" in stderr
    assert f"did not read {recorded}/link.txt (named by tool result call_link): is a symbolic link" in stderr
    assert "did not read /etc/passwd (named by tool result call_passwd): neither a blob of the store" in stderr
    assert f"did not read {outside / 'archive.json'} (named by archive record): not a blob of the store" in stderr
    assert f"did not read {relative} (named by archive record): not a blob of the store" in stderr
    assert "7 tool output(s) could not be restored" in stderr
    assert "2 record(s) left in place" in stderr


def test_a_huge_file_in_tool_results_is_refused_not_loaded(session, runner, tmp_path, monkeypatch):
    project, _ = session
    monkeypatch.setattr(confined, "MAX_READ_BYTES", 1000)
    (project / SID / "tool-results" / "big.txt").write_bytes(b"x" * 1001)
    (project / SID / "tool-results" / "fits.txt").write_bytes(b"y" * 1000)
    source = project / f"{SID}.jsonl"
    _transcript(source, {"call_big": f"/elsewhere/{SID}/tool-results/big.txt",
                         "call_fits": f"/elsewhere/{SID}/tool-results/fits.txt"})
    r = runner.invoke(app, ["expand", str(source), "-o", str(tmp_path / "back.jsonl"), "--inline-agent-outputs"])
    assert r.exit_code == 1
    stderr = " ".join(r.stderr.split())
    assert f"did not read /elsewhere/{SID}/tool-results/big.txt (named by tool result call_big): larger than " \
           "1000 bytes" in stderr
    back = (tmp_path / "back.jsonl").read_text()
    assert "y" * 1000 in back and "x" * 1001 not in back


def test_only_this_sessions_tool_results_folder_is_read(session, runner, tmp_path):
    """Another session's folder in the same project is not this transcript's to read."""
    project, _ = session
    other = project / "0ther-session" / "tool-results"
    other.mkdir(parents=True)
    (other / "theirs.txt").write_text("another session's output")
    source = project / f"{SID}.jsonl"
    _transcript(source, {"call_0": f"{other}/theirs.txt"})
    r = runner.invoke(app, ["expand", str(source), "-o", str(tmp_path / "back.jsonl"), "--inline-agent-outputs"])
    assert r.exit_code == 1
    store = project / ".ctxkit"
    assert r.stderr == (f"ctxkit: warning: store folder {store} does not exist (--store names the folder compact used)\n"
                        "restored 0 tool output(s)\n"
                        f"ctxkit: warning: 1 tool output(s) could not be restored (store {store}): 1 <persisted-output> "
                        "file not found [call_0]\n")
    assert "another session's output" not in (tmp_path / "back.jsonl").read_text()


def test_store_blobs_are_found_by_name_and_a_link_in_the_store_is_refused(session, runner, tmp_path):
    project, outside = session
    store = project / ".ctxkit"
    real = "the stored original\n"
    import hashlib

    digest = hashlib.sha256(real.encode()).hexdigest()
    (store / "blobs" / digest[:2]).mkdir(parents=True)
    (store / "blobs" / digest[:2] / f"{digest}.txt").write_text(real)
    linked = hashlib.sha256(b"linked").hexdigest()
    (store / "blobs" / linked[:2]).mkdir(parents=True, exist_ok=True)
    (store / "blobs" / linked[:2] / f"{linked}.txt").symlink_to(outside / "secret.txt")
    # a blob name outside the store that the store does not hold: its folders are not looked in
    stray = hashlib.sha256(b"stray").hexdigest()
    (outside / f"{stray}.txt").write_text(OUTSIDE)
    source = project / f"{SID}.jsonl"
    _transcript(source, {"call_moved": f"/old/place/.ctxkit/blobs/{digest[:2]}/{digest}.txt",
                         "call_link": f"/old/place/.ctxkit/blobs/{linked[:2]}/{linked}.txt",
                         "call_stray": str(outside / f"{stray}.txt")})
    r = runner.invoke(app, ["expand", str(source), "-o", str(tmp_path / "back.jsonl")])
    assert r.exit_code == 1
    stderr = " ".join(r.stderr.split())
    assert f"did not read /old/place/.ctxkit/blobs/{linked[:2]}/{linked}.txt (named by tool result call_link): " \
           "is a symbolic link" in stderr
    assert "1 <persisted-output> file not found" in stderr  # the stray blob
    back = (tmp_path / "back.jsonl").read_text()
    assert json.dumps(real) in back and OUTSIDE not in back


def test_claude_codes_own_persisted_outputs_are_restored_from_the_sessions_folder(runner, tmp_path, corpus_session):
    """The corpus keeps a session as session.jsonl beside its tool-results/ folder: the preview
    names the recording machine's path, the file is found by its name in that folder."""
    source = corpus_session("big-outputs")
    persisted = (source.parent / "tool-results" / "baiujkc01.txt").read_text()
    r = runner.invoke(app, ["expand", str(source), "-o", str(tmp_path / "back.jsonl"), "--store", str(tmp_path / "s"),
                            "--inline-agent-outputs"])
    assert r.exit_code == 0, r.stderr
    assert "restored 1 tool output(s)" in r.stderr
    back = [json.loads(x) for x in (tmp_path / "back.jsonl").read_text().splitlines()]
    contents = [b.get("content") for e in back if e.get("type") == "user"
                for b in (e["message"]["content"] if isinstance(e["message"]["content"], list) else [])]
    assert persisted in contents


def test_a_collapse_summary_line_naming_a_file_outside_the_store_is_left_as_it_is(runner, tmp_path):
    """Plain message lists name a collapsed run's archive in the summary line itself: expand puts the
    archived lines back only from a blob of the store."""
    from ctxkit.stages.collapse.stage import ARCHIVE_LINE
    from ctxkit.transcript.collapse_view import SUMMARY_HEAD

    outside = tmp_path / "outside.json"
    outside.write_bytes(orjson.dumps({"lines": [{"line": 2, "entry": {"role": "user", "content": INJECTED}}],
                                      "toolUseIds": [], "summary": "x", "by": "rule"}))
    lines = [{"role": "user", "content": "task"},
             {"role": "user", "content": f"{SUMMARY_HEAD}2 calls]\n{ARCHIVE_LINE}{outside}"},
             {"role": "assistant", "content": "done"}]
    source = tmp_path / "t.jsonl"
    source.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    r = runner.invoke(app, ["expand", str(source), "-o", str(tmp_path / "back.jsonl")])
    assert r.exit_code == 1
    assert f"did not read {outside} (named by collapse record): not a blob of the store" in " ".join(r.stderr.split())
    assert (tmp_path / "back.jsonl").read_bytes() == source.read_bytes()
