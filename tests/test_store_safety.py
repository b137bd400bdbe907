"""The store is ctxkit's own: a transcript cannot point a run's writes at another folder, and a store
file that is damaged (not JSON, not of its shape) is named and left alone, never reset.

Each test here failed before: a ``store`` record or sidecar naming any folder with a ``state.json``
made ``compact`` rewrite it; a damaged ledger was moved aside and reset; a decision ``5`` or a state
``{"sid": 5}`` was an internal error (exit 4); a damaged blob made ``expand`` exit 4."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import ROOT

from ctxkit.cli.main import app

EXAMPLE = ROOT / "examples" / "session.jsonl"
SID = "7d1c2a9e-4b5f-4e8a-9c3d-2f6e8a1b0c4d"
NOW = "2026-11-20T13:00:00Z"  # tool-result-budget persists one output, microcompact clears four


def listing(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def victim_folder(tmp_path: Path) -> Path:
    victim = tmp_path / "x" / "victim"
    victim.mkdir(parents=True)
    (victim / "state.json").write_text('["not","a","dict"]')
    (victim / "notes.txt").write_text("the user's")
    return victim


def store_record(path: Path) -> bytes:
    return json.dumps({"type": "ctxkit-record", "record": "store", "timestamp": "2026-01-01T00:00:00Z",
                       "sessionId": SID, "path": str(path)}).encode() + b"\n"


# -- 1. a transcript does not choose where compact writes ------------------------------------------
def test_a_store_record_naming_an_unmarked_folder_is_not_written(runner, tmp_path):
    victim = victim_folder(tmp_path)
    before = listing(victim)
    (tmp_path / "s.jsonl").write_bytes(EXAMPLE.read_bytes() + store_record(victim))
    r = runner.invoke(app, ["compact", "s.jsonl", "--now", NOW, "-o", "out2.jsonl"])
    assert r.exit_code == 0, r.stderr
    assert listing(victim) == before and sorted(p.name for p in victim.iterdir()) == ["notes.txt", "state.json"]
    default = tmp_path / ".ctxkit"
    assert (f"ctxkit: warning: the store this transcript names ({victim}) is not a ctxkit store (no .ctxkit-store "
            f"marker); using {default}\n") in r.stderr
    assert (default / ".ctxkit-store").read_bytes() == b'{"format":1}\n'
    assert any((default / "blobs").rglob("*.json")) or any((default / "blobs").rglob("*.txt"))


def test_a_sidecar_naming_an_unmarked_folder_is_not_written(runner, tmp_path):
    victim = victim_folder(tmp_path)
    before = listing(victim)
    r = runner.invoke(app, ["view", str(EXAMPLE), "-o", "plain.jsonl"])
    assert r.exit_code == 0, r.stderr
    (tmp_path / "plain.jsonl.ctxkit-store").write_text(json.dumps({"store": str(victim)}))
    r = runner.invoke(app, ["compact", "plain.jsonl", "--now", NOW, "-o", "out2.jsonl"])
    assert r.exit_code == 0, r.stderr
    assert listing(victim) == before
    assert r.stderr.splitlines()[0] == (
        f"ctxkit: warning: the store this transcript names ({victim}) is not a ctxkit store (no .ctxkit-store marker); "
        f"using {tmp_path / '.ctxkit'}")
    assert (tmp_path / ".ctxkit" / ".ctxkit-store").is_file()


def test_compact_follows_a_record_to_a_marked_store_and_says_so(runner, tmp_path):
    a, other = tmp_path / "a", tmp_path / "other"
    a.mkdir()
    shutil.copy(EXAMPLE, a / "session.jsonl")
    r = runner.invoke(app, ["compact", str(a / "session.jsonl"), "-o", str(other / "c1.jsonl"), "--now", NOW])
    assert r.exit_code == 0, r.stderr
    r = runner.invoke(app, ["compact", str(other / "c1.jsonl"), "-o", str(other / "c2.jsonl"), "--now", NOW])
    assert r.exit_code == 0, r.stderr
    assert (f"ctxkit: warning: using the store this transcript names, {a / '.ctxkit'} (not {other / '.ctxkit'} "
            "beside the input)\n") in r.stderr
    assert not (other / ".ctxkit").exists()


def test_expand_reads_a_named_store_from_before_the_marker_and_writes_nothing_there(runner, tmp_path):
    a, other = tmp_path / "a", tmp_path / "other"
    a.mkdir()
    shutil.copy(EXAMPLE, a / "session.jsonl")
    r = runner.invoke(app, ["compact", str(a / "session.jsonl"), "-o", str(other / "c1.jsonl"), "--now", NOW])
    assert r.exit_code == 0, r.stderr
    (a / ".ctxkit" / ".ctxkit-store").unlink()  # a store written before the marker existed
    before = listing(a / ".ctxkit")
    r = runner.invoke(app, ["expand", str(other / "c1.jsonl"), "-o", str(other / "back.jsonl")])
    assert r.exit_code == 0, r.stderr
    assert "restored 3 tool output(s)" in r.stderr.splitlines()
    assert (other / "back.jsonl").read_bytes() == EXAMPLE.read_bytes()
    assert listing(a / ".ctxkit") == before
    # compact does not write to it through the record: only beside its input
    r = runner.invoke(app, ["compact", str(other / "c1.jsonl"), "-o", str(other / "c2.jsonl"), "--now", NOW])
    assert r.exit_code == 0, r.stderr
    assert listing(a / ".ctxkit") == before


def test_an_unmarked_default_store_is_adopted_and_marked(runner, tmp_path):
    shutil.copy(EXAMPLE, tmp_path / "s.jsonl")
    r = runner.invoke(app, ["compact", "s.jsonl", "--now", NOW, "-o", "c.jsonl"])
    assert r.exit_code == 0, r.stderr
    (tmp_path / ".ctxkit" / ".ctxkit-store").unlink()
    r = runner.invoke(app, ["compact", "c.jsonl", "--now", NOW, "-o", "c2.jsonl", "--report", "none"])
    assert r.exit_code == 0, r.stderr
    assert "warning" not in r.stderr
    assert (tmp_path / "c2.jsonl").read_bytes() == (tmp_path / "c.jsonl").read_bytes()


# -- 1/2. a damaged store file is named and left as it is ------------------------------------------
DAMAGED = [
    ("state.json", b'["not","a","dict"]', "the document is an array, not an object"),
    ("state.json", b"{not json", "not JSON ("),
    ("state.json", json.dumps({SID: 5}).encode(), f'["{SID}"] is a number, not an object'),
    ("state.json", json.dumps({SID: {"autocompact": 5}}).encode(), f'["{SID}"].autocompact is a number, not an object'),
    ("state.json", json.dumps({SID: {"autocompact": {"consecutive_failures": "x"}}}).encode(),
     f"[\"{SID}\"].autocompact.consecutive_failures is a string 'x', not a count"),
    ("ledger.json", json.dumps({"format": 2, "sessions": {SID: {"toolu_1": 5}}}).encode(),
     f'sessions["{SID}"]["toolu_1"] is a number, not an object'),
    ("ledger.json", b"{not json", "not JSON ("),
]


CASES = [(cmd, *case) for case in DAMAGED for cmd in ("compact", "expand")
         if cmd == "compact" or case[0] == "ledger.json"]  # expand reads no state


@pytest.mark.parametrize("command,name,content,problem", CASES,
                         ids=[f"{c}-{n}-{i}" for i, (c, n, _, _) in enumerate(CASES)])
def test_a_damaged_store_file_is_an_error_naming_it_and_is_kept(runner, tmp_path, command, name, content, problem):
    shutil.copy(EXAMPLE, tmp_path / "s.jsonl")
    store = tmp_path / ".ctxkit"
    store.mkdir()
    (store / name).write_bytes(content)
    args = [command, "s.jsonl", "-o", "out.jsonl"] + (["--force", "--now", NOW] if command == "compact" else [])
    r = runner.invoke(app, args)
    assert r.exit_code == 2, r.stderr
    prefix = f"ctxkit: error: store file {store / name}: {problem}"
    assert r.stderr.startswith(prefix), r.stderr
    assert r.stderr.endswith("; ctxkit leaves it as it is (repair or remove it)\n")
    assert r.stderr.count("\n") == 1
    assert sorted(p.name for p in store.iterdir()) == [name] and (store / name).read_bytes() == content
    assert not (tmp_path / "out.jsonl").exists()


# -- 2. one damaged blob: expand leaves that result as it is, reports it, exit 1 -------------------
@pytest.mark.parametrize("original,data,why", [
    ("text", b"\xff\xfe not utf-8", "damaged: not UTF-8 text (byte 0)"),
    ("json", b"not json at all", "damaged: its record says JSON, the blob is not JSON"),
])
def test_a_damaged_blob_is_reported_and_its_result_left_in_place(runner, tmp_path, original, data, why):
    shutil.copy(EXAMPLE, tmp_path / "s.jsonl")
    r = runner.invoke(app, ["compact", "s.jsonl", "--now", NOW, "-o", "c.jsonl"])
    assert r.exit_code == 0, r.stderr
    ledger_path = tmp_path / ".ctxkit" / "ledger.json"
    ledger = json.loads(ledger_path.read_text())
    tid, record = next((t, d) for t, d in sorted(ledger["sessions"][SID].items()) if d.get("blob"))
    record["original"] = original
    ledger_path.write_text(json.dumps(ledger))
    blob = Path(record["blob"])
    blob = tmp_path / ".ctxkit" / "blobs" / blob.name[:2] / blob.name
    blob.write_bytes(data)
    r = runner.invoke(app, ["expand", "c.jsonl", "-o", "back.jsonl"])
    assert r.exit_code == 1, r.stderr
    assert f"ctxkit: warning: did not read {record['blob']} (named by tool result {tid}): {why}\n" in r.stderr
    back = (tmp_path / "back.jsonl").read_text()
    assert json.dumps(record["replacement"])[1:-1][:60] in back  # that result stays as compacted


# -- 3. what -o and --store may name ---------------------------------------------------------------
@pytest.mark.parametrize("command", ["compact", "expand"])
def test_output_onto_a_symlink_loop_is_an_error_naming_it(runner, tmp_path, command):
    shutil.copy(EXAMPLE, tmp_path / "s.jsonl")
    (tmp_path / "loop1").symlink_to("loop2")
    (tmp_path / "loop2").symlink_to("loop1")
    r = runner.invoke(app, [command, "s.jsonl", "-o", "loop1"])
    assert r.exit_code == 2, r.stderr
    assert r.stderr == "ctxkit: error: cannot write loop1: Too many levels of symbolic links\n"
    assert not (tmp_path / ".ctxkit").exists()


@pytest.mark.parametrize("command", ["compact", "expand"])
def test_output_inside_the_store_folder_is_refused(runner, tmp_path, command):
    shutil.copy(EXAMPLE, tmp_path / "s.jsonl")
    r = runner.invoke(app, ["compact", "s.jsonl", "--now", NOW, "-o", "c.jsonl"])
    assert r.exit_code == 0, r.stderr
    store = tmp_path / ".ctxkit"
    before = listing(store)
    r = runner.invoke(app, [command, "c.jsonl", "-o", ".ctxkit/ledger.json"] + (["--now", NOW] if command == "compact" else []))
    assert r.exit_code == 2, r.stderr
    assert r.stderr.endswith(f"ctxkit: error: -o .ctxkit/ledger.json: inside the store folder {store}; "
                             "write the output elsewhere\n")
    assert listing(store) == before


@pytest.mark.parametrize("command", ["compact", "expand"])
def test_a_store_that_is_a_file_is_named_as_not_a_folder(runner, tmp_path, command):
    shutil.copy(EXAMPLE, tmp_path / "s.jsonl")
    (tmp_path / "f").write_text("a file")
    r = runner.invoke(app, [command, "s.jsonl", "--store", "f", "-o", "out.jsonl"])
    assert r.exit_code == 2, r.stderr
    assert r.stderr == "ctxkit: error: --store f: not a folder (--store names the folder compact used)\n"
    assert (tmp_path / "f").read_text() == "a file" and not (tmp_path / "out.jsonl").exists()


# SIGTERM sent by the process itself as soon as the command modules start loading (the slow part of
# start-up), before any command runs
EARLY_TERM = """
import os, signal, sys
class Hook:
    def find_spec(self, name, path=None, target=None):
        if name == "ctxkit.cli.commands":
            os.kill(os.getpid(), signal.SIGTERM)
        return None
sys.meta_path.insert(0, Hook())
sys.argv = ["ctxkit", *sys.argv[1:]]
from ctxkit.cli.main import run
run()
"""


def test_sigterm_while_starting_says_so_and_exits_4(tmp_path):
    import subprocess
    import sys

    shutil.copy(EXAMPLE, tmp_path / "s.jsonl")
    r = subprocess.run([sys.executable, "-c", EARLY_TERM, "compact", "s.jsonl", "-o", "out.jsonl"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert (r.returncode, r.stderr) == (4, "ctxkit: error: terminated; no file was left half-written\n")
    assert r.stdout == "" and sorted(p.name for p in tmp_path.iterdir()) == ["s.jsonl"]


# -- 4. what a run stores is durable before anything names it ----------------------------------------
def test_every_folder_a_run_stored_into_is_fsynced_once_before_the_ledger_and_the_output(runner, tmp_path,
                                                                                      monkeypatch):
    """The blobs' folders are fsynced once each, before the ledger that records the decisions and the
    output that names the blobs are written (a crash in between loses only files nothing names)."""
    from ctxkit import fileio
    from ctxkit.store import disk

    events: list[tuple[str, Path]] = []
    real_fsync_dir, real_replace = fileio.fsync_dir, fileio.os.replace
    monkeypatch.setattr(disk, "fsync_dir", lambda folder: (events.append(("sync", Path(folder))),
                                                            real_fsync_dir(folder))[1])
    monkeypatch.setattr(fileio, "fsync_dir", lambda folder: (events.append(("sync", Path(folder))),
                                                              real_fsync_dir(folder))[1])
    monkeypatch.setattr(fileio.os, "replace", lambda src, dst: (events.append(("name", Path(dst))),
                                                                 real_replace(src, dst))[1])
    store, out = tmp_path / "store", tmp_path / "out.jsonl"
    r = runner.invoke(app, ["compact", str(EXAMPLE), "-o", str(out), "--store", str(store), "--now", NOW,
                            "--report", "none"])
    assert r.exit_code == 0, r.stderr
    blobs = sorted(p for p in (store / "blobs").rglob("*") if p.is_file())
    assert blobs, "the example stores the outputs it persists and clears"
    named = [i for i, (kind, path) in enumerate(events) if kind == "name"]
    first_named_by = min(i for i in named if events[i][1] in (store / "ledger.json", out))
    synced_before = [path for kind, path in events[:first_named_by] if kind == "sync"]
    for blob in blobs:
        assert blob.parent in synced_before and store / "blobs" in synced_before, blob
    folders = {blob.parent for blob in blobs}
    assert all(synced_before.count(folder) == 1 for folder in folders)  # once each, not once per blob


@pytest.mark.parametrize("other_run", ["still running", "killed before its flush"])
def test_a_blob_found_in_the_store_is_made_durable_before_this_run_names_it(tmp_path, monkeypatch, other_run):
    """Runs share a store (`ctxkit batch -j 2` on sessions that share history): a blob another run wrote
    and has not flushed yet is named by this run's ledger only once its folder, and the folders above
    it up to the store, are fsynced."""
    from ctxkit.store import disk
    from ctxkit.store.disk import Store

    root = tmp_path / "store"
    other = Store(root)
    blob = Path(other.put_blob_file(b"the same tool output"))
    if other_run == "killed before its flush":
        del other
    synced: list[Path] = []
    real = disk.fsync_dir
    monkeypatch.setattr(disk, "fsync_dir", lambda folder: (synced.append(Path(folder)), real(folder))[1])
    this = Store(root)
    assert Path(this.put_blob_file(b"the same tool output")) == blob
    this.record_decision("call_1", {"action": "persisted", "blob": blob.name}, scope="s-1")
    this.flush()
    root = root.resolve()
    assert {blob.parent, root / "blobs", root} <= set(synced)
    assert synced.index(blob.parent) < synced.index(root / "blobs") < synced.index(root)  # a child first
