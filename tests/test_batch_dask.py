"""The Dask engine (docs/fleet.md): a real ``distributed`` scheduler and workers on loopback, no mocks.

Two clusters, for two honest reasons:

- a **process** cluster (two worker processes, one thread each: how a fleet runs) for local files,
  which every worker reads from the same disk, as a shared file system would give them;
- a **thread** cluster for ``memory://`` URLs: fsspec's memory file system lives inside one process,
  so only workers in the test's own process see what the test wrote there (with process workers
  each would have an empty one of its own). On a real cluster the URLs are ``s3://``, ``gs://``...,
  which every process reaches.
"""
from __future__ import annotations

import json
import uuid

import pytest
from builders import session

from ctxkit.cli.main import app

distributed = pytest.importorskip("distributed", reason="the dask extra is not installed: pip install 'ctxkit[dask]'")
fsspec = pytest.importorskip("fsspec", reason="the dask extra is not installed: pip install 'ctxkit[dask]'")

NOW = "2026-11-30T12:00:00Z"


def invoke(runner, args):
    return runner.invoke(app, args)


@pytest.fixture(scope="module")
def scheduler():
    """The address of a running scheduler with two worker processes on 127.0.0.1."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=":0") as cluster:
        yield cluster.scheduler_address


def fleet(root):
    """Sessions in two folders: small ones, and ones whose tool outputs go to the store."""
    (root / "day1").mkdir(parents=True)
    (root / "day2").mkdir()
    session(root / "day1" / "a.jsonl", rounds=2, size=10)
    session(root / "day1" / "b.jsonl", rounds=3, size=12_000)
    session(root / "day2" / "c.jsonl", rounds=8)
    session(root / "day2" / "d.jsonl", rounds=2, size=12_000)
    (root / "day2" / "bad.jsonl").write_text('{"role": "user", "content": "hi"}\n{oops\n')


def test_stats_on_a_scheduler_gives_the_same_figures(runner, tmp_path, scheduler):
    fleet(tmp_path / "fleet")
    local = invoke(runner, ["stats", "fleet", "--json", "--now", NOW])
    dask = invoke(runner, ["stats", "fleet", "--scheduler", scheduler, "--json", "--now", NOW])
    assert (local.exit_code, dask.exit_code) == (3, 3)  # the bad one, in both
    assert dask.stdout == local.stdout
    figures = json.loads(dask.stdout)
    assert figures["sessions"] == 4 and figures["by_tool"]["Bash"] > 0
    assert "ctxkit: error: fleet/day2/bad.jsonl:2: not valid JSON" in dask.stderr


def test_compact_on_a_scheduler_writes_the_bytes_of_the_local_pool(runner, tmp_path, scheduler, monkeypatch):
    fleet(tmp_path / "fleet")
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", scheduler)  # the variable, not the option
    dask = invoke(runner, ["compact", "fleet", "--out-dir", "by-dask", "--now", NOW, "--report", "json"])
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS")
    local = invoke(runner, ["compact", "fleet", "--out-dir", "by-pool", "-j", "2", "--now", NOW])
    assert (dask.exit_code, local.exit_code) == (3, 3)
    names = ["day1/a.jsonl", "day1/b.jsonl", "day2/c.jsonl", "day2/d.jsonl"]
    assert sorted(p.relative_to(tmp_path / "by-dask").as_posix() for p in (tmp_path / "by-dask").rglob("*.jsonl")) \
        == names
    for name in names:
        assert (tmp_path / "by-dask" / name).read_bytes() == (tmp_path / "by-pool" / name).read_bytes(), name
    docs = [json.loads(line) for line in dask.stderr.splitlines()]
    assert sorted(d["status"] for d in docs[:-1]) == ["bad-transcript", "ok", "ok", "ok", "ok"]
    assert (tmp_path / "fleet" / "day1" / ".ctxkit" / "ledger.json").exists()  # the store beside its inputs


def test_memory_urls_on_a_thread_cluster_match_the_local_run(runner, tmp_path, monkeypatch):
    monkeypatch.setenv("CTXKIT_SCRATCH", str(tmp_path / "scratch"))
    fs = fsspec.filesystem("memory")
    root = f"/ctxkit-test-{uuid.uuid4().hex[:8]}"
    local = tmp_path / "src"
    fleet(local)
    (local / "day2" / "bad.jsonl").unlink()
    for path in sorted(local.rglob("*.jsonl")):
        fs.pipe_file(f"{root}/fleet/{path.relative_to(local).as_posix()}", path.read_bytes())
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp", host="127.0.0.1",
                                  dashboard_address=":0") as cluster:
        dask = invoke(runner, ["compact", f"memory://{root}/fleet", "--out-dir", f"memory://{root}/by-dask",
                               "--scheduler", cluster.scheduler_address, "--now", NOW])
    assert dask.exit_code == 0, dask.stderr
    names = ["day1/a.jsonl", "day1/b.jsonl", "day2/c.jsonl", "day2/d.jsonl"]
    written = sorted(p[len(f"{root}/by-dask/"):] for p in fs.find(f"{root}/by-dask"))
    assert [w for w in written if w.endswith(".jsonl")] == names  # and the sidecars naming their stores
    assert [w for w in written if not w.endswith(".jsonl")] == [f"{n}.ctxkit-store" for n in names]
    # each folder's store went back beside its transcripts; nothing is left in the scratch folder
    assert fs.exists(f"{root}/fleet/day1/.ctxkit/ledger.json") and fs.exists(f"{root}/fleet/day2/.ctxkit/ledger.json")
    assert fs.find(f"{root}/fleet/day1/.ctxkit/blobs")
    assert not [p for p in (tmp_path / "scratch").rglob("*") if p.is_file()]
    # the same run in this process (-j 1), with the stores the first run left: the same bytes
    here = invoke(runner, ["compact", f"memory://{root}/fleet", "--out-dir", f"memory://{root}/here", "-j", "1",
                           "--now", NOW])
    assert here.exit_code == 0, here.stderr
    for name in names:
        assert fs.cat_file(f"{root}/by-dask/{name}") == fs.cat_file(f"{root}/here/{name}"), name
    # and what a worker compacted is what compact writes for the file itself
    alone = invoke(runner, ["compact", "src/day1/a.jsonl", "--now", NOW])
    assert fs.cat_file(f"{root}/by-dask/day1/a.jsonl") == alone.stdout_bytes


def test_memory_urls_never_go_to_worker_processes(runner, tmp_path, monkeypatch):
    """A forked worker would write into its own copy of the memory file system, and the outputs would be
    lost: a batch over memory:// runs in ctxkit's own process whatever -j says."""
    monkeypatch.setenv("CTXKIT_SCRATCH", str(tmp_path / "scratch"))
    fs = fsspec.filesystem("memory")
    root = f"/ctxkit-test-{uuid.uuid4().hex[:8]}"
    for name in ("a", "b", "c"):  # three folders: three tasks (one folder's files share a task)
        session(tmp_path / f"{name}.jsonl", rounds=2, size=10)
        fs.pipe_file(f"{root}/in/{name}/{name}.jsonl", (tmp_path / f"{name}.jsonl").read_bytes())
    r = invoke(runner, ["compact", f"memory://{root}/in", "--out-dir", f"memory://{root}/out", "-j", "2", "--now", NOW])
    assert r.exit_code == 0, r.stderr
    for name in ("a", "b", "c"):
        alone = invoke(runner, ["compact", f"{name}.jsonl", "--now", NOW])
        assert fs.cat_file(f"{root}/out/{name}/{name}.jsonl") == alone.stdout_bytes


def test_an_unreachable_scheduler_is_a_usage_error(runner, tmp_path):
    session(tmp_path / "a.jsonl", rounds=1, size=10)
    r = invoke(runner, ["check", "a.jsonl", "--scheduler", "tcp://127.0.0.1:1"])
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr == ("ctxkit: error: cannot reach the Dask scheduler at 'tcp://127.0.0.1:1': Timed out trying to "
                        "connect to tcp://127.0.0.1:1 after 10 s\n")
