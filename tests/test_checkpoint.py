"""Checkpoints (docs/store.md#checkpoints): a run after new turns reads only the bytes added since the
last run, in both ways people run ctxkit, and writes exactly the bytes a full read (``--no-checkpoint``)
writes, with the same decisions in the store; an edited file is read in full."""
from __future__ import annotations

import json
import os
import re
import shutil
import sys
import textwrap
from pathlib import Path

import pytest
from builders import Call, Turn, conversation, write
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ctxkit.cli.main import app
from ctxkit.store import block_crc, checkpoint

pytestmark = pytest.mark.usefixtures("no_overhead")  # sized against small windows, before counts had an overhead

ARGS = ["--policy", "no-llm", "--now", "2026-12-01T00:00:00Z", "--report", "json"]
#: the thresholds these tests were sized for (7,000 at 40,000 tokens, 1,000 at 34,000), from a summary reserve and
#: buffer a compaction fits under: compact refuses a window its policy cannot fit in (policy lint's fit check)
FITS = {"40000": ["--set", "thresholds.summary_reserve=3000", "--set", "thresholds.autocompact_buffer=30000"],
        "34000": ["--set", "thresholds.summary_reserve=400", "--set", "thresholds.autocompact_buffer=32600"]}
# microcompact clears old outputs; at 34,000 autocompact fires every run
WINDOW = ["--context-window", "40000", *FITS["40000"]]
SESSION_KEYS = ("ledger.json", "state.json")


def turns(n: int, size: int, tag: str) -> list[Turn]:
    """``n`` turns of two tool rounds each, with outputs of ``size`` lines (tool ids made unique by ``tag``)."""
    out = "".join(f"{tag} line {i}: some output of the command\n" for i in range(size))
    return [Turn(f"{tag}: step {k}", [[Call("Bash", {"command": f"make {tag}{k}"}, out)],
                                      [Call("Read", {"file_path": f"/work/{tag}{k}.py"}, out)]], f"Done {tag}{k}.")
            for k in range(n)]


def grow(path: Path, n: int, size: int, tag: str) -> None:
    """Append ``n`` new turns to a Claude Code transcript, chained onto its last entry (like an agent)."""
    entries = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    chained = [e for e in entries if e.get("type") in ("user", "assistant", "attachment") and not e.get("isSidechain")]
    new = conversation(turns(n, size, tag), session=f"s-{tag}", after=chained)
    with open(path, "a") as f:
        f.write("".join(json.dumps(e) + "\n" for e in new))


def next_turn(src: Path, tmp_path: Path) -> bytes:
    """The bytes one more turn adds to the session ``src`` (as :func:`grow` appends it), not appended."""
    later = tmp_path / "later.jsonl"
    later.write_bytes(src.read_bytes())
    grow(later, 1, 5, "b")
    return later.read_bytes()[src.stat().st_size:]


def compact(runner, src: Path, out: Path, store: Path, *extra: str) -> dict:
    window = [*FITS.get(extra[extra.index("--context-window") + 1], [])] if "--context-window" in extra else WINDOW
    r = runner.invoke(app, ["compact", str(src), "-o", str(out), "--store", str(store), *ARGS, *window, *extra])
    assert r.exit_code in (0, 1), r.stderr
    return json.loads(r.stderr[r.stderr.index("{"):])


def decisions(store: Path) -> dict[str, bytes]:
    return {name: (store / name).read_bytes() for name in SESSION_KEYS if (store / name).exists()}


def rewrite(path: Path, doc: dict) -> None:
    """Write a checkpoint document with its check, as ctxkit seals one: a test that changes a field then
    tests what ctxkit makes of that field, not the check."""
    body = json.dumps({k: v for k, v in doc.items() if k != "check"}).encode()
    path.write_bytes(b"".join(block_crc.sealed([body[:-1]])))


def both_runs(runner, tmp_path: Path, src: Path, out: Path, store: Path, *extra: str) -> dict:
    """Compact once with checkpoints and once with --no-checkpoint from the same input and store state
    (same paths: the output names them); asserts the same output bytes and store decisions. Leaves the
    checkpointed run's output and store in place; returns its report."""
    before_src, before_out = src.read_bytes(), out.read_bytes() if out.exists() else None
    saved = tmp_path / "saved-store"
    shutil.rmtree(saved, ignore_errors=True)
    if store.exists():
        shutil.copytree(store, saved)
    full = compact(runner, src, out, store, "--no-checkpoint", *extra)
    full_bytes, full_decisions = out.read_bytes(), decisions(store)
    # put everything back as it was, and run again with checkpoints
    shutil.rmtree(store, ignore_errors=True)
    if saved.exists():
        shutil.copytree(saved, store)
    src.write_bytes(before_src)
    if before_out is not None and out != src:
        out.write_bytes(before_out)
    report = compact(runner, src, out, store, *extra)
    assert [s["action"] for s in report["stages"]] == [s["action"] for s in full["stages"]]
    assert out.read_bytes() == full_bytes
    assert decisions(store) == full_decisions
    assert report["checkpoint"]["resumed"] in (True, False) and full["checkpoint"]["resumed"] is False
    return report


STEP = st.tuples(st.sampled_from(["grow", "grow", "edit", "grow-crlf"]), st.integers(1, 3), st.integers(1, 40))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(way=st.sampled_from(["separate-output", "output-is-the-session"]), steps=st.lists(STEP, min_size=1, max_size=4),
       window=st.sampled_from(["34000", "40000"]))
def test_checkpointed_and_full_runs_write_the_same_bytes(runner, tmp_path, way, steps, window):
    base = tmp_path / f"run-{abs(hash((way, tuple(steps), window)))}"
    extra = ("--context-window", window)
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir()
    src, store = base / "session.jsonl", base / "store"
    out = src if way == "output-is-the-session" else base / "out.jsonl"
    write(src, conversation(turns(8, 30, "t0"), session="s-t0"))
    both_runs(runner, base, src, out, store, *extra)
    for k, (what, n, size) in enumerate(steps, 1):
        if what.startswith("grow"):
            before = src.stat().st_size
            grow(src, n, size, f"t{k}")
            if what == "grow-crlf":  # a blank line, then the new lines ended by CRLF (a Windows writer)
                data = src.read_bytes()
                src.write_bytes(data[:before] + b"\n" + data[before:].replace(b"\n", b"\r\n"))
            resumed = both_runs(runner, base, src, out, store, *extra)["checkpoint"]
            assert resumed["resumed"] is True, resumed  # the input starts with what the last run read or wrote
        else:  # an edit of an earlier line (a text changed in place), then a new turn
            lines = src.read_bytes().splitlines(keepends=True)
            i = (n * 7 + size) % 40
            lines[i] = lines[i].replace(b"some output", b"SOME OUTPUT").replace(b"step", b"STEP")
            src.write_bytes(b"".join(lines))
            grow(src, 1, size, f"t{k}")
            both_runs(runner, base, src, out, store, *extra)


def test_a_run_after_new_turns_says_it_resumed_from_a_checkpoint(runner, tmp_path):
    src, out, store = tmp_path / "session.jsonl", tmp_path / "out.jsonl", tmp_path / "store"
    write(src, conversation(turns(8, 30, "a"), session="s-a"))
    first = compact(runner, src, out, store)
    assert first["checkpoint"] == {"resumed": False, "reason": "no checkpoint of this transcript in the store"}
    size, lines = src.stat().st_size, len(src.read_bytes().splitlines())
    grow(src, 1, 5, "b")
    second = compact(runner, src, out, store)
    assert second["checkpoint"] == {"resumed": True, "lines": lines, "bytes": size}
    # the text report says it too
    n, resumed_at = len(src.read_bytes().splitlines()), src.stat().st_size
    grow(src, 1, 5, "c")
    r = runner.invoke(app, ["compact", str(src), "-o", str(out), "--store", str(store), *ARGS[:-2]])
    assert r.exit_code == 0, r.stderr
    assert r.stderr.splitlines()[-1] == (f"read: resumed from a checkpoint, {n:,} lines ({resumed_at:,} bytes) "
                                         "not read again")


def test_the_output_the_agent_appends_to_resumes_from_what_the_last_run_wrote(runner, tmp_path):
    """``-o`` onto the input: the next input is the last output plus a turn; it starts with the bytes written."""
    src, store = tmp_path / "session.jsonl", tmp_path / "store"
    write(src, conversation(turns(8, 30, "a"), session="s-a"))
    compact(runner, src, src, store)
    written = src.read_bytes()
    grow(src, 1, 5, "b")
    report = compact(runner, src, src, store)
    assert report["checkpoint"] == {"resumed": True, "lines": len(written.splitlines()), "bytes": len(written)}


def test_an_edited_file_is_read_in_full(runner, tmp_path):
    src, out, store = tmp_path / "session.jsonl", tmp_path / "out.jsonl", tmp_path / "store"
    write(src, conversation(turns(8, 30, "a"), session="s-a"))
    compact(runner, src, out, store)
    data = src.read_bytes()
    src.write_bytes(data.replace(b"a: step 3", b"a: STEP 3"))  # same length, one byte range changed
    grow(src, 1, 5, "b")
    report = compact(runner, src, out, store)
    assert report["checkpoint"] == {"resumed": False, "reason": "the input does not start with the bytes of any "
                                    "checkpoint (an edited file): read in full"}
    assert b'"a: STEP 3"' in out.read_bytes() and b'"a: step 3"' not in out.read_bytes()


def test_a_turn_appended_while_the_input_is_read_is_left_to_the_next_run(runner, tmp_path, monkeypatch):
    """The agent appends while ctxkit runs: the run is about the bytes it read (its output, and the checkpoint
    it keeps); the turn appended meanwhile is read by the next run, which writes what a full read writes."""
    from ctxkit.transcript import jsonl

    src, out, store = tmp_path / "session.jsonl", tmp_path / "out.jsonl", tmp_path / "store"
    write(src, conversation(turns(8, 30, "a"), session="s-a"))
    read = src.read_bytes()
    compact(runner, src, out, store)
    expected = out.read_bytes()  # the output of a run on these bytes alone
    shutil.rmtree(store)
    out.unlink()
    turn = next_turn(src, tmp_path)
    real = jsonl.iter_lines

    def appending(source, offset=0, lines_before=0):  # the turn lands just as the reader reaches the end
        yield from real(source, offset, lines_before)
        if src.stat().st_size == len(read):
            src.write_bytes(read + turn)

    with monkeypatch.context() as patched:
        patched.setattr(jsonl, "iter_lines", appending)
        compact(runner, src, out, store)
    assert src.read_bytes() == read + turn
    assert out.read_bytes() == expected
    grow(src, 1, 5, "c")
    assert both_runs(runner, tmp_path, src, out, store)["checkpoint"] == {
        "resumed": True, "lines": len(read.splitlines()), "bytes": len(read)}


@pytest.mark.parametrize("when", ["while it reads", "while its stages run"])
def test_a_turn_appended_while_ctxkit_writes_onto_the_session_is_kept_after_its_output(runner, tmp_path, monkeypatch,
                                                                                       when):
    """``-o`` onto the session: the output replaces the file the agent appends to. A turn appended during the
    run is copied after the output just before it does (it was lost, or with the old reader taken into the
    last line read); the next run reads it, and writes what a full read writes."""
    from ctxkit import pipeline
    from ctxkit.transcript import jsonl

    src, store = tmp_path / "session.jsonl", tmp_path / "store"
    write(src, conversation(turns(8, 30, "a"), session="s-a"))
    turn = next_turn(src, tmp_path)

    def agent_appends():
        with open(src, "ab") as f:
            f.write(turn)

    with monkeypatch.context() as patched:
        if when == "while it reads":
            real = jsonl.iter_lines

            def appending(source, offset=0, lines_before=0):
                yield from real(source, offset, lines_before)
                agent_appends()

            patched.setattr(jsonl, "iter_lines", appending)
        else:
            real_run = pipeline.Pipeline.run

            def run(self, *args, **kwargs):
                agent_appends()
                return real_run(self, *args, **kwargs)

            patched.setattr(pipeline.Pipeline, "run", run)
        report = compact(runner, src, src, store)
    assert "applied" in [stage["action"] for stage in report["stages"]]  # the output is not the input
    assert src.read_bytes().endswith(b"}\n" + turn)
    grow(src, 1, 5, "c")
    assert both_runs(runner, tmp_path, src, src, store)["checkpoint"]["resumed"] is True


@pytest.mark.parametrize("finished", [True, False], ids=["finished meanwhile", "still unfinished"])
def test_a_line_being_written_when_ctxkit_reads_the_session_it_writes_onto_is_not_split(runner, tmp_path,
                                                                                        monkeypatch, finished):
    """``-o`` onto the session, ``--on-bad-line skip``, and the agent's next line half written when ctxkit
    reads: finished during the run, it is copied whole after the output (it was once kept as a broken line,
    and its rest copied as a second one); still unfinished, it is ended with a newline (its rest goes to the
    file the agent holds open, the replaced one), so the agent's next line is not glued onto it."""
    from ctxkit import pipeline

    src, store = tmp_path / "session.jsonl", tmp_path / "store"
    write(src, conversation(turns(8, 30, "a"), session="s-a"))
    turn = next_turn(src, tmp_path)
    with open(src, "ab") as f:
        f.write(turn[:200])
    real_run = pipeline.Pipeline.run

    def run(self, *args, **kwargs):
        if finished:
            with open(src, "ab") as f:
                f.write(turn[200:])
        return real_run(self, *args, **kwargs)

    with monkeypatch.context() as patched:
        patched.setattr(pipeline.Pipeline, "run", run)
        report = compact(runner, src, src, store, "--on-bad-line", "skip")
    assert "applied" in [stage["action"] for stage in report["stages"]]
    if finished:
        assert src.read_bytes().endswith(b"}\n" + turn)
    else:
        assert src.read_bytes().endswith(b"}\n" + turn[:200] + b"\n")
        with open(src, "ab") as f:
            f.write(turn[turn.index(b"\n") + 1:])  # the agent's next line, by name
    lines = src.read_bytes().splitlines()
    assert [line for line in lines if not _parses(line)] == ([] if finished else [turn[:200]])
    assert lines[-len(turn.splitlines()) + 1:] == turn.splitlines()[1:]  # the agent's next lines, whole


def test_a_session_rewritten_while_ctxkit_writes_onto_it_stops_the_run_with_nothing_written(tmp_path):
    """What is appended is copied only onto the bytes that were read, of the file that was read: a file now
    shorter than them was rewritten by someone else, a new file in its place was put there by someone else,
    and one that cannot be read again is not guessed at."""
    import io

    from ctxkit.errors import TranscriptError
    from ctxkit.transcript import read_transcript
    from ctxkit.transcript.appended import check_still_named, copy_appended_since_read

    src = tmp_path / "session.jsonl"
    write(src, conversation(turns(2, 3, "a"), session="s-a"))
    t = read_transcript(str(src))
    with open(src, "ab") as f:
        f.write(b'{"type":"user"')  # the agent's line, half written
    out = io.BytesIO()
    assert copy_appended_since_read(t, out, src) == len(b'{"type":"user"') and out.getvalue() == \
        b'{"type":"user"\n'  # ended with a newline: its rest goes to the file its writer holds open
    link = tmp_path / "link.jsonl"
    link.symlink_to(src)
    check_still_named(t, src)
    check_still_named(t, link)  # the same file, by another name
    content = src.read_bytes()
    src.write_bytes(content[:100])
    left = r"while ctxkit ran; it was left as it is \(the output was not written\)"
    with pytest.raises(TranscriptError, match=r"session.jsonl:0: shrank \(another program rewrote it\) " + left):
        copy_appended_since_read(t, io.BytesIO(), src)
    elsewhere = tmp_path / "new.jsonl"
    elsewhere.write_bytes(content + b"{}\n")
    os.replace(elsewhere, src)  # another program's new version, renamed over the session
    with pytest.raises(TranscriptError, match=r"session.jsonl:0: is no longer the file ctxkit read \(another program, "
                                              r"or another ctxkit run, put a new file in its place or removed it\) "
                                              + left):
        check_still_named(t, src)
    src.unlink()
    with pytest.raises(TranscriptError, match="is no longer the file ctxkit read"):
        check_still_named(t, src)
    t.close()
    with pytest.raises(TranscriptError, match=r"cannot be read again \(Bad file descriptor\) " + left):
        copy_appended_since_read(t, io.BytesIO(), src)


_REPLACING = {  # what runs "meanwhile", patched in a ctxkit process by _ctxkit_while
    "compact": ("ctxkit.pipeline", "Pipeline", "run"), "snip": ("ctxkit.pipeline", "Pipeline", "run"),
    "expand": ("ctxkit.store.expand", None, "expand_all")}


def _ctxkit_while(meanwhile: str, command: str, args: list[str], stdin: Path | None, cwd: Path):
    """Run ``ctxkit COMMAND ARGS`` in a process of its own (standard input redirected from ``stdin``), with
    the Python statements ``meanwhile`` run when the command gets to work (after reading its input)."""
    import subprocess

    module, owner, name = _REPLACING[command]
    target = f"importlib.import_module({module!r})" + (f".{owner}" if owner else "")
    script = f"""
import importlib, os, sys
from ctxkit.cli.main import run
target = {target}
real = getattr(target, {name!r})
def meanwhile(*args, **kwargs):
{textwrap.indent(meanwhile, "    ")}
    return real(*args, **kwargs)
setattr(target, {name!r}, meanwhile)
sys.argv = ["ctxkit", {command!r}, *{args!r}]
run()
"""
    with open(stdin or os.devnull, "rb") as given:
        return subprocess.run([sys.executable, "-c", script], stdin=given, capture_output=True, cwd=cwd)


@pytest.mark.parametrize("meanwhile", ["replaced", "removed"])
@pytest.mark.parametrize("command", ["compact", "compact --to openai", "snip", "expand"])
@pytest.mark.parametrize("how", ["named", "stdin"])
def test_a_session_replaced_while_ctxkit_writes_onto_it_is_left_as_the_other_program_wrote_it(tmp_path, command, how,
                                                                                             meanwhile):
    """``-o`` onto the session, and another program (or a second ctxkit run, from a hook fired twice) puts
    a new file in the session's place, or removes it, while this run works: the run stops with an error
    and leaves that as it is, with whatever the agent appended to the new file since; replacing it would
    lose that. The session named on the command line, or on standard input redirected from it; written
    in its own format, or in another one (nothing appended is copied then, but the check is the same)."""
    src, store = tmp_path / "session.jsonl", tmp_path / "store"
    write(src, conversation(turns(8, 30, "a"), session="s-a"))
    if command != "compact":  # snip by an id of the view; expand what a compaction moved out
        r = CliRunner().invoke(app, ["compact", str(src), "-o", str(src), "--store", str(store), *ARGS, *WINDOW])
        assert r.exit_code in (0, 1), r.stderr
    theirs = src.read_bytes() + next_turn(src, tmp_path)
    (tmp_path / "theirs.jsonl").write_bytes(theirs)
    named = "-" if how == "stdin" else str(src)
    args = {"compact": [named, "-o", str(src), "--store", str(store), *ARGS, *WINDOW],
            "compact --to openai": [named, "-o", str(src), "--store", str(store), *ARGS, *WINDOW, "--to", "openai"],
            "snip": [named, "--ids", _an_id(src), "-o", str(src), "--store", str(store), "--now", ARGS[3]],
            "expand": [named, "-o", str(src), "--store", str(store)]}[command]
    statement = {"replaced": f"os.replace({str(tmp_path / 'theirs.jsonl')!r}, {str(src)!r})",
                 "removed": f"os.unlink({str(src)!r})"}[meanwhile]
    done = _ctxkit_while(statement, command.split()[0], args, src if how == "stdin" else None, tmp_path)
    err = done.stderr.decode()
    assert done.returncode == 3, err
    assert f"{src}:0: is no longer the file ctxkit read" in err and "it was left as it is" in err
    assert "Traceback" not in err
    if meanwhile == "replaced":
        assert src.read_bytes() == theirs
    else:
        assert not src.exists()
    assert [p.name for p in tmp_path.iterdir() if "tmp" in p.name] == []  # no temporary file left


def _an_id(src: Path) -> str:
    """The snip id of the second message of ``src``'s view (as ``ctxkit view --tag-ids`` shows it; the
    first, the task, cannot be snipped)."""
    r = CliRunner().invoke(app, ["view", str(src), "--tag-ids"])
    return re.findall(r"\[id:(\w+)\]", r.stdout)[1]


def test_expand_onto_the_session_keeps_a_turn_appended_while_it_runs(runner, tmp_path, monkeypatch):
    """``ctxkit expand -o`` onto the session puts the tool outputs back in the file the agent appends to: a
    turn appended while it runs is copied after its output, as with ``compact``."""
    from ctxkit.store import expand

    src, store = tmp_path / "session.jsonl", tmp_path / "store"
    write(src, conversation(turns(8, 30, "a"), session="s-a"))
    original = src.read_bytes()
    compact(runner, src, src, store)
    assert src.read_bytes() != original
    turn = next_turn(src, tmp_path)
    real_expand = expand.expand_all

    def expanding(*args, **kwargs):
        with open(src, "ab") as f:
            f.write(turn)
        return real_expand(*args, **kwargs)

    monkeypatch.setattr(expand, "expand_all", expanding)
    r = runner.invoke(app, ["expand", str(src), "-o", str(src), "--store", str(store)])
    assert r.exit_code == 0, r.stderr
    assert src.read_bytes().endswith(b"}\n" + turn)
    assert b"some output of the command" in src.read_bytes()[:-len(turn)]  # the outputs are back


def test_standard_input_redirected_from_the_session_is_read_in_place(tmp_path):
    """``ctxkit compact - -o session.jsonl < session.jsonl``: standard input that is a file is read like a
    file named on the command line (it used to be copied to a temporary file first), so the output written
    onto it keeps a turn the agent appended during the run (in a copy, the turn was not there to keep).
    And the next run from standard input resumes from a checkpoint and writes what a full read writes
    (as it did from a copy: checkpoints are found by content)."""
    src, store = tmp_path / "session.jsonl", tmp_path / "store"
    write(src, conversation(turns(8, 30, "a"), session="s-a"))
    turn = next_turn(src, tmp_path)
    args = ["--store", str(store), *ARGS, *WINDOW]

    def ctxkit_reading_the_session(*args: str, meanwhile: str = "pass"):
        done = _ctxkit_while(meanwhile, "compact", ["-", *args], src, tmp_path)
        assert done.returncode in (0, 1), done.stderr.decode()
        return done

    ctxkit_reading_the_session("-o", str(src), *args,
                               meanwhile=f"with open({str(src)!r}, 'ab') as f:\n    f.write({turn!r})")
    assert src.read_bytes().endswith(b"}\n" + turn)
    grow(src, 1, 5, "c")
    shutil.copytree(store, tmp_path / "saved-store")
    outputs = {}
    for name, extra in (("full", ["--no-checkpoint"]), ("resumed", [])):
        shutil.rmtree(store)
        shutil.copytree(tmp_path / "saved-store", store)  # (the store's path is in the output: the same one)
        outputs[name] = tmp_path / f"{name}.jsonl"
        done = ctxkit_reading_the_session("-o", str(outputs[name]), *args, *extra)
    report = json.JSONDecoder().raw_decode(done.stderr[done.stderr.index(b"{"):].decode())[0]
    assert report["checkpoint"]["resumed"] is True
    assert outputs["resumed"].read_bytes() == outputs["full"].read_bytes()


def _parses(line: bytes) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


def test_no_checkpoint_reads_everything_and_keeps_none(runner, tmp_path):
    src, out, store = tmp_path / "session.jsonl", tmp_path / "out.jsonl", tmp_path / "store"
    write(src, conversation(turns(8, 30, "a"), session="s-a"))
    report = compact(runner, src, out, store, "--no-checkpoint")
    assert report["checkpoint"] == {"resumed": False, "reason": "disabled (--no-checkpoint)"}
    assert not (store / "checkpoints").exists()


def test_a_damaged_checkpoint_is_a_warning_and_the_input_is_read_in_full(runner, tmp_path):
    src, out, store = tmp_path / "session.jsonl", tmp_path / "out.jsonl", tmp_path / "store"
    write(src, conversation(turns(8, 30, "a"), session="s-a"))
    compact(runner, src, out, store)
    expected = out.read_bytes()
    damaged = sorted((store / "checkpoints").glob("*/*.json"))
    assert len(damaged) == 2  # what the run read, and what it wrote
    for path in damaged:
        doc = json.loads(path.read_text())
        doc["index"]["starts"] = "00"  # offsets of another file
        rewrite(path, doc)
    report = compact(runner, src, out, store)
    assert report["checkpoint"]["resumed"] is False
    # the one of what the run read is tried (the one of what it wrote is longer than this input)
    tried = [p for p in damaged if p.name.startswith(f"{src.stat().st_size:016d}-")]
    assert [w for w in report["warnings"] if w.startswith("checkpoint ")] == [
        f"checkpoint {tried[0]}: its line index is not of its shape; not used (a cache: an older checkpoint, or a full read, serves instead)"]
    assert out.read_bytes() == expected


@pytest.mark.parametrize("old_format", [1, 2, 3, 4, 5, 6])
def test_a_checkpoint_an_earlier_ctxkit_kept_is_passed_over_without_a_warning(runner, tmp_path, old_format):
    """Format 1 lacked the flags of the lines a person may have typed (its prompts would be missed);
    format 2 hashed with SHA-1; format 3 had no check of its own bytes; format 4 had no session settings
    (model, max_tokens); format 5 did not flag blocked prompts; format 6 had no pending context (its facts
    would be called not of their shape, with a warning): each is passed over, quietly."""
    import hashlib

    src, out, store = tmp_path / "session.jsonl", tmp_path / "out.jsonl", tmp_path / "store"
    write(src, conversation(turns(8, 30, "a"), session="s-a"))
    compact(runner, src, out, store)
    for path in sorted((store / "checkpoints").glob("*/*.json")):
        doc = json.loads(path.read_text())
        assert doc["format"] == checkpoint.FORMAT == 7 and doc["hash"] == block_crc.name()
        earlier = {k: v for k, v in doc.items() if k != "check"} | {"format": old_format}
        if old_format < 3:
            old = src if doc["size"] == src.stat().st_size else out  # what format 2 would have kept
            earlier |= {"hash": "sha1/1MiB", "digests": [hashlib.sha1(old.read_bytes()[:doc["size"]]).hexdigest()]}
        path.write_text(json.dumps(earlier))
    grow(src, 1, 5, "b")
    report = compact(runner, src, out, store)
    assert report["checkpoint"]["resumed"] is False
    assert not [w for w in report["warnings"] if w.startswith("checkpoint ")]
    assert compact(runner, src, out, store)["checkpoint"]["resumed"] is True  # this run kept a new one


@pytest.mark.parametrize("damage", ["a flag changed", "its check taken off"])
def test_a_checkpoint_changed_on_disk_is_a_warning_and_the_input_is_read_in_full(runner, tmp_path, damage):
    """One byte of a checkpoint changed (a bit flipped on disk) that leaves it JSON of its shape: a line
    marked as a sidechain entry. Trusted, it took that line out of the view of every run resumed from it (a
    bit elsewhere failed the run on a good transcript); its check finds it out, and the run writes what a
    full read writes. A document without its check (written by hand) is not trusted either."""
    src, out, store = tmp_path / "session.jsonl", tmp_path / "out.jsonl", tmp_path / "store"
    write(src, conversation(turns(8, 30, "a"), session="s-a"))
    compact(runner, src, out, store)
    path = next(p for p in (store / "checkpoints").glob("*/*.json") if p.name.startswith(f"{src.stat().st_size:016d}-"))
    data = path.read_bytes()
    if damage == "a flag changed":
        doc = json.loads(data)
        flags, types = bytes.fromhex(doc["index"]["flags"]), bytes.fromhex(doc["index"]["types"])
        names = doc["index"]["type_names"]
        line = max(i for i in range(len(flags)) if names[types[i]] == "assistant" and not flags[i])
        at = data.index(b'"flags":"') + len(b'"flags":"') + 2 * line + 1
        path.write_bytes(data[:at] + b"1" + data[at + 1:])  # its flags: 00 -> 01, a sidechain entry
        problem = "its bytes changed since it was written (its check does not match)"
    else:
        path.write_bytes(data[:-len(b',"check":"01234567"}')] + b"}")
        problem = "it does not end with a check of its bytes"
    grow(src, 1, 5, "b")
    report = both_runs(runner, tmp_path, src, out, store)
    assert report["checkpoint"] == {"resumed": False, "reason": "a checkpoint of this transcript could not be used "
                                    "(see the warnings), and no other matches it: read in full"}
    assert [w for w in report["warnings"] if w.startswith("checkpoint ")] == [
        f"checkpoint {path}: {problem}; not used (a cache: an older checkpoint, or a full read, serves instead)"]


def test_a_checkpoint_that_cannot_be_written_is_a_warning_and_the_output_is_written(runner, tmp_path):
    src, out, store = tmp_path / "session.jsonl", tmp_path / "out.jsonl", tmp_path / "store"
    write(src, conversation(turns(8, 30, "a"), session="s-a"))
    store.mkdir()
    (store / "checkpoints").write_text("not a folder")
    r = runner.invoke(app, ["compact", str(src), "-o", str(out), "--store", str(store), *ARGS[:-2], *WINDOW])
    assert r.exit_code == 0, r.stderr
    warning = [line for line in r.stderr.splitlines() if line.startswith("ctxkit: warning:")]
    assert warning == [f"ctxkit: warning: no checkpoint kept: store file {store / 'checkpoints'}: is not a folder; "
                       "ctxkit leaves it as it is (repair or remove it)"]
    assert out.read_bytes().startswith(src.read_bytes()[:100])


@pytest.fixture(params=["crc32c", "crc32"])
def crc(request, monkeypatch):
    """Each CRC a checkpoint may be hashed with: CRC-32C (google-crc32c's C code), and zlib's CRC-32, which
    an installation without that C code uses. Yields the reference function of one block."""
    import zlib

    block_crc.forget_choice()
    if request.param == "crc32":
        monkeypatch.setitem(sys.modules, "google_crc32c", None)  # as if not installed: import fails
        reference = zlib.crc32
    else:
        google_crc32c = pytest.importorskip("google_crc32c")
        if google_crc32c.implementation != "c":
            pytest.skip("google-crc32c has only its pure-Python code here")
        reference = google_crc32c.value
    assert block_crc.name() == f"{request.param}/1MiB"
    yield reference
    block_crc.forget_choice()


def test_the_crc_is_the_standard_one(crc):
    """The check values of the CRC catalogue, for the nine digits "123456789"."""
    assert block_crc.digest(b"123456789") == {"crc32c/1MiB": "e3069283",
                                                     "crc32/1MiB": "cbf43926"}[block_crc.name()]


def test_a_long_prefix_is_checked_block_by_block_and_one_changed_byte_is_seen(tmp_path, crc):
    path = tmp_path / "big"
    data = bytes(range(256)) * (20 * 4096 + 3)  # 20 MiB and a bit
    path.write_bytes(data)
    mib = checkpoint.BLOCK
    want = [f"{crc(data[k:k + mib]):08x}" for k in range(0, len(data), mib)]
    with open(path, "rb") as f:
        assert checkpoint._digests(f, len(data), []) == want
        assert checkpoint._starts_with(f, len(data), want)
        assert not checkpoint._starts_with(f, len(data) + 1, want)  # longer than the file
    path.write_bytes(data[:17 * mib + 5] + b"!" + data[17 * mib + 6:])
    with open(path, "rb") as f:
        assert not checkpoint._starts_with(f, len(data), want)
        assert checkpoint._digests(f, len(data), want[:3]) == want[:17] + [
            f"{crc(path.read_bytes()[17 * mib:18 * mib]):08x}"] + want[18:]


@pytest.mark.parametrize("first", ["crc32/1MiB", "crc32c/1MiB"])
def test_checkpoints_hashed_with_the_other_crc_are_passed_over_without_a_warning(runner, tmp_path, monkeypatch,
                                                                                 first):
    """A store used by two installations, one without google-crc32c's C code (or kept before ctxkit
    used it): each passes over the other's checkpoints (the input is read in full, quietly) and
    resumes from its own."""
    block_crc.forget_choice()
    if block_crc.name() != "crc32c/1MiB":
        pytest.skip("google-crc32c's C code is not installed: there is no other CRC to try")

    def installation(name: str) -> None:
        block_crc.forget_choice()
        if name == "crc32/1MiB":
            monkeypatch.setitem(sys.modules, "google_crc32c", None)  # as if not installed: import fails
        else:
            monkeypatch.delitem(sys.modules, "google_crc32c", raising=False)
        assert block_crc.name() == name

    src, out, store = tmp_path / "session.jsonl", tmp_path / "out.jsonl", tmp_path / "store"
    write(src, conversation(turns(8, 30, "a"), session="s-a"))
    try:
        installation(first)
        assert compact(runner, src, out, store)["checkpoint"]["resumed"] is False
        grow(src, 1, 5, "b")
        installation("crc32c/1MiB" if first == "crc32/1MiB" else "crc32/1MiB")
        report = compact(runner, src, out, store)
        assert report["checkpoint"]["resumed"] is False
        assert not [w for w in report["warnings"] if w.startswith("checkpoint ")]
        grow(src, 1, 5, "c")
        assert compact(runner, src, out, store)["checkpoint"]["resumed"] is True  # from its own
    finally:
        block_crc.forget_choice()


def test_a_run_that_needs_no_store_makes_none_for_its_checkpoints(runner, tmp_path):
    src, out, store = tmp_path / "session.jsonl", tmp_path / "out.jsonl", tmp_path / "store"
    write(src, conversation(turns(8, 30, "a"), session="s-a"))
    r = runner.invoke(app, ["compact", str(src), "-o", str(out), "--store", str(store), "--stage", "snip",
                            "--report", "none"])
    assert r.exit_code == 0, r.stderr
    assert out.read_bytes() == src.read_bytes() and not store.exists()


def _local_command_turn(session: str, after: list[dict]) -> list[dict]:
    """A local slash command (``/model``): its echo and its output, which go to the user only."""
    echo = {"type": "user", "uuid": f"{session}-local", "parentUuid": after[-1]["uuid"], "sessionId": session,
            "cwd": "/work", "timestamp": "2026-11-30T10:00:01.000Z", "isSidechain": False,
            "message": {"role": "user", "content": "<command-name>/model</command-name>\n<command-args></command-args>"}}
    output = {**echo, "uuid": f"{session}-local-out", "parentUuid": echo["uuid"],
              "message": {"role": "user", "content": "<local-command-stdout>Set model to opus</local-command-stdout>"}}
    return [echo, output]


def _slash_command_turn(session: str, after: list[dict]) -> list[dict]:
    """A slash command a person typed (its echo, then the prompt it expanded into), chained after ``after``."""
    parent = after[-1]["uuid"]
    echo = {"type": "user", "uuid": f"{session}-echo", "parentUuid": parent, "sessionId": session, "cwd": "/work",
            "timestamp": "2026-11-30T10:00:00.000Z", "isSidechain": False,
            "message": {"role": "user", "content": "<command-name>/review</command-name>\n"
                                                   "<command-args>pull 12</command-args>"}}
    expansion = {**echo, "uuid": f"{session}-expansion", "parentUuid": echo["uuid"], "isMeta": True,
                 "message": {"role": "user", "content": [{"type": "text", "text": "Review pull request 12."}]}}
    return [echo, expansion]


def test_prompts_typed_before_a_compaction_are_kept_by_the_checkpoint_and_read_as_a_full_read_reads_them(
        runner, tmp_path):
    """A session compacted before (Claude Code's or ctxkit's boundary in the input) that grows, output
    written beside it: the prompts typed before the boundary are found once, kept with the checkpoint,
    and the next run's summary quotes the same prompts, byte for byte, as a full read's."""
    from ctxkit.store import checkpoint
    from ctxkit.transcript import prompts
    from ctxkit.transcript.reader import read_transcript

    first, src, out, store = tmp_path / "first.jsonl", tmp_path / "session.jsonl", tmp_path / "out.jsonl", \
        tmp_path / "store"
    entries = conversation(turns(4, 30, "a"), session="s-a")
    entries += _slash_command_turn("s-a", entries)
    entries += conversation(turns(4, 30, "b"), session="s-b", after=entries)
    write(first, entries)
    compact(runner, first, src, tmp_path / "first-store", "--context-window", "34000")  # a boundary in the input
    assert b'"compact_boundary"' in src.read_bytes()
    before = [p.text for p in prompts.session_prompts(read_transcript(str(src)))]
    assert "/review pull 12" in before and "a: step 0" in before
    grow(src, 6, 30, "c")  # enough new turns for the next run to compact again (and to look for the prompts)
    before = [p.text for p in prompts.session_prompts(read_transcript(str(src)))]

    compact(runner, src, out, store, "--context-window", "34000")
    kept = [json.loads(p.read_bytes()) for p in (store / "checkpoints").glob("*/*.json")]
    found = [doc["earlier_prompts"] for doc in kept if doc["size"] == src.stat().st_size]
    assert found and found[0] is not None and 5 <= len(found[0]["entries"]) < len(before)
    for k in range(2):
        grow(src, 1, 5, f"d{k}")
        report = both_runs(runner, tmp_path, src, out, store, "--context-window", "34000")
        assert report["checkpoint"]["resumed"] is True
        summary = out.read_bytes()
        assert b"/review pull 12" in summary and b"a: step 0" in summary

    # what a resumed read finds is what a full read finds
    from ctxkit.store.disk import Store

    checkpoints = checkpoint.Checkpoints(Store(store))
    resumed = read_transcript(str(src), resume=checkpoints.resume)
    assert checkpoints.outcome["resumed"] is True and isinstance(resumed.lines.memo.get(prompts.EARLIER),
                                                                 prompts.EarlierPrompts)
    full = read_transcript(str(src))
    assert prompts.session_prompts(resumed) == prompts.session_prompts(full)
    assert [p.text for p in prompts.session_prompts(full)][:len(before)] == before


def test_earlier_prompts_of_another_shape_are_a_warning_and_the_input_is_read_in_full(runner, tmp_path):
    src, out, store = tmp_path / "session.jsonl", tmp_path / "out.jsonl", tmp_path / "store"
    write(src, conversation(turns(8, 30, "a"), session="s-a"))
    compact(runner, src, out, store)
    for path in (store / "checkpoints").glob("*/*.json"):
        doc = json.loads(path.read_text())
        rewrite(path, {**doc, "earlier_prompts": {"boundary": 10 ** 9, "entries": [], "commands": [], "dangling": []}})
    grow(src, 1, 5, "b")
    report = compact(runner, src, out, store)
    assert report["checkpoint"]["resumed"] is False
    assert any("its earlier prompts are not of their shape" in w for w in report["warnings"])


@pytest.mark.parametrize("wrong", ["an assistant's words", "a blank line", "a local command"])
def test_earlier_prompts_that_do_not_hold_what_they_say_are_worked_out_again(runner, tmp_path, wrong):
    """The checkpoint is read from the store: entries it names that are not prompts (an assistant's words,
    a blank line, a local command said to have expanded into a prompt) are checked, and the walk is made
    again: the output is a full read's, and nothing fails."""
    first, src, out, store = tmp_path / "first.jsonl", tmp_path / "session.jsonl", tmp_path / "out.jsonl", \
        tmp_path / "store"
    entries = conversation(turns(4, 30, "a"), session="s-a")
    entries += _slash_command_turn("s-a", entries)
    entries += _local_command_turn("s-a", entries)
    entries += conversation(turns(4, 30, "b"), session="s-b", after=entries)
    write(first, entries)
    compact(runner, first, src, tmp_path / "first-store", "--context-window", "34000")
    data = src.read_bytes()
    src.write_bytes(data.replace(b"\n", b"\n\n", 1))  # a blank second line (kept, left out of the view)
    grow(src, 6, 30, "c")
    compact(runner, src, out, store, "--context-window", "34000")
    parsed = [json.loads(x) if x.strip() else {} for x in src.read_bytes().splitlines()]
    assistant = next(k for k, d in enumerate(parsed) if d.get("type") == "assistant" and any(
        b.get("type") == "text" for b in d["message"]["content"]))
    local = next(k for k, d in enumerate(parsed) if d.get("uuid") == "s-a-local")
    crafted = 0
    for path in (store / "checkpoints").glob("*/*.json"):
        doc = json.loads(path.read_text())
        earlier = doc.get("earlier_prompts")
        if earlier is None:
            continue
        extra = {"an assistant's words": assistant, "a blank line": 1, "a local command": local}[wrong]
        changed = {**earlier, "entries": sorted({*earlier["entries"], extra})}
        if wrong == "a local command":
            changed["commands"] = sorted({*earlier["commands"], local})
        rewrite(path, {**doc, "earlier_prompts": changed})
        crafted += 1
    assert crafted
    grow(src, 1, 5, "d")
    report = both_runs(runner, tmp_path, src, out, store, "--context-window", "34000")
    assert report["checkpoint"]["resumed"] is True
    assert b"/review pull 12" in out.read_bytes()
