"""The proxy's parts on their own: the cost gate, the usage tap, conversation names, listen addresses."""
from __future__ import annotations

import gzip
import json

import pytest
from live_conversations import synthetic
from proxy_upstream import Answer

from ctxkit.proxy.app import _accept_encoding, _Decoder
from ctxkit.proxy.conversations import conversation_key
from ctxkit.proxy.gate import judge, rates_for, tokens
from ctxkit.proxy.server import parse_listen
from ctxkit.proxy.usage_tap import UsageTap


def _cleared(messages: list[dict], upto: int) -> list[dict]:
    """``messages`` with the tool results before ``upto`` replaced by a short marker (an old-results clear)."""
    out = []
    for i, m in enumerate(messages):
        if i < upto and isinstance(m["content"], list) and m["content"][0].get("type") == "tool_result":
            m = {**m, "content": [{**m["content"][0], "content": "[cleared]"}]}
        out.append(m)
    return out


def test_a_clear_that_breaks_a_warm_cache_is_sent_only_when_the_turns_left_repay_the_rewrite():
    history = synthetic(40, 2_000)
    original = history + [{"role": "assistant", "content": "next"}, {"role": "user", "content": "go on"}]
    late_clear = _cleared(original, 70)  # clears results near the end: little saved, little re-written
    early_clear = _cleared(original, 4)  # clears the first results: little saved, everything re-written
    args = dict(previous=history, cache_warm=True, model="claude-sonnet-4-5")
    assert judge(original, early_clear, requests_so_far=40, **args).send_managed is False
    assert judge(original, late_clear, requests_so_far=40, **args).send_managed is True
    # the same early clear on a cold cache costs no re-write: sent
    cold = judge(original, early_clear, previous=history, cache_warm=False, requests_so_far=1, model="claude-sonnet-4-5")
    assert cold.send_managed and cold.saved > 0 and cold.tokens_managed < cold.tokens_original
    # an edit that keeps what was sent as its prefix (a new result persisted) always pays
    new_tail = original[:-1] + [{"role": "user", "content": "go on"}]
    assert judge(original + [{"role": "user", "content": "x" * 9000}], new_tail, requests_so_far=1, **args).send_managed


def test_a_long_conversation_earns_an_edit_a_short_one_does_not():
    history = synthetic(30, 2_000)
    original = history + [{"role": "user", "content": "more"}]
    clear = _cleared(original, 30)
    short = judge(original, clear, previous=history, cache_warm=True, requests_so_far=1, model="claude-opus-4-5")
    long = judge(original, clear, previous=history, cache_warm=True, requests_so_far=30, model="claude-opus-4-5")
    assert (short.send_managed, long.send_managed) == (False, True)
    assert long.turns_left == 30 and long.cost_managed < long.cost_original


def test_rates_come_from_the_pricing_table_or_the_openai_ratios():
    assert rates_for("claude-sonnet-4-5")["cache_read"] < rates_for("claude-sonnet-4-5")["cache_write_5m"]
    assert rates_for("gpt-4.1") == {"input": 1.0, "cache_write_5m": 1.0, "cache_read": 0.1}
    assert tokens([{"role": "user", "content": "x" * 400}]) > 90


def test_the_usage_tap_reads_sse_json_openai_and_gzip_whatever_the_chunking():
    sse = b"".join(Answer.sse("hello", {"input_tokens": 3, "cache_read_input_tokens": 70,
                                        "cache_creation_input_tokens": 9, "output_tokens": 6}).chunks)
    for size in (1, 7, 64, len(sse)):
        tap = UsageTap("text/event-stream")
        for i in range(0, len(sse), size):
            tap.feed(sse[i:i + size])
        assert tap.close() == {"input_tokens": 3, "cache_read_input_tokens": 70, "cache_creation_input_tokens": 9,
                               "output_tokens": 6}
    openai = [b'data: {"choices":[{"delta":{"content":"hi"}}]}\n\n',
              b'data: {"choices":[],"usage":{"prompt_tokens":50,"completion_tokens":5,'
              b'"prompt_tokens_details":{"cached_tokens":30}}}\n\n', b"data: [DONE]\n\n"]
    tap = UsageTap("text/event-stream; charset=utf-8")
    for chunk in openai:
        tap.feed(chunk)
    assert tap.close() == {"input_tokens": 20, "cache_read_input_tokens": 30, "cache_creation_input_tokens": 0,
                           "output_tokens": 5}
    packed = gzip.compress(json.dumps(Answer.message("x", {"input_tokens": 8, "output_tokens": 1})).encode())
    decode, tap = _Decoder("gzip"), UsageTap("application/json")
    for i in range(0, len(packed), 5):
        tap.feed(decode(packed[i:i + 5]))
    assert tap.close() == {"input_tokens": 8, "output_tokens": 1}
    broken = UsageTap("application/json")
    broken.feed(b'{"usage": {"input_tokens": ')
    assert broken.close() == {}


def test_accept_encoding_keeps_only_what_the_tap_can_read():
    assert _accept_encoding("gzip, deflate, br, zstd") == "gzip, deflate"
    assert _accept_encoding("br") == "identity"
    assert _accept_encoding(None) == "identity"


def test_a_conversation_is_its_user_id_and_first_message():
    first = {"role": "user", "content": "Fix the bug."}
    a = {"metadata": {"user_id": "session-a"}, "messages": [first]}
    grown = {"metadata": {"user_id": "session-a"}, "messages": [first, {"role": "assistant", "content": "ok"}]}
    side = {"metadata": {"user_id": "session-a"}, "messages": [{"role": "user", "content": "Title this chat."}]}
    other = {"metadata": {"user_id": "session-b"}, "messages": [first]}
    anonymous = {"messages": [first, {"role": "assistant", "content": "ok"}]}
    assert conversation_key(a) == conversation_key(grown)
    assert len({conversation_key(x) for x in (a, side, other, anonymous)}) == 4
    assert conversation_key(anonymous) == conversation_key({"messages": [first]})


def test_one_conversation_keeps_one_manager_when_claude_code_moves_its_cache_breakpoint(tmp_path):
    from ctxkit.proxy.conversations import Conversations

    made = []
    convs = Conversations(lambda store, model: made.append(store) or store, tmp_path)
    text = "Fix the failing test in tests/test_app.py."
    marked = {"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}
    # Claude Code marks the last message: the first request's only message carries the breakpoint (as a
    # block); on the next requests the breakpoint has moved on, and the first message is a plain string
    requests = [[{"role": "user", "content": [marked]}],
                [{"role": "user", "content": text}, {"role": "assistant", "content": "Looking."},
                 {"role": "user", "content": [{**marked, "text": "go on"}]}],
                [{"role": "user", "content": [{"type": "text", "text": text}]}, {"role": "assistant", "content": "Done."},
                 {"role": "user", "content": "thanks"}]]
    got = [convs.get({"metadata": {"user_id": "session-1"}, "model": "claude-sonnet-4-5", "messages": m})
           for m in requests]
    assert got[0] is got[1] is got[2] and len(made) == 1
    # another first message is still another conversation
    convs.get({"metadata": {"user_id": "session-1"}, "messages": [{"role": "user", "content": "Title this."}]})
    assert len(made) == 2


@pytest.mark.parametrize("value,expected", [("8787", ("127.0.0.1", 8787)), (":0", ("127.0.0.1", 0)),
                                            ("0.0.0.0:80", ("0.0.0.0", 80)), ("[::1]:9000", ("::1", 9000))])
def test_listen_addresses(value, expected):
    assert parse_listen(value) == expected


@pytest.mark.parametrize("value", ["host:port", "127.0.0.1:70000", ""])
def test_bad_listen_addresses(value):
    with pytest.raises(ValueError):
        parse_listen(value)


def test_conversations_held_in_memory_are_bounded_and_come_back_from_their_store(tmp_path):
    from ctxkit.proxy.conversations import Conversations

    made = []
    convs = Conversations(lambda store, model: made.append(store) or store, tmp_path, keep=2)
    bodies = [{"messages": [{"role": "user", "content": f"task {i}"}]} for i in range(3)]
    first = convs.get(bodies[0])
    convs.get(bodies[1])
    assert convs.get(bodies[0]) is first  # used again: kept, the most recent now
    convs.get(bodies[2])  # the third pushes out the one used longest ago (task 1)
    assert len(convs) == 2 and len(made) == 3
    again = convs.get(bodies[1])
    assert again.manager == made[1] and len(made) == 4  # a new manager on the same store folder


def test_a_disabled_tap_reads_nothing():
    tap = UsageTap("application/json", enabled=False)
    tap.feed(json.dumps({"usage": {"input_tokens": 3}}).encode())
    assert tap.close() == {}


def test_after_a_line_too_long_to_keep_the_tap_reads_every_line_that_follows():
    # it resynchronised at the chunk's last newline: the lines between (here the usage) were lost
    from ctxkit.proxy.usage_tap import MAX_LINE_BYTES

    usage = b'data: {"type":"message_delta","usage":{"output_tokens":6}}\n\n'
    for tail in (b"", b'data: {"type":"message_stop"}\n\n'):
        tap = UsageTap("text/event-stream")
        tap.feed(b'data: {"type":"message_start","message":{"usage":{"input_tokens":3}}}\n\n')
        tap.feed(b'data: {"type":"content_block_delta","text":"' + b"x" * (MAX_LINE_BYTES + 10))
        tap.feed(b'"}\n\n' + usage + tail)
        assert tap.close() == {"input_tokens": 3, "output_tokens": 6}


def test_an_answer_nested_too_deeply_has_no_usage_and_no_error():
    # json.loads raised RecursionError in the response's last callback (after the client had its answer)
    deep = b"[" * 100_000 + b"]" * 100_000
    for kind, body in (("application/json", deep), ("text/event-stream", b'data: {"usage": ' + deep + b"}\n\n")):
        tap = UsageTap(kind)
        tap.feed(body)
        assert tap.close() == {}
