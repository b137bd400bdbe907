"""What the prompt that starts a Claude Code turn sets for the prompt cache (docs/simulate.md, "The
prompt-cache model"; :mod:`ctxkit.reports.turn_settings`), and Claude Code 1.0's compactions, which
write a summary and no boundary line. Each session is synthetic, shaped as the real one that showed the
effect (``SWORDIntel/claude-backups``, Claude Code 1.0.80-1.0.90, named in each test), and failed its
assertion before the model had the effect: the replay then read what the session had written again."""
from __future__ import annotations

import json
from datetime import timedelta

import pytest
from test_simulate_session_prefix import T0, Session, _within_ten_percent

from ctxkit.reports.turn_settings import prompt_budget

OPUS_41 = "claude-opus-4-1-20250805"
SONNET_4 = "claude-sonnet-4-20250514"


class OldSession(Session):
    """A Claude Code 1.0 session: every line names the version and the directory the agent was in."""

    def __init__(self, cwd: str = "/home/me/project") -> None:
        super().__init__(version="1.0.89")
        self.cwd = cwd

    def _add(self, entry: dict, at: timedelta) -> None:
        super()._add({"cwd": self.cwd, "userType": "external", **entry}, at)


_FILLER = " " + "the build of the image fails at the last step " * 6


def _turn(s: Session, at: int, prompt: str | list, read: int, write: int, model: str = OPUS_41) -> Session:
    """A prompt and its answer; ``prompt``: a text, a list of text blocks, or a slash command with the text
    it expands to (``("/name", "expansion")``: the command line, then its meta line)."""
    if isinstance(prompt, tuple):
        name, expansion = prompt
        s.command(name, timedelta(seconds=at))
        s._add({"type": "user", "isMeta": True, "message": {"role": "user", "content": [
            {"type": "text", "text": expansion + _FILLER}]}}, timedelta(seconds=at))
    elif isinstance(prompt, list):
        s._add({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": x} for x in prompt]
                                            + [{"type": "text", "text": _FILLER}]}}, timedelta(seconds=at))
    else:
        s.prompt(prompt + _FILLER, timedelta(seconds=at))
    return s.answer("looked at it " * 25, timedelta(seconds=at + 4), read, write, model)



def _summary_line(s, seconds: int) -> None:
    """A Claude Code 1.0 compact summary line: no compact_boundary before it, its chain begun anew."""
    s.lines.append({"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": s.cwd, "sessionId": "s",
                    "version": "1.0.89", "type": "user", "isCompactSummary": True, "uuid": "summary",
                    "timestamp": (T0 + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z"),
                    "message": {"role": "user", "content": "This session is being continued from a previous "
                                "conversation that ran out of context. The conversation is summarized below: work."}})

@pytest.mark.parametrize(("prompt", "budget"), [
    # the tiers and their tokens as cli.js 1.0.98 has them (xh1: HIGHEST 31999, MIDDLE 1e4, BASIC 4000)
    ("ultrathink check the usb persistence", 31_999), ("think very hard", 31_999), ("megathink", 10_000),
    ("think about it", 10_000), ("think", 4_000), ("why not", 0),
    # lower-cased first, then "i think" and "we think" taken out (so "i think hard" has no word left)
    ("Think hard about it", 10_000), ("ULTRATHINK", 31_999), ("I think it is broken, we think so too", 0),
    ("i think hard", 0), ("THINK HARDER", 31_999),
    # a word stands alone as a JavaScript \b without the u flag sees it: ASCII letters, digits and _ only
    ("rethinking is not thinking", 0), ("think_hard", 0), ("think2", 0), ("think-hard", 4_000),
    ("thinké", 4_000), ("思考think", 4_000), ("ΣTHINK", 4_000), ("pensa di più", 10_000), ("pensa di piùx", 31_999),
    # the other languages cli.js reads; its Japanese, Chinese and Korean words count anywhere
    ("piensa más", 31_999), ("DENK NACH", 10_000), ("réfléchis", 10_000), ("我想", 4_000), ("よく考えて", 10_000),
    ("깊이 생각해", 31_999),
])
def test_the_thinking_words_of_a_prompt_set_the_budget_as_claude_code_1_0_98_reads_them(prompt, budget):
    """Each case checked against cli.js 1.0.98's own function run by node (its wN5 on the same text)."""
    assert prompt_budget(prompt) == budget


@pytest.mark.parametrize("prompt", [
    "ultrathink: why does it fail",
    ["why does it fail? thi", "nk harder"],  # (cli.js joins the blocks with nothing between them)
    ("/diagnose", "Think harder about why it fails."),  # (a slash command: the budget of the text it expands to)
])
def test_a_turn_without_the_thinking_of_the_turns_before_writes_the_messages_again(tmp_path, prompt):
    """78b51334 (1.0.89): two "ultrathink" turns read everything; the next prompt had no thinking word and
    its request read the tools and system prompt only (14,513 of 28,108), writing the messages again. The
    same with the word split across two text blocks, or in what a slash command expands to."""
    s = OldSession()
    _turn(s, 0, prompt, 11_000, 9_000)
    _turn(s, 30, prompt, 20_000, 300)
    _turn(s, 60, prompt, 20_300, 300)
    _turn(s, 90, "now fix it", 11_000, 9_900)
    _turn(s, 120, "and run the tests", 20_900, 300)
    assert _within_ten_percent(s.errors(tmp_path))


def test_a_turn_begun_in_another_directory_writes_the_sessions_own_prefix_again(tmp_path):
    """0c45b0a6 (1.0.81): the agent moved to another directory during a turn; the next prompt's request read
    only the 11,704 tokens shared with other sessions and wrote the rest again."""
    s = OldSession("/home/me/project")
    _turn(s, 0, "load the notes", 11_000, 9_000)
    _turn(s, 30, "what is in agents", 20_000, 300)
    s.cwd = "/home/me/project/agents"  # (a cd in the turn: the lines after it say so)
    _turn(s, 60, "build the bridge", 11_000, 9_600)
    _turn(s, 90, "and launch it", 20_600, 300)
    assert _within_ten_percent(s.errors(tmp_path))


def _two_directories(first_read: int) -> tuple[OldSession, int]:
    """0c45b0a6's shape: two turns, then two turns each begun in another directory, whose first request read
    the 11,704 tokens every directory shares; the session, and what its last request sent."""
    s = OldSession("/home/me/project")
    _turn(s, 0, "load the notes", first_read, 20_565 - first_read)
    _turn(s, 30, "what is in agents", 20_565, 300)
    total = 20_865
    for n, folder in enumerate(("agents", "bridge")):
        s.cwd = f"/home/me/project/{folder}"  # (a cd in the turn before: the lines after it say so)
        _turn(s, 60 + 60 * n, f"build part {n}", 11_704, total + 300 - 11_704)
        _turn(s, 90 + 60 * n, f"and check part {n}", total + 300, 300)
        total += 600
    return s, total


@pytest.mark.parametrize("first_read", [16_565, 0])
def test_a_turn_in_another_directory_reads_only_the_part_every_directory_shares(tmp_path, first_read):
    """0c45b0a6 (1.0.81): the first request read 16,565 tokens other sessions had cached in the first directory;
    each turn begun in another directory read only 11,704 of them, the part before the directory's own part of
    the system prompt, and wrote the rest again. The replay read 16,565 there (-40% on writes here). A copy of
    the session whose first request read nothing (``f02f91``) had no shared prefix at all, so no part of it to
    key by the directory: the replay read everything there (-55% on writes); those turns' reads measure it."""
    s, _ = _two_directories(first_read)
    result = s.simulate(tmp_path)
    assert _within_ten_percent(result["calibration"]["relative_error"]), result["calibration"]
    for row in (result["rows"]["replayed"], result["rows"]["none"], result["rows"]["policies"][0]):
        # (none and the policy's row, which keys its own history by the directory too, read what replayed does)
        reads = [r.usage.cache_read_input_tokens for r in row.requests]
        assert reads[2] == pytest.approx(11_704, abs=50) and reads[4] == pytest.approx(11_704, abs=50), (row.policy, reads)


def test_a_turn_without_thinking_reads_both_parts_of_a_shared_prefix_a_loss_split(tmp_path):
    """The thinking turns of 78b51334 (above) with a loss among them that read only 14,015 of the 35,157
    tokens shared with other sessions (held-out 6bff27da), so the shared prefix is two pieces: the next turn
    without thinking, and one in another directory, read both (what they write again is the session's own
    part and the messages, after them)."""
    s = OldSession()
    for at, read, write in ((0, 35_157, 4_589), (8, 39_746, 5_343), (23, 45_089, 2_821), (71, 14_015, 34_062),
                            (78, 48_077, 1_363)):
        _turn(s, at, "ultrathink: go on", read, write)
    _turn(s, 90, "now fix it", 35_157, 14_300)
    _turn(s, 100, "and run the tests", 49_457, 300)
    s.cwd = "/home/me/project/agents"
    _turn(s, 110, "build the bridge", 35_157, 14_700)
    _turn(s, 120, "and launch it", 49_857, 300)
    result = s.simulate(tmp_path)
    assert _within_ten_percent(result["calibration"]["relative_error"]), result["calibration"]
    reads = [r.usage.cache_read_input_tokens for r in result["rows"]["replayed"].requests]
    assert reads[5] == pytest.approx(35_157, abs=50) and reads[7] == pytest.approx(35_157, abs=50), reads


def _fallback(shared: int) -> OldSession:
    """Two turns on Opus, a third that falls back to Sonnet ("Claude Opus limit reached, now using Sonnet 4"),
    its Sonnet request cold but for the ``shared`` tokens other sessions keep warm, then two turns on Sonnet:
    the first of them reads those only (its system prompt names Sonnet, the one cached for Sonnet named Opus)."""
    s = OldSession()
    _turn(s, 0, "load the notes", shared, 20_000 - shared)
    _turn(s, 30, "check the persistence", 20_000, 300)
    s.prompt("i just installed docker", timedelta(seconds=60))
    s.answer("updating the plan " * 20, timedelta(seconds=64), 20_300, 300, OPUS_41)
    s.answer("it works with docker " * 20, timedelta(seconds=70), shared, 20_900 - shared, SONNET_4)
    _turn(s, 100, "how would i run it in ram", shared, 21_300 - shared, SONNET_4)
    return _turn(s, 130, "and on a given drive", 21_300, 300, SONNET_4)


def test_after_a_fallback_within_a_turn_the_next_turn_names_the_new_model(tmp_path):
    """8bc71cde (1.0.89): the fallback in a session whose first request read the 11,000 tokens other
    sessions keep warm (its shared prefix)."""
    assert _within_ten_percent(_fallback(11_000).errors(tmp_path))


def test_after_a_fallback_a_session_with_no_shared_prefix_writes_its_own_again(tmp_path):
    """SWORDIntel 95c8727c (1.0.90): the same fallback in a session whose first request read nothing (no part
    of its prefix shared with other sessions, so none measured). The turn after it named Sonnet and wrote the
    conversation again (it read 12,671 tokens, its tools); the model changed nothing where no shared part
    tells the session's own one apart, and the replay read it all (-23.0% on the session's writes)."""
    result = _fallback(0).simulate(tmp_path)
    assert _within_ten_percent(result["calibration"]["relative_error"])
    assert result["rows"]["replayed"].requests[4].usage.cache_creation_input_tokens > 15_000


def test_a_claude_code_1_0_compaction_counts_and_none_keeps_the_history(tmp_path):
    """0c45b0a6 (1.0.81): Claude Code 1.0 wrote its compaction as a summary line that starts the chain anew
    (``parentUuid`` null, ``isCompactSummary``) and no ``compact_boundary``: it is the session's compaction,
    and ``none`` keeps the history it dropped, so its peak is above the recorded one."""
    s = OldSession()
    for k in range(6):
        _turn(s, 30 * k, f"step {k}: " + "a long piece of work " * 200, 11_000 + 3_000 * k if k else 11_000, 3_000 + 9_000 * (not k))
    _summary_line(s, 200)
    s.answer("going on from the summary " * 10, timedelta(seconds=205), 11_000, 2_000)
    _turn(s, 240, "next step", 13_000, 400)
    out = s.simulate(tmp_path)
    recorded, none = out["rows"]["recorded"].to_json(), out["rows"]["none"].to_json()
    assert recorded["compactions"] == 1
    assert none["peak_context"] > recorded["peak_context"]
    assert json.dumps(out["calibration"]["unrecorded"]) != json.dumps({"requests": 0, "cost_usd": 0})


def test_the_summary_a_continued_claude_code_1_0_session_starts_with_is_no_compaction_of_it(tmp_path):
    """05305169 (1.0.89): the file starts with the summary of the session it continues; nothing of this
    session was compacted, so none is the session as it was."""
    s = OldSession()
    _summary_line(s, 0)
    s.answer("going on from the summary " * 10, timedelta(seconds=5), 11_000, 2_000)
    _turn(s, 30, "next step", 13_000, 400)
    out = s.simulate(tmp_path)
    recorded, none = out["rows"]["recorded"].to_json(), out["rows"]["none"].to_json()
    assert recorded["compactions"] == 0
    assert none["peak_context"] == recorded["peak_context"]


def test_claude_code_2_names_the_directory_it_started_in_whatever_the_shells_is(tmp_path):
    """9341ff92 (2.1.97): turns begun after the agent had moved to two other directories read everything:
    Claude Code 2 names the directory it was started in, so a move keeps the prefix."""
    s = Session()
    _turn(s, 0, "look at the config", 11_000, 9_000, "claude-sonnet-4-6")
    _turn(s, 30, "and the users", 20_000, 300, "claude-sonnet-4-6")
    for line in s.lines[-2:]:
        line["cwd"] = "/home/me/config/users"
    _turn(s, 60, "now the hardware", 20_300, 300, "claude-sonnet-4-6")
    for line in s.lines[-2:]:
        line["cwd"] = "/home/me/config/hardware"
    _turn(s, 90, "and install it", 20_600, 300, "claude-sonnet-4-6")
    assert _within_ten_percent(s.errors(tmp_path))


def test_each_platform_caches_apart(tmp_path):
    """aistrad/work 2fe673c3 (2.1.12): a router sent the session's requests now to Vertex AI (``msg_vrtx_``
    ids), now to the Anthropic API; the first request to each read nothing of what the other had cached."""
    s = Session("2.1.12")
    sonnet = "claude-sonnet-4-5-20250929"
    _turn(s, 0, "look at the loader", 0, 20_000, sonnet)
    _turn(s, 30, "and the rules", 20_000, 300, sonnet)
    _turn(s, 60, "fix the subfolders", 0, 20_600, sonnet)
    _turn(s, 90, "run it", 20_300, 600, sonnet)
    _turn(s, 120, "and commit", 20_600, 600, sonnet)
    answers = [line for line in s.lines if line["type"] == "assistant"]
    for k in (0, 1, 3):  # (served by Vertex AI)
        answers[k]["message"]["id"] = answers[k]["message"]["id"].replace("msg_", "msg_vrtx_")
    assert _within_ten_percent(s.errors(tmp_path))


def _thinking_round(s: Session, at: int, k: int, read: int, write: int) -> None:
    """An answer of a thinking turn as Claude Code 1.x writes it (a line per block: thinking, text, a tool
    call, the same message and usage on each), then the call's result."""
    usage = {"input_tokens": 3, "cache_read_input_tokens": read, "cache_creation_input_tokens": write,
             "output_tokens": 90, "cache_creation": {"ephemeral_5m_input_tokens": write, "ephemeral_1h_input_tokens": 0}}
    for block in ({"type": "thinking", "thinking": f"step {k}: the order of the stages matters " * 6, "signature": "sig"},
                  {"type": "text", "text": f"Editing stage {k}."},
                  {"type": "tool_use", "id": f"toolu_{k}", "name": "Edit", "input": {"file_path": f"/w/s{k}.py"}}):
        s._add({"type": "assistant", "message": {"id": f"msg_round_{k}", "type": "message", "role": "assistant",
                                                 "model": OPUS_41, "content": [block], "usage": usage}},
               timedelta(seconds=at))
    s._add({"type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": f"toolu_{k}", "content": f"edited s{k}.py " * 20}]}},
        timedelta(seconds=at + 1))


def test_thinking_blocks_are_not_among_the_blocks_a_breakpoint_looks_back_over(tmp_path):
    """69d6710c (1.0.89): seven requests of an "ultrathink" turn, then a prompt without thinking read the prefix
    cached before them (110,301 tokens): 20 blocks back from its breakpoint without their thinking blocks, 27
    with. The replay counted them, found nothing within reach and wrote it all again: +21.9% on writes."""
    s = OldSession()
    _turn(s, 0, "load the notes", 11_000, 9_000)
    _turn(s, 20, "check the stages", 20_000, 400)
    s.prompt("ultrathink: put the stages in order" + _FILLER, timedelta(seconds=40))
    total = 11_000 + 9_400 + 200  # (the prompt: its thinking budget keys the messages anew)
    for k in range(6):
        _thinking_round(s, 44 + 6 * k, k, 11_000 if k == 0 else total, 9_600 if k == 0 else 260)
        total = (11_000 + 9_600) if k == 0 else total + 260
    _turn(s, 90, "now run the tests", 20_400, total + 300 - 20_400)
    result = s.simulate(tmp_path)
    assert _within_ten_percent(result["calibration"]["relative_error"]), result["calibration"]
    reads = [r.usage.cache_read_input_tokens for r in result["rows"]["replayed"].requests]
    assert reads[-1] == pytest.approx(20_400, abs=150), reads


def test_a_session_begun_cold_learns_its_shared_prefix_from_the_turn_whose_thinking_changed(tmp_path):
    """595c4b49 (1.0.90): the first request read nothing (no other session had cached anything), so nothing
    but the "ultrathink" turn showed how much of the prompt is the tools and the system prompt: it read 16,117
    and wrote the 26,917 after them again. The replay had no shared prefix to stop at and read 37,687 there
    (-24% on writes)."""
    s = OldSession()
    _turn(s, 0, "fix the bashrc", 0, 37_747)
    _turn(s, 30, "and the prompt", 37_747, 600)
    _turn(s, 60, "reload it", 38_347, 4_300)
    _turn(s, 90, "ultrathink be careful this is my bashrc", 16_117, 26_917)
    _turn(s, 120, "ok add five more", 42_839, 333)
    assert _within_ten_percent(s.errors(tmp_path))


def test_a_turn_back_without_thinking_reads_the_system_prompt_not_the_context_after_it(tmp_path):
    """155c3456 (1.0.90): after a long "ultrathink" turn, the next prompt without the word, under four minutes
    after the last request without thinking, read 15,617: the tools and the system prompt, which end at a
    breakpoint; the context Claude Code 1.x puts before the first message has none, so what was cached with it
    before the thinking turn is not found. The replay read that context too (the shared prefix, measured where
    the thinking changed, was taken for less than the system prompt)."""
    s = OldSession()
    _turn(s, 0, "look at the build", 0, 31_000)
    _turn(s, 30, "go on", 31_000, 500)
    _turn(s, 60, "ultrathink: why does it fail", 15_617, 16_400)
    total = 32_017
    for k in range(12):  # (more blocks than the API looks back over: the cached prefix before them is not found)
        _turn(s, 70 + 10 * k, f"ultrathink: step {k}", total, 500)
        total += 500
    _turn(s, 200, "git push", 15_617, total + 500 - 15_617)
    result = s.simulate(tmp_path)
    assert _within_ten_percent(result["calibration"]["relative_error"]), result["calibration"]
    reads = [r.usage.cache_read_input_tokens for r in result["rows"]["replayed"].requests]
    assert reads[-1] == pytest.approx(15_617, abs=300), reads


@pytest.mark.parametrize("system", [13_521.0, 14_827.0])
def test_the_overheads_pieces_are_the_same_at_every_request(system):
    """held-out 1842319d (1.0.17): the shared size was read where a turn's thinking changed, so the system
    prompt ends there too; one request's calibrated overhead came out under it (13,396 of 13,521), and that
    request alone split its overhead into a system part and a context part: another prefix, read as a miss
    at four later requests (+40% on writes). Where the pieces end is the session's to say, not a request's:
    the system end at the shared size, and one above it."""
    from ctxkit.reports.cache_model import Piece
    from ctxkit.reports.replayed import exact
    from ctxkit.reports.session_prefix import Warm

    messages = [Piece(b"first message...", 100.0, True)]
    warm = Warm(13_521.0, system_tokens=system)
    shapes = {tuple((p.digest, p.breakpoint) for p in exact(messages, (13_000.0, 1.0), prompt, warm) if p.lead)
              for prompt in (13_400, 14_000, 20_000)}
    assert len(shapes) == 1, shapes


def test_reads_in_another_directory_do_not_say_where_the_system_prompt_ends(tmp_path):
    """0c45b0a6 ``f02f91`` (1.0.81), a copy whose first request read nothing: three turns begun in another
    directory read 11,704 (the part every directory shares), and two turns whose thinking changed read 16,567
    (the tools and the whole system prompt of that directory). The recurring 11,704 was taken for where the
    system prompt ends, the shared prefix ended there too, and the session's own part lost its breakpoint: the
    replay read 11,704 where the thinking changed (+18% on writes here). A turn in another directory reads less than the system
    prompt (its directory's part changed), so its read says nothing of where that ends."""
    s, total = _two_directories(0)
    _turn(s, 200, "ultrathink: why does the bridge drop frames", 16_567, total + 300 - 16_567)
    _turn(s, 210, "ultrathink: and the audio", total + 300, 300)
    _turn(s, 220, "think hard: is it the buffer", 16_567, total + 900 - 16_567)
    result = s.simulate(tmp_path)
    assert _within_ten_percent(result["calibration"]["relative_error"]), result["calibration"]
    reads = [r.usage.cache_read_input_tokens for r in result["rows"]["replayed"].requests]
    assert reads[6] == pytest.approx(16_567, abs=100) and reads[8] == pytest.approx(16_567, abs=100), reads


def test_the_shared_prefixs_two_parts_are_the_same_at_every_request():
    """As above, for the shorter part other sessions kept of the shared prefix (:attr:`SharedPrefix.inner`): a
    request whose calibrated overhead came out under it cut the shared prefix as one piece, not two, another
    prefix for the cache (every later read of it a miss), though nothing of the session had changed."""
    from ctxkit.reports.cache_model import Piece
    from ctxkit.reports.replayed import exact
    from ctxkit.reports.session_prefix import Warm

    messages = [Piece(b"first message...", 100.0, True)]
    warm = Warm(13_521.0, inner=11_704.0)
    cuts = [[p for p in exact(messages, (13_000.0, 1.0), prompt, warm) if p.lead] for prompt in (11_000, 14_000, 20_000)]
    assert len({tuple(p.digest for p in lead) for lead in cuts}) == 1, cuts
    assert all(p.tokens >= 0 for lead in cuts for p in lead), cuts
    assert [sum(p.tokens for p in lead) for lead in cuts] == [10_900, 13_900, 19_900]
