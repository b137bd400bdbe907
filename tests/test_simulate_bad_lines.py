"""``simulate`` and ``report`` with an unreadable line: refused by default (exit 3, file and line named), and
under ``--on-bad-line skip`` replayed as the file without that line, with the notice the other commands give.

Real sessions end with a torn last line when the agent was killed mid-write (or is still writing). A file
none of whose lines can be read is refused under ``skip`` too, by every command that takes the option: a
row, a view or a compacted file of no line would say the session was empty."""
from __future__ import annotations

import json

import pytest
from conftest import ROOT

from ctxkit.cli.main import app

EXAMPLE = ROOT / "examples" / "session.jsonl"
TORN = b'{"type":"assistant","message":{"role":"assistant","content":[{"type":"te'  # no newline: cut mid-write
BROKEN = b'{"type":"user","message":{"role":"user","content":"hi"\n'  # a whole line, not JSON


def _lines() -> list[bytes]:
    return EXAMPLE.read_bytes().splitlines(keepends=True)


def _torn(tmp_path):
    path = tmp_path / "torn.jsonl"
    path.write_bytes(b"".join(_lines()) + TORN)
    return path, len(_lines()) + 1, "truncated last line (not valid JSON; the writer may have crashed mid-line)"


def _broken_mid_file(tmp_path):
    lines = _lines()
    path = tmp_path / "mid.jsonl"
    path.write_bytes(b"".join([*lines[:10], BROKEN, *lines[10:]]))
    return path, 11, "not valid JSON: unexpected end of data"


def _rows(doc: dict) -> list[dict]:
    """The sessions' rows without what names the file or warns."""
    return [{k: v for k, v in s.items() if k not in ("session", "warnings")} for s in doc["sessions"]]


@pytest.mark.parametrize("make", [_torn, _broken_mid_file])
def test_simulate_refuses_a_bad_line_by_default_and_skips_it_when_told(runner, tmp_path, make):
    path, line, why = make(tmp_path)
    result = runner.invoke(app, ["simulate", str(path), "--json"])
    assert (result.exit_code, result.stdout) == (3, "")
    assert result.stderr == f"ctxkit: error: {path}:{line}: {why}\n"

    skipped = runner.invoke(app, ["simulate", str(path), "--json", "--on-bad-line", "skip"])
    clean = runner.invoke(app, ["simulate", str(EXAMPLE), "--json"])
    assert (skipped.exit_code, clean.exit_code) == (0, 0)
    doc = json.loads(skipped.stdout)
    # every row is the one of the file without the line: recorded, replayed, none and the policy
    assert _rows(doc) == _rows(json.loads(clean.stdout))
    assert doc["total"] == json.loads(clean.stdout)["total"]
    notice = f"skipped 1 unreadable line(s); first: {path}:{line}: {why}"
    assert doc["sessions"][0]["warnings"][0] == notice
    assert f"ctxkit: warning: {path}: {notice}\n" in skipped.stderr


def test_report_takes_the_option_too(runner, tmp_path):
    path, line, why = _torn(tmp_path)
    page = tmp_path / "r.html"
    result = runner.invoke(app, ["report", str(path), "-o", str(page)])
    assert result.exit_code == 3 and not page.exists()
    assert result.stderr == f"ctxkit: error: {path}:{line}: {why}\n"
    result = runner.invoke(app, ["report", str(path), "-o", str(page), "--on-bad-line", "skip"])
    assert result.exit_code == 0
    assert f"ctxkit: warning: {path}: skipped 1 unreadable line(s); first: {path}:{line}: {why}\n" in result.stderr
    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>")
    assert "skipped 1 unreadable line(s)" in html  # the page's warnings say it too


def test_doctor_says_what_a_torn_last_line_is(runner, tmp_path):
    path, line, why = _torn(tmp_path)
    result = runner.invoke(app, ["doctor", str(path)])
    assert result.exit_code == 1
    assert f"{path}:{line}: error: the agent cannot read this line: {why}" in result.stdout


@pytest.mark.parametrize("command", [["simulate", "--json"], ["report", "-o", "{tmp}/r.html"], ["compact", "-o", "{tmp}/out.jsonl"],
                                     ["stats"], ["view"], ["check"], ["expand", "-o", "{tmp}/out.jsonl"],
                                     ["snip", "--ids", "abc123", "-o", "{tmp}/out.jsonl"]], ids=lambda c: c[0])
def test_a_file_with_no_readable_line_is_refused_under_skip_too(runner, tmp_path, command):
    path = tmp_path / "garbage.jsonl"
    path.write_bytes(BROKEN + b"\n" + TORN)  # (a blank line between: not a line to read, nor a bad one)
    args = [a.replace("{tmp}", str(tmp_path)) for a in command]
    result = runner.invoke(app, [*args, str(path), "--on-bad-line", "skip"])
    assert (result.exit_code, result.stdout) == (3, "")
    assert result.stderr == (f"ctxkit: error: {path}: no line of it is readable (2 unreadable line(s); first: "
                             f"{path}:1: not valid JSON: unexpected end of data)\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["garbage.jsonl"]  # nothing written


def test_doctor_still_names_each_line_of_a_file_with_no_readable_line(runner, tmp_path):
    path = tmp_path / "garbage.jsonl"
    path.write_bytes(BROKEN + TORN)
    result = runner.invoke(app, ["doctor", str(path)])
    assert result.exit_code == 1
    assert f"{path}:1: error: the agent cannot read this line" in result.stdout
    assert f"{path}:2: error: the agent cannot read this line" in result.stdout
