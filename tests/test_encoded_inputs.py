"""A session that opens with a byte order mark — UTF-8's, as some Windows editors save a file, or UTF-16,
as Windows PowerShell 5.1 writes a redirected program's output (``opencode export <id> > session.json``) —
is read as the agent's session, written back encoded as it was, and comes back from ``expand`` byte for
byte; it was refused ("UTF-8 byte order mark (BOM) is not supported", "invalid UTF-8"). Run from the
command line."""
from __future__ import annotations

import json
from pathlib import Path

import codex_rollouts as codex
import pytest
from cline_tasks import native_call, native_result, task
from cline_tasks import write as write_cline
from test_opencode import _long, ctxkit

BOMS = {"utf-8-sig": b"\xef\xbb\xbf", "utf-16-le": b"\xff\xfe", "utf-16-be": b"\xfe\xff"}


def _rollout(path: Path) -> None:
    lines = codex.opening()
    for k in range(6):
        lines += codex.turn(k, f"look at f{k}", [(f"c{k}", f"cat f{k}", "x = 1\n" * 400)], f"f{k} sets x",
                            usage=(3_000 + 500 * k, 90), second=k * 5)
    codex.write(path, lines)


def _export(path: Path) -> None:
    path.write_bytes(_long(path.parent)[0].read_bytes())  # test_opencode's session, 31 calls


def _history(path: Path) -> None:
    msgs = [task("fix the tests")]
    for k in range(8):
        msgs += [native_call(f"toolu_{k}", "read_file", {"path": f"f{k}.py"}),
                 native_result(f"toolu_{k}", f"def f{k}(): ...\n" * 300)]
    write_cline(path, msgs)


SESSIONS = {"codex": ("rollout.jsonl", _rollout), "opencode": ("session.json", _export),
            "cline": ("api_conversation_history.json", _history)}


@pytest.mark.parametrize("fmt", sorted(SESSIONS))
@pytest.mark.parametrize("how", sorted(BOMS))
def test_a_session_with_a_byte_order_mark_is_read_compacted_and_expanded_byte_for_byte(tmp_path, fmt, how):
    name, make = SESSIONS[fmt]
    plain = tmp_path / f"plain-{name}"
    make(plain)
    text = plain.read_text(encoding="utf-8")
    path = tmp_path / name
    path.write_bytes(BOMS[how] + text.encode(how.removesuffix("-sig")))
    done = ctxkit("stats", "--json", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    stats, same = json.loads(done.stdout), json.loads(ctxkit("stats", "--json", str(plain), cwd=tmp_path).stdout)
    assert stats["format"] == fmt
    assert (stats["messages"], stats["tokens"]) == (same["messages"], same["tokens"])  # read as the plain file is
    done = ctxkit("compact", "--force", "-p", "no-llm", str(path), "-o", f"c-{name}", cwd=tmp_path)
    assert done.returncode == 0 and "autocompact: applied" in done.stderr, done.stderr
    compacted = (tmp_path / f"c-{name}").read_bytes()
    assert compacted.startswith(BOMS[how])  # written back as the agent's file was encoded
    assert "This session is being continued" in compacted[len(BOMS[how]):].decode(how.removesuffix("-sig"))
    done = ctxkit("expand", f"c-{name}", "-o", f"e-{name}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / f"e-{name}").read_bytes() == path.read_bytes()


def test_an_encoded_rollout_is_not_written_over_and_a_folder_takes_it(tmp_path):
    folder = tmp_path / "sessions"
    folder.mkdir()
    path = folder / "rollout.jsonl"
    _rollout(tmp_path / "plain.jsonl")
    path.write_bytes(BOMS["utf-16-le"] + (tmp_path / "plain.jsonl").read_text().encode("utf-16-le"))
    before = path.read_bytes()
    done = ctxkit("compact", "--force", "-p", "no-llm", str(path), "-o", str(path), cwd=tmp_path)
    assert done.returncode not in (0, 4) and "utf-16-le" in done.stderr and "Traceback" not in done.stderr
    assert path.read_bytes() == before
    export = folder / "session.json"
    _export(tmp_path / "plain.json")
    export.write_bytes(BOMS["utf-16-le"] + (tmp_path / "plain.json").read_text().encode("utf-16-le"))
    done = ctxkit("stats", "--json", str(folder), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["sessions"] == 2  # the export too: a folder takes it by its content


def test_a_file_not_in_the_encoding_its_mark_names_is_a_clear_error(tmp_path):
    path = tmp_path / "odd.jsonl"
    path.write_bytes(BOMS["utf-16-le"] + b'{"a"}')  # an odd number of bytes after the mark: no UTF-16
    done = ctxkit("stats", str(path), cwd=tmp_path)
    assert done.returncode == 3 and "not readable as utf-16-le" in done.stderr and "Traceback" not in done.stderr
    assert "odd.jsonl:1:" in done.stderr  # the line it is cut short in


def _bad_line(tmp_path: Path, how: str) -> Path:
    """A rollout with a byte order mark whose line 5 is no valid text: a byte no UTF-8 has, or for UTF-16
    a lone surrogate."""
    _rollout(tmp_path / "plain.jsonl")
    lines = (tmp_path / "plain.jsonl").read_text(encoding="utf-8").split("\n")
    path = tmp_path / f"{how}.jsonl"
    if how == "utf-8-sig":
        raw = [ln.encode() for ln in lines]
        raw[4] = raw[4][:40] + b"\xff" + raw[4][40:]
        path.write_bytes(BOMS[how] + b"\n".join(raw))
    else:
        lines[4] = lines[4][:40] + "\ud800" + lines[4][40:]
        path.write_bytes(BOMS[how] + "\n".join(lines).encode(how, "surrogatepass"))
    return path


@pytest.mark.parametrize("how", sorted(BOMS))
def test_a_line_of_an_encoded_file_that_is_no_text_is_named_skipped_and_given_back(tmp_path, how):
    """The line is named as in any JSONL file (it was the whole file, as line 0, and --on-bad-line skip
    could not read the rest), and under --on-bad-line skip compact and expand give it back as it was."""
    path = _bad_line(tmp_path, how)
    done = ctxkit("stats", path.name, cwd=tmp_path)
    assert done.returncode == 3 and f"{path.name}:5:" in done.stderr and "Traceback" not in done.stderr, done.stderr
    done = ctxkit("compact", "--force", "-p", "no-llm", "--on-bad-line", "skip", path.name, "-o", "c.jsonl",
                  cwd=tmp_path)
    assert done.returncode == 0 and "autocompact: applied" in done.stderr, done.stderr
    done = ctxkit("expand", "--on-bad-line", "skip", "c.jsonl", "-o", "e.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "e.jsonl").read_bytes() == path.read_bytes()
