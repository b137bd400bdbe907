"""microcompact ``mode: cached``: old tool results deleted server-side by cache edits (issue 11, item 5).

The request ``ctxkit view --to anthropic-request`` prints is sent through the real anthropic SDK to
the local Messages API stand-in, which refuses malformed cache edits and answers with
``cache_deleted_input_tokens``; the tests assert the request it received.
"""
from __future__ import annotations

import json
from datetime import timedelta

import anthropic
import pytest
from builders import Call, Turn, conversation, last_time, write
from mock_messages_api import MockMessagesAPI, cache_deletions

from ctxkit.cli.main import app

CACHED = ["--set", "stages.microcompact.options.mode=cached"]
ROUNDS = 16


def iso(t) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture
def entries():
    """One turn of 16 Bash rounds, each result about 600 characters, still in progress (no answer)."""
    calls = [[Call("Bash", {"command": f"make step{k}"}, " ".join(f"out{k}_{i}" for i in range(80)))]
             for k in range(ROUNDS)]
    return conversation([Turn("Fix the failing build", rounds=calls, answer=None)])


def upto(entries, results: int) -> list[dict]:
    """The entries up to and including the ``results``-th tool result: the transcript at that moment."""
    seen = 0
    for i, e in enumerate(entries):
        content = e["message"]["content"]
        if isinstance(content, list) and content[0].get("type") == "tool_result":
            seen += 1
            if seen == results:
                return entries[:i + 1]
    raise AssertionError("not that many results")


def tool_ids(entries) -> list[str]:
    return [b["id"] for e in entries if e["type"] == "assistant" for b in e["message"]["content"]
            if b["type"] == "tool_use"]


def request(runner, path, now, *extra):
    result = runner.invoke(app, ["view", str(path), "--to", "anthropic-request", *CACHED, "--now", iso(now), *extra])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def send(api, body) -> anthropic.types.beta.BetaMessage:
    """The body as an agent sends it: the real SDK, to the local stand-in."""
    client = anthropic.Anthropic(base_url=api.base_url, api_key="test-key", max_retries=0)
    return client.beta.messages.create(**body, timeout=30)  # an explicit timeout: max_tokens is large


def without_markers(message: dict) -> dict:
    content = message["content"]
    if isinstance(content, str):
        return message
    return {**message, "content": [{k: v for k, v in b.items() if k not in ("cache_control", "cache_reference")}
                                   for b in content]}


def test_old_results_are_deleted_by_cache_edits_and_the_transcript_is_untouched(tmp_path, runner, entries):
    first = upto(entries, 12)
    path = write(tmp_path / "s.jsonl", first)
    before = path.read_bytes()
    body = request(runner, path, last_time(first) + timedelta(minutes=2))
    ids = tool_ids(first)
    msgs = body["messages"]
    last = msgs[-1]
    # the 7 oldest of 12 compactable results are deleted (5 kept), by a block after the last message's results
    assert [b["type"] for b in last["content"]] == ["tool_result", "cache_edits"]
    assert last["content"][1] == {"type": "cache_edits",
                                  "edits": [{"type": "delete", "cache_reference": tid} for tid in ids[:7]]}
    assert last["content"][0]["cache_control"] == {"type": "ephemeral"}
    refs = [b["cache_reference"] for m in msgs[:-1] if isinstance(m["content"], list) for b in m["content"]
            if b["type"] == "tool_result"]
    assert refs == ids[:11]  # every result of the cached prefix is referenced by its tool_use id
    assert path.read_bytes() == before  # the transcript keeps every result in full
    with MockMessagesAPI() as api:
        reply = send(api, body)
        received = api.message_requests[0].body
    assert received["messages"] == msgs
    assert cache_deletions(received) == [(len(msgs) - 1, tid) for tid in ids[:7]]
    # what the stand-in says the server freed: the 7 deleted results (characters / 4 each)
    assert reply.usage.cache_deleted_input_tokens == sum(
        len(json.dumps(" ".join(f"out{k}_{i}" for i in range(80)))) // 4 for k in range(7))


def test_pinned_edits_are_sent_again_in_the_same_place(tmp_path, runner, entries):
    first = upto(entries, 12)
    path = write(tmp_path / "s.jsonl", first)
    one = request(runner, path, last_time(first) + timedelta(minutes=2))["messages"]
    pin = len(one) - 1
    # three more rounds: 5 kept + 3 new results are live, under the trigger (10): no new deletion
    later = upto(entries, 15)
    write(path, later)
    two = request(runner, path, last_time(later) + timedelta(minutes=2))["messages"]
    assert two[:pin] == [dict(m) for m in one[:pin]]  # the earlier messages, byte for byte
    assert two[pin]["content"][1] == one[pin]["content"][1]  # the pinned block, in the same place
    assert without_markers(two[pin]) == without_markers(one[pin])
    assert sum(1 for m in two if isinstance(m["content"], list) for b in m["content"]
               if b["type"] == "cache_edits") == 1
    # a 16th result: 9 live results, at a trigger of 9 the 4 oldest go, in a second block; the first stays
    ids = tool_ids(entries)
    more = upto(entries, 16)
    write(path, more)
    body = request(runner, path, last_time(more) + timedelta(minutes=2), "--set",
                   "stages.microcompact.options.cached.trigger=9")
    three = body["messages"]
    assert three[pin]["content"][1] == one[pin]["content"][1]
    assert three[-1]["content"][1] == {"type": "cache_edits", "edits": [
        {"type": "delete", "cache_reference": tid} for tid in ids[7:11]]}
    with MockMessagesAPI() as api:
        send(api, body)
        assert [ref for _, ref in cache_deletions(api.message_requests[0].body)] == ids[:11]
    state = json.loads((tmp_path / ".ctxkit" / "state.json").read_text())
    pins = state["s-1"]["cached_microcompact"]["pins"]
    assert [(p["index"], p["deleted"]) for p in pins] == [(pin, ids[:7]), (len(three) - 1, ids[7:11])]


def test_the_same_input_gives_the_same_request(tmp_path, runner, entries):
    first = upto(entries, 12)
    path = write(tmp_path / "s.jsonl", first)
    now = last_time(first) + timedelta(minutes=2)
    assert request(runner, path, now) == request(runner, path, now)


def test_a_changed_prefix_drops_the_pins(tmp_path, runner, entries):
    first = upto(entries, 12)
    path = write(tmp_path / "s.jsonl", first)
    request(runner, path, last_time(first) + timedelta(minutes=2))
    # the conversation is rewritten before the pinned message (as a compaction or a snip does)
    edited = [dict(e) for e in upto(entries, 13)]
    edited[0] = {**edited[0], "message": {"role": "user", "content": "Fix the failing build, then the docs"}}
    write(path, edited)
    body = request(runner, path, last_time(edited) + timedelta(minutes=2))
    edits = [b for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]
             if b["type"] == "cache_edits"]
    ids = tool_ids(edited)
    # the old pin is gone; the 13 results count again: the 8 oldest are deleted afresh, at the new end
    assert edits == [{"type": "cache_edits", "edits": [{"type": "delete", "cache_reference": t} for t in ids[:8]]}]
    with MockMessagesAPI() as api:
        send(api, body)  # refused (400) if an edit named a reference the request no longer makes


def test_warm_compact_leaves_the_transcript_and_a_cold_one_clears_it(tmp_path, runner, entries):
    first = upto(entries, 12)
    path = write(tmp_path / "s.jsonl", first)
    warm = last_time(first) + timedelta(minutes=2)
    r = runner.invoke(app, ["compact", str(path), "-o", str(tmp_path / "out.jsonl"), *CACHED, "--now", iso(warm)])
    assert r.exit_code == 0, r.output
    assert "microcompact: nothing-to-do (cached: the cache is warm, the request deletes old results by cache " \
           "edits (see --to anthropic-request))" in r.stderr.splitlines()
    out = (tmp_path / "out.jsonl").read_bytes()
    assert out.startswith(path.read_bytes())  # every line as it was; only ctxkit's store record after them
    assert [json.loads(x)["type"] for x in out[len(path.read_bytes()):].splitlines()] == ["ctxkit-record"]
    cold = last_time(first) + timedelta(minutes=90)
    body = request(runner, path, cold)
    assert not any(b.get("type") == "cache_edits" or "cache_reference" in b for m in body["messages"]
                   if isinstance(m["content"], list) for b in m["content"])
    r = runner.invoke(app, ["compact", str(path), "-o", str(tmp_path / "out.jsonl"), *CACHED, "--now", iso(cold)])
    assert r.exit_code == 0, r.output
    assert "microcompact: applied: cleared 7 old tool result(s)" in r.stderr


def test_the_mode_is_in_the_schema(tmp_path, runner):
    policy = tmp_path / "p.yaml"
    policy.write_text("stages:\n  - id: microcompact\n    options: {mode: cashed, cached: {trigger: 0}}\n")
    r = runner.invoke(app, ["policy", "validate", "p.yaml"])  # the runner works in tmp_path
    assert r.exit_code == 2
    assert r.stderr.splitlines() == [
        "p.yaml:3:21: error: stages[microcompact].options.mode must be one of time-based, api-native, both, cached, "
        "got 'cashed' (did you mean 'cached'?)",
        "p.yaml:3:47: error: stages[microcompact].options.cached.trigger must be at least 1, got 0",
        "ctxkit: 2 problems in the policy"]


def test_the_stand_in_refuses_an_edit_of_a_reference_the_request_does_not_make(tmp_path, runner, entries):
    first = upto(entries, 12)
    body = request(runner, write(tmp_path / "s.jsonl", first), last_time(first) + timedelta(minutes=2))
    oldest = tool_ids(first)[0]
    for m in body["messages"]:  # as if the pinned edits outlived the results they delete
        if isinstance(m["content"], list):
            m["content"] = [{k: v for k, v in b.items() if k != "cache_reference"} for b in m["content"]]
    with MockMessagesAPI() as api, pytest.raises(anthropic.BadRequestError) as err:
        send(api, body)
    assert err.value.body["error"]["message"] == (f"messages.{len(body['messages']) - 1}: cache_edits deletes "
                                                  f"'{oldest}', which no earlier tool_result references")
