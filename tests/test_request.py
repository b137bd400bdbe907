"""``ctxkit view --to anthropic-request``: the request body, system messages, tags and the snip tool,
context_management, and the real SDK sending the body to a local Messages API."""
from __future__ import annotations

import json
from datetime import timedelta

import anthropic
from builders import Call, Turn, conversation, last_time, load, write
from conftest import needs_corpus
from mock_messages_api import MockMessagesAPI

from ctxkit.clock import parse_instant
from ctxkit.policy.model import Policy
from ctxkit.reports.request import accepts_system_messages, api_messages, build_request, required_betas
from ctxkit.transcript import pairing_problems, read_transcript
from ctxkit.transcript.claude_code.requests import without_cache_control
from ctxkit.transcript.snip_ids import message_ids

TURNS = [Turn("look at a.py", [[Call("Read", {"file_path": "/w/a.py"}, "a = 1\n")]], "a is 1."),
         Turn("and b.py", [[Call("Read", {"file_path": "/w/b.py"}, "b = 2\n")]], "b is 2.")]


def _policy(**doc) -> Policy:
    return Policy.from_mapping(doc)


def test_the_body_of_a_plain_transcript(tmp_path):
    lines = [{"role": "system", "content": "You are terse."}, *conversation(TURNS, "anthropic")]
    t = read_transcript(write(tmp_path / "t.jsonl", lines))
    body = build_request(t, _policy(model="claude-sonnet-4-5", max_output_tokens=4096))
    assert list(body) == ["model", "system", "messages", "max_tokens"]
    assert body["model"] == "claude-sonnet-4-5" and body["max_tokens"] == 4096
    assert body["system"] == "You are terse."
    assert body["messages"] == t.view().api_messages(include_system=False)
    assert pairing_problems(body["messages"]) == []


def test_max_tokens_is_capped_by_the_model_and_can_be_given(tmp_path):
    t = load(tmp_path, TURNS, fmt="anthropic")
    assert build_request(t, _policy(model="claude-3-5-haiku", max_output_tokens=32_000))["max_tokens"] == 8_192
    assert build_request(t, _policy(), max_tokens=100)["max_tokens"] == 100


def test_mid_conversation_system_messages_are_folded_for_models_that_refuse_them():
    from ctxkit.transcript.view import ViewMessage

    msgs = [ViewMessage("user", [{"type": "text", "text": "hi"}], "prompt"),
            ViewMessage("system", [{"type": "text", "text": "Today is Monday."}], "system"),
            ViewMessage("assistant", [{"type": "tool_use", "id": "t1", "name": "Read", "input": {},
                                      "caller": {"type": "direct"}}], "assistant"),
            ViewMessage("user", [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}], "tool_results"),
            ViewMessage("system", [{"type": "text", "text": "Files changed."}], "system")]
    # each system text joins the user message the model read it after (after any tool results);
    # the transcript-only "caller" field of the tool_use is dropped
    assert api_messages(msgs, keep_system=False) == [
        {"role": "user", "content": [{"type": "text", "text": "hi"},
                                     {"type": "text", "text": "<system-reminder>\nToday is Monday.\n</system-reminder>"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"},
                                     {"type": "text", "text": "<system-reminder>\nFiles changed.\n</system-reminder>"}]},
    ]
    # after an assistant reply, a system text waits for the next user message (before its text)
    later = [*msgs[:3], ViewMessage("user", [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}],
                                    "tool_results"),
             ViewMessage("assistant", [{"type": "text", "text": "ok"}], "assistant"),
             ViewMessage("system", [{"type": "text", "text": "Later."}], "system"),
             ViewMessage("user", [{"type": "text", "text": "next"}], "prompt")]
    assert api_messages(later, keep_system=False)[-1] == {"role": "user", "content": [
        {"type": "text", "text": "<system-reminder>\nLater.\n</system-reminder>"}, {"type": "text", "text": "next"}]}
    assert [m["role"] for m in api_messages(msgs, keep_system=True)] == ["user", "system", "assistant", "user",
                                                                         "system"]


def test_which_models_take_system_messages():
    assert accepts_system_messages("claude-opus-5-5") and accepts_system_messages("claude-fable-5")
    assert accepts_system_messages("claude-opus-4-8-20261001")
    assert not accepts_system_messages("claude-sonnet-4-5-20250929")
    assert not accepts_system_messages("claude-opus-4-20250514") and not accepts_system_messages("gpt-4o")
    # an alias is what Claude Code 2.1.328 sends for it: sonnet is Sonnet 5.5 (a Claude 5 model), as the
    # request of a run with --model sonnet shows (it was Sonnet 4.5 before)
    assert accepts_system_messages("sonnet") and accepts_system_messages("haiku")


def test_the_policy_can_force_folding(tmp_path):
    t = read_transcript(write(tmp_path / "t.jsonl", [*conversation(TURNS[:1], "anthropic"),
                                                     {"role": "system", "content": "Note."},
                                                     {"role": "user", "content": "go on"}]))
    keep = build_request(t, _policy(model="claude-opus-5-5"))
    assert [m["role"] for m in keep["messages"]][-2:] == ["system", "user"]
    fold = build_request(t, _policy(model="claude-opus-5-5"), system_messages="fold")
    assert "system" not in [m["role"] for m in fold["messages"]]
    assert fold["messages"][-1]["content"][0]["text"] == "<system-reminder>\nNote.\n</system-reminder>"


def test_ids_and_the_snip_tool_when_the_policy_shows_ids(tmp_path):
    t = load(tmp_path, TURNS)
    policy = _policy(stages=[{"id": "snip", "options": {"tag_ids": True}}])
    body = build_request(t, policy)
    ids = list(message_ids(t.view()))
    assert body["messages"][0]["content"] == f"look at a.py\n[id:{ids[0]}]"
    assert [x["name"] for x in body["tools"]] == ["snip"]
    assert "tools" not in build_request(t, _policy(stages=[{"id": "snip"}]))


def test_context_management_comes_from_the_microcompact_stage(tmp_path):
    entries = conversation(TURNS)
    # the thinking settings Claude Code recorded with its requests are sent again
    entries.append({"type": "api-request", "params": {"thinking": {"type": "adaptive", "display": "omitted"}}})
    t = read_transcript(write(tmp_path / "t.jsonl", entries))
    policy = _policy(stages=[{"id": "microcompact", "options": {
        "mode": "api-native", "api_native": {"clear_tool_uses": {"enabled": True}, "compact": {"enabled": True}}}}])
    warm = build_request(t, policy, now=last_time(entries[:-1]) + timedelta(minutes=5))
    assert list(warm)[-3:] == ["thinking", "context_management", "max_tokens"]
    assert warm["context_management"]["edits"][0] == {"type": "clear_thinking_20251015", "keep": "all"}
    assert [e["type"] for e in warm["context_management"]["edits"]] == [
        "clear_thinking_20251015", "clear_tool_uses_20250919", "compact_20260112"]
    cold = build_request(t, policy, now=last_time(entries[:-1]) + timedelta(hours=2))
    assert cold["context_management"]["edits"][0]["keep"] == {"type": "thinking_turns", "value": 1}
    assert required_betas(cold) == ["context-management-2025-06-27", "compact-2026-01-12"]
    assert build_request(t, _policy(stages=[{"id": "microcompact"}]))["context_management"] == {"edits": [
        {"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 1}}]}
    plain = read_transcript(write(tmp_path / "p.jsonl", conversation(TURNS)))  # no thinking recorded: no edit
    assert "context_management" not in build_request(plain, _policy(stages=[{"id": "microcompact"}]))


@needs_corpus
def test_a_recorded_claude_code_session(corpus_session):
    t = read_transcript(corpus_session("explore-edit"))
    body = build_request(t, _policy(model="claude-opus-5-5"))
    shape = next(json.loads(x) for x in open(corpus_session("explore-edit")) if '"api-request-shape"' in x)["shape"]
    # the exact system blocks Claude Code sent: its billing header, then the recorded ones (the first two
    # marked as cache breakpoints, as Claude Code marks them)
    assert body["system"][0]["text"] == "x-anthropic-billing-header: cc_version=2.1.328.f96; cc_entrypoint=sdk-cli;"
    assert without_cache_control(body["system"][1:]) == shape["system"]
    assert [b.get("cache_control") for b in body["system"]] == [None, {"type": "ephemeral"}, {"type": "ephemeral"}]
    assert body["tools"] == shape["tools"]
    # Claude Code's layout: the attribution reminder, then the prompt, in one user message; the environment
    # as a system message (Opus 5.5 takes mid-conversation system messages); then the answers
    messages = without_cache_control(body["messages"])
    assert [m["role"] for m in messages[:3]] == ["user", "system", "assistant"]
    assert [b["text"][:40] for b in messages[0]["content"]] == [
        "<system-reminder>\nAttribution for git co", "Add a docstring to Order.total"]
    assert messages[-1] == t.view().api_messages()[-1]  # the last answer, after the last recorded request
    assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    # Claude Code's thinking edit, and a deferred-loading tool is listed
    assert required_betas(body) == ["context-management-2025-06-27", "advanced-tool-use-2025-11-20"]
    older = build_request(t, _policy(model="claude-sonnet-4-5"))
    assert "system" not in [m["role"] for m in older["messages"]]
    assert pairing_problems(older["messages"]) == []


@needs_corpus
def test_the_system_prompt_snapshot_when_no_request_shape_was_recorded(corpus_session, tmp_path):
    lines = [x for x in open(corpus_session("explore-edit")) if '"api-request-shape"' not in x]
    path = tmp_path / "s.jsonl"
    path.write_text("".join(lines))
    body = build_request(read_transcript(path), _policy())
    snapshot = next(json.loads(x) for x in lines if '"prompt_snapshot"' in x)["attachment"]["systemPrompt"]
    assert body["system"] == "\n\n".join(snapshot)
    assert "tools" not in body


def test_the_sdk_sends_the_body_as_is(tmp_path):
    entries = conversation(TURNS)
    t = read_transcript(write(tmp_path / "t.jsonl", entries))
    tools = [{"name": "Read", "description": "Read a file", "input_schema": {"type": "object", "properties": {
        "file_path": {"type": "string"}}, "required": ["file_path"]}}]
    policy = _policy(model="claude-opus-4-5", stages=[{"id": "microcompact", "options": {
                                        "mode": "both", "api_native": {"clear_tool_uses": {"enabled": True}}}},
                                                        {"id": "snip", "options": {"tag_ids": True}}])
    body = build_request(t, policy, tools=tools, system="Be brief.",
                         now=parse_instant(entries[-1]["timestamp"]) + timedelta(minutes=1))
    with MockMessagesAPI(api_key="test-key") as api:
        api.reply_text("ok")
        api.reply_text("ok")
        client = anthropic.Anthropic(base_url=api.base_url, api_key="test-key", max_retries=0, timeout=30)
        reply = client.beta.messages.create(**body, betas=required_betas(body))
        assert reply.content[0].text == "ok"
        sent = api.message_requests[0]
        assert sent.body == body
        assert sent.headers["anthropic-beta"] == "context-management-2025-06-27"
        plain = {k: v for k, v in body.items() if k != "context_management"}
        assert client.messages.create(**plain).content[0].text == "ok"
        assert api.message_requests[1].body == plain
