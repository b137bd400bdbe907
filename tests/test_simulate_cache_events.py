"""Cache events a session's usage shows and its transcript gives no cause for (docs/simulate.md, "The
prompt-cache model"): a loss, an entry alive past its lifetime. Every row meets them where the session
did. Each session is synthetic, shaped as the real ones that showed it (named in each test), and failed
its assertion before the events were taken from the usage."""
from __future__ import annotations

import json
from datetime import timedelta

from test_simulate_session_prefix import Session, _long_turns, _turns, _within_ten_percent

from ctxkit import load_policy
from ctxkit.reports.cache_model import Piece, PromptCache
from ctxkit.reports.pricing import load_pricing
from ctxkit.reports.simulate import simulate_session


def _lost_at_a_new_prompt() -> Session:
    """held-out 64dd3afc (Claude Code 2.1.123): a new prompt 125 seconds after the request before, same model,
    nothing between them but the prompt, read only the tools and system prompt and wrote the rest again."""
    s = _turns(Session("2.1.123"), 0, [(0, 14_000, 20_000), (20, 34_000, 3_000), (40, 37_000, 3_000),
                                       (60, 40_000, 3_000)])
    return _turns(s, 4, [(185, 14_000, 29_400), (205, 43_400, 3_000), (225, 46_400, 3_000)])


def test_a_loss_the_usage_shows_is_replayed_where_it_happened(tmp_path):
    result = _lost_at_a_new_prompt().simulate(tmp_path)
    assert _within_ten_percent(result["calibration"]["relative_error"])
    assert result["calibration"]["cache_events"] == {"lost": 1, "kept": 0, "side": 0}
    lost = result["rows"]["replayed"].requests[4].usage
    assert abs(lost.cache_read_input_tokens - 14_000) < 1_500 and lost.cache_creation_input_tokens > 25_000


def test_none_and_the_policy_rows_meet_the_same_loss(tmp_path):
    """A policy would have met the loss at the same moment: on a session no policy changes, none and the
    policy's row cost what replayed costs, the loss (26,000 tokens written again) included; the policy's
    sizes are its own estimates, so it is a little further off."""
    rows = _lost_at_a_new_prompt().simulate(tmp_path)["rows"]
    replayed = rows["replayed"].to_json()
    for row, within in ((rows["none"].to_json(), 0.02), (rows["policies"][0].to_json(), 0.05)):
        for key in ("cache_read_input_tokens", "cache_creation_input_tokens"):
            assert abs(row[key] - replayed[key]) <= within * replayed[key], (row["policy"], key)
    for row in (rows["none"], rows["policies"][0]):
        assert row.requests[4].usage.cache_creation_input_tokens > 25_000, row.policy


def test_a_miss_with_a_cause_is_not_counted_as_a_loss(tmp_path):
    """A pause past the lifetime explains the miss: the cache model already has it, and it is no event."""
    s = _turns(Session("2.1.123"), 0, [(0, 14_000, 20_000), (20, 34_000, 3_000)])
    _turns(s, 2, [(600, 0, 37_400), (620, 37_400, 3_000)])
    result = s.simulate(tmp_path)
    assert result["calibration"]["cache_events"] == {"lost": 0, "kept": 0, "side": 0}
    assert _within_ten_percent(result["calibration"]["relative_error"])


def test_a_cache_read_past_its_lifetime_is_replayed_as_read(tmp_path):
    """held-out be1a2cad (Claude Code 1.0.24): a turn's lines all written at one instant, 8 minutes after the
    request before by their times, and the first of them read everything that request sent: the lines'
    times are not when the requests went out, and the cache was alive. Every row finds it alive there."""
    s = _turns(Session("1.0.24"), 0, [(0, 0, 14_200), (20, 14_200, 800)])
    _turns(s, 2, [(520, 15_000, 150), (521, 15_150, 150), (522, 15_300, 150)])
    result = s.simulate(tmp_path)
    assert result["calibration"]["cache_events"] == {"lost": 0, "kept": 1, "side": 0}
    assert _within_ten_percent(result["calibration"]["relative_error"])
    for row in (result["rows"]["replayed"], result["rows"]["none"], result["rows"]["policies"][0]):
        assert row.requests[2].usage.cache_read_input_tokens > 13_000, row.policy


def test_a_loss_keeps_what_the_request_still_read():
    cache = PromptCache()
    pieces = [Piece(b"tools", 14_000, True, True), Piece(b"m1", 20_000, True), Piece(b"m2", 3_000, True)]
    cache.request(None, "claude-opus-4-6", pieces, 300)
    cache.forget_beyond("claude-opus-4-6", 15_000, None)
    assert cache.request(None, "claude-opus-4-6", pieces, 300).read == 14_000
    cache.forget_beyond("claude-sonnet-4-6", 0, None)  # another model's cache is another one
    assert cache.request(None, "claude-opus-4-6", pieces, 300).read == 37_000


def test_a_loss_that_read_the_shared_prefix_keeps_only_that():
    """held-out 6ab0ef1f (Claude Code 2.1.41): a new prompt read the 25,807 tokens other sessions keep warm,
    the session's own part of the system prompt gone. That part is sized by each request's calibration
    (5,829 tokens at the request before, 6,513 at this one), so the prefix cached through it ended at
    31,636: within "a quarter more" than the read, it was kept, and the replay read it (-10.8% on writes)."""
    from ctxkit.reports.cache_events import CacheEvents

    def request(own: float) -> list[Piece]:
        return [Piece(b"shared", 25_807, True, True), Piece(b"own", own, True, True), Piece(b"m1", 9_000),
                Piece(b"m2", 2_000, True)]

    cache = PromptCache()
    cache.request(None, "claude-sonnet-4-5", request(5_829), 300)
    CacheEvents(lost={1: 25_807.0}).before(cache, 1, "claude-sonnet-4-5", None, request(6_513))
    assert cache.request(None, "claude-sonnet-4-5", request(6_513), 300).read == 25_807


def test_a_prefix_change_the_next_request_read_through_is_none(tmp_path):
    """held-out 76cb0e5e (Claude Code 2.1.8x): `/mcp` opened and dismissed ("MCP dialog dismissed") between two
    requests 12 seconds apart, and the second read all the first sent: no server reconnected, so the
    prefix did not change (it was taken for a reconnect: +44% on writes)."""
    s = _turns(Session("2.1.81"), 0, [(0, 14_000, 20_000), (20, 34_000, 3_000)])
    s.command("/mcp", timedelta(seconds=30))
    _turns(s, 2, [(40, 37_000, 3_000), (60, 40_000, 3_000)])
    result = s.simulate(tmp_path)
    assert _within_ten_percent(result["calibration"]["relative_error"])
    assert result["rows"]["replayed"].requests[2].usage.cache_read_input_tokens > 30_000


def test_an_api_that_caches_the_tools_and_system_prompt_only_shows_no_loss(tmp_path):
    """The real Claude Code 2.0.76 session behind a relay (ctxkit.reports.api_cache.prompt_cache): every request
    read the 25,843 tokens of tools and system prompt and sent the messages as plain input. Each read less
    than 80% of what the request before it sent, which is how that API caches, not a loss: counted as one
    at every request, ``cache_events`` said the calibration rested on 14 losses the session never had."""
    s = Session("2.0.76")
    for k in range(16):
        s.prompt(f"step {k}: " + "please go on with the plan " * 8, timedelta(seconds=20 * k))
        s.answer("done " * 30, timedelta(seconds=20 * k + 3), 25_843 if k else 0, 0 if k else 25_843,
                 plain=60_000 + 3_000 * k if k else 1)
    result = s.simulate(tmp_path)
    assert result["calibration"]["cache_events"] == {"lost": 0, "kept": 0, "side": 0}
    assert _within_ten_percent(result["calibration"]["relative_error"])


def test_a_loss_at_a_request_timed_before_the_one_before_is_no_pause_and_every_lifetime_meets_it(tmp_path):
    """Claude Code 1.0 wrote some turns' lines between earlier ones: a request whose time is 20 seconds before
    the request before it, which read only the tools and system prompt. No pause explains that loss; taken
    for one past the lifetime, it was left out of cache_events and of every row under a policy's own
    ``request.cache_ttl`` -- even the 5 minutes the session had -- where none wrote 3,000 tokens, not 29,000."""
    s = _turns(Session("1.0.24"), 0, [(0, 14_000, 20_000), (20, 34_000, 3_000), (60, 37_000, 3_000)])
    _turns(s, 3, [(40, 14_000, 29_000), (80, 43_000, 3_000)])
    path = tmp_path / "session.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in s.lines))
    for sets in ([], ["request.cache_ttl=5m"], ["request.cache_ttl=1h"]):
        result = simulate_session(str(path), [("default", load_policy(None, sets=sets))], load_pricing())
        assert result["calibration"]["cache_events"] == {"lost": 1, "kept": 0, "side": 0}, sets
        for row in (result["rows"]["none"], result["rows"]["policies"][0]):
            assert row.requests[3].usage.cache_creation_input_tokens > 25_000, (sets, row.policy)


def test_a_read_past_the_lifetime_is_met_under_the_same_lifetime_set_by_the_policy(tmp_path):
    """The session of test_a_cache_read_past_its_lifetime_is_replayed_as_read under ``--set request.cache_ttl=5m``,
    the 5 minutes its requests had: none and the policy's row dropped the read past the lifetime and wrote
    the prompt again (+66% on none's cost against replayed, a difference no policy made)."""
    s = _turns(Session("1.0.24"), 0, [(0, 0, 14_200), (20, 14_200, 800)])
    _turns(s, 2, [(520, 15_000, 150), (521, 15_150, 150), (522, 15_300, 150)])
    path = tmp_path / "session.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in s.lines))
    result = simulate_session(str(path), [("five", load_policy(None, sets=["request.cache_ttl=5m"]))], load_pricing())
    rows = result["rows"]
    for row in (rows["none"], rows["policies"][0]):
        assert row.requests[2].usage.cache_read_input_tokens > 13_000, row.policy
    assert abs(rows["none"].to_json()["cost_usd"] - rows["replayed"].to_json()["cost_usd"]) < 0.01


def test_a_read_of_the_prefix_other_sessions_keep_warm_is_no_read_past_the_lifetime(tmp_path):
    """kfischer b3edadab's pause, early in a session whose prompt is mostly tools and system prompt: after 19
    minutes the request read the 17,000 tokens other sessions kept warm -- 83% of what the request before
    sent -- and wrote the rest again. Taken for the session's cache alive past its lifetime, every row read
    all of it: -46.9% on writes, where the shared prefix alone is exact."""
    s = _turns(Session(), 0, [(0, 17_000, 3_100), (30, 20_100, 150), (60, 20_250, 150)])
    _turns(s, 3, [(1_200, 17_000, 3_550), (1_230, 20_550, 150), (1_260, 20_700, 150)])
    result = s.simulate(tmp_path)
    assert result["calibration"]["cache_events"] == {"lost": 0, "kept": 0, "side": 0}
    assert _within_ten_percent(result["calibration"]["relative_error"])
    for row in (result["rows"]["replayed"], result["rows"]["none"]):
        assert row.requests[3].usage.cache_creation_input_tokens > 3_000, row.policy


def test_a_resume_that_read_only_the_prefix_other_sessions_keep_warm_is_a_restart(tmp_path):
    """erk beddc0be's /exit and resume, early in a session: the request after it read the 17,000 tokens of
    the shared prefix (82% of what the request before sent) and wrote the session's own part again. Taken
    for a resume that composed the same prompt, every row read all of it (-46.2% on writes)."""
    s = _turns(Session(), 0, [(0, 17_000, 3_100), (10, 20_100, 300), (20, 20_400, 300)])
    s.command("/exit", timedelta(seconds=30))
    _turns(s, 3, [(60, 17_000, 4_000), (70, 21_000, 300)])
    result = s.simulate(tmp_path)
    assert _within_ten_percent(result["calibration"]["relative_error"])
    for row in (result["rows"]["replayed"], result["rows"]["none"]):
        assert row.requests[3].usage.cache_creation_input_tokens > 3_500, row.policy


def test_a_rewind_after_the_sessions_compaction_is_no_loss_of_the_rows_that_keep_the_whole_history(tmp_path):
    """After its compaction the session went back to an earlier answer (a rewind: the next prompt chains onto
    it) and its smaller prompt read the history up to there. The transcript forks there, in every row; taken
    for a loss of the cache at the session's size, it cut none's and the policy's larger history short, and
    they wrote it again (+20% and +24% on their cost)."""
    s = _long_turns(Session(), 0, [(0, 0, 30_000), (10, 30_000, 10_000), (20, 40_000, 10_000),
                                   (30, 50_000, 10_000), (40, 60_000, 10_000)])
    s._add({"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted",
            "compactMetadata": {"trigger": "auto", "preTokens": 70_000}}, timedelta(seconds=45))
    s.lines[-1]["parentUuid"] = None
    s._add({"type": "user", "isCompactSummary": True, "message": {"role": "user", "content": "This session is "
            "being continued from a previous conversation. The conversation is summarized below: " + "the plan " * 80}},
           timedelta(seconds=46))
    _long_turns(s, 5, [(50, 20_000, 12_000), (60, 32_000, 10_000), (70, 42_000, 10_000), (80, 52_000, 10_000)])
    fork = s.lines[-7]["uuid"]  # the answer of the second turn after the compaction
    _long_turns(s, 9, [(90, 32_000, 10_000), (100, 42_000, 10_000)])
    s.lines[-4]["parentUuid"] = fork
    result = s.simulate(tmp_path)
    assert _within_ten_percent(result["calibration"]["relative_error"])
    for row in (result["rows"]["none"], result["rows"]["policies"][0]):
        assert row.requests[9].usage.cache_creation_input_tokens < 12_000, row.policy


def _answers_read_at_each_new_prompt(version: str = "2.1.150") -> Session:
    """held-out dee67297 (Claude Code 2.1.150) and 11e00291 (2.1.12): each new prompt, a minute or two after
    the answer before it, read all the request before sent *and* that answer (about 1,000 tokens), and wrote
    only the new prompt; nothing in the transcript between them sent the answer. The model wrote the answer
    again at every prompt: +12% on writes."""
    s = Session(version)
    sizes = [(0, 0, 20_000, 50)] + [(90 * k, 20_000 + 1_050 * (k - 1) + 1_000, 50, 1) for k in range(1, 9)]
    for k, (at, read, write, plain) in enumerate(sizes):
        s.prompt(f"step {k}: " + "please go on with the plan " * 8, timedelta(seconds=at))
        s.answer("the change is in place and the tests pass " * 110, timedelta(seconds=at + 20), read, write,
                 plain=plain)
    return s


def test_an_answer_a_request_the_transcript_does_not_record_had_cached_is_read(tmp_path):
    result = _answers_read_at_each_new_prompt().simulate(tmp_path)
    assert _within_ten_percent(result["calibration"]["relative_error"])
    assert result["calibration"]["cache_events"] == {"lost": 0, "kept": 0, "side": 8}
    later = result["rows"]["replayed"].requests[5].usage
    assert later.cache_creation_input_tokens < 300 and later.cache_read_input_tokens > 24_000


def test_none_and_the_policy_rows_read_the_answers_the_session_found_cached(tmp_path):
    """A policy's world has the same requests after each answer: none and the policy's row (which changes
    nothing on so small a session) read each answer too, and cost what replayed costs."""
    rows = _answers_read_at_each_new_prompt().simulate(tmp_path)["rows"]
    replayed = rows["replayed"].to_json()
    for row in (rows["none"], rows["policies"][0]):
        assert abs(row.to_json()["cache_creation_input_tokens"] - replayed["cache_creation_input_tokens"]) \
            <= 0.05 * replayed["cache_creation_input_tokens"], row.policy
        assert row.requests[5].usage.cache_creation_input_tokens < 300, row.policy


def test_a_new_prompt_that_read_what_the_request_before_sent_writes_the_answer(tmp_path):
    """The counter-case, the usual one: each new prompt read what the request before sent and wrote the answer
    with the prompt. No event, and the replay writes the answers as the session did."""
    s = Session("2.1.150")
    sizes = [(0, 0, 20_000)] + [(90 * k, 20_000 + 1_051 * (k - 1), 1_050) for k in range(1, 9)]
    for k, (at, read, write) in enumerate(sizes):
        s.prompt(f"step {k}: " + "please go on with the plan " * 8, timedelta(seconds=at))
        s.answer("the change is in place and the tests pass " * 110, timedelta(seconds=at + 20), read, write)
    result = s.simulate(tmp_path)
    assert _within_ten_percent(result["calibration"]["relative_error"])
    assert result["rows"]["replayed"].requests[5].usage.cache_creation_input_tokens > 800
    assert result["calibration"]["cache_events"] == {"lost": 0, "kept": 0, "side": 0}
    assert result["rows"]["replayed"].requests[5].usage.cache_creation_input_tokens > 800


def test_a_read_past_the_request_before_longer_than_its_answer_is_another_prefix(tmp_path):
    """held-out 7efb071a (Claude Code 2.1.71): the first request read nothing and sent 7,827 tokens; the next
    prompt read 9,320 -- 1,493 more, where the answer between them was about 500 -- and wrote 7,140: the tools
    had grown after the first request (its MCP tools listed later), and the 9,320 were the longer tools other
    sessions had cached. Taken for the answer cached ahead, the replay read through it: -19% on writes."""
    s = Session("2.1.71")
    s.prompt("help me translate this information " * 10, timedelta(seconds=0))
    s.answer("here is what the message says " * 12, timedelta(seconds=10), 0, 7_824, plain=3)
    s.prompt("create a plan for implementing this solution " * 6, timedelta(seconds=120))
    s.answer("the plan " * 20, timedelta(seconds=130), 9_320, 7_140)
    s.prompt("go on", timedelta(seconds=200))
    s.answer("done " * 20, timedelta(seconds=210), 16_461, 300)
    result = s.simulate(tmp_path)
    assert result["calibration"]["cache_events"]["side"] == 0
    assert result["rows"]["replayed"].requests[1].usage.cache_creation_input_tokens > 6_000


def _bash_call(s, k: int, at: timedelta, read: int, write: int) -> None:
    """A Bash call answered with a long build log."""
    usage = {"input_tokens": 1, "cache_read_input_tokens": read, "cache_creation_input_tokens": write,
             "output_tokens": 40, "cache_creation": {"ephemeral_5m_input_tokens": write, "ephemeral_1h_input_tokens": 0}}
    s._add({"type": "assistant", "message": {"id": f"msg_{s.n}", "type": "message", "role": "assistant",
            "model": "claude-opus-4-6", "usage": usage,
            "content": [{"type": "tool_use", "id": f"toolu_{k}", "name": "Bash", "input": {"command": f"cat log{k}"}}]}},
           at)
    s._add({"type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": f"toolu_{k}", "content": f"line {k} of the build log " * 400}]}},
        at + timedelta(seconds=1))


def test_a_policy_that_rewrites_its_history_as_the_turn_begins_finds_no_answer_cached_for_it(tmp_path):
    """The request that cached the answer before a new prompt went out before the prompt, with the history
    as it stood; a policy that clears old results as the turn begins (microcompact after a pause) sends a
    history no request sent before. Its row read the cleared history as if cached (it wrote 6 tokens where the
    cleared results and what follows them were new): the policy looked cheaper than it is."""
    s = Session("2.1.150")
    s.prompt("look at the build logs", timedelta(seconds=0))
    _bash_call(s, 0, timedelta(seconds=5), 0, 20_000)
    _bash_call(s, 1, timedelta(seconds=10), 20_000, 2_500)
    s.answer("the build fails in the linker " * 30, timedelta(seconds=15), 22_500, 2_500)
    s.prompt("fix it", timedelta(seconds=100))  # read the answer too: a side event
    s.answer("done " * 30, timedelta(seconds=105), 25_300, 100)
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in s.lines))
    clears = load_policy(None, ["stages.microcompact.options.gap_minutes=1", "stages.microcompact.options.keep_recent=0"],
                         cwd=tmp_path)
    result = simulate_session(str(path), [("clears", clears)], load_pricing(), cwd=tmp_path)
    assert result["calibration"]["cache_events"]["side"] == 1
    assert result["rows"]["replayed"].requests[3].usage.cache_read_input_tokens > 25_000  # (the answer read)
    policy = result["rows"]["policies"][0].requests
    assert policy[3].context < policy[2].context - 4_000  # (the two logs cleared)
    assert policy[3].usage.cache_read_input_tokens < policy[2].usage.cache_read_input_tokens
    assert policy[3].usage.cache_creation_input_tokens > 200


def test_reads_that_stop_where_the_system_prompt_ends_lose_the_messages_and_the_context_before_them(tmp_path):
    """held-out 3d83c7e8 (Claude Code 2.1.81, Sonnet 4.6): the first request read 8,596 (the part other
    sessions keep warm) and sent 17,565; three new prompts, each under a minute after the request before,
    read 14,827, the tools and the system prompt, and wrote the first message's context and the rest again.
    The replay took that context for system prompt too (the overhead it cannot see) and read 17,761 there
    (-31% on writes); the recurring read says where the system prompt ends."""
    s = _turns(Session("2.1.81"), 0, [(0, 8_596, 8_969), (10, 17_565, 300)])
    total = 17_865
    for k in range(3):
        s = _turns(s, 2 + 2 * k, [(60 + 60 * k, 14_827, total + 300 - 14_827), (70 + 60 * k, total + 300, 300)])
        total += 600
    result = s.simulate(tmp_path)
    assert _within_ten_percent(result["calibration"]["relative_error"]), result["calibration"]
    reads = [r.usage.cache_read_input_tokens for r in result["rows"]["replayed"].requests]
    assert all(abs(reads[k] - 14_827) < 100 for k in (2, 4, 6)), reads


def test_a_read_of_only_the_prefix_the_first_request_found_is_a_loss(tmp_path):
    """held-out 9ffed815 (Claude Code 2.1.63 through a relay): the first request read 16,132 tokens (the part
    other sessions keep warm) and sent 19,794; the next, 20 seconds later, read 16,132 again and sent the rest
    anew. That read is 81.5% of what the request before sent, above the 80% under which a read is a loss, and
    no read recurred to say where the system prompt ends, so the replay read all of the request before
    (-19.1% on cost). A read of that shared prefix alone, after a request that sent more, is a loss, as a
    read of the system prompt alone is."""
    s = _turns(Session("2.1.63"), 0, [(0, 16_132, 3_662), (20, 16_132, 3_855), (40, 19_988, 300)])
    result = s.simulate(tmp_path)
    assert _within_ten_percent(result["calibration"]["relative_error"]), result["calibration"]
    assert result["calibration"]["cache_events"]["lost"] == 1
    reads = [r.usage.cache_read_input_tokens for r in result["rows"]["replayed"].requests]
    assert abs(reads[1] - 16_132) < 100, reads


def _prompt_read_back_smaller(version: str) -> Session:
    """held-out 30128756 (Claude Code 2.0.2): each new prompt, seconds after the request before, read that
    session only up to where the previous turn began and wrote the previous prompt and the rest again: that
    prompt went out the first time with context Claude Code attached to it and does not record, and without
    it the next time. Each read is most of what the request before sent (above the 80% under which a read is a
    loss) and still short of it by the turn; the request after it read all of it (every other prompt here)."""
    sizes, total = [(0, 10_000, 10_000), (20, 20_000, 1_000)], 21_000
    for k in range(2, 12):
        sizes.append((20 * k, total - 1_000, 2_000) if k % 2 == 0 else (20 * k, total, 1_000))
        total += 1_000
    return _turns(Session(version), 0, sizes)


def test_a_new_prompt_that_read_short_of_the_request_before_writes_from_where_its_read_stopped(tmp_path):
    """Replayed reading all of the request before, the session was -12.3% on writes; where the read stops
    short of it (by more than half a percent) at a new prompt within the lifetime, and a prefix the row
    cached ends there, the row keeps the prefixes up to there only: so did the API."""
    result = _prompt_read_back_smaller("2.0.2").simulate(tmp_path)
    assert _within_ten_percent(result["calibration"]["relative_error"]), result["calibration"]
    assert result["calibration"]["cache_events"]["lost"] == 5
    writes = [r.usage.cache_creation_input_tokens for r in result["rows"]["replayed"].requests]
    assert all(abs(w - 2_000) < 200 for w in writes[2::2]), writes


def test_a_read_short_of_the_request_before_where_the_row_cached_nothing_changes_nothing(tmp_path):
    """held-out 51c0fa5f (Claude Code 2.1.68): a new prompt read 18,855 of the 19,944 the request before sent,
    where no request the transcript records had a breakpoint (an earlier prompt changed inside it). The row
    holds no prefix there to keep: forgetting all it cached past the read left it the 10,335 tokens of the
    shared prefix (+28.7% on writes), so the read changes nothing; nor in a row whose request would not have
    found the prefix the API read (held-out e739b244: the row's prefix had changed at a restart before it)."""
    s = _turns(Session("2.1.68"), 0, [(0, 10_335, 9_454), (4, 19_789, 155), (20, 18_855, 1_302),
                                      (26, 20_157, 149), (33, 20_306, 552)])
    result = s.simulate(tmp_path)
    assert _within_ten_percent(result["calibration"]["relative_error"]), result["calibration"]
    assert result["rows"]["replayed"].requests[2].usage.cache_read_input_tokens > 19_000


def _one_hour_turns(read_at_new_prompts: int) -> Session:
    """A session whose writes lived an hour (Claude Code 2.1 on a subscription): each turn's second prompt 20
    seconds after its first, the next turn 10 minutes later, reading what the request before sent less
    ``read_at_new_prompts`` tokens (1,000: up to where that turn began, as held-out ``30128756`` read)."""
    s = _turns(Session("2.1.50"), 0, [(0, 10_000, 10_000), (20, 20_000, 1_000), (620, 21_000 - read_at_new_prompts, 1_000 + read_at_new_prompts),
                                      (640, 22_000, 1_000), (1_240, 23_000 - read_at_new_prompts, 1_000 + read_at_new_prompts),
                                      (1_260, 24_000, 1_000)])
    for line in s.lines:
        usage = line["message"].get("usage") if line["type"] == "assistant" else None
        if usage:
            usage["cache_creation"] = {"ephemeral_5m_input_tokens": 0,
                                       "ephemeral_1h_input_tokens": usage["cache_creation_input_tokens"]}
    return s


def test_a_read_short_of_the_request_before_keeps_nothing_alive_past_a_shorter_lifetime_the_policy_sets(tmp_path):
    """Under ``--set request.cache_ttl=5m`` a 10-minute pause costs none and the policy's row the conversation,
    whether the session's read at the new prompt stopped a turn short of the request before or not: the
    loss kept alive what was alive when that request went out, and those rows read 20,000 tokens their own
    lifetime had let expire (the 5 minutes looked 2,000 tokens a turn cheaper than they are)."""
    costs = []
    for short in (0, 1_000):
        path = tmp_path / f"short{short}.jsonl"
        path.write_text("".join(json.dumps(x) + "\n" for x in _one_hour_turns(short).lines))
        result = simulate_session(str(path), [("five", load_policy(None, sets=["request.cache_ttl=5m"]))],
                                  load_pricing())
        assert result["calibration"]["cache_events"]["lost"] == (2 if short else 0)
        rows = result["rows"]
        for row in (rows["none"], rows["policies"][0]):
            assert all(row.requests[k].usage.cache_read_input_tokens < 10_000 for k in (2, 4)), row.policy
        costs.append(rows["none"].to_json()["cost_usd"])
    assert costs[0] == costs[1]


def test_after_a_reconnect_the_system_prompt_is_read_to_its_end(tmp_path):
    """held-out b9702b38 (Claude Code 2.1.70): ``/mcp`` reconnected a server 39 seconds after the request
    before; the next request read the tools and system prompt to their end (14,327, as two losses before
    it had), and wrote the context before the first message and the rest again. The reconnect composed the
    context again, not the system prompt: taken for the session's whole own part, the replay read only the
    6,458 tokens other sessions keep warm (+16.9% on writes). Three more sessions (``48244adb``, ``354b2588``)
    read the system prompt to its end after each ``/mcp`` or restart within the lifetime."""
    s = _turns(Session("2.1.70"), 0, [(0, 6_458, 10_778), (10, 14_327, 3_700), (20, 14_327, 4_600)])
    s.command("/mcp", timedelta(seconds=35))
    s = _turns(s, 3, [(40, 14_327, 6_100), (50, 20_427, 1_400), (60, 21_827, 1_400)])
    result = s.simulate(tmp_path)
    assert _within_ten_percent(result["calibration"]["relative_error"]), result["calibration"]
    reads = [r.usage.cache_read_input_tokens for r in result["rows"]["replayed"].requests]
    assert abs(reads[3] - 14_327) < 100, reads
