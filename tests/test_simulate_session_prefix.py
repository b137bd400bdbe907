"""What simulate models of the prompt cache a Claude Code session found (docs/simulate.md, "The
prompt-cache model"): the prefix part other sessions keep warm, the part the session composes again
after a restart, when a request was sent, the sizes a cached prefix is read at and where Claude Code
puts its breakpoints. Each session here is synthetic, shaped as the real one that showed the effect
(named in the docs and in each test), and failed its assertion before the model had the effect; the
expired shared prefix is the counter-case that keeps the warm one from being assumed."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from ctxkit import load_policy
from ctxkit.cli.main import app
from ctxkit.reports import replay
from ctxkit.reports.pricing import load_pricing
from ctxkit.reports.session_prefix import prefix_changes
from ctxkit.reports.simulate import simulate_session
from ctxkit.tokens.counters import RoughCounter
from ctxkit.transcript import read_transcript

T0 = datetime(2026, 2, 24, 3, 0, tzinfo=timezone.utc)
OPUS = "claude-opus-4-6"


class Session:
    """A main chain of prompts and answers, each answer with the usage the API reported."""

    def __init__(self, version: str | None = "2.1.50") -> None:
        self.lines: list[dict] = []
        self.n = 0
        self.version = version  # the Claude Code version its lines name (None: left out)

    def _add(self, entry: dict, at: timedelta) -> None:
        self.n += 1
        parent = self.lines[-1]["uuid"] if self.lines else None
        version = {"version": self.version} if self.version else {}
        self.lines.append({"parentUuid": parent, "isSidechain": False, "sessionId": "s", **version,
                           "uuid": f"u{self.n}", "timestamp": (T0 + at).isoformat().replace("+00:00", "Z"),
                           **entry})

    def prompt(self, text: str, at: timedelta) -> Session:
        self._add({"type": "user", "message": {"role": "user", "content": text}}, at)
        return self

    def command(self, name: str, at: timedelta) -> Session:
        self._add({"type": "user", "message": {"role": "user", "content": f"<command-name>{name}</command-name>\n"
                   f"<command-message>{name[1:]}</command-message>\n<command-args></command-args>"}}, at)
        return self

    def answer(self, text: str, at: timedelta, read: int, write: int, model: str = OPUS, plain: int = 1) -> Session:
        usage = {"input_tokens": plain, "cache_read_input_tokens": read, "cache_creation_input_tokens": write,
                 "output_tokens": 40, "cache_creation": {"ephemeral_5m_input_tokens": write,
                                                         "ephemeral_1h_input_tokens": 0}}
        self._add({"type": "assistant", "message": {"id": f"msg_{self.n}", "type": "message", "role": "assistant",
                                                    "model": model, "content": [{"type": "text", "text": text}],
                                                    "usage": usage}}, at)
        return self

    def simulate(self, tmp_path) -> dict:
        path = tmp_path / "session.jsonl"
        path.write_text("".join(json.dumps(x) + "\n" for x in self.lines))
        return simulate_session(str(path), [("default", load_policy(None))], load_pricing())

    def errors(self, tmp_path) -> dict:
        return self.simulate(tmp_path)["calibration"]["relative_error"]


def _turns(s: Session, start: int, sizes: list[tuple[int, int, int]], model: str = OPUS) -> Session:
    """Prompts and answers a few seconds apart: (seconds from T0, cache read, cache write) per request."""
    for k, (at, read, write) in enumerate(sizes):
        s.prompt(f"step {start + k}: " + "please go on with the plan " * 8, timedelta(seconds=at))
        s.answer("done " * 30, timedelta(seconds=at + 3), read, write, model)
    return s


def _within_ten_percent(errors: dict) -> bool:
    return all(abs(errors[k]) <= 0.10 for k in ("cost_usd", "cache_read_input_tokens", "cache_creation_input_tokens"))


def test_after_a_pause_past_the_lifetime_the_shared_prefix_is_read_when_other_sessions_kept_it_warm(tmp_path):
    """kfischer b3edadab: after 18 minutes (the session's writes lived 5) the API still read the tools and the
    system prompt; the rest of the prompt was written again."""
    s = _turns(Session(), 0, [(0, 0, 20_100), (30, 20_100, 150), (60, 20_250, 150)])
    _turns(s, 3, [(1_200, 13_000, 7_550), (1_230, 20_550, 150)])
    assert _within_ten_percent(s.errors(tmp_path))


def test_none_and_the_policy_rows_find_the_cache_as_the_session_did(tmp_path):
    """The shared prefix kept warm, a restart, the send times: the same for every row (they are the world the
    session ran in, not its management), so on a session no policy changes none costs what replayed costs."""
    s = _turns(Session(), 0, [(0, 0, 20_100), (30, 20_100, 150), (60, 20_250, 150)])
    _turns(s, 3, [(1_200, 13_000, 7_550), (1_230, 20_550, 150)])
    s.command("/exit", timedelta(seconds=1_240))
    _turns(s, 5, [(1_300, 13_000, 7_850)])
    rows = s.simulate(tmp_path)["rows"]
    replayed, none = rows["replayed"].to_json(), rows["none"].to_json()
    for key in ("cache_read_input_tokens", "cache_creation_input_tokens"):
        assert abs(none[key] - replayed[key]) <= 0.02 * replayed[key], key


def test_a_shared_prefix_that_expired_is_written_again(tmp_path):
    """The same session where the pause cost the whole prefix: the model does not assume a warm cache."""
    s = _turns(Session(), 0, [(0, 13_000, 7_100), (30, 20_100, 150), (60, 20_250, 150)])
    _turns(s, 3, [(1_200, 0, 20_550), (1_230, 20_550, 150)])
    assert _within_ten_percent(s.errors(tmp_path))


def test_a_switch_to_another_model_reads_the_shared_prefix_other_sessions_cached_for_it(tmp_path):
    """erk 396380b6: the first request to Opus after Sonnet read the tools and system prompt at once."""
    s = _turns(Session(), 0, [(0, 19_000, 12_800), (10, 31_800, 250), (20, 32_050, 250)], model="claude-sonnet-4-6")
    _turns(s, 3, [(30, 19_040, 13_510), (40, 32_550, 250)])
    assert _within_ten_percent(s.errors(tmp_path))


def test_each_model_reads_its_own_shared_prefix(tmp_path):
    """held-out e739b244 (Claude Code 2.1, Haiku then Sonnet): the first request, Haiku's, read Haiku's
    tools and system prompt; each cold Sonnet request read 14,205 tokens, Sonnet's, which the user's other
    sessions kept warm. One shared prefix a session (Haiku's size) had each of them write the difference:
    +13.8% on writes."""
    haiku, sonnet = "claude-haiku-4-5-20251001", "claude-sonnet-4-6"
    # Haiku's tools and system prompt about 14,450 tokens, Sonnet's about 19,000; each turn adds about 80
    s = _turns(Session(), 0, [(0, 9_000, 6_000)], model=haiku)
    _turns(s, 1, [(30, 14_205, 5_425), (40, 19_630, 80), (50, 19_710, 80)], model=sonnet)
    _turns(s, 4, [(700, 14_205, 5_665), (710, 19_870, 80), (720, 19_950, 80)], model=sonnet)  # after a pause
    _turns(s, 7, [(1_400, 14_205, 5_905), (1_410, 20_110, 80), (1_420, 20_190, 80)], model=sonnet)
    result = s.simulate(tmp_path)
    assert _within_ten_percent(result["calibration"]["relative_error"]), result["calibration"]
    replayed = [r.usage.cache_read_input_tokens for r in result["rows"]["replayed"].requests]
    assert all(13_000 < replayed[k] < 15_500 for k in (1, 4, 7)), replayed


def test_a_models_own_shared_prefix_is_read_at_the_size_its_first_request_read(tmp_path):
    """A session on Opus whose first Haiku request read 12,000 tokens, Haiku's tools and system prompt, and
    wrote the conversation for Haiku: that piece, new at that request, was scaled with what the request
    added, and the replay (and none, which repeats the request's size) read 10,804 of it and wrote the rest,
    while the policy rows, sized as sent, read 12,000."""
    s = _turns(Session(), 0, [(0, 35_157, 4_589), (8, 39_746, 5_343), (23, 45_089, 2_821), (71, 48_077, 1_363)])
    _turns(s, 4, [(90, 12_000, 37_500), (100, 49_500, 300)], model="claude-haiku-4-5-20251001")
    rows = s.simulate(tmp_path)["rows"]
    for row in (rows["replayed"], rows["none"], rows["policies"][0]):
        assert row.requests[4].usage.cache_read_input_tokens == pytest.approx(12_000, abs=50), row.policy


def test_a_cold_request_finds_the_shorter_shared_part_other_sessions_kept(tmp_path):
    """held-out b4b90999 (Claude Code 2.1.83): the first request read 8,595 tokens of tools and system prompt;
    one after a pause of 2.8 hours read 7,452, what the user's other sessions had cached then. Less than the
    shared prefix, it counted as a miss: the replay read nothing and wrote it again (+12.1% on writes)."""
    s = _turns(Session(), 0, [(0, 8_595, 14_132), (10, 22_727, 170), (20, 22_897, 180), (30, 23_077, 190)])
    _turns(s, 4, [(10_000, 7_452, 15_900), (10_010, 23_352, 160)])
    result = s.simulate(tmp_path)
    assert _within_ten_percent(result["calibration"]["relative_error"]), result["calibration"]
    assert 7_000 < result["rows"]["replayed"].requests[4].usage.cache_read_input_tokens < 7_800


def test_a_loss_keeps_the_shorter_shared_part(tmp_path):
    """held-out 6bff27da (Claude Code 2.1, Opus 4.5): the first request read 35,157 tokens of tools and system
    prompt at once; 48 seconds after the third, one read only 14,015 and wrote the rest. The replay, whose
    cache held the 35,157 as one prefix, lost all of it and wrote 48,079 (+29% on writes)."""
    s = _turns(Session(), 0, [(0, 35_157, 4_589), (8, 39_746, 5_343), (23, 45_089, 2_821), (71, 14_015, 34_062),
                              (78, 48_077, 1_363)])
    result = s.simulate(tmp_path)
    assert _within_ten_percent(result["calibration"]["relative_error"]), result["calibration"]
    assert 13_500 < result["rows"]["replayed"].requests[3].usage.cache_read_input_tokens < 14_500


def test_after_a_loss_a_restart_writes_only_the_sessions_own_part_again(tmp_path):
    """The shared prefix in two parts (6bff27da's loss, above) and then an /exit and a resume: the request after
    it reads both shared parts, 35,157 tokens, and writes the session's own part, the piece after them, again
    (in every row: none and the policy rows see the same prefix)."""
    s = _turns(Session(), 0, [(0, 35_157, 4_589), (8, 39_746, 5_343), (23, 45_089, 2_821), (71, 14_015, 34_062),
                              (78, 48_077, 1_363)])
    s.command("/exit", timedelta(seconds=90))
    _turns(s, 5, [(120, 35_157, 14_400), (130, 49_557, 300)])
    result = s.simulate(tmp_path)
    assert _within_ten_percent(result["calibration"]["relative_error"]), result["calibration"]
    rows = result["rows"]
    for row in (rows["replayed"], rows["none"], rows["policies"][0]):
        assert row.requests[5].usage.cache_read_input_tokens == pytest.approx(35_157, abs=50), row.policy
        assert row.requests[5].usage.cache_creation_input_tokens > 10_000, row.policy


def test_exit_and_resume_writes_the_sessions_own_prefix_again(tmp_path):
    """erk beddc0be: after /exit and a resume a minute later, the request read only the shared prefix (the
    process composed its environment again) and wrote the rest."""
    s = _turns(Session(), 0, [(0, 19_100, 12_000), (10, 31_100, 300), (20, 31_400, 300)])
    s.command("/exit", timedelta(seconds=30))
    _turns(s, 3, [(60, 19_100, 12_900), (70, 32_000, 300)])
    assert _within_ten_percent(s.errors(tmp_path))


def test_a_requests_cache_time_is_when_it_was_sent_not_when_its_long_answer_was_written(tmp_path):
    """sniffly d3ad4cdc: an answer written 4.5 minutes after its request, the next request sent 4 minutes after
    that answer: 8.5 minutes after the cache was last used, so it read nothing."""
    s = _turns(Session(), 0, [(0, 10_000, 4_000), (10, 14_000, 400)])
    s.prompt("write the notebook " * 8, timedelta(seconds=20))
    s.answer("a long notebook " * 40, timedelta(seconds=290), 14_400, 400)
    s.prompt("now edit it " * 8, timedelta(seconds=530))
    s.answer("edited " * 30, timedelta(seconds=535), 0, 15_300)
    _turns(s, 4, [(545, 15_300, 300)])
    assert _within_ten_percent(s.errors(tmp_path))


def test_the_prefix_changes_are_the_sessions_compactions_restarts_and_mcp_reconnects(tmp_path):
    s = _turns(Session(), 0, [(0, 0, 20_000)])
    s.command("/mcp", timedelta(seconds=5)).command("/model", timedelta(seconds=6)).command("/exit", timedelta(seconds=7))
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in s.lines))
    assert prefix_changes(read_transcript(path)) == [2, 4]


def test_none_repeats_what_the_session_sent_at_the_size_the_api_counted(tmp_path):
    """erk 1b2fa935: none's view is the session's until its compaction, so those requests have their recorded
    size, and after it none repeats them at that size: its peak is above the recorded one (the estimate
    fitted over the whole session put it at less than half)."""
    s = _turns(Session(), 0, [(0, 19_000, 11_000), (10, 30_000, 40_000), (20, 70_000, 40_000),
                              (30, 110_000, 40_000), (40, 150_000, 5_000)])
    s._add({"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted",
            "compactMetadata": {"trigger": "auto", "preTokens": 155_000}}, timedelta(seconds=50))
    s.lines[-1]["parentUuid"] = None
    s._add({"type": "user", "isCompactSummary": True, "message": {
        "role": "user", "content": "This session is being continued from a previous conversation that ran out of "
                                   "context. The conversation is summarized below: " + "the plan so far " * 40}},
           timedelta(seconds=51))
    _turns(s, 5, [(60, 19_000, 9_000), (70, 28_000, 500), (80, 28_500, 500), (90, 29_000, 500), (100, 29_500, 500),
                  (110, 30_000, 500)])
    result = s.simulate(tmp_path)
    rows = result["rows"]
    assert rows["none"].to_json()["peak_context"] > rows["recorded"].to_json()["peak_context"]


def test_a_burst_of_parallel_tool_calls_is_read_back_whole(tmp_path):
    """erk b9c6a158: an answer of 14 parallel tool calls and their 14 results (29 new blocks) and the next
    request still read everything before it. Claude Code marks the last block of each of the last two
    messages, so the previous request's end is within the API's 20-block lookback of the answer's mark
    (marking the last message only, the model read the tools and system prompt alone and wrote the
    conversation again)."""
    s = _turns(Session(), 0, [(0, 0, 27_800)])
    s.prompt("here is the design: " + "the parser reads one line at a time " * 2_000, timedelta(seconds=10))
    s.answer("understood " * 30, timedelta(seconds=13), 27_800, 30_400)
    s.prompt("read every module " * 8, timedelta(seconds=20))
    calls = [{"type": "tool_use", "id": f"toolu_{k}", "name": "Read", "input": {"file_path": f"/src/m{k}.py"}}
             for k in range(14)]
    s._add({"type": "assistant", "message": {
        "id": "msg_burst", "type": "message", "role": "assistant", "model": OPUS, "content": calls,
        "usage": {"input_tokens": 1, "cache_read_input_tokens": 58_200, "cache_creation_input_tokens": 300,
                  "output_tokens": 900, "cache_creation": {"ephemeral_5m_input_tokens": 300}}}},
           timedelta(seconds=25))
    s._add({"type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": f"toolu_{k}", "content": f"module {k} " * 200} for k in range(14)]}},
           timedelta(seconds=26))
    s.answer("all read " * 30, timedelta(seconds=30), 58_500, 12_000)
    _turns(s, 4, [(40, 70_500, 300), (50, 70_800, 300)])
    assert _within_ten_percent(s.errors(tmp_path))


def _long_turns(s: Session, start: int, sizes: list[tuple[int, int, int]]) -> Session:
    """Turns whose prompts are long (about 10,000 tokens each: a file pasted in), as _turns."""
    for k, (at, read, write) in enumerate(sizes):
        s.prompt(f"step {start + k}: here is the file\n" + "the parser reads one line at a time\n" * 1_100,
                 timedelta(seconds=at))
        s.answer("read it " * 30, timedelta(seconds=at + 3), read, write)
    return s


def test_a_history_claude_code_cleared_in_place_is_written_again(tmp_path):
    """erk 22db8d99 (and 27 more of erk's sessions, on Claude Code 2.0.67 and 2.1): at 135,000 tokens a request
    counted 25,000 fewer than the one before, with nothing in the transcript between them but a tool result:
    Claude Code's microcompact had cleared old tool results in place. It read the tools and system prompt
    (19,615) and wrote the rest; the model, which saw the same messages as before, read them all."""
    s = _long_turns(Session(), 0, [(0, 0, 30_000), (10, 30_000, 10_000), (20, 40_000, 10_000),
                                   (30, 50_000, 10_000), (40, 60_000, 10_000), (50, 70_000, 10_000)])
    _long_turns(s, 6, [(60, 20_000, 35_000), (70, 55_000, 10_000), (80, 65_000, 10_000)])
    result = s.simulate(tmp_path)
    assert _within_ten_percent(result["calibration"]["relative_error"])
    cleared = result["rows"]["replayed"].requests[6].usage
    assert cleared.cache_read_input_tokens < 30_000 and cleared.cache_creation_input_tokens > 25_000


def test_none_and_the_policy_rows_read_the_history_the_session_cleared_in_place(tmp_path):
    """The same session: what the cleared request read is the rewrite's doing, which the rows that keep the
    history whole do not make; taken for a loss of the cache, it had none and the default policy write the
    whole conversation again there (+21% and +35% on their cost)."""
    s = _long_turns(Session(), 0, [(0, 0, 30_000), (10, 30_000, 10_000), (20, 40_000, 10_000),
                                   (30, 50_000, 10_000), (40, 60_000, 10_000), (50, 70_000, 10_000)])
    _long_turns(s, 6, [(60, 20_000, 35_000), (70, 55_000, 10_000), (80, 65_000, 10_000)])
    result = s.simulate(tmp_path)
    assert _within_ten_percent(result["calibration"]["relative_error"])
    for row in (result["rows"]["none"], result["rows"]["policies"][0]):
        assert row.requests[6].usage.cache_read_input_tokens > 45_000, row.policy
        assert row.requests[6].usage.cache_creation_input_tokens < 10_000, row.policy


def test_a_request_that_counts_a_little_less_still_reads_the_conversation(tmp_path):
    """kfischer b3edadab: requests 167 and 823 tokens smaller than the one before read everything up to the
    change: a small drop is no rewrite of the history. (The request that counts less adds a short turn, as
    there: one that added a long turn and counted less in all would be cut to a size no request had.)"""
    s = _long_turns(Session(), 0, [(0, 0, 30_000), (10, 30_000, 10_000), (20, 40_000, 10_000)])
    _turns(s, 3, [(30, 49_000, 200)])
    _long_turns(s, 4, [(40, 49_200, 10_000)])
    result = s.simulate(tmp_path)
    assert _within_ten_percent(result["calibration"]["relative_error"])
    assert result["rows"]["replayed"].requests[3].usage.cache_read_input_tokens > 40_000


def test_a_cached_prefix_is_read_at_the_size_it_was_written(tmp_path):
    """SWORDIntel 05305169 (Claude Code 1.0.89): requests that counted less than the sizes their pieces were
    first sent with were cut to their own size, and cached so; the next request that counted more gave those
    pieces their first sizes back, and the replay read the prefix at them, 9,214 tokens more than it had been
    written (a tool result of 11,828 replayed as 2,615 written; -13.0% on writes over the session). The API
    counts a prefix it reads as it counted it when it wrote it: what the request adds after it takes the
    difference."""
    s = _turns(Session(), 0, [(0, 0, 20_000), (10, 20_000, 300), (20, 17_000, 300), (30, 17_300, 12_000),
                              (40, 29_300, 300)])
    usage = s.simulate(tmp_path)["rows"]["replayed"].requests[3].usage
    assert abs(usage.cache_read_input_tokens - 17_300) < 200, usage
    assert abs(usage.cache_creation_input_tokens - 12_000) < 300, usage


def test_the_first_request_of_a_new_day_writes_the_sessions_own_prefix_again(tmp_path):
    """erk 10f6142b (a CI runner, UTC): 17 seconds after a request that read 41,442 tokens, the first request
    after midnight read nothing and wrote it all again: Claude Code writes today's date into the prompt."""
    s = _turns(Session(), 0, [(75_540, 0, 20_100), (75_560, 20_100, 150)])  # 23:59:00 and 23:59:20
    _turns(s, 2, [(75_620, 0, 20_400), (75_640, 20_400, 150)])  # 00:00:20, the next day
    result = s.simulate(tmp_path)
    assert _within_ten_percent(result["calibration"]["relative_error"])
    assert result["rows"]["replayed"].requests[2].usage.cache_read_input_tokens == 0


@pytest.mark.parametrize("version", ["1.0.98", "2.0.67", "2.1.50", "2.1.328", None])
def test_results_after_the_last_to_finish_in_the_order_of_the_calls_are_plain_input(version, tmp_path):
    """erk acc08e6d (2.0.67): of 9 parallel reads, the 4th call finished last; Claude Code sent the results
    as they finished with its breakpoint on that one, and the API counted the 5 after it in the order of
    the calls (28,802 tokens) as plain input, written by the next request (the model wrote them at once,
    and the session, which compacted before a next request, came out 11.7% over on writes). Every version
    sends the same order (docs/simulate.md, "Parallel tool results on the wire"): no version is exempt."""
    s = _turns(Session(version), 0, [(0, 0, 20_000)])
    s.prompt("read both modules " * 8, timedelta(seconds=10))
    calls = [{"type": "tool_use", "id": f"toolu_{k}", "name": "Read", "input": {"file_path": f"/src/{k}.py"}}
             for k in ("a", "b")]
    s._add({"type": "assistant", "message": {
        "id": "msg_round", "type": "message", "role": "assistant", "model": OPUS, "content": calls,
        "usage": {"input_tokens": 1, "cache_read_input_tokens": 20_000, "cache_creation_input_tokens": 150,
                  "output_tokens": 90, "cache_creation": {"ephemeral_5m_input_tokens": 150}}}}, timedelta(seconds=13))
    for k, text in (("b", "the parser reads one line at a time\n" * 600), ("a", "short module\n")):  # b finished first
        s._add({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{k}", "content": text}]}}, timedelta(seconds=14))
    s.answer("both read " * 30, timedelta(seconds=18), 20_150, 100, )
    s.lines[-1]["message"]["usage"]["input_tokens"] = 5_400
    _turns(s, 2, [(30, 20_250, 5_600)])
    result = s.simulate(tmp_path)
    assert _within_ten_percent(result["calibration"]["relative_error"])
    assert result["rows"]["replayed"].requests[2].usage.input_tokens > 4_000


def test_a_recorded_mark_stays_on_its_result_when_the_round_is_taken_in_call_order():
    """A session that recorded its requests (2.1.328) sent a round's results as they finished with the mark
    on the last, as every version does: the cache takes them in the order of the calls too, the mark on the
    same result, so the result after it in that order is plain input there as well."""
    counter = RoughCounter()
    calls = ("toolu_slow", "toolu_fast")
    sent = {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_fast", "content": "fast-b"},
        {"type": "tool_result", "tool_use_id": "toolu_slow", "content": "slow-a " * 50,
         "cache_control": {"type": "ephemeral"}}]}
    pieces, marked, _ = replay._message_pieces(2, sent, counter, {}, calls)
    alone = [replay._message_pieces(2, {"role": "user", "content": [block]}, counter, {})[0][0]
             for block in sent["content"]]
    assert marked
    assert [p.breakpoint for p in pieces] == [True, False]
    assert [p.tokens for p in pieces] == [alone[1].tokens, alone[0].tokens]


def test_an_api_that_caches_only_the_tools_and_system_prompt_is_replayed_so(tmp_path):
    """aistrad 38ff1293 (Claude Code 2.0.76 through an Anthropic-compatible relay): every request read the
    tools and system prompt and sent the messages as plain input, 100,000 tokens and more; replayed through
    the Anthropic API's breakpoints the row read the messages too and came out 85% under the recorded cost.
    A session whose requests mostly send more than half their prompt uncached is replayed with a cache of
    the tools and system prompt only."""
    s = Session()
    s.prompt("start " + "the plan in detail " * 4_000, timedelta(seconds=0))
    s.answer("ok " * 30, timedelta(seconds=3), 0, 20_000, plain=19_000)
    for k in range(1, 16):
        s.prompt(f"step {k}: " + "more of the plan in detail " * 300, timedelta(seconds=20 * k))
        s.answer("ok " * 30, timedelta(seconds=20 * k + 3), 20_000, 0, plain=19_000 + 2_060 * k)
    errors = s.errors(tmp_path)
    assert _within_ten_percent(errors), errors


def test_an_api_that_caches_only_the_tools_and_system_prompt_reads_those_alone_and_loses_them(tmp_path):
    """aistrad 38ff1293 again: its first request sent 12,936 tokens uncached where the prompt the transcript
    holds is a line (the context Claude Code puts before the first message, which it does not record), so the
    overhead fitted to its usage is 38,910 tokens where the relay read 25,843; and 8 of its requests, sent
    seconds after one that read those, read nothing and wrote them again. Replayed with the whole overhead as
    the cached lead and no loss, the row read 53% more and wrote 67% less than the session; with the lead
    ending where the requests' reads show and those losses, within 4%."""
    s = Session()
    s.prompt("start", timedelta(seconds=0))
    s.answer("ok " * 30, timedelta(seconds=3), 0, 20_000, plain=12_000)
    for k in range(1, 16):
        s.prompt(f"step {k}: " + "more of the plan in detail " * 300, timedelta(seconds=20 * k))
        read, write = (0, 20_000) if k in (6, 11) else (20_000, 0)
        s.answer("ok " * 30, timedelta(seconds=20 * k + 3), read, write, plain=12_000 + 2_060 * k)
    errors = s.errors(tmp_path)
    assert _within_ten_percent(errors), errors


def test_a_session_that_sent_little_uncached_keeps_the_breakpoints_on_its_messages(tmp_path):
    """The counter-case: the same prompts where the API read the messages too (what the Anthropic API does at
    Claude Code's breakpoints): replayed with them, within 10%."""
    s = Session()
    s.prompt("start " + "the plan in detail " * 4_000, timedelta(seconds=0))
    s.answer("ok " * 30, timedelta(seconds=3), 0, 39_000)
    for k in range(1, 16):
        s.prompt(f"step {k}: " + "more of the plan in detail " * 300, timedelta(seconds=20 * k))
        s.answer("ok " * 30, timedelta(seconds=20 * k + 3), 39_000 + 2_060 * (k - 1), 2_060)
    errors = s.errors(tmp_path)
    assert _within_ten_percent(errors), errors


def test_an_api_that_reports_its_cache_writes_as_input_is_replayed_so(tmp_path):
    """Damon-Salvetore's Claude Code 2.1.63 sessions through a relay (``claude-opus-4.6-1m``): every request
    read the prefix cached before it and reported the rest as plain input, never a cache write, and a request
    after 21 minutes read nothing. Replayed with the Anthropic API's writes (and the policy's 1-hour lifetime)
    every such session was off on writes (recorded: none) and read after the pause; replayed as that API
    (writes reported as input, the API's default 5-minute lifetime), within 10%."""
    s = Session(version="2.1.63")
    s.prompt("start " + "the plan in detail " * 4_000, timedelta(seconds=0))
    s.answer("ok " * 30, timedelta(seconds=3), 0, 0, plain=39_000)
    for k in range(1, 12):
        s.prompt(f"step {k}: " + "more of the plan in detail " * 300, timedelta(seconds=20 * k))
        s.answer("ok " * 30, timedelta(seconds=20 * k + 3), 39_000 + 2_060 * (k - 1), 0, plain=2_060)
    s.prompt("after a long pause " + "more of the plan in detail " * 300, timedelta(seconds=1_500))
    s.answer("ok " * 30, timedelta(seconds=1_503), 0, 0, plain=39_000 + 2_060 * 12)
    result = s.simulate(tmp_path)
    assert result["calibration"]["off"] == [], result["calibration"]
    replayed = result["rows"]["replayed"].to_json()
    assert replayed["cache_creation_input_tokens"] == 0 and replayed["input_tokens"] > 39_000 + 2_060 * 12
    # the lifetime no request recorded is named as the one taken, not as "as recorded"
    assert result["cache_ttl"] == "5m (the API's default: no usage reports a cache write)"


def test_a_session_whose_only_read_found_an_earlier_sessions_prefix_reports_no_writes(tmp_path):
    """held-out 0933d7e3 and 16 more one- to three-request Claude Code sessions on DeepSeek's and GLM's
    Anthropic-compatible APIs, which cache every prefix on their own across sessions: the first request read
    5,120 tokens an earlier session had left and reported the rest (62,560) as plain input, no write. It took
    two reads to tell such an API, so the replay wrote what the API never reported: off on writes."""
    s = Session(version="2.1.63")
    s.prompt("start " + "the plan in detail " * 4_000, timedelta(seconds=0))
    s.answer("ok " * 30, timedelta(seconds=3), 5_120, 0, plain=33_880)
    result = s.simulate(tmp_path)
    assert result["calibration"]["off"] == [], result["calibration"]
    replayed = result["rows"]["replayed"].to_json()
    assert replayed["cache_creation_input_tokens"] == 0 and replayed["input_tokens"] > 30_000


def _reads_in_input(requests: int) -> Session:
    """A session through such an API: each request's ``input_tokens`` is its whole prompt, and it read the
    prompt of the request before (less its last 40 tokens)."""
    s = Session(version="2.1.63")
    s.prompt("start " + "the plan in detail " * 4_000, timedelta(seconds=0))
    s.answer("ok " * 30, timedelta(seconds=3), 0, 0, plain=39_000)
    for k in range(1, requests):
        s.prompt(f"step {k}: " + "more of the plan in detail " * 300, timedelta(seconds=20 * k))
        s.answer("ok " * 30, timedelta(seconds=20 * k + 3), 39_000 + 2_060 * (k - 1) - 40, 0, plain=39_000 + 2_060 * k)
    return s


def test_an_api_that_counts_its_reads_in_input_tokens_is_read_so(tmp_path):
    """held-out 66f01fa0, 72e32e31, 28f862ce and three more (Claude Code through a relay to DeepSeek): each
    request's ``input_tokens`` was its whole prompt, what it read from the cache included (as OpenAI's
    ``prompt_tokens`` counts), and each read about what the request before reported as input. Taken as the
    Anthropic API's plain input, every prompt was counted twice over: +44% to +70% on reads."""
    result = _reads_in_input(12).simulate(tmp_path)
    assert result["calibration"]["off"] == [], result["calibration"]
    recorded = result["rows"]["recorded"].to_json()
    # the plain input is what each request did not read: its prompt less the read
    assert recorded["input_tokens"] == 39_000 + sum(2_060 + 40 for _ in range(1, 12))


def test_stats_counts_the_reads_an_api_counted_in_input_tokens_once(runner, tmp_path):
    """held-out 66f01fa0 (Claude Code through a relay to DeepSeek): ``stats`` said 100,312 tokens for a context
    of about 49,000; the reads reported inside ``input_tokens`` were added to them again."""
    path = tmp_path / "session.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in _reads_in_input(6).lines))
    r = runner.invoke(app, ["stats", str(path), "--json"])
    assert r.exit_code == 0, r.output
    held = 39_000 + 2_060 * 5 + 40  # the last request's whole prompt and its answer
    assert held <= json.loads(r.stdout)["tokens"] < held + 2_000


def test_the_few_tokens_the_api_counts_as_plain_input_on_every_request_are_replayed_so(tmp_path):
    """held-out ae394bee (Claude Code 2.1.90) and every real session: the API counts a few tokens of each request
    as plain input however much it cached (10 to 14 here; 1 to 14 on real sessions). They were replayed as
    cache writes: input_tokens -100% on every session, and a session whose requests wrote nothing else
    came out 22% over on writes."""
    s = Session("2.1.90")
    for k, (at, read, write) in enumerate([(0, 17_600, 0), (13, 17_600, 23), (30, 17_623, 30)]):
        s.prompt(f"step {k}", timedelta(seconds=at))
        s.answer("ok", timedelta(seconds=at + 3), read, write, plain=10 + 2 * k)
    errors = s.errors(tmp_path)
    assert _within_ten_percent(errors)
    assert abs(errors["input_tokens"]) <= 0.2


def test_each_cold_request_finds_the_shared_prefix_as_its_usage_shows(tmp_path):
    """held-out c97cac2a (Claude Code 1.0.30): two requests after pauses past the lifetime, the first read
    nothing, the second the 10,013 tokens the user's other sessions kept warm. One vote per model (a tie:
    not warm) had the second write them again (+23.8% on writes)."""
    s = _turns(Session("1.0.30"), 0, [(0, 0, 18_000), (20, 18_000, 400)])
    _turns(s, 2, [(400, 0, 18_800), (420, 18_800, 400)])
    _turns(s, 4, [(800, 10_013, 9_187), (820, 19_200, 400)])
    result = s.simulate(tmp_path)
    assert _within_ten_percent(result["calibration"]["relative_error"])
    assert result["rows"]["replayed"].requests[4].usage.cache_read_input_tokens > 9_000
    assert result["rows"]["replayed"].requests[2].usage.cache_read_input_tokens == 0


@pytest.mark.parametrize(("version", "first"), [("2.1.90", "run the checks"), ("1.0.98", "ultrathink: run the checks")])
def test_a_first_request_that_found_all_of_its_prompt_cached_reads_it_whole(version, first, tmp_path):
    """A session begun within the lifetime of one that sent the same prompt (a scripted ``claude -p`` run again):
    its first request read all but its last token. The cut of what it found cached took in the request's
    uncached tail, so no prefix it reads was cached: the replay wrote the whole prompt (+311% on cost); and
    under a thinking budget (Claude Code 1.0's "ultrathink") the tail, keyed as a message, was not known as one."""
    s = Session(version).prompt(first, timedelta(seconds=0)).answer("ok", timedelta(seconds=3), 20_000, 0)
    _turns(s, 1, [(10, 20_000, 300), (20, 20_300, 300)])
    result = s.simulate(tmp_path)
    assert _within_ten_percent(result["calibration"]["relative_error"])
    assert result["rows"]["replayed"].requests[0].usage.cache_read_input_tokens == 20_000
