"""``ctxkit check DIR --output-format github``: the annotations, and a summary table with the same token sums
as without the flag (each file's run reports its figures whatever the output format)."""
from __future__ import annotations

import json
import shutil

from conftest import ROOT

from ctxkit.cli.main import app

EXAMPLE = ROOT / "examples" / "session.jsonl"
OVER = ["--context-window", "60000", "--set", "stages.microcompact.enabled=false"]


def sessions(tmp_path):
    folder = tmp_path / "d"
    folder.mkdir()
    for name in ("a.jsonl", "b.jsonl"):
        shutil.copyfile(EXAMPLE, folder / name)
    (folder / "c.jsonl").write_text("not json\n")
    return folder


def totals(result) -> dict:
    return next(json.loads(line)["totals"] for line in result.stderr.splitlines() if line.startswith('{"totals"'))


def test_github_summary_has_the_token_sums(runner, tmp_path):
    sessions(tmp_path)
    plain = runner.invoke(app, ["check", "d", *OVER, "--report", "json"])
    github = runner.invoke(app, ["check", "d", *OVER, "--report", "json", "--output-format", "github"])
    assert plain.exit_code == github.exit_code == 3
    assert totals(github)["tokens_before"] == totals(github)["tokens_after"] == 112278
    assert totals(github)["by_status"] == totals(plain)["by_status"]
    assert github.stdout == (
        "::error file=d/a.jsonl,line=27,col=1::56139 tokens reach the autocompact threshold 27000 (level blocking); "
        "compact this session\n"
        "::error file=d/b.jsonl,line=27,col=1::56139 tokens reach the autocompact threshold 27000 (level blocking); "
        "compact this session\n"
        "::error file=d/c.jsonl,line=1,col=1::d/c.jsonl:1: not valid JSON: invalid literal, expected 'null'\n")


def test_github_table_rows_are_not_zero(runner, tmp_path):
    sessions(tmp_path)
    r = runner.invoke(app, ["check", "d", *OVER, "--output-format", "github"])
    rows = {line.split("│")[1].strip(): line for line in r.stderr.splitlines() if line.startswith("│")}
    assert [c.strip() for c in rows["check-failed"].split("│")[4:6]] == ["112,278", "112,278"]
    assert [c.strip() for c in rows["total"].split("│")[4:6]] == ["112,278", "112,278"]


def test_a_file_under_the_threshold_gets_no_annotation(runner, tmp_path):
    sessions(tmp_path)
    (tmp_path / "d" / "c.jsonl").unlink()
    r = runner.invoke(app, ["check", "d", "--output-format", "github"])
    assert (r.exit_code, r.stdout) == (0, "")
    assert "112,278" in r.stderr
