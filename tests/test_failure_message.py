"""When a stage fails, compact's last line says what the output written holds: the failed stage only knows
that it changed nothing, and the stages before it may have changed the transcript."""
from __future__ import annotations

import re
from pathlib import Path

from conftest import ROOT

from ctxkit.cli.main import app

EXAMPLE = ROOT / "examples" / "session.jsonl"
MALFORMED = ["--set", "summarizer.use=command", "--set", "summarizer.command=echo garbage", "--force"]


def test_a_failed_compaction_after_microcompact_says_the_output_holds_its_clearings(runner, tmp_path):
    # ten days after the last reply: the cache is cold, microcompact clears; the summary is malformed
    r = runner.invoke(app, ["compact", str(EXAMPLE), "-o", "out.jsonl", "--store", "st", "--now", "2026-11-30T12:00:00Z",
                            *MALFORMED])
    assert r.exit_code == 1
    lines = r.stderr.splitlines()
    assert lines[0].endswith("it reads: 'garbage'; autocompact changed nothing")
    assert any(line.startswith("microcompact: applied: cleared 3 old tool result(s) [") for line in lines)
    # (the counts depend a little on the store's path, which the persisted preview names)
    last = re.fullmatch(r"ctxkit: error: autocompact failed; the output was written with the changes of "
                        r"tool-result-budget, microcompact \(56,139 -> ([\d,]+) tokens\)", lines[-1])
    assert last and int(last.group(1).replace(",", "")) < 56_139 / 4, lines[-1]  # the clearings' count, far below
    assert "is unchanged" not in r.stderr
    assert Path("out.jsonl").read_bytes() != EXAMPLE.read_bytes()  # what the last line says was written


def test_a_failed_compaction_alone_says_the_output_is_unchanged(runner, tmp_path):
    r = runner.invoke(app, ["compact", str(EXAMPLE), "-o", "out.jsonl", "--store", "st", "--stage", "autocompact",
                            *MALFORMED])
    assert r.exit_code == 1
    assert r.stderr.splitlines()[-1] == ("ctxkit: error: autocompact failed; the output was written with no change "
                                         "(no stage changed the transcript)")
    written = Path("out.jsonl").read_bytes().splitlines(keepends=True)
    assert b'"type":"ctxkit-record","record":"store"' in written[-1]  # where the store is (docs/store.md)
    assert b"".join(written[:-1]) == EXAMPLE.read_bytes()
