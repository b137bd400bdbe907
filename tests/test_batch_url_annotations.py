"""``check --output-format github`` over fsspec URLs: the annotations name the URL, not the local copy
the run read (docs/ci.md, docs/fleet.md)."""
from __future__ import annotations

import uuid

import pytest
from builders import session

from ctxkit.cli.main import app

fsspec = pytest.importorskip("fsspec", reason="the dask extra is not installed: pip install 'ctxkit[dask]'")


def test_annotations_over_urls_name_the_url(runner, tmp_path, monkeypatch):
    monkeypatch.setenv("CTXKIT_SCRATCH", str(tmp_path / "scratch"))
    fs = fsspec.filesystem("memory")
    root = f"/ctxkit-test-{uuid.uuid4().hex[:8]}"
    session(tmp_path / "big.jsonl", rounds=3, size=12_000)
    fs.pipe_file(f"{root}/in/big.jsonl", (tmp_path / "big.jsonl").read_bytes())
    fs.pipe_file(f"{root}/in/50%,x:y.jsonl", b'{"role": "user", "content": "hi"}\n{oops\n')
    r = runner.invoke(app, ["check", f"memory://{root}/in", "--output-format", "github", "--context-window", "34000"])
    assert r.exit_code == 3
    lines = r.stdout.splitlines()
    assert lines[0] == (f"::error file=memory%3A//{root}/in/50%25%2Cx%3Ay.jsonl,line=2,col=1::"
                        f"memory://{root}/in/50%25,x:y.jsonl:2: not valid JSON: unexpected character, expected a string key")
    assert lines[1].startswith(f"::error file=memory%3A//{root}/in/big.jsonl,line=")
    assert "scratch" not in r.stdout
