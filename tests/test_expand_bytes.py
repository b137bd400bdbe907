"""compact then expand gives back the input byte for byte: ``content`` keys as they were (absent stays
absent), and every restored line the exact bytes it had (spaced JSON, ``\\u`` escapes, CRLF)."""
from __future__ import annotations

import json

import pytest
from builders import entry
from conftest import cc_sessions, public_transcripts

from ctxkit.cli.main import app

BIG = "line of output\n" * 4_000  # over tool-result-budget's limit: persisted
MEDIUM = "a medium result, longer than the placeholder " * 3  # cleared by microcompact
STAGES = ["--stage", "tool-result-budget", "--stage", "microcompact", "--stage", "collapse", "--force",
          "--now", "2026-12-01T00:00:00Z", "--report", "none"]


def _spaced(value: dict, k: int) -> bytes:
    """JSON the way other tools write it: Python's default separators and ASCII escapes, a few lines with
    double spaces or an indent-free pretty form, one with a CRLF ending."""
    text = json.dumps(value)  # '{"a": 1, "b": 2}', non-ASCII as \\u00e9
    if k % 3 == 1:
        text = text.replace(", ", ",  ")
    if k % 3 == 2:
        text = json.dumps(value, separators=(" , ", " : "))
    return (text + ("\r\n" if k == 4 else "\n")).encode()


TOOL = "Edit"  # Read calls would be collapsed first; the collapse test below uses them


def _tool_calls(tid_prefix: str) -> list[tuple[str, str, object]]:
    """(tool id, tool, content or None for no content key): an empty result without ``content`` the model
    has answered (left as it is), enough medium ones for microcompact to clear the oldest, a big one, and
    last an empty result without ``content`` the model has not read yet (it gets a note). The transcript
    ends with that result."""
    calls = [(f"{tid_prefix}0", "Bash", None)]
    calls += [(f"{tid_prefix}{k}", TOOL, f"café {k}: {MEDIUM}") for k in range(1, 9)]
    return [*calls, (f"{tid_prefix}9", "Bash", BIG),  # among the recent ones microcompact keeps
            (f"{tid_prefix}10", "Bash", None)]


def _anthropic_lines() -> list[dict]:
    lines = [{"role": "user", "content": [{"type": "text", "text": "résumé the logs"}]}]
    for tid, tool, content in _tool_calls("call_"):
        lines.append({"role": "assistant", "content": [{"type": "tool_use", "id": tid, "name": tool,
                                                        "input": {"file_path": f"/w/{tid}.txt"}}]})
        block = {"type": "tool_result", "tool_use_id": tid}
        if content is not None:
            block["content"] = content
        lines.append({"role": "user", "content": [block]})
    return lines


def _openai_lines() -> list[dict]:
    lines: list[dict] = [{"role": "system", "content": "You help."}, {"role": "user", "content": "résumé the logs"}]
    for tid, tool, content in _tool_calls("call_"):
        lines.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": tid, "type": "function", "function": {"name": tool, "arguments": "{}"}}]})
        message = {"role": "tool", "tool_call_id": tid}
        if content is not None:
            message["content"] = content
        lines.append(message)
    return lines


def _claude_code_lines(done: bool = False) -> list[dict]:
    """A Claude Code session with thinking after the results microcompact clears (archived, then put back);
    with ``done``, the model's last answer after the last result."""
    def env(kind, uid, parent, message, **fields):
        return entry(kind, message, uuid=uid, parent=parent, version=None, **fields)

    lines = [env("user", "u0", None, message={"role": "user", "content": "résumé the logs"})]
    parent = "u0"
    for k, (tid, tool, content) in enumerate(_tool_calls("toolu_")):
        msg = {"id": f"msg_{k}", "type": "message", "role": "assistant", "model": "claude-opus-4-6"}
        lines.append(env("assistant", f"t{k}", parent, message={
            **msg, "content": [{"type": "thinking", "thinking": f"step {k}", "signature": "c2ln"}]}))
        lines.append(env("assistant", f"a{k}", f"t{k}", message={
            **msg, "content": [{"type": "tool_use", "id": tid, "name": tool, "input": {"file_path": f"/w/{k}"}}]}))
        block = {"tool_use_id": tid, "type": "tool_result"}
        if content is not None:
            block["content"] = content
        lines.append(env("user", f"r{k}", f"a{k}", message={"role": "user", "content": [block]},
                         toolUseResult={"stdout": content or "", "stderr": ""}))
        parent = f"r{k}"
    if done:
        lines.append(env("assistant", "done", parent, message={
            "id": "msg_done", "type": "message", "role": "assistant", "model": "claude-opus-4-6",
            "content": [{"type": "text", "text": "done"}]}))
    return lines


def _write(path, lines: list[dict], spaced: bool) -> bytes:
    data = b"".join(_spaced(x, k) if spaced else json.dumps(x, separators=(",", ":"), ensure_ascii=False).encode()
                    + b"\n" for k, x in enumerate(lines))
    path.write_bytes(data)
    return data


def _round_trip(runner, tmp_path, data: bytes, stages: list[str]) -> tuple[str, bytes]:
    """compact (with ``stages``) then expand; (the compacted text, the expanded bytes)."""
    src, out, back, store = (tmp_path / n for n in ("in.jsonl", "out.jsonl", "back.jsonl", "store"))
    assert src.read_bytes() == data
    r = runner.invoke(app, ["compact", str(src), "-o", str(out), "--store", str(store), *stages])
    assert r.exit_code == 0, r.stderr
    assert out.read_bytes() != data
    r = runner.invoke(app, ["expand", str(out), "-o", str(back), "--store", str(store)])
    assert r.exit_code == 0, r.stderr
    return out.read_text(), back.read_bytes()


FORMATS = pytest.mark.parametrize("make", [_anthropic_lines, _openai_lines, _claude_code_lines],
                                  ids=["anthropic", "openai", "claude-code"])
SPACING = pytest.mark.parametrize("spaced", [False, True], ids=["compact-json", "spaced-json"])


@FORMATS
@SPACING
def test_compact_then_expand_gives_back_the_input_byte_for_byte(runner, tmp_path, make, spaced):
    data = _write(tmp_path / "in.jsonl", make(), spaced)
    compacted, back = _round_trip(runner, tmp_path, data, STAGES)
    assert "Output too large" in compacted and "[Old tool result content cleared]" in compacted
    # the unread result without content got a note; the one the model had answered did not
    assert compacted.count("(Bash completed with no output)") == 1
    assert back == data


@FORMATS
@SPACING
def test_collapsed_runs_come_back_byte_for_byte(runner, tmp_path, make, spaced, monkeypatch):
    monkeypatch.setattr(__import__(__name__), "TOOL", "Read")
    data = _write(tmp_path / "in.jsonl", make(), spaced)
    compacted, back = _round_trip(runner, tmp_path, data, [*STAGES, "--context-window", "40000"])
    assert "collapse" in compacted or "Original calls and results" in compacted
    assert back == data


@SPACING
def test_lines_a_compaction_put_behind_its_boundary_come_back_byte_for_byte(runner, tmp_path, spaced):
    """Thinking stripped after a cleared result is archived; a compaction in the same run then puts those
    entries behind its boundary, where they are written as read: expand leaves their bytes alone."""
    data = _write(tmp_path / "in.jsonl", _claude_code_lines(done=True), spaced)  # every thinking turn before the kept one
    out, back, store = tmp_path / "out.jsonl", tmp_path / "back.jsonl", tmp_path / "store"
    r = runner.invoke(app, ["compact", str(tmp_path / "in.jsonl"), "-o", str(out), "--store", str(store), *STAGES,
                            "--stage", "autocompact", "--policy", "no-llm", "--report", "json"])
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stderr)["lines_kept_as_read"] > 0
    n = len(data.splitlines())
    assert out.read_bytes().splitlines(keepends=True)[:n] == data.splitlines(keepends=True)
    assert b'"archive"' in out.read_bytes()  # the thinking it stripped is in the store all the same
    r = runner.invoke(app, ["expand", str(out), "-o", str(back), "--store", str(store)])
    assert r.exit_code == 0, r.stderr
    assert back.read_bytes().splitlines(keepends=True)[:n] == data.splitlines(keepends=True)


CORPUS = [p / "session.jsonl" for p in cc_sessions()] + public_transcripts()


@pytest.mark.skipif(not CORPUS, reason="shared corpus not found")
@pytest.mark.parametrize("path", CORPUS, ids=lambda p: f"{p.parent.name}/{p.name[:12]}")
def test_corpus_sessions_come_back_byte_for_byte(runner, tmp_path, path):
    """Every stage that takes something out of the view, forced, on every corpus transcript: expand gives
    the file back as it was (Claude Code's own persisted outputs stay previews: expand gives back what
    ctxkit took)."""
    out, back, store = tmp_path / "out.jsonl", tmp_path / "back.jsonl", tmp_path / "store"
    r = runner.invoke(app, ["compact", str(path), "-o", str(out), "--store", str(store), *STAGES,
                            "--context-window", "40000"])
    assert r.exit_code == 0, r.stderr
    r = runner.invoke(app, ["expand", str(out), "-o", str(back), "--store", str(store)])
    assert r.exit_code == 0, r.stderr
    assert back.read_bytes() == path.read_bytes()


def _plain_list(tmp_path, n: int):
    path = tmp_path / "plain.jsonl"
    path.write_text("".join(json.dumps({"role": "user" if i % 2 == 0 else "assistant", "content": f"w{i}"}) + "\n"
                            for i in range(n)))
    return path


def test_a_plain_list_s_removed_lines_are_kept_in_one_file_per_run(runner, tmp_path):
    """Every removed line of a list written by json.dumps needs its bytes kept: one pack for the run, not
    a file (and an fsync) per line, which made 30,000 one-word messages take minutes (bench/plain_list_store.py)."""
    path = _plain_list(tmp_path, 600)
    r = runner.invoke(app, ["compact", str(path), "--force", "--store", "st", "-o", "out.jsonl", "--report", "none"])
    assert r.exit_code == 0, r.stderr
    kept = [p.relative_to(tmp_path / "st") for p in (tmp_path / "st" / "lines").rglob("*") if p.is_file()]
    assert len(kept) == 1 and kept[0].name.startswith("pack-"), kept
    assert len(json.loads((tmp_path / "st" / kept[0]).read_bytes())) >= 599  # every line the summary replaced
    r = runner.invoke(app, ["expand", "out.jsonl", "--store", "st", "-o", "back.jsonl"])
    assert r.exit_code == 0, r.stderr
    assert (tmp_path / "back.jsonl").read_bytes() == path.read_bytes()


def test_a_store_written_with_a_file_per_line_is_still_read(runner, tmp_path):
    """A store from before packs: each line in lines/ab/<sha256 of the entry>.json. expand reads it."""
    import hashlib

    from ctxkit.transcript.jsonl import dumps

    path = _plain_list(tmp_path, 600)
    r = runner.invoke(app, ["compact", str(path), "--force", "--store", "st", "-o", "out.jsonl", "--report", "none"])
    assert r.exit_code == 0, r.stderr
    pack = next((tmp_path / "st" / "lines").glob("pack-*.json"))
    pack.unlink()  # the old layout in its place
    for raw in path.read_bytes().splitlines(keepends=True):
        digest = hashlib.sha256(dumps(json.loads(raw))).hexdigest()
        (tmp_path / "st" / "lines" / digest[:2]).mkdir(exist_ok=True)
        (tmp_path / "st" / "lines" / digest[:2] / f"{digest}.json").write_bytes(raw)
    r = runner.invoke(app, ["expand", "out.jsonl", "--store", "st", "-o", "back.jsonl"])
    assert r.exit_code == 0, r.stderr
    assert (tmp_path / "back.jsonl").read_bytes() == path.read_bytes()


def _unterminated_sessions() -> dict[str, bytes]:
    """A session of each appending or line-list format whose last line has no newline (as a user's
    export or an editor may leave it: seen on a Cursor transcript committed publicly)."""
    import codex_rollouts as codex
    import gemini_sessions as gemini

    rollout = codex.opening()
    for k in range(6):
        rollout += codex.turn(k, f"look at f{k}", [(f"c{k}", f"cat f{k}", "x = 1\n" * 400)], f"f{k} sets x",
                              usage=(3_000 + 500 * k, 90), second=k * 5)
    records = [gemini.metadata()]
    for k in range(6):
        records += [gemini.user(f"u{k}", f"look at f{k}"),
                    gemini.gemini(f"g{k}", f"f{k} sets x", [gemini.tool_call(f"c{k}", "read_file", {"p": f"f{k}"},
                                                                            "x = 1\n" * 400)], tokens=3_000 + 500 * k)]
    cursor = []
    for k in range(6):
        cursor += [{"role": "user", "message": {"content": [{"type": "text", "text": f"<user_query>\nf{k}?\n"
                                                                                     "</user_query>"}]}},
                   {"role": "assistant", "message": {"content": [{"type": "text", "text": "x = 1 " * 400},
                                                                {"type": "tool_use", "name": "Read",
                                                                 "input": {"path": f"f{k}"}}]}}]
    as_lines = lambda values: "\n".join(json.dumps(v) for v in values).encode()  # noqa: E731
    return {"codex": "\n".join(rollout).encode(), "gemini": as_lines(records), "cursor": as_lines(cursor),
            "anthropic": as_lines(_anthropic_lines()), "openai": as_lines(_openai_lines())}


@pytest.mark.parametrize("fmt", ["codex", "gemini", "cursor", "anthropic", "openai"])
def test_a_last_line_without_its_newline_comes_back_without_it(runner, tmp_path, fmt):
    """A file whose last line has no newline gets one when compact writes after it; the store keeps the
    line as it was, so expand gives back the file byte for byte (it ended with a newline before)."""
    data = _unterminated_sessions()[fmt]
    (tmp_path / "in.jsonl").write_bytes(data)
    compacted, back = _round_trip(runner, tmp_path, data, ["--force", "-p", "no-llm", "--report", "none"])
    assert json.loads(runner.invoke(app, ["stats", "--json", str(tmp_path / "in.jsonl")]).stdout)["format"] == fmt
    assert compacted.endswith("\n")
    assert back == data
