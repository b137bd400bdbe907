"""Data safety of what ctxkit writes: a kill at any point loses nothing, ``-o`` keeps what the target
is (device, FIFO, symlink, permission bits), disk errors name the path, and ``expand`` finds the store
the output names from any folder (docs/store.md)."""
from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from conftest import ROOT

from ctxkit.cli.main import app

EXAMPLE = ROOT / "examples" / "session.jsonl"
NOW = "2026-11-20T13:00:00Z"  # cache cold: tool-result-budget persists one output, microcompact clears four

# Runs the CLI with os.replace wrapped: it logs each rename, and at the KT_N-th one kills the process
# with SIGKILL just before (KT_MODE=before: the temporary file is written, not renamed) or just after
# it (KT_MODE=after), or pauses there (KT_MODE=pause) for a real SIGTERM.
HOOK = textwrap.dedent("""
    import os, signal, sys, time
    log, mode, n = os.environ.get("KT_LOG"), os.environ.get("KT_MODE", ""), int(os.environ.get("KT_N", "0"))
    real, calls = os.replace, [0]
    def replace(src, dst, *a, **k):
        calls[0] += 1
        if log:
            with open(log, "a") as f:
                f.write(os.fspath(dst) + "\\n")
        if calls[0] == n and mode == "before":
            os.kill(os.getpid(), signal.SIGKILL)
        if calls[0] == n and mode == "pause":
            open(os.environ["KT_READY"], "w").close()
            time.sleep(60)
        real(src, dst, *a, **k)
        if calls[0] == n and mode == "after":
            os.kill(os.getpid(), signal.SIGKILL)
    os.replace = replace
    sys.argv[0] = "ctxkit"
    from ctxkit.cli.main import run
    run()
""")


def ctxkit(args, cwd, **env):
    """Run the CLI in a subprocess through HOOK; returns the CompletedProcess."""
    full = {**os.environ, **{k: str(v) for k, v in env.items()}}
    return subprocess.run([sys.executable, "-c", HOOK, *args], cwd=cwd, env=full, capture_output=True, text=True,
                          timeout=120)


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def tmp_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.name.endswith(".tmp"))


def expand_from_elsewhere(runner, output: Path, elsewhere: Path, monkeypatch) -> tuple[int, list[dict], str]:
    """``ctxkit expand OUTPUT`` run from another folder, no --store: (exit code, restored lines, stderr)."""
    monkeypatch.chdir(elsewhere)
    back = elsewhere / "back.jsonl"
    r = runner.invoke(app, ["expand", str(output), "-o", str(back)])
    return r.exit_code, (lines(back) if back.exists() else []), r.stderr


# -- a kill at any point ---------------------------------------------------------------------------
@pytest.mark.parametrize("where", ["in-place", "other-folder"])
def test_a_kill_at_any_write_leaves_everything_restorable(runner, tmp_path, monkeypatch, where):
    """SIGKILL just before and just after each rename of a run (blobs, ledger, state, output): the
    input, the output and the store always let ``expand`` restore the original, from another folder;
    the next run removes the killed run's temporary files and writes the same output as a clean run."""
    work, elsewhere = tmp_path / "w", tmp_path / "elsewhere"
    elsewhere.mkdir()
    src = work / "a" / "session.jsonl"
    out = src if where == "in-place" else work / "other" / "compacted.jsonl"
    args = ["compact", str(src), "-o", str(out), "--now", NOW, "--report", "none"]
    original = lines(EXAMPLE)

    def fresh() -> None:
        shutil.rmtree(work, ignore_errors=True)
        src.parent.mkdir(parents=True)
        shutil.copy(EXAMPLE, src)

    fresh()
    log = tmp_path / "renames.log"
    r = ctxkit(args, cwd=src.parent, KT_LOG=log)
    assert r.returncode == 0, r.stderr
    clean = out.read_bytes()
    renames = log.read_text().splitlines()
    assert len(renames) >= 4  # blobs, the ledger, the output...
    for mode in ("after", "before"):
        for n in range(1, len(renames) + 1):
            fresh()
            r = ctxkit(args, cwd=src.parent, KT_MODE=mode, KT_N=n)
            assert r.returncode == -signal.SIGKILL, (mode, n, r.stderr)
            assert out.exists() or where == "other-folder"
            if out.exists():
                assert out.read_bytes() in (clean, EXAMPLE.read_bytes()), (mode, n)
                code, restored, err = expand_from_elsewhere(runner, out, elsewhere, monkeypatch)
                assert (code, restored) == (0, original), (mode, n, err)
            r = ctxkit(args, cwd=src.parent)  # the next run
            assert r.returncode == 0, r.stderr
            assert out.read_bytes() == clean, (mode, n)
            assert tmp_files(work) == [], (mode, n)
    assert renames[-1] == str(out)  # the store first, the output last


@pytest.mark.parametrize("signum, word", [(signal.SIGTERM, "terminated"), (signal.SIGINT, "interrupted")])
def test_sigterm_removes_the_temporary_file_and_leaves_the_input(tmp_path, signum, word):
    """A real SIGTERM (or Ctrl-C) while the output's temporary file is written: no *.tmp left, input
    untouched, a one-line message, no traceback."""
    src = tmp_path / "session.jsonl"
    shutil.copy(EXAMPLE, src)
    args = ["compact", str(src), "-o", str(src), "--now", NOW, "--report", "none"]
    log = tmp_path / "renames.log"
    r = ctxkit(args, cwd=tmp_path, KT_LOG=log, KT_MODE="none")
    assert r.returncode == 0, r.stderr
    n = len(log.read_text().splitlines())  # the output is the last rename
    shutil.copy(EXAMPLE, src)
    shutil.rmtree(tmp_path / ".ctxkit")  # the same run again, rename for rename
    ready = tmp_path / "ready"
    full = {**os.environ, "KT_MODE": "pause", "KT_N": str(n), "KT_READY": str(ready)}
    # Ctrl-C's default handling, even when the tests themselves run as a background job (whose shell
    # made them ignore SIGINT: Python would then install no handler for it in the child)
    p = subprocess.Popen([sys.executable, "-c", HOOK, *args], cwd=tmp_path, env=full, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.default_int_handler))
    deadline = time.monotonic() + 60
    while not ready.exists() and time.monotonic() < deadline and p.poll() is None:
        time.sleep(0.05)
    assert ready.exists(), p.communicate()
    assert tmp_files(tmp_path), "the output's temporary file exists while it is written"
    p.send_signal(signum)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 4
    assert err == f"ctxkit: error: {word}; no file was left half-written\n"
    assert tmp_files(tmp_path) == []
    assert src.read_bytes() == EXAMPLE.read_bytes()


# -- what -o writes to -----------------------------------------------------------------------------
def _compact_to(runner, tmp_path, target, *extra):
    return runner.invoke(app, ["compact", str(EXAMPLE), "-o", str(target), "--store", str(tmp_path / "store"),
                               "--now", NOW, "--report", "none", *extra])


def private_device(path: Path, minor: int) -> Path:
    """A character device node of our own (1,3 is null, 1,7 is full): tests never risk the system's."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, minor))
    except (AttributeError, OSError) as exc:
        pytest.skip(f"cannot make a device node here: {exc}")
    return path


def test_output_onto_a_character_device_writes_it_and_keeps_it_a_device(runner, tmp_path):
    dev = private_device(tmp_path / "null", 3)
    r = _compact_to(runner, tmp_path, dev)
    assert r.exit_code == 0, r.stderr
    assert stat.S_ISCHR(os.lstat(dev).st_mode)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".null")]


@pytest.mark.skipif(os.geteuid() != 0 or not stat.S_ISCHR(os.stat("/dev/null").st_mode), reason="needs root")
def test_output_onto_dev_null_as_root_keeps_the_null_device(runner, tmp_path):
    """The reported case itself. A private null device first: an implementation that would replace
    a device fails there, before the system's /dev/null is ever named."""
    dev = private_device(tmp_path / "null", 3)
    r = _compact_to(runner, tmp_path, dev)
    assert r.exit_code == 0 and stat.S_ISCHR(os.lstat(dev).st_mode), "would replace /dev/null: not tried"
    before = os.stat("/dev/null")
    r = _compact_to(runner, tmp_path, "/dev/null")
    assert r.exit_code == 0, r.stderr
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev and after.st_ino == before.st_ino


def test_output_onto_a_fifo_is_read_through_it(runner, tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    r = _compact_to(runner, tmp_path, fifo)
    assert r.exit_code == 0, r.stderr
    reader.join(30)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert got and got[0].startswith(EXAMPLE.read_bytes().split(b"\n", 1)[0])


def test_output_through_a_symlink_writes_its_target_and_keeps_the_link(runner, tmp_path):
    real = tmp_path / "real.jsonl"
    real.write_text("old\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(real.name)
    r = _compact_to(runner, tmp_path, link)
    assert r.exit_code == 0, r.stderr
    assert link.is_symlink() and os.readlink(link) == real.name
    assert real.read_bytes().startswith(EXAMPLE.read_bytes().split(b"\n", 1)[0])


def test_an_existing_output_keeps_its_mode_and_a_new_one_follows_the_umask(runner, tmp_path):
    shared = tmp_path / "shared.jsonl"
    shared.write_text("old\n")
    shared.chmod(0o664)
    old_umask = os.umask(0o027)
    try:
        r = _compact_to(runner, tmp_path, shared)
        assert r.exit_code == 0, r.stderr
        r = _compact_to(runner, tmp_path, tmp_path / "new.jsonl")
        assert r.exit_code == 0, r.stderr
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(shared.stat().st_mode) == 0o664
    assert stat.S_IMODE((tmp_path / "new.jsonl").stat().st_mode) == 0o640
    assert shared.read_text() != "old\n"


# -- disk errors name the path ---------------------------------------------------------------------
def _limit_file_size(limit: int):
    def apply():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


@pytest.mark.parametrize("what", ["output", "store"])
def test_a_file_too_large_names_the_path_and_exits_2(tmp_path, what):
    """RLIMIT_FSIZE makes writes past 100 KB fail with EFBIG: the message names the file, exit 2,
    no traceback, no temporary file, the output not created."""
    out, store = tmp_path / "out.jsonl", tmp_path / "store"
    # the output (380 KB) is too large; with --stage microcompact under a warm cache nothing goes to the store,
    # with tool-result-budget the 177 KB test log does (a blob), before the output is written
    stage = "microcompact" if what == "output" else "tool-result-budget"
    r = subprocess.run([sys.executable, "-c", HOOK, "compact", str(EXAMPLE), "-o", str(out), "--store", str(store),
                        "--stage", stage, "--now", "2026-11-20T11:01:00Z", "--report", "none"],
                       capture_output=True, text=True, preexec_fn=_limit_file_size(100_000), timeout=120)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1
    if what == "output":
        assert r.stderr == f"ctxkit: error: cannot write {out}: File too large\n"
    else:
        assert r.stderr.startswith(f"ctxkit: error: cannot write {store.resolve()}/blobs/")
        assert r.stderr.endswith(".txt: File too large\n")
    assert not out.exists()
    assert tmp_files(tmp_path) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder_names_the_path(runner, tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        r = _compact_to(runner, tmp_path, ro / "out.jsonl")
    finally:
        ro.chmod(0o755)
    assert r.exit_code == 2
    assert r.stderr == f"ctxkit: error: cannot write {ro / 'out.jsonl'}: Permission denied\n"


SETPRIV = shutil.which("setpriv")


@pytest.mark.skipif(not SETPRIV or os.geteuid() != 0, reason="runs a child as another user (root and setpriv needed)")
@pytest.mark.parametrize("whose", ["read-only, the user's own", "another user's"])
def test_a_file_the_user_may_not_write_is_not_replaced(tmp_path, whose):
    """Failed before: the folder allowed a rename, so a read-only file (or root's file in a shared
    folder) was replaced, where ``> file`` would have been refused."""
    import tempfile

    shared = Path(tempfile.mkdtemp(prefix="ctxkit-test-"))
    try:
        shared.chmod(0o777)
        shutil.copy(EXAMPLE, shared / "s.jsonl")
        (shared / "s.jsonl").chmod(0o644)
        target = shared / "kept.jsonl"
        target.write_text("the user's\n")
        if whose == "another user's":
            target.chmod(0o644)  # root's
        else:
            os.chown(target, 65534, 65534)
            target.chmod(0o444)
        r = subprocess.run([SETPRIV, "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-m",
                            "ctxkit.cli.main", "compact", "s.jsonl", "--now", NOW, "-o", "kept.jsonl"], cwd=shared,
                           capture_output=True, text=True, timeout=120,
                           env={"PATH": os.environ["PATH"], "HOME": str(shared), "XDG_CONFIG_HOME": str(shared / "x")})
        assert (r.returncode, r.stderr) == (2, "ctxkit: error: cannot write kept.jsonl: Permission denied (the file is "
                                               "not writable by you; ctxkit does not replace it)\n")
        assert target.read_text() == "the user's\n" and not (shared / ".ctxkit").exists()  # refused before any work
    finally:
        shutil.rmtree(shared)


# -- expand finds the store the output names -------------------------------------------------------
def test_readme_flow_output_in_another_folder_expands_from_anywhere(runner, tmp_path, monkeypatch):
    """compact FILE -o OTHER/compacted.jsonl, then expand OTHER/compacted.jsonl from a third folder."""
    a, other, elsewhere = tmp_path / "a", tmp_path / "other", tmp_path / "elsewhere"
    a.mkdir()
    elsewhere.mkdir()
    shutil.copy(EXAMPLE, a / "session.jsonl")
    monkeypatch.chdir(a)
    r = runner.invoke(app, ["compact", "session.jsonl", "-o", str(other / "compacted.jsonl"), "--now", NOW])
    assert r.exit_code == 0, r.stderr
    assert not (other / ".ctxkit").exists()  # the store stays beside the input
    code, restored, err = expand_from_elsewhere(runner, other / "compacted.jsonl", elsewhere, monkeypatch)
    assert code == 0, err
    assert err.splitlines()[1:] == ["restored 3 tool output(s)"]  # after the warning naming the store used
    assert restored == lines(EXAMPLE)


def test_the_store_record_is_one_line_out_of_the_view_and_compacting_again_adds_none(runner, tmp_path,
                                                                                       monkeypatch):
    a, other = tmp_path / "a", tmp_path / "other"
    a.mkdir()
    shutil.copy(EXAMPLE, a / "session.jsonl")
    monkeypatch.chdir(a)
    first, second = other / "c1.jsonl", other / "c2.jsonl"
    for src, out in (("session.jsonl", first), (str(first), second)):
        r = runner.invoke(app, ["compact", src, "-o", str(out), "--now", NOW, "--report", "none"])
        assert r.exit_code == 0, r.stderr
    assert first.read_bytes() == second.read_bytes()  # the second run used the store the first named
    records = [x for x in lines(first) if x.get("type") == "ctxkit-record" and x.get("record") == "store"]
    assert [x["path"] for x in records] == [str((a / ".ctxkit").resolve())]
    view = runner.invoke(app, ["view", str(first)])
    assert view.exit_code == 0 and str(a / ".ctxkit") not in view.stdout.replace("\\/", "/").split("blobs")[0]
    assert "ctxkit-record" not in view.stdout


def test_plain_output_in_another_folder_names_its_store_in_a_sidecar(runner, tmp_path, monkeypatch):
    """Anthropic message lists cannot carry a record: OUTPUT.ctxkit-store beside the output names the store."""
    a, other, elsewhere = tmp_path / "a", tmp_path / "other", tmp_path / "elsewhere"
    a.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(a)
    r = runner.invoke(app, ["view", str(EXAMPLE), "-o", "plain.jsonl"])
    assert r.exit_code == 0, r.stderr
    out = other / "p.jsonl"
    r = runner.invoke(app, ["compact", "plain.jsonl", "-o", str(out), "--now", NOW, "--report", "none"])
    assert r.exit_code == 0, r.stderr
    assert json.loads((other / "p.jsonl.ctxkit-store").read_text()) == {"store": str((a / ".ctxkit").resolve())}
    code, restored, err = expand_from_elsewhere(runner, out, elsewhere, monkeypatch)
    assert code == 0, err
    assert err.splitlines()[1:] == ["restored 1 tool output(s)"]  # the persisted log (the empty result was answered)
    assert restored == lines(a / "plain.jsonl")


@pytest.mark.parametrize("via", ["-o", "stdout"])
def test_no_space_left_names_the_output(tmp_path, via):
    """A "full" device answers every write with ENOSPC: the message names where the output was going."""
    full = private_device(tmp_path / "full", 7)
    args = ["compact", str(EXAMPLE), "--store", str(tmp_path / "store"), "--stage", "microcompact",
            "--now", "2026-11-20T11:01:00Z", "--report", "none"]
    if via == "-o":
        r = subprocess.run([sys.executable, "-c", HOOK, *args, "-o", str(full)], capture_output=True, text=True,
                           timeout=120)
        name = str(full)
    else:
        with open(full, "wb") as stdout:
            r = subprocess.run([sys.executable, "-c", HOOK, *args], stdout=stdout, stderr=subprocess.PIPE, text=True,
                               timeout=120)
        name = "standard output"
    assert r.returncode == 2, r.stderr
    assert r.stderr == f"ctxkit: error: cannot write {name}: No space left on device\n"
    assert stat.S_ISCHR(os.lstat(full).st_mode)


def test_a_recorded_store_that_is_not_a_store_is_not_used(runner, tmp_path):
    """A transcript is data: a store record naming some other folder (here /) is ignored, with a warning."""
    t = tmp_path / "t.jsonl"
    record = {"type": "ctxkit-record", "record": "store", "timestamp": "2026-11-20T13:00:00.000Z", "path": "/"}
    t.write_bytes(EXAMPLE.read_bytes() + json.dumps(record).encode() + b"\n")
    r = runner.invoke(app, ["expand", str(t), "-o", str(tmp_path / "back.jsonl")])
    assert r.exit_code == 0, r.stderr
    assert (f"ctxkit: warning: the store this transcript names (/) is not a ctxkit store (no .ctxkit-store marker); using "
            f"{tmp_path / '.ctxkit'}") in r.stderr
