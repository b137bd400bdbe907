"""A batch's paths are real paths (issue 33, item 5): outputs land below ``--out-dir``, ``**`` does not
go down a link to a folder, an input reached by two names is read once.

Each test failed before: ``'a/*/../../b/*.jsonl' --out-dir out`` wrote over the input ``b/f.jsonl``
and left ``out/`` empty; a ``**`` glob through a link loop named one file 41 times, and two loops
an exponential number of times (the expansion did not end in minutes); a subfolder of ``--out-dir``
that links elsewhere was written through."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from builders import session

from ctxkit.batch.inputs import Item, expand_inputs, output_for
from ctxkit.errors import UsageError

CTXKIT = [sys.executable, "-c", "from ctxkit.cli.main import run; run()"]


def ctxkit(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CTXKIT, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_a_glob_climbing_out_of_its_start_is_refused_and_the_input_left_alone(tmp_path):
    (tmp_path / "a" / "x").mkdir(parents=True)
    (tmp_path / "b").mkdir()
    session(tmp_path / "b" / "f.jsonl", rounds=1, size=10)
    before = (tmp_path / "b" / "f.jsonl").read_bytes()
    r = ctxkit(tmp_path, "compact", "a/*/../../b/*.jsonl", "--out-dir", "out", "--force")
    assert r.returncode == 2, r.stderr
    assert r.stderr == ("ctxkit: error: 'a/x/../../b/f.jsonl' would be written to 'out/../b/f.jsonl', outside "
                        "--out-dir 'out' (a '..' or a symbolic link on the way); nothing was run. Name inputs whose "
                        "path below the glob's or folder's start stays below it\n")
    assert (tmp_path / "b" / "f.jsonl").read_bytes() == before
    assert not (tmp_path / "out").exists()


def test_an_out_dir_subfolder_that_links_elsewhere_is_refused(tmp_path):
    (tmp_path / "in" / "d").mkdir(parents=True)
    session(tmp_path / "in" / "d" / "f.jsonl", rounds=1, size=10)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "d").symlink_to(tmp_path / "elsewhere")
    r = ctxkit(tmp_path, "compact", "in", "--out-dir", "out", "--force")
    assert r.returncode == 2, r.stderr
    assert "outside --out-dir 'out'" in r.stderr
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_a_url_output_climbing_out_of_its_out_dir_is_refused():
    with pytest.raises(UsageError, match="outside --out-dir 'memory://out'"):
        output_for(Item("memory://fleet/a/x/../../b/f.jsonl", "../b/f.jsonl"), "memory://out", False)
    assert output_for(Item("memory://fleet/b/f.jsonl", "b/f.jsonl"), "memory://out", False) == "memory://out/b/f.jsonl"


def loops(tmp_path: Path, n: int) -> None:
    """``c/d/g.jsonl`` and ``n`` links in ``c/d`` back up the tree (each a loop)."""
    (tmp_path / "c" / "d").mkdir(parents=True)
    session(tmp_path / "c" / "d" / "g.jsonl", rounds=1, size=10)
    for k in range(n):
        (tmp_path / "c" / "d" / f"loop{k}").symlink_to("../" * (k + 1))


def test_a_recursive_glob_does_not_go_down_a_link_loop(tmp_path, monkeypatch):
    loops(tmp_path, 1)
    monkeypatch.chdir(tmp_path)
    assert expand_inputs(["c/**/*.jsonl"]) == [Item("c/d/g.jsonl", "d/g.jsonl")]


def test_two_link_loops_do_not_make_the_glob_exponential(tmp_path):
    loops(tmp_path, 2)
    code = "from ctxkit.batch.inputs import expand_inputs; print(len(expand_inputs(['c/**/*.jsonl'])))"
    try:
        r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail("the glob's expansion did not end in 30 s")
    assert (r.returncode, r.stdout) == (0, "1\n"), r.stderr


def test_an_input_reached_by_two_names_is_read_once(tmp_path, monkeypatch):
    loops(tmp_path, 1)
    (tmp_path / "alias").symlink_to(tmp_path / "c")
    monkeypatch.chdir(tmp_path)
    items = expand_inputs(["c/d/g.jsonl", "c/d/loop0/d/g.jsonl", "alias/d/g.jsonl"])
    assert items == [Item("c/d/g.jsonl", "g.jsonl")]


def test_a_recursive_glob_still_finds_every_real_folder_and_follows_links_it_is_given(tmp_path, monkeypatch):
    for rel in ("top.jsonl", "x/one.jsonl", "x/y/two.jsonl", ".hidden/no.jsonl"):
        (tmp_path / "r" / rel).parent.mkdir(parents=True, exist_ok=True)
        session(tmp_path / "r" / rel, rounds=1, size=10)
    (tmp_path / "link").symlink_to(tmp_path / "r")  # named in the pattern by the user: followed
    monkeypatch.chdir(tmp_path)
    assert [i.rel for i in expand_inputs(["link/**/*.jsonl"])] == ["top.jsonl", "x/one.jsonl", "x/y/two.jsonl"]
    assert [i.source for i in expand_inputs(["r/*/*.jsonl", "r/**"])] == ["r/x/one.jsonl", "r/top.jsonl",
                                                                          "r/x/y/two.jsonl"]


# -- URLs: an object's name is data; nothing is staged outside the scratch folder ----------------------
def _memory(tmp_path: Path) -> tuple[object, str]:
    fsspec = pytest.importorskip("fsspec", reason="the dask extra is not installed: pip install 'ctxkit[dask]'")
    return fsspec.filesystem("memory"), f"/ctxkit-test-{tmp_path.name[-24:]}"


def files_outside(tmp_path: Path, scratch: Path) -> list[Path]:
    return [p for p in tmp_path.rglob("*") if p.is_file() and scratch not in p.parents]


def test_an_object_whose_key_climbs_out_is_refused_not_staged(runner, tmp_path, monkeypatch):
    fs, root = _memory(tmp_path)
    from ctxkit.cli.main import app

    scratch = tmp_path / "scratch" / "deep" / "er"
    monkeypatch.setenv("CTXKIT_SCRATCH", str(scratch))
    fs.pipe_file(f"{root}/in/day/../../../../../../../../escaped.jsonl", b'{"role": "user", "content": "hi"}\n')
    r = runner.invoke(app, ["check", f"memory://{root}/in"])
    assert r.exit_code == 2, r.stderr
    assert r.stderr.startswith(f"ctxkit: error: 'memory://{root}/in/day/../../") and "is not read" in r.stderr
    assert files_outside(tmp_path, scratch) == []


def test_a_store_key_that_climbs_out_is_not_downloaded(runner, tmp_path, monkeypatch):
    """Before, fsspec's own check stopped the download of the whole store ("would be copied outside the
    destination"), so one planted key failed every file of its folder; now that key alone is left out."""
    fs, root = _memory(tmp_path)
    from ctxkit.cli.main import app

    scratch = tmp_path / "scratch" / "deep" / "er"
    monkeypatch.setenv("CTXKIT_SCRATCH", str(scratch))
    session(tmp_path / "a.jsonl", rounds=2, size=10)
    fs.pipe_file(f"{root}/in/a.jsonl", (tmp_path / "a.jsonl").read_bytes())
    (tmp_path / "a.jsonl").unlink()
    depth = len(scratch.relative_to(tmp_path).parts) + len(root.strip("/").split("/")) + 3
    fs.pipe_file(f"{root}/in/.ctxkit/{'../' * depth}escaped.txt", b"planted")
    fs.pipe_file(f"{root}/in/.ctxkit/state.json", b"{}")
    r = runner.invoke(app, ["check", f"memory://{root}/in/a.jsonl"])
    assert r.exit_code == 0, r.stderr
    assert files_outside(tmp_path, scratch) == []


def test_the_default_scratch_folder_must_be_private(tmp_path, monkeypatch):
    import tempfile

    from ctxkit.batch import remote

    monkeypatch.delenv("CTXKIT_SCRATCH", raising=False)
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(tmp_path))
    made = remote.scratch_root()
    assert made == tmp_path / "ctxkit-stage" and (made.stat().st_mode & 0o777) == 0o700
    made.chmod(0o777)  # another user made it first, open to all (in a shared /tmp)
    with pytest.raises(UsageError, match="not a folder of yours that only you can write"):
        remote.scratch_root()
    made.rmdir()
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    made.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UsageError, match="not a folder of yours"):
        remote.scratch_root()


def test_a_file_url_out_dir_whose_subfolder_links_elsewhere_is_refused(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "out" / "d").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UsageError, match="outside --out-dir"):
        output_for(Item(f"file://{tmp_path}/in/d/f.jsonl", "d/f.jsonl"), f"file://{tmp_path}/out", False)
    assert output_for(Item(f"file://{tmp_path}/in/e/f.jsonl", "e/f.jsonl"), f"file://{tmp_path}/out", False) \
        == f"file://{tmp_path}/out/e/f.jsonl"


def linked_out(tmp_path: Path) -> bytes:
    """``ip/ok.jsonl``, and ``ip/evil.jsonl`` a link to ``b/f.jsonl``, outside ``ip/`` (issue 33 review, A)."""
    (tmp_path / "ip").mkdir()
    (tmp_path / "b").mkdir()
    session(tmp_path / "b" / "f.jsonl", rounds=1, size=10)
    session(tmp_path / "ip" / "ok.jsonl", rounds=1, size=10)
    (tmp_path / "ip" / "evil.jsonl").symlink_to("../b/f.jsonl")
    return (tmp_path / "b" / "f.jsonl").read_bytes()


@pytest.mark.parametrize("source", ["ip", "ip/*.jsonl", "ip/**/*.jsonl"])
def test_in_place_does_not_write_through_a_link_out_of_the_folder(tmp_path, source):
    before = linked_out(tmp_path)
    ok = (tmp_path / "ip" / "ok.jsonl").read_bytes()
    r = ctxkit(tmp_path, "compact", source, "--in-place", "--policy", "no-llm", "-j1", "--force")
    assert r.returncode == 2, r.stderr
    real = tmp_path.resolve() / "b" / "f.jsonl"
    root = "ip"
    assert r.stderr == (f"ctxkit: error: 'ip/evil.jsonl' is '{real}', outside '{root}' (a symbolic link or a '..' "
                        "on the way): --in-place does not write it; nothing was run. Name the file itself to write it\n")
    assert (tmp_path / "b" / "f.jsonl").read_bytes() == before
    assert not (tmp_path / "b" / ".ctxkit").exists()
    assert (tmp_path / "ip" / "ok.jsonl").read_bytes() == ok  # refused before any work
    assert not (tmp_path / "ip" / ".ctxkit").exists()


def test_in_place_through_a_linked_folder_a_wildcard_matched_is_refused(tmp_path):
    (tmp_path / "repo").mkdir()
    (tmp_path / "b").mkdir()
    session(tmp_path / "b" / "f.jsonl", rounds=1, size=10)
    before = (tmp_path / "b" / "f.jsonl").read_bytes()
    (tmp_path / "repo" / "d").symlink_to("../b")
    r = ctxkit(tmp_path, "compact", "repo/*/*.jsonl", "--in-place", "--policy", "no-llm", "--force")
    assert r.returncode == 2, r.stderr
    assert "outside 'repo'" in r.stderr
    assert (tmp_path / "b" / "f.jsonl").read_bytes() == before


@pytest.mark.parametrize("command", [["expand"], ["doctor", "--fix"]])
def test_other_in_place_commands_refuse_the_same_link(tmp_path, command):
    before = linked_out(tmp_path)
    r = ctxkit(tmp_path, *command, "ip", "--in-place")
    assert r.returncode == 2, r.stderr
    assert "'ip/evil.jsonl' is " in r.stderr and "--in-place does not write it; nothing was run" in r.stderr
    assert (tmp_path / "b" / "f.jsonl").read_bytes() == before


def test_in_place_follows_a_link_named_on_the_command_line_and_one_staying_inside(tmp_path):
    before = linked_out(tmp_path)
    (tmp_path / "ip" / "sub").mkdir()
    (tmp_path / "ip" / "sub" / "back.jsonl").symlink_to("../ok.jsonl")  # a link inside the folder: followed
    (tmp_path / "ip" / "evil.jsonl").unlink()
    r = ctxkit(tmp_path, "compact", "ip", "--in-place", "--policy", "no-llm", "-j1", "--force")
    assert r.returncode == 0, r.stderr
    session(tmp_path / "b" / "f.jsonl", rounds=6, size=4000)  # large enough to be compacted
    before = (tmp_path / "b" / "f.jsonl").read_bytes()
    (tmp_path / "ip" / "evil.jsonl").symlink_to("../b/f.jsonl")
    r = ctxkit(tmp_path, "compact", "ip/evil.jsonl", "ip/ok.jsonl", "--in-place", "--policy", "no-llm", "-j1",
               "--force")  # named: the user's word
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "b" / "f.jsonl").read_bytes() != before
    assert (tmp_path / "ip" / "evil.jsonl").is_symlink()
    session(tmp_path / "b" / "f.jsonl", rounds=6, size=4000)
    r = ctxkit(tmp_path, "compact", "ip", "ip/evil.jsonl", "--in-place", "--policy", "no-llm", "-j1", "--force")
    assert r.returncode == 0, r.stderr  # named as well as found: named, whatever the order
    assert (tmp_path / "b" / "f.jsonl").read_bytes() != before


def test_in_place_over_a_file_url_does_not_write_through_a_link_out_of_the_folder(tmp_path):
    pytest.importorskip("fsspec")
    linked_out(tmp_path)
    session(tmp_path / "b" / "f.jsonl", rounds=6, size=4000)  # large enough to be compacted
    before = (tmp_path / "b" / "f.jsonl").read_bytes()
    r = ctxkit(tmp_path, "compact", f"file://{tmp_path}/ip", "--in-place", "--policy", "no-llm", "-j1", "--force")
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith(f"ctxkit: error: 'file://{tmp_path}/ip/evil.jsonl' is '{tmp_path.resolve()}/b/f.jsonl', "
                               f"outside '{tmp_path}/ip' (a symbolic link or a '..' on the way)"), r.stderr
    assert (tmp_path / "b" / "f.jsonl").read_bytes() == before
