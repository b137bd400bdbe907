"""A store is read and written by one rule: no symbolic link below its folder (issue 33, item 1).

A ``.ctxkit/`` can come with a transcript (a cloned repository ships ``examples/session.jsonl`` and
``examples/.ctxkit/``). Each test here failed before: a ``ledger.json`` or ``state.json`` that is a
link made compact replace the file it points at (or create one anywhere); a ``blobs/`` that is a link
made compact write the blobs there while ``expand`` refused to read them (an output nobody could
restore); a ``.ctxkit`` that is a link to any folder made compact fill it."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import ROOT

from ctxkit.cli.main import app

EXAMPLE = ROOT / "examples" / "session.jsonl"
NOW = "2026-11-20T13:00:00Z"  # tool-result-budget persists one output, microcompact clears four
LEDGER_SHAPED = '{"format": 2, "sessions": {}}'


def listing(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def compact(runner, *extra: str):
    return runner.invoke(app, ["compact", "s.jsonl", "--now", NOW, "-o", "out.jsonl", *extra])


@pytest.fixture
def session(tmp_path):
    (tmp_path / "s.jsonl").write_bytes(EXAMPLE.read_bytes())
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "config.json").write_text(LEDGER_SHAPED)  # a file of the user's that has the ledger's shape
    (tmp_path / ".ctxkit").mkdir()
    return victim


def refused(r, path: Path) -> None:
    assert r.exit_code == 2, r.stderr
    assert r.stderr == (f"ctxkit: error: store file {path}: is a symbolic link (ctxkit neither reads nor writes its "
                        "own files through a link); ctxkit leaves it as it is (repair or remove it)\n")


@pytest.mark.parametrize("name", ["ledger.json", "state.json", ".ctxkit-store", ".lock"])
def test_a_store_file_that_is_a_link_is_refused_and_its_target_left_alone(runner, tmp_path, session, name):
    link = tmp_path / ".ctxkit" / name
    link.symlink_to(session / "config.json")
    before = listing(session)
    r = compact(runner)
    refused(r, link)
    assert listing(session) == before
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize("name", ["ledger.json", "state.json"])
def test_a_store_file_linked_to_nowhere_creates_nothing(runner, tmp_path, session, name):
    link = tmp_path / ".ctxkit" / name
    link.symlink_to(session / "new.json")
    r = compact(runner)
    refused(r, link)
    assert not (session / "new.json").exists() and not (tmp_path / "out.jsonl").exists()


def test_a_blobs_folder_that_is_a_link_is_refused_by_compact_and_expand_alike(runner, tmp_path, session):
    r = compact(runner)
    assert r.exit_code == 0, r.stderr
    blobs = tmp_path / ".ctxkit" / "blobs"
    blobs.rename(tmp_path / "moved")
    blobs.symlink_to(session)
    before = listing(session)
    (tmp_path / "s.jsonl").write_bytes(EXAMPLE.read_bytes())
    r = runner.invoke(app, ["compact", "s.jsonl", "--now", NOW, "-o", "again.jsonl", "--no-checkpoint"])
    refused(r, blobs)
    assert listing(session) == before and not (tmp_path / "again.jsonl").exists()
    r = runner.invoke(app, ["expand", "out.jsonl", "-o", "expanded.jsonl"])  # a read refuses the same store
    refused(r, blobs)
    assert not (tmp_path / "expanded.jsonl").exists()


def test_a_blob_subfolder_that_is_a_link_is_refused(runner, tmp_path, session):
    r = runner.invoke(app, ["compact", "s.jsonl", "--now", NOW, "-o", "first.jsonl", "--store", "first"])
    assert r.exit_code == 0, r.stderr
    prefixes = sorted(p.name for p in (tmp_path / "first" / "blobs").iterdir())
    (tmp_path / ".ctxkit" / "blobs").mkdir()
    for prefix in prefixes:
        (tmp_path / ".ctxkit" / "blobs" / prefix).symlink_to(session)
    r = compact(runner, "--no-checkpoint")
    assert r.exit_code == 2, r.stderr
    assert r.stderr.startswith(f"ctxkit: error: store file {tmp_path / '.ctxkit' / 'blobs'}/")
    assert "is a symbolic link" in r.stderr
    assert os.listdir(session) == ["config.json"] and not (tmp_path / "out.jsonl").exists()


def test_a_checkpoint_folder_that_is_a_link_is_not_written_through(runner, tmp_path, session):
    (tmp_path / ".ctxkit" / "checkpoints").symlink_to(session)
    r = compact(runner)
    assert r.exit_code == 0, r.stderr
    assert (f"ctxkit: warning: no checkpoint kept: store file {tmp_path / '.ctxkit' / 'checkpoints'}: is a "
            "symbolic link") in r.stderr
    assert os.listdir(session) == ["config.json"]
    assert (tmp_path / "out.jsonl").is_file()


def test_a_default_store_that_is_a_link_to_a_folder_that_is_no_store_is_refused(runner, tmp_path, session):
    (tmp_path / ".ctxkit").rmdir()
    (tmp_path / ".ctxkit").symlink_to(session)
    r = compact(runner)
    assert r.exit_code == 2, r.stderr
    assert r.stderr == (f"ctxkit: error: store {tmp_path / '.ctxkit'}: a symbolic link to {session}, which is not a "
                        "ctxkit store (no .ctxkit-store marker); ctxkit does not write through it (name the folder "
                        "with --store to use it)\n")
    assert os.listdir(session) == ["config.json"] and not (tmp_path / "out.jsonl").exists()
    # the user's word: --store through the same link is used, and a marked store through a link too
    r = compact(runner, "--store", ".ctxkit")
    assert r.exit_code == 0, r.stderr
    assert json.loads((session / ".ctxkit-store").read_text()) == {"format": 1}
    r = compact(runner)
    assert r.exit_code == 0, r.stderr
    r = runner.invoke(app, ["expand", "out.jsonl", "-o", "expanded.jsonl"])
    assert r.exit_code == 0, r.stderr
    assert (tmp_path / "expanded.jsonl").read_bytes() == EXAMPLE.read_bytes()


SETPRIV = shutil.which("setpriv")


@pytest.mark.skipif(not SETPRIV or not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="runs a child as another user (root and setpriv needed)")
def test_a_store_another_user_cannot_enter_is_named_as_such(tmp_path):
    """Failed before: the message named a file inside the folder ("ledger.json: cannot be read"), not the
    folder the user cannot enter."""
    shared = Path(tempfile.mkdtemp(prefix="ctxkit-test-"))
    try:
        shared.chmod(0o777)
        (shared / "s.jsonl").write_bytes(EXAMPLE.read_bytes())
        (shared / "s.jsonl").chmod(0o644)
        (shared / ".ctxkit").mkdir(mode=0o700)  # root's, private
        for command in (["stats", "s.jsonl"], ["compact", "s.jsonl", "--now", NOW, "-o", "out.jsonl"]):
            r = subprocess.run([SETPRIV, "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-m",
                                "ctxkit.cli.main", *command], cwd=shared, capture_output=True, text=True, timeout=60,
                               env={"PATH": os.environ["PATH"], "HOME": str(shared), "XDG_CONFIG_HOME": str(shared / "x")})
            assert (r.returncode, r.stderr) == (2, f"ctxkit: error: store file {shared / '.ctxkit'}: cannot be entered "
                                                   "(Permission denied); ctxkit leaves it as it is (repair or remove it)\n")
        assert not (shared / "out.jsonl").exists()
    finally:
        shutil.rmtree(shared)


def test_a_sidecar_that_is_a_link_is_not_written_through(runner, tmp_path, session):
    """Failed before: a link planted beside the output (``plain.jsonl.ctxkit-store``) had its target
    replaced by ``{"store": ...}`` (a user's ``~/.bashrc``, say)."""
    r = runner.invoke(app, ["view", str(EXAMPLE), "-o", "plain.jsonl"])  # an Anthropic message list
    assert r.exit_code == 0, r.stderr
    (tmp_path / "o").mkdir()
    side = tmp_path / "o" / "out.jsonl.ctxkit-store"
    side.symlink_to(session / "config.json")
    before = listing(session)
    r = runner.invoke(app, ["compact", "plain.jsonl", "--now", NOW, "-o", "o/out.jsonl"])
    assert r.exit_code == 2, r.stderr
    assert r.stderr.endswith("ctxkit: error: sidecar o/out.jsonl.ctxkit-store: is a symbolic link (ctxkit neither "
                             "reads nor writes its own files through a link); it was not written, nor the output "
                             "(remove it)\n")
    assert listing(session) == before and not (tmp_path / "o" / "out.jsonl").exists()
