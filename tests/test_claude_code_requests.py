"""Requests as Claude Code sends them: the recorded requests of a 2.1.328 session rebuilt from the
session itself (their digests check), and ``ctxkit view --to anthropic-request`` on the session cut
before each ``api-request`` entry equal to the body Claude Code sent there (``requests.jsonl.gz``)."""
from __future__ import annotations

import gzip
import json

import pytest
from builders import Turn, conversation, write
from conftest import cc_sessions, extra_cc_sessions, needs_corpus, recorded_cc_sessions

from ctxkit.cli.main import app
from ctxkit.policy.model import Policy
from ctxkit.reports.request import build_request
from ctxkit.transcript import pairing_problems, read_transcript
from ctxkit.transcript.claude_code.requests import (
    as_blocks,
    message_digest,
    request_records,
    without_cache_control,
)

COMPACTION_REQUEST = "CRITICAL: Respond with TEXT ONLY"


def _comparable(body: dict) -> dict:
    """A body with what the comparison leaves aside taken out: cache_control, metadata (a device id the
    session does not hold), stream; a string content as one text block."""
    out = without_cache_control({k: v for k, v in body.items() if k not in ("metadata", "stream")})
    out["messages"] = [as_blocks(m) for m in out["messages"]]
    if isinstance(out.get("system"), str):
        out["system"] = [{"type": "text", "text": out["system"]}]
    return out


def _subagent_prompts(session) -> set[str]:
    """The prompts the session's subagents started with (``subagents/agent-*.jsonl``, their first user
    entry): their requests went to the same API but are recorded in their own transcripts."""
    out = set()
    for path in sorted((session / "subagents").glob("agent-*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            if entry.get("type") == "user":
                out.add(json.dumps(entry["message"]["content"]))
                break
    return out


def _opens_with(body: dict, prompts: set[str]) -> bool:
    """Whether the body's first message holds one of ``prompts`` (a subagent's request)."""
    return any(json.dumps(b.get("text")) in prompts for b in as_blocks(body["messages"][0])["content"])


def _is_compaction(body: dict) -> bool:
    """A compaction summary request: its last user message asks for the summary (after a compaction
    Claude Code ends the history with a system message, so the request may end with that)."""
    users = [m for m in body["messages"] if m.get("role") == "user"]
    return COMPACTION_REQUEST in json.dumps(users[-1:])


def _is_side_query(body: dict) -> bool:
    """A request outside the conversation, which defines no tools: 2.1.300's auto mode asks a security
    monitor (another model, its own system prompt) about each tool call; Claude Code records no entry
    for it."""
    return "tools" not in body


def _cuts(session):
    """(entry index of each api-request entry, the body Claude Code sent with it), in order: the sent
    bodies minus the compaction summary requests and the side queries, which Claude Code records no
    entry for, minus its subagents' requests, which their own transcripts record, and minus token
    counts."""
    lines = (session / "session.jsonl").read_bytes().splitlines(keepends=True)
    cuts = [i for i, line in enumerate(lines) if json.loads(line).get("type") == "api-request"]
    with gzip.open(session / "requests.jsonl.gz", "rt", encoding="utf-8") as f:
        # (``/context`` asks the token-counting endpoint: not a request the model answers)
        bodies = [row["body"] for row in map(json.loads, f) if "count_tokens" not in row.get("path", "")]
    bodies = [b for b in bodies if not _is_compaction(b) and not _is_side_query(b)
              and not _opens_with(b, _subagent_prompts(session))]
    assert len(bodies) == len(cuts)
    return lines, list(zip(cuts, bodies, strict=True))


@needs_corpus
def test_every_recorded_request_is_rebuilt_and_its_digest_checks(tmp_path):
    checked = 0
    for session in cc_sessions():
        lines, cuts = _cuts(session)
        for cut, _ in cuts:
            path = write_lines(tmp_path / "cut.jsonl", lines[:cut + 1])
            t = read_transcript(path)
            records = request_records(t)
            lookup = {message_digest(m.api()): m.api() for m in t.view().messages}
            assert records.requests[-1].index == cut
            assert records.verified(records.requests[-1], lookup.get), f"{session.name}: line {cut + 1}"
            checked += 1
    assert checked == 58


@pytest.mark.skipif(not extra_cc_sessions(), reason="CTXKIT_EXTRA_CC_SESSIONS names no folder of recorded sessions")
@pytest.mark.parametrize("session", extra_cc_sessions(), ids=lambda p: p.name)
def test_every_request_of_an_extra_session_is_rebuilt_and_its_digest_checks(session, tmp_path):
    lines, cuts = _cuts(session)
    for cut, _ in cuts:
        t = read_transcript(write_lines(tmp_path / "cut.jsonl", lines[:cut + 1]))
        records = request_records(t)
        lookup = {message_digest(m.api()): m.api() for m in t.view().messages}
        assert records.requests[-1].index == cut
        assert records.verified(records.requests[-1], lookup.get), f"{session.name}: line {cut + 1}"
    assert cuts


@pytest.mark.skipif(not recorded_cc_sessions(), reason="no recorded Claude Code sessions (shared corpus absent)")
@pytest.mark.parametrize("session", recorded_cc_sessions(), ids=lambda p: p.name)
def test_the_request_equals_what_claude_code_sent_before_every_recorded_request(session, runner, tmp_path):
    """Every request is compared (a failure says how many of the session's were equal, and which not)."""
    lines, cuts = _cuts(session)
    differ = []
    for k, (cut, sent) in enumerate(cuts):
        path = write_lines(tmp_path / f"cut{k}.jsonl", lines[:cut])
        now = json.loads(lines[cut])["timestamp"]
        result = runner.invoke(app, ["view", "--to", "anthropic-request", "--now", now, str(path)])
        assert result.exit_code == 0, result.output
        body = json.loads(result.stdout)
        if _comparable(body) != _comparable(sent):
            keys = sorted(x for x in set(body) | set(sent) if x not in ("metadata", "stream")
                          and _comparable(body).get(x) != _comparable(sent).get(x))
            differ.append(f"request {k} (before line {cut + 1}): {', '.join(keys)}")
    assert cuts and not differ, f"{session.name}: {len(cuts) - len(differ)} of {len(cuts)} equal; " + "; ".join(differ)


def write_lines(path, lines):
    path.write_bytes(b"".join(lines))
    return path


@needs_corpus
def test_without_records_message_0_is_the_reminder_then_the_prompt(corpus_session, tmp_path):
    """An older session (no request records): the best-known layout, Claude Code's."""
    recorded = ('"api-request"', '"api-request-shape"', '"api-request-blob"')
    lines = [x for x in open(corpus_session("explore-edit"), encoding="utf-8") if not any(r in x for r in recorded)]
    path = tmp_path / "old.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    body = build_request(read_transcript(path), Policy.from_mapping({"model": "claude-opus-5-5"}))
    first = body["messages"][0]
    assert first["role"] == "user"
    assert [b["text"][:40] for b in first["content"]] == ["<system-reminder>\nAttribution for git co",
                                                          "Add a docstring to Order.total"]
    assert body["messages"][1]["role"] == "system"
    assert body["messages"][1]["content"].startswith("# Environment")
    assert body["messages"][2]["role"] == "assistant"
    assert pairing_problems(body["messages"]) == []


@needs_corpus
def test_a_recorded_message_a_stage_rewrote_is_not_sent_as_recorded(corpus_session, tmp_path):
    """A tool result cleared after it was sent: the record no longer matches the session, and the
    request says what the transcript says now."""
    lines = open(corpus_session("explore-edit"), encoding="utf-8").read().splitlines(keepends=True)
    k = next(i for i, x in enumerate(lines) if '"tool_result"' in x and "total 16" in x)
    entry = json.loads(lines[k])
    entry["message"]["content"][0]["content"] = "[Old tool result content cleared]"
    lines[k] = json.dumps(entry) + "\n"
    path = tmp_path / "edited.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    body = build_request(read_transcript(path), Policy.from_mapping({"model": "claude-opus-5-5"}))
    text = json.dumps(body["messages"])
    assert "[Old tool result content cleared]" in text and "total 16" not in text
    assert [b["text"][:40] for b in body["messages"][0]["content"]][-1] == "Add a docstring to Order.total"
    assert pairing_problems(without_cache_control(body["messages"])) == []


def test_a_reminder_of_the_first_turn_goes_before_the_prompt(tmp_path):
    entries = conversation([Turn("look around", [], "done")])
    prompt = next(e for e in entries if e["type"] == "user")
    reminder = {"parentUuid": prompt["uuid"], "isSidechain": False, "type": "attachment", "uuid": "att-1",
                "timestamp": prompt["timestamp"], "sessionId": prompt["sessionId"],
                "attachment": {"type": "remote_session_change", "commit": "Co-Authored-By: X"},
                "rendered": [{"content": "<system-reminder>\nSign commits.\n</system-reminder>"}],
                "renderedRole": "user"}
    answer = next(e for e in entries if e["type"] == "assistant")
    answer["parentUuid"] = "att-1"
    t = read_transcript(write(tmp_path / "t.jsonl", [prompt, reminder, answer]))
    assert [b["text"] for b in t.view().messages[0].content] == [  # the view: the prompt, then the reminder
        "look around", "<system-reminder>\nSign commits.\n</system-reminder>"]
    body = build_request(t, Policy.from_mapping({"model": "claude-opus-5-5"}))
    assert body["messages"][0]["content"] == [
        {"type": "text", "text": "<system-reminder>\nSign commits.\n</system-reminder>"},
        {"type": "text", "text": "look around"}]
    assert body["messages"][1]["role"] == "assistant"


@needs_corpus
def test_records_not_shaped_as_the_api_s_are_not_read(corpus_session, tmp_path, runner):
    """A blob whose message is no API message, a cache mark with a path of floats (the reader checks the
    shapes' own entries): request_records leaves them out, so no reader of recorded requests gets them."""
    lines = open(corpus_session("explore-edit"), encoding="utf-8").read().splitlines(keepends=True)
    blobs = [i for i, x in enumerate(lines) if json.loads(x).get("type") == "api-request-blob"]
    request = max(i for i, x in enumerate(lines) if json.loads(x).get("type") == "api-request")
    entries = {k: json.loads(lines[k]) for k in (*blobs, request)}
    for k in blobs:
        entries[k]["message"] = {"role": "user", "content": [1, 2]}
    entries[request]["cacheControl"] = [{"path": ["system", 1.5], "value": {"type": "ephemeral"}}]
    for k, entry in entries.items():
        lines[k] = json.dumps(entry) + "\n"
    path = tmp_path / "odd.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    records = request_records(read_transcript(path))
    assert records.blobs == {} and records.requests[-1].cache_control == []
    r = runner.invoke(app, ["view", "--to", "anthropic-request", str(path)])
    assert r.exit_code == 0, r.output
    messages = json.loads(r.stdout)["messages"]
    assert all(isinstance(b, dict) for m in messages for b in as_blocks(m)["content"])


@pytest.mark.parametrize("text", [5, {"a": 1}])
@pytest.mark.parametrize("command", [["simulate"], ["view", "--to", "anthropic-request"], ["report", "-o", "{out}"]])
def test_a_recorded_text_block_whose_text_is_no_string_is_not_read(corpus_session, tmp_path, runner, text, command):
    """The fuzzer's crash (exit 4 in simulate, view and report): a recorded blob whose text block holds a
    number or an object is no API message; request_records leaves it out and the commands go on."""
    lines = open(corpus_session("multi-prompt"), encoding="utf-8").read().splitlines(keepends=True)
    for k, line in enumerate(lines):
        entry = json.loads(line)
        if entry.get("type") == "api-request-blob":
            content = entry["message"]["content"]
            entry["message"]["content"] = [{**b, "text": text} if b.get("type") == "text" else b
                                           for b in content] if isinstance(content, list) \
                else [{"type": "text", "text": text}]
            lines[k] = json.dumps(entry) + "\n"
    path = tmp_path / "odd.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    assert request_records(read_transcript(path)).blobs == {}
    r = runner.invoke(app, [*(a.replace("{out}", str(tmp_path / "r.html")) for a in command), str(path)])
    assert r.exit_code == 0, r.output

def test_expand_passes_over_a_recorded_blobs_result_whose_id_is_no_string(corpus_session, tmp_path, runner):
    """The fuzzer's crash (exit 4 in expand, 1 of 30,000 cases): a request record's blob holding a tool
    result whose ``tool_use_id`` is a list (a line whose shape no check covers) was looked up in the store's
    decisions; it names no decision, and expand gives the rest back."""
    out, store = tmp_path / "out.jsonl", tmp_path / "store"
    source = corpus_session("autocompact")
    r = runner.invoke(app, ["compact", str(source), "--force", "-p", "no-llm", "--store", str(store), "-o", str(out)])
    assert r.exit_code == 0, r.output
    lines = out.read_text(encoding="utf-8").splitlines(keepends=True)
    damaged = 0
    for k, line in enumerate(lines):
        entry = json.loads(line)
        content = entry.get("message", {}).get("content") if entry.get("type") == "api-request-blob" else None
        for b in content if isinstance(content, list) else []:
            if b.get("type") == "tool_result":
                b["tool_use_id"] = [b["tool_use_id"]]
                lines[k], damaged = json.dumps(entry) + "\n", damaged + 1
    assert damaged
    out.write_text("".join(lines), encoding="utf-8")
    r = runner.invoke(app, ["expand", str(out), "--store", str(store)])
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("content", [7, None, {"type": "text", "text": "x"}])
def test_a_recorded_blob_not_shaped_as_a_message_is_not_used(corpus_session, tmp_path, runner, content):
    """A blob whose content is no string or list (a damaged line): the request is built from the view,
    never an internal error (the fuzzer's TypeError in view --to anthropic-request and simulate)."""
    lines = open(corpus_session("explore-edit"), encoding="utf-8").read().splitlines(keepends=True)
    for k, x in enumerate(lines):
        if '"api-request-blob"' in x:
            entry = json.loads(x)
            entry["message"]["content"] = content
            lines[k] = json.dumps(entry) + "\n"
    path = tmp_path / "damaged.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    body = build_request(read_transcript(path), Policy.from_mapping({"model": "claude-opus-5-5"}))
    assert body["messages"][0]["content"][-1]["text"] == "Add a docstring to Order.total"
    assert pairing_problems(without_cache_control(body["messages"])) == []
    for args in (["view", "--to", "anthropic-request", str(path)], ["simulate", str(path)]):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, (args, result.output)
