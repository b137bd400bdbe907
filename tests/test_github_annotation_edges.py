"""``--output-format github`` on problems with a whole file: the annotation still names a line (1)."""
from __future__ import annotations

import os

from ctxkit.cli.main import app


def test_a_missing_transcript_is_annotated_on_line_1(runner, tmp_path):
    os.symlink(tmp_path / "nowhere.jsonl", tmp_path / "gone.jsonl")
    result = runner.invoke(app, ["check", "gone.jsonl", "--output-format", "github"])
    assert result.exit_code == 2  # an input that cannot be opened is a usage error (docs/cli-conventions.md)
    assert result.stdout == "::error file=gone.jsonl,line=1,col=1::gone.jsonl:0: no such file\n"
