"""Files a transcript names are re-read only from the session's folder, and only regular files of bounded size.

``ctxkit compact`` re-injects the files the session read (``file_path`` of Read/Edit/Write calls) and
the attachments stage re-reads memory files and changed files. The transcript chooses those paths;
each case below names one that must not be read (a FIFO that would hang, ``/dev/zero`` that would
fill memory, a 3 GB file, the process's stdin, a credentials file outside the project, a link in the
project pointing at it) through the real CLI in a subprocess with a timeout: the run ends promptly
with exit 0, the output does not hold the content, the report says what was skipped, and a normal
file of the project is still re-injected.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from builders import entry

CTXKIT = [sys.executable, "-m", "ctxkit.cli.main"]
T0 = datetime(2026, 11, 29, 10, 0, tzinfo=timezone.utc)
NORMAL = "NORMAL_FILE_CONTENT = 1"


def session(cwd: Path, paths: list[str], out: Path, tool: str = "Read", seen: str | None = None) -> Path:
    """A Claude Code transcript whose first calls name ``paths`` (the results do not hold their content,
    unless ``seen`` gives what each full Read saw), then enough talk for a compaction to summarize
    those calls away."""
    entries: list[dict] = []
    parent = None

    def chain(typ: str, **fields) -> None:
        nonlocal parent
        uid = f"00000000-0000-4000-8000-{len(entries) + 1:012d}"
        ts = (T0 + timedelta(minutes=len(entries))).isoformat().replace("+00:00", "Z")
        entries.append(entry(typ, fields.pop("message"), uuid=uid, parent=parent, timestamp=ts, cwd=str(cwd),
                             session="sess-1", slug="calm-river", **fields))
        parent = uid

    chain("user", message={"role": "user", "content": "look at the files"})
    for k, p in enumerate(paths):
        inp = {"file_path": p} if tool == "Read" else {"file_path": p, "old_string": "a", "new_string": "b"}
        chain("assistant", message={"id": f"msg_{k}", "role": "assistant", "model": "claude-sonnet-4-5",
                                    "content": [{"type": "tool_use", "id": f"toolu_{k}", "name": tool, "input": inp}]})
        meta = {} if seen is None else {"toolUseResult": {"type": "text", "file": {
            "filePath": p, "content": seen, "numLines": 1, "startLine": 1, "totalLines": 1}}}
        chain("user", message={"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{k}",
                                                            "content": "1\t(not recorded)"}]}, **meta)
    for r in range(30):
        chain("user", message={"role": "user", "content": f"question {r} " + "word " * 200})
        chain("assistant", message={"id": f"msg_a{r}", "role": "assistant", "model": "claude-sonnet-4-5",
                                    "content": [{"type": "text", "text": f"answer {r} " + "more " * 200}]})
    out.write_text("".join(json.dumps(e) + "\n" for e in entries))
    return out


def compact(tmp_path: Path, cwd: Path, transcript: Path, *, stdin: bytes = b"", home: Path | None = None,
            extra: tuple[str, ...] = ("--force",)) -> tuple[subprocess.CompletedProcess, dict, bytes]:
    """``ctxkit compact FILE --force`` (extractive; ``extra`` replaces ``--force``) run from ``cwd``; returns the process, the JSON report
    and the output's bytes. A run that blocks on a FIFO or reads /dev/zero fails the timeout."""
    out = tmp_path / "o.jsonl"
    env = {**os.environ, "HOME": str(home or tmp_path / "home"), "SECRET_IN_ENV": "ENV_SECRET_VALUE"}
    p = subprocess.run([*CTXKIT, "compact", str(transcript), "--set", "summarizer.use=extractive",
                        "--store", str(tmp_path / "store"), "-o", str(out), "--report", "json", *extra],
                       cwd=cwd, env=env, input=stdin, capture_output=True, timeout=60)
    report = json.loads(p.stderr) if p.returncode == 0 else {}  # --report json: warnings are in it
    return p, report, out.read_bytes() if out.exists() else b""


def reinjected(report: dict) -> dict:
    [stage] = [s for s in report["stages"] if s["id"] == "autocompact"]
    return stage["details"]["reinjected"]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "ok.py").write_text(NORMAL + "\n")
    (tmp_path / "home").mkdir()
    return root


def _fifo(tmp_path, root):
    path = root / "pipe"
    os.mkfifo(path)
    return str(path), "not regular"


def _dev_zero(tmp_path, root):
    return "/dev/zero", "not regular"


def _dev_stdin(tmp_path, root):
    return "/dev/stdin", "not regular"


def _proc_environ(tmp_path, root):
    return "/proc/self/environ", "not regular"


def _credentials(tmp_path, root):
    creds = tmp_path / "home" / ".aws" / "credentials"
    creds.parent.mkdir(parents=True)
    creds.write_text("[default]\naws_secret_access_key = CREDENTIAL_SECRET_VALUE\n")
    return str(creds), "outside"


def _link_out(tmp_path, root):
    creds = tmp_path / "home" / "notes.txt"
    creds.write_text("CREDENTIAL_SECRET_VALUE\n")
    (root / "notes.txt").symlink_to(creds)
    return str(root / "notes.txt"), "outside"


def _dotdot(tmp_path, root):
    creds = tmp_path / "home" / "notes.txt"
    creds.write_text("CREDENTIAL_SECRET_VALUE\n")
    return str(root / ".." / "home" / "notes.txt"), "outside"


SKIPPED = {"not regular": "that is not a regular file (a device, FIFO, socket, link or system file)",
           "outside": "outside the session's folder"}


@pytest.mark.skipif(not Path("/dev/zero").exists() or not hasattr(os, "mkfifo"), reason="POSIX devices")
@pytest.mark.parametrize("make", [_fifo, _dev_zero, _dev_stdin, _proc_environ, _credentials, _link_out, _dotdot],
                         ids=["fifo", "dev-zero", "dev-stdin", "proc-environ", "credentials", "link-out", "dotdot"])
def test_a_file_compact_must_not_read_is_skipped_and_reported(tmp_path, project, make):
    path, why = make(tmp_path, project)
    t = session(project, [str(project / "ok.py"), path], tmp_path / "s.jsonl")
    p, report, out = compact(tmp_path, project, t, stdin=b"STDIN_SECRET_VALUE\n")
    assert p.returncode == 0, p.stderr.decode()
    for secret in (b"STDIN_SECRET_VALUE", b"ENV_SECRET_VALUE", b"CREDENTIAL_SECRET_VALUE"):
        assert secret not in out
    d = reinjected(report)
    assert d["files_skipped"] == [f"skipped 1 file {SKIPPED[why]}: {path}"]
    assert d["files"] == [str(project / "ok.py")]  # the project's own file is still re-read
    assert NORMAL.encode() in out
    assert report["warnings"] == [f"compact: re-injection skipped 1 file {SKIPPED[why]}: {path}"]


def test_a_huge_file_in_the_project_is_dropped_without_being_read(tmp_path, project):
    big = project / "big.log"
    with open(big, "wb") as f:  # 3 GB, sparse: costs no disk, would cost 3 GB of memory to read
        f.write(b"BIG_FILE_MARKER\n")
        f.seek(3 * 1024 ** 3)
        f.write(b"\n")
    t = session(project, [str(project / "ok.py"), str(big)], tmp_path / "s.jsonl")
    p, report, out = compact(tmp_path, project, t)
    assert p.returncode == 0, p.stderr.decode()
    assert b"BIG_FILE_MARKER" not in out
    d = reinjected(report)
    assert d["files_over_budget"] == [str(big)] and d["files"] == [str(project / "ok.py")]
    assert f"Note: {big} was read before the conversation was summarized".encode() not in out


def test_a_link_inside_the_project_to_a_project_file_is_still_read(tmp_path, project):
    (project / "alias.py").symlink_to(project / "ok.py")
    t = session(project, [str(project / "alias.py")], tmp_path / "s.jsonl")
    p, report, out = compact(tmp_path, project, t)
    assert p.returncode == 0, p.stderr.decode()
    assert reinjected(report)["files"] == [str(project / "alias.py")] and NORMAL.encode() in out


def test_a_plan_file_outside_the_project_and_plan_folder_is_not_read(tmp_path, project):
    creds = tmp_path / "home" / ".aws" / "credentials"
    creds.parent.mkdir(parents=True)
    creds.write_text("CREDENTIAL_SECRET_VALUE\n")
    t = session(project, [str(project / "ok.py")], tmp_path / "s.jsonl")
    lines = t.read_text().splitlines()
    first = json.loads(lines[0])
    plan = {**{k: v for k, v in first.items() if k != "message"}, "type": "attachment",
            "uuid": "00000000-0000-4000-8000-999999999999", "parentUuid": first["uuid"],
            "attachment": {"type": "plan_file_reference", "planFilePath": str(creds), "planContent": "x"}}
    second = {**json.loads(lines[1]), "parentUuid": plan["uuid"]}
    lines[1:2] = [json.dumps(plan), json.dumps(second)]
    t.write_text("\n".join(lines) + "\n")
    p, report, out = compact(tmp_path, project, t)
    assert p.returncode == 0, p.stderr.decode()
    assert b"CREDENTIAL_SECRET_VALUE" not in out
    assert reinjected(report)["plan_file_skipped"] == f"skipped 1 file outside the session's folder: {creds}"


ATTACHMENTS = ("attachments:\n  changed_files: {}\n  nested_memory: {}\n"
               "stages:\n  - id: attachments\n    enabled: true\n")


@pytest.mark.parametrize("where", ["outside", "link"])
def test_changed_files_does_not_diff_a_file_outside_the_project(tmp_path, project, where):
    creds = tmp_path / "home" / ".aws" / "credentials"
    creds.parent.mkdir(parents=True)
    creds.write_text("aws_secret_access_key = CREDENTIAL_SECRET_VALUE\n")
    named = creds if where == "outside" else project / "creds.txt"
    if where == "link":
        named.symlink_to(creds)
    (project / "ok.py").write_text("CHANGED = 2\n")
    t = session(project, [str(project / "ok.py"), str(named)], tmp_path / "s.jsonl", seen="as seen then\n")
    policy = tmp_path / "attachments.yaml"
    policy.write_text(ATTACHMENTS)
    p, report, out = compact(tmp_path, project, t, extra=("--policy", str(policy)))  # no --force: the reads stay in view
    assert p.returncode == 0, p.stderr.decode()
    assert b"CREDENTIAL_SECRET_VALUE" not in out
    assert b"+CHANGED = 2" in out  # the project's own file is still diffed
    assert f"attachments: changed_files: skipped 1 file outside the session's folder: {named}" in report["warnings"]


def test_nested_memory_does_not_follow_a_link_out_of_the_project(tmp_path, project):
    (project / "pkg").mkdir()
    (project / "pkg" / "mod.py").write_text("pass\n")
    outside = tmp_path / "home" / "notes.md"
    outside.write_text("CREDENTIAL_SECRET_VALUE\n")
    (project / "pkg" / "CLAUDE.md").symlink_to(outside)
    t = session(project, [str(project / "pkg" / "mod.py")], tmp_path / "s.jsonl", seen="pass\n")
    policy = tmp_path / "attachments.yaml"
    policy.write_text(ATTACHMENTS)
    p, report, out = compact(tmp_path, project, t, extra=("--policy", str(policy)))  # no --force: the reads stay in view
    assert p.returncode == 0, p.stderr.decode()
    assert b"CREDENTIAL_SECRET_VALUE" not in out
    shown = project / "pkg" / "CLAUDE.md"
    assert f"attachments: nested_memory: skipped 1 file outside the session's folder: {shown}" in report["warnings"]


# -- the transcript's cwd does not choose the session's folder (issue 33, item 2) -------------------------
PEM = ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
       "QyNTUxOQAAACBQUklWQVRFX0tFWV9CT0RZX01BUktFUl8wMDAwMDAwMDAwMDAwAAAAkA==\n"
       "-----END OPENSSH PRIVATE KEY-----\n")


def _private_key(home: Path) -> Path:
    key = home / ".ssh" / "id_ed25519"
    key.parent.mkdir(parents=True, exist_ok=True)
    key.write_text(PEM)
    return key


def test_a_transcript_saying_its_folder_is_the_root_does_not_open_the_users_files(tmp_path, project):
    """Failed before: ``"cwd": "/"`` made ``/`` the session's folder, and the key was written, whole."""
    key = _private_key(tmp_path / "home")
    t = session(Path("/"), [str(project / "ok.py"), str(key)], tmp_path / "s.jsonl")
    p, report, out = compact(tmp_path, project, t)
    assert p.returncode == 0, p.stderr.decode()
    assert b"PRIVATE KEY" not in out and b"b3BlbnNzaC1rZXktdjEA" not in out
    d = reinjected(report)
    assert d["files_skipped"] == [f"skipped 1 file outside the session's folder: {key}"]
    assert d["files"] == [str(project / "ok.py")] and NORMAL.encode() in out  # the folder it runs from is read


@pytest.mark.parametrize("recorded,run_from", [("home", "home"), ("root", "home"), ("root", "root")])
def test_run_from_the_home_folder_or_the_root_re_reads_nothing(tmp_path, project, recorded, run_from):
    """Failed before: run from the home folder (or ``/``), a transcript whose cwd is it (or ``/``) had the
    key re-read."""
    home = tmp_path / "home"
    key = _private_key(home)
    t = session(home if recorded == "home" else Path("/"), [str(key)], tmp_path / "s.jsonl")
    where = home if run_from == "home" else Path("/")
    p, report, out = compact(tmp_path, where, t, home=home)
    assert p.returncode == 0, p.stderr.decode()
    assert b"PRIVATE KEY" not in out
    assert reinjected(report)["files_skipped"] == [f"skipped 1 file outside the session's folder: {key}"]
    why = "your home folder" if run_from == "home" else "the root folder"
    assert (f"compact: re-reads no file: the session's folder would be {where}, {why}; run ctxkit from "
            "the project's folder") in report["warnings"]


def test_run_from_the_home_folder_a_session_of_a_project_below_it_is_re_read(tmp_path, project):
    home = tmp_path / "home"
    (home / "proj").mkdir()
    (home / "proj" / "ok.py").write_text(NORMAL + "\n")
    t = session(home / "proj", [str(home / "proj" / "ok.py")], tmp_path / "s.jsonl")
    p, report, out = compact(tmp_path, home, t, home=home)
    assert p.returncode == 0, p.stderr.decode()
    assert reinjected(report)["files"] == [str(home / "proj" / "ok.py")] and NORMAL.encode() in out


def test_what_is_re_injected_is_redacted(tmp_path, project):
    """Failed before: a project file's secrets were re-injected as they are (the output goes to the provider)."""
    (project / "deploy.env").write_text(PEM + "AWS_SECRET_ACCESS_KEY=Zq8vT2mK9pLx4Rn7Wc1Yb5Hd3Jf6Gs0Ue2Ai8Ko4\n"
                                        "REGION=eu-west-1\n")
    t = session(project, [str(project / "deploy.env")], tmp_path / "s.jsonl")
    p, report, out = compact(tmp_path, project, t)
    assert p.returncode == 0, p.stderr.decode()
    assert reinjected(report)["files"] == [str(project / "deploy.env")]
    assert b"Zq8vT2mK9pLx4Rn7Wc1Yb5Hd3Jf6Gs0Ue2Ai8Ko4" not in out and b"b3BlbnNzaC1rZXktdjEA" not in out
    assert b"[REDACTED:private-key]" in out and b"[REDACTED:aws-secret-key]" in out
    assert b"REGION=eu-west-1" in out  # the rest of the file is there


def test_changed_files_and_memory_files_are_redacted(tmp_path, project):
    secret = "AWS_SECRET_ACCESS_KEY=Zq8vT2mK9pLx4Rn7Wc1Yb5Hd3Jf6Gs0Ue2Ai8Ko4"
    (project / "pkg").mkdir()
    (project / "pkg" / "CLAUDE.md").write_text(f"deploy with {secret}\n")
    (project / "pkg" / "mod.py").write_text(f"# {secret}\nCHANGED = 2\n")
    t = session(project, [str(project / "pkg" / "mod.py")], tmp_path / "s.jsonl", seen="as seen then\n")
    policy = tmp_path / "attachments.yaml"
    policy.write_text(ATTACHMENTS)
    p, report, out = compact(tmp_path, project, t, extra=("--policy", str(policy)))
    assert p.returncode == 0, p.stderr.decode()
    assert b"Zq8vT2mK9pLx4Rn7Wc1Yb5Hd3Jf6Gs0Ue2Ai8Ko4" not in out
    assert b"+CHANGED = 2" in out and out.count(b"[REDACTED:aws-secret-key]") >= 2
