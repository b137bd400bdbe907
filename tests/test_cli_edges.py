"""Edge cases a reviewer hit: line endings, malformed plain messages, pipes, flags that must be honoured."""
from __future__ import annotations

import json
import shlex
import subprocess
import sys

import pytest
from conftest import CC_CORPUS, ROOT

from ctxkit.cli.main import app

EXAMPLE = ROOT / "examples" / "session.jsonl"


def test_crlf_transcript_is_written_back_byte_for_byte(runner, tmp_path):
    crlf = tmp_path / "crlf.jsonl"
    crlf.write_bytes(EXAMPLE.read_bytes().replace(b"\n", b"\r\n"))
    out = tmp_path / "out.jsonl"
    # microcompact while the prompt cache is warm: no stage changes anything
    r = runner.invoke(app, ["compact", str(crlf), "-o", str(out), "--stage", "microcompact", "--store",
                            str(tmp_path / "s"), "--now", "2026-11-20T11:01:00Z"])
    assert r.exit_code == 0, r.stderr
    assert out.read_bytes() == crlf.read_bytes()


@pytest.mark.parametrize("line, message", [
    ('{"role":"user","content":5}', "<stdin>:1: content must be a string or a list of content blocks, got 5"),
    ('{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":5}]}',
     "<stdin>:1: content[0].content must be a string, a list of content blocks or null, got 5"),
    ('{"role":"robot","content":"hi"}', "<stdin>:1: role must be one of user, assistant, system, got \"robot\""),
    ('{"role":"assistant","content":null,"tool_calls":["oops"]}',
     "<stdin>:1: tool_calls[0] must be an object, got \"oops\""),
])
def test_malformed_messages_are_bad_lines_not_crashes(runner, line, message):
    r = runner.invoke(app, ["view"], input=line + "\n")
    assert r.exit_code == 3
    assert r.stderr == f"ctxkit: error: {message}\n"


def test_to_the_same_format_writes_the_view(runner, tmp_path):
    lines = ['{"role":"user","content":"hi"}', "garbage", '{"role":"assistant","content":"hello"}']
    r = runner.invoke(app, ["compact", "--to", "anthropic", "--on-bad-line", "skip", "--stage", "snip",
                            "--store", str(tmp_path / "s")], input="\n".join(lines) + "\n")
    assert r.exit_code == 0, r.stderr
    assert "garbage" not in r.stdout and len(r.stdout.splitlines()) == 2


def test_view_warns_about_skipped_lines(runner):
    r = runner.invoke(app, ["view", "--on-bad-line", "skip"], input='{"role":"user","content":"hi"}\nnope\n')
    assert r.exit_code == 0
    assert r.stderr == "ctxkit: warning: skipped 1 unreadable line(s); first: <stdin>:2: not valid JSON: invalid literal, expected 'null'\n"


def test_tag_ids_flag_reaches_the_request_body(runner, tmp_path):
    session = CC_CORPUS / "multi-prompt" / "session.jsonl"
    if not session.exists():
        pytest.skip(f"corpus session not found at {session}")
    with_ids = runner.invoke(app, ["view", str(session), "--to", "anthropic-request", "--tag-ids"])
    without = runner.invoke(app, ["view", str(session), "--to", "anthropic-request", "--no-tag-ids"])
    assert with_ids.exit_code == 0 and without.exit_code == 0
    body, plain = json.loads(with_ids.stdout), json.loads(without.stdout)
    assert "[id:" in json.dumps(body["messages"]) and "[id:" not in json.dumps(plain["messages"])
    assert any(t.get("name") == "snip" for t in body.get("tools", []))


def test_snip_of_a_plain_list_names_where_the_lines_went(runner, tmp_path):
    lines = [{"role": "user", "content": "one"}, {"role": "assistant", "content": "a1"},
             {"role": "user", "content": "two"}, {"role": "assistant", "content": "a2"},
             {"role": "user", "content": "three"}, {"role": "assistant", "content": "a3"}]
    src = tmp_path / "p.jsonl"
    src.write_text("".join(json.dumps(x) + "\n" for x in lines))
    tagged = runner.invoke(app, ["view", str(src), "--tag-ids"]).stdout.splitlines()
    sid = json.loads(tagged[2])["content"].rsplit("[id:", 1)[1].rstrip("]")
    r = runner.invoke(app, ["snip", str(src), "--ids", sid, "--store", str(tmp_path / "s"), "-o",
                            str(tmp_path / "o.jsonl")])
    assert r.exit_code == 0, r.stderr
    archive = r.stderr.split("the removed lines are in ", 1)[1].strip()
    assert "two" in open(archive).read()


def test_a_closed_pipe_is_not_an_error():
    p = subprocess.run(f"{sys.executable} -m ctxkit.cli.main view {EXAMPLE} | head -c 10 >/dev/null; "
                       "exit ${PIPESTATUS[0]}", shell=True, executable="/bin/bash", capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "error" not in p.stderr


@pytest.mark.parametrize("data", [b"\n", b"\r\n", b"\n\n", b" \n"])
def test_a_file_of_blank_lines_is_kept_as_it_is_under_skip(runner, tmp_path, data):
    """A one-byte file once made the writer read before its start (``ctxkit: error: Invalid argument``)."""
    src, out = tmp_path / "blank.jsonl", tmp_path / "out.jsonl"
    src.write_bytes(data)
    r = runner.invoke(app, ["compact", str(src), "-o", str(out), "--on-bad-line", "skip", "--store",
                            str(tmp_path / "s")])
    assert r.exit_code == 0, r.stderr
    assert out.read_bytes() == data


@pytest.mark.parametrize("redirect, error", [
    ("<&-", "<stdin>:0: standard input is closed (name a transcript file instead)"),
    ("0>>{tmp}/other.jsonl", "<stdin>:0: cannot be read (Bad file descriptor)"),
], ids=["closed", "write-only"])
def test_standard_input_that_cannot_be_read_is_named_not_an_internal_error(tmp_path, redirect, error):
    """``ctxkit stats`` reading standard input that was closed, or opened for writing only: a bad-input error
    (exit 3) that names it; it was an internal error (exit 4), or an unnamed one."""
    p = subprocess.run(f"{shlex.quote(sys.executable)} -m ctxkit.cli.main stats {redirect.format(tmp=tmp_path)}",
                       shell=True, capture_output=True, text=True, cwd=tmp_path)
    assert (p.returncode, p.stderr) == (3, f"ctxkit: error: {error}\n")


def test_a_full_disk_while_standard_input_is_copied_is_a_write_error_not_bad_input(tmp_path):
    """A pipe is copied to a temporary file first: a write that fails there (here a file-size limit) is the
    copy's error, named (exit 2), not "standard input cannot be read" (exit 3, a bad transcript)."""
    p = subprocess.run(f"ulimit -f 100; cat {shlex.quote(str(EXAMPLE))} | {shlex.quote(sys.executable)} -m "
                       "ctxkit.cli.main stats", shell=True, executable="/bin/bash", capture_output=True, text=True,
                       cwd=tmp_path)
    assert p.returncode == 2, p.stderr
    assert p.stderr.startswith("ctxkit: error: cannot write a temporary copy of standard input (") and \
        p.stderr.endswith("): File too large\n")


def test_a_non_blocking_pipe_is_waited_on_not_read_as_empty(tmp_path):
    """Standard input a non-blocking pipe (its writer set it so), with the session written a moment after
    ctxkit starts: ctxkit waits for it; it used to take "nothing yet" for the end and write an empty file."""
    import os
    import time

    r, w = os.pipe()
    os.set_blocking(r, False)
    out = tmp_path / "out.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "ctxkit.cli.main", "compact", "-", "-o", str(out), "--store",
                             str(tmp_path / "store")], stdin=r, stderr=subprocess.PIPE, cwd=tmp_path)
    os.close(r)
    time.sleep(1)
    with os.fdopen(w, "wb") as writer:
        writer.write(EXAMPLE.read_bytes())
    assert proc.wait(timeout=60) == 0, proc.stderr.read()
    assert out.read_bytes().count(b"\n") >= EXAMPLE.read_bytes().count(b"\n")
