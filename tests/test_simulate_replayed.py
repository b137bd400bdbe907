"""simulate's replayed row and the cache model under it: the session as it happened, priced by the model,
against what the API billed (docs/simulate.md, "The replayed row and its calibration")."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from conftest import CORPUS, PUBLIC_CORPUS

from ctxkit.reports.cache_model import Piece, PromptCache, min_cacheable_tokens
from ctxkit.reports.replayed import fit_overhead

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=timezone.utc)
OPUS = "claude-opus-4-6"


def _pieces(n: int, tokens: float = 300.0, *, head: float = 20_000.0) -> list[Piece]:
    """A system prompt (marked) and ``n`` message blocks, the last marked, as Claude Code marks them."""
    out = [Piece(b"system", head, True, True)]
    out += [Piece(b"block%d" % k, tokens) for k in range(n)]
    out[-1].breakpoint = True
    return out


def test_a_request_reads_the_previous_prefix_found_within_twenty_blocks_of_its_breakpoint():
    cache = PromptCache()
    cache.request(T0, OPUS, _pieces(10), 3600)
    near = cache.request(T0 + timedelta(seconds=5), OPUS, _pieces(30), 3600)
    assert near.read == 20_000 + 10 * 300 and near.write == 20 * 300 and near.input == 0


def test_more_than_twenty_new_blocks_fall_back_to_the_system_breakpoint():
    """The API looks back 20 blocks from a breakpoint: the earlier request's prefix is not found."""
    cache = PromptCache()
    cache.request(T0, OPUS, _pieces(10), 3600)
    far = cache.request(T0 + timedelta(seconds=5), OPUS, _pieces(40), 3600)
    assert far.read == 20_000 and far.write == 40 * 300


def test_the_cache_is_per_model_and_lives_as_long_as_the_request_asked():
    cache = PromptCache()
    cache.request(T0, OPUS, _pieces(5), 300)
    assert cache.request(T0 + timedelta(seconds=5), "claude-haiku-4-5", _pieces(5), 300).read == 0
    assert cache.request(T0 + timedelta(minutes=4), OPUS, _pieces(5), 300).read == 21_500  # refreshed at 4 min
    assert cache.request(T0 + timedelta(minutes=8), OPUS, _pieces(5), 300).read == 21_500
    assert cache.request(T0 + timedelta(minutes=14), OPUS, _pieces(5), 300).read == 0
    one_hour = cache.request(T0 + timedelta(minutes=30), OPUS, _pieces(5), 3600)
    assert one_hour.write_1h == one_hour.write == 21_500


def test_a_prefix_under_the_models_minimum_is_neither_read_nor_written():
    assert min_cacheable_tokens("claude-opus-4-5-20251101") == 4096 and min_cacheable_tokens("claude-sonnet-4-5") == 1024
    cache = PromptCache()
    short = _pieces(2, head=1_000)  # 1,600 tokens: over Sonnet's minimum, under Opus 4.5's
    first = cache.request(T0, "claude-opus-4-5", short, 3600)
    assert (first.read, first.write, first.input) == (0, 0, 1_600)
    assert cache.request(T0, "claude-sonnet-4-5", short, 3600).write == 1_600


def test_the_fitted_overhead_and_scale_are_the_ones_behind_the_usage():
    estimates = [1_000.0, 5_000.0, 9_000.0, 20_000.0]
    overhead, scale = fit_overhead(estimates, [18_000 + 1.25 * e for e in estimates])
    assert overhead == pytest.approx(18_000) and scale == pytest.approx(1.25)
    assert fit_overhead([1_000.0], [0]) == (0.0, 1.0)  # no usage: the estimate as it is


# -------------------------------------------------------------------------------------------------
# the corpus: real sessions, and the genuine Claude Code CLI against a stand-in API
# -------------------------------------------------------------------------------------------------

#: Sessions the model does not bring within 10%, and why (docs/simulate.md): real effects the transcript
#: does not record. strict: a change that fixes one of them must say so here. (Empty since the cache events
#: a session's usage shows are replayed: spotter 4d5611e5's task notification that rewrote 77,251 tokens
#: of a prefix the transcript shows unchanged is one.)
NOT_REPRODUCED: dict[str, str] = {}


def _main_sessions() -> list[Path]:
    public = sorted(p for p in PUBLIC_CORPUS.rglob("*.jsonl")
                    if "subagents" not in p.parts and not p.name.startswith("agent-")) if PUBLIC_CORPUS.is_dir() else []
    return public + sorted((CORPUS / "claude-code-2.1.328").glob("*/session.jsonl"))


@pytest.fixture(scope="module")
def corpus_doc():
    sessions = _main_sessions()
    if not sessions:
        pytest.skip(f"shared corpus not found at {CORPUS}")
    from ctxkit import load_policy
    from ctxkit.reports.pricing import load_pricing
    from ctxkit.reports.simulate import simulate

    doc, results = simulate([str(p) for p in sessions], [("default", load_policy(None))], load_pricing())
    for s, r in zip(doc["sessions"], results, strict=True):  # where the session's own compactions are
        s["recorded_compactions"] = r["rows"]["recorded"].compactions
    return {str(Path(s["session"]).relative_to(CORPUS)).removeprefix("public/"): s for s in doc["sessions"]}


def _params() -> list:
    out = []
    for p in _main_sessions():
        name = str(p.relative_to(CORPUS)).removeprefix("public/")
        marks = [pytest.mark.xfail(strict=True, reason=NOT_REPRODUCED[name])] if name in NOT_REPRODUCED else []
        out.append(pytest.param(name, marks=marks, id=name))
    return out or [pytest.param("", marks=pytest.mark.skip(reason=f"shared corpus not found at {CORPUS}"))]


@pytest.mark.parametrize("name", _params())
def test_the_replayed_row_is_within_ten_percent_of_what_the_session_was_billed(corpus_doc, name):
    s = corpus_doc[name]
    if not s["recorded"]["requests"]:
        pytest.skip("no usage on the main chain")
    errors = s["calibration"]["relative_error"]
    assert s["calibration"]["off"] == [], errors
    for key in ("cost_usd", "cache_read_input_tokens", "cache_creation_input_tokens"):
        assert errors[key] is not None and abs(errors[key]) <= 0.10, (key, errors[key])
    assert not any("more than 10% off" in w for w in s["warnings"])


def test_none_keeps_the_history_the_agent_compacted_away(corpus_doc):
    """On every real session with a request after one of its own compactions, none's peak is above the
    recorded peak (none never compacts); the replayed row keeps the compactions and their requests."""
    compacted = [n for n, s in corpus_doc.items() if not n.startswith("claude-code-2.1.328")
                 and any(c["request"] is not None for c in s["recorded_compactions"])]
    assert len(compacted) >= 2
    for name in compacted:
        s = corpus_doc[name]
        assert s["none"]["peak_context"] > s["recorded"]["peak_context"] * 1.2, name
        assert s["none"]["compactions"] == 0 and s["replayed"]["compactions"] == s["recorded"]["compactions"]
        assert s["replayed"]["requests"] > s["recorded"]["requests"]  # + each compaction's summary request


def test_simulate_json_has_the_replayed_row_and_the_calibration_and_compares_policies_with_it(runner, tmp_path):
    from ctxkit.cli.main import app

    example = Path(__file__).resolve().parent.parent / "examples" / "session.jsonl"
    result = runner.invoke(app, ["simulate", str(example), "--json"])
    assert result.exit_code == 0
    s = json.loads(result.stdout)["sessions"][0]
    keys = set(s["recorded"])
    assert set(s["replayed"]) == set(s["none"]) == keys and s["replayed"]["policy"] == "replayed"
    assert set(s["calibration"]["relative_error"]) >= {"cost_usd", "cache_read_input_tokens",
                                                        "cache_creation_input_tokens"}
    table = runner.invoke(app, ["simulate", str(example)]).stdout
    assert "vs none" in table and "vs replayed" in table and "vs recorded" not in table


def test_server_side_clearing_is_refused_not_priced_as_none(runner):
    from ctxkit.cli.main import app

    example = Path(__file__).resolve().parent.parent / "examples" / "session.jsonl"
    for mode in ("cached", "api-native", "both"):
        result = runner.invoke(app, ["simulate", str(example), "--set", f"stages.microcompact.options.mode={mode}"])
        assert result.exit_code == 2, mode
        assert f"simulate does not model microcompact's mode {mode}" in result.stderr
        assert result.stdout == ""


def test_an_offline_summary_priced_as_a_model_reads_the_history_from_that_models_cache(tmp_path):
    """--price-summaries-as MODEL: each extractive compaction becomes a request as Claude Code makes one: the
    history (read from the cache when MODEL is the one that cached it), the compact prompt, the summary out."""
    from ctxkit import load_policy
    from ctxkit.reports.pricing import load_pricing
    from ctxkit.reports.simulate import simulate

    example = Path(__file__).resolve().parent.parent / "examples" / "session.jsonl"
    pol = load_policy(None, ["thresholds.summary_reserve=5000", "thresholds.autocompact_buffer=3000",
                             "stages.tool-result-budget.enabled=false"], cwd=tmp_path)

    def summaries(model: str | None):
        doc, results = simulate([str(example)], [("default", pol)], load_pricing(), context_window=40000,
                                cwd=tmp_path, summaries_as=model)
        row = results[0]["rows"]["policies"][0]
        return doc["sessions"][0]["policies"][0], [r for r in row.requests if r.kind == "summarizer"], row

    free, none_made, row = summaries(None)
    assert row.compactions and none_made == []
    same, made, _ = summaries("claude-sonnet-4-5")  # the session's model: its cache holds the history
    assert len(made) == len(row.compactions) and all(r.model == "claude-sonnet-4-5" for r in made)
    assert all(r.usage.cache_read_input_tokens > r.usage.cache_creation_input_tokens for r in made)
    other, made_other, _ = summaries("claude-haiku-4-5")  # another model reads nothing of it
    assert all(r.usage.cache_read_input_tokens == 0 and r.model == "claude-haiku-4-5" for r in made_other)
    assert same["cost_usd"] > free["cost_usd"] and same["requests"] == free["requests"] + len(made)


def test_none_and_the_policies_start_from_the_history_before_the_sessions_own_compaction(tmp_path):
    """The session's boundary and summary are left out and what followed chains onto the conversation before
    them: the view at the last request holds the first turn again (the replayed row keeps the compaction)."""
    from builders import Call, Turn, conversation, entry, user_message

    from ctxkit.reports.history import whole_history
    from ctxkit.reports.usage import recorded_requests
    from ctxkit.transcript import read_transcript

    entries = conversation([Turn("first: read the big file", [[Call("Read", {"file_path": "/w/a.py"}, "x\n" * 500)]]),
                            Turn("second: now fix it", [[Call("Edit", {"file_path": "/w/a.py"}, "ok")]])])
    at = next(k for k, e in enumerate(entries) if e["type"] == "user" and e["message"]["content"] == "second: now fix it")
    before, after = entries[:at], entries[at:]
    stamp = before[-1]["timestamp"]
    boundary = entry("system", uuid="b-1", parent=None, subtype="compact_boundary",
                     logicalParentUuid=before[-1]["uuid"], compactMetadata={"trigger": "manual", "preTokens": 5000},
                     timestamp=stamp)
    summary = entry("user", user_message("This session is being continued from a previous conversation."),
                    uuid="s-1", parent="b-1", isCompactSummary=True, timestamp=stamp)
    after[0]["parentUuid"] = "s-1"
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in [*before, boundary, summary, *after]))
    t = read_transcript(str(path))
    assert '"name": "Read"' not in json.dumps([m.api() for m in t.view().messages])  # compacted away
    raw = [t.raw_line(i)[0] + b"\n" for i in range(t.n_lines)]
    points = [r for r in recorded_requests(t) if not r.sidechain]
    lines, moved = whole_history(t, raw, points)
    assert len(lines) == len(raw) - 2 and [p.message_id for p in moved] == [p.message_id for p in points]
    whole = tmp_path / "whole.jsonl"
    whole.write_bytes(b"".join(lines))
    w = read_transcript(str(whole))
    texts = json.dumps([m.api() for m in w.view().messages])
    assert '"name": "Read"' in texts and "x\\nx\\n" in texts and "second: now fix it" in texts
    assert "continued from a previous conversation" not in texts
    assert all(json.loads(lines[p.first_entry])["message"]["id"] == p.message_id for p in moved)


def test_subagent_files_beside_a_session_are_priced_and_an_unreadable_one_is_named(runner, tmp_path):
    """``<session>/subagents/*.jsonl``: their requests are the sidechain row and are replayed in the replayed
    row; a file that cannot be read is left out with a warning, the session is still simulated."""
    from ctxkit.cli.main import app

    example = Path(__file__).resolve().parent.parent / "examples" / "session.jsonl"
    session = tmp_path / "sess.jsonl"
    session.write_bytes(example.read_bytes())
    folder = tmp_path / "sess" / "subagents"
    folder.mkdir(parents=True)
    lines = [json.loads(x) for x in example.read_text().splitlines()]
    for e in lines:  # (the subagent's own responses: ids of their own, a response being billed once)
        if isinstance(e.get("message"), dict) and "id" in e["message"]:
            e["message"]["id"] = "a1-" + e["message"]["id"]
    (folder / "agent-a1.jsonl").write_text("".join(json.dumps({**e, "isSidechain": True}) + "\n" for e in lines))
    (folder / "agent-gone.jsonl").symlink_to(tmp_path / "nowhere.jsonl")
    result = runner.invoke(app, ["simulate", str(session), "--json"])
    assert result.exit_code == 0, result.stderr
    s = json.loads(result.stdout)["sessions"][0]
    assert s["sidechain"]["requests"] == s["recorded"]["requests"] == 11
    assert s["replayed"]["requests"] == 22
    assert s["calibration"]["off"] == []  # the subagent is replayed like the main chain, its own cache
    assert f"subagent file left out: {folder / 'agent-gone.jsonl'}" in result.stderr


def _cleared_file(summary: bool = True):
    """A file `/clear` started in Claude Code 2.1.120, the compaction of the earlier file's history at its top
    (a boundary naming a line of the earlier file, then, unless ``summary`` is False, the summary), and four
    prompts."""
    from test_simulate_session_prefix import Session

    s = Session("2.1.120").command("/clear", timedelta(seconds=0))
    s._add({"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted",
            "logicalParentUuid": "a-line-of-the-earlier-file",
            "compactMetadata": {"trigger": "auto", "preTokens": 150_000}}, timedelta(seconds=1))
    if summary:
        text = "This session is being continued from a previous conversation. " + "It built the parser. " * 400
        s._add({"type": "user", "isCompactSummary": True, "message": {"role": "user", "content": text}},
               timedelta(seconds=1))
    for k in range(4):
        s.prompt(f"step {k}: go on with the parser", timedelta(seconds=10 + 20 * k))
        s.answer("done " * 30, timedelta(seconds=13 + 20 * k), read=0 if k == 0 else 14_000 + 60 * k,
                 write=14_000 if k == 0 else 60)
    return s


@pytest.mark.parametrize("summary", [True, False])
def test_a_compaction_at_the_top_of_a_file_a_clear_started_is_not_the_sessions_own(runner, tmp_path, summary):
    """Held-out sessions of Claude Code 2.1.120: `/clear` starts a new file, and the compaction of what came
    before it is written at its top. Every request of this file holds the summary, and there is no history in
    the file to put in its place: ``none`` keeps the summary, as the session had it (it had dropped it, and
    every request came out ~2,000 tokens under what the API counted: its peak under the recorded one), and the
    session compacted nothing. A boundary with no summary after it is no compaction of the session's either."""
    from ctxkit.cli.main import app

    s = _cleared_file(summary)
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in s.lines))
    r = runner.invoke(app, ["simulate", str(path), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)["sessions"][0]
    assert doc["recorded"]["compactions"] == 0
    assert doc["none"]["peak_context"] == doc["replayed"]["peak_context"]
    assert doc["none"]["cost_usd"] == doc["replayed"]["cost_usd"]


def test_the_sessions_own_compaction_after_a_clear_is_still_its_own(tmp_path):
    """The file a `/clear` started (its top compaction not the session's) later compacts itself: that one is
    the session's, counted once in ``recorded``, and ``none`` leaves it out (its requests after it hold the
    history the compaction replaced, so they are larger than the recorded ones), keeping the top summary."""
    from ctxkit import load_policy
    from ctxkit.reports.pricing import load_pricing
    from ctxkit.reports.simulate import simulate_session

    s = _cleared_file()
    s._add({"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted",
            "compactMetadata": {"trigger": "manual", "preTokens": 15_000}}, timedelta(seconds=100))
    s.lines[-1]["parentUuid"] = None
    s._add({"type": "user", "isCompactSummary": True, "message": {"role": "user", "content": "This session is being "
            "continued from a previous conversation. " + "The parser is done. " * 100}}, timedelta(seconds=101))
    for k in range(4, 6):
        s.prompt(f"step {k}: now the printer " + "with care " * 200, timedelta(seconds=120 + 20 * k))
        s.answer("done " * 30, timedelta(seconds=123 + 20 * k), read=0 if k == 4 else 12_900,
                 write=12_900 if k == 4 else 500)
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in s.lines))
    result = simulate_session(str(path), [("default", load_policy(None))], load_pricing())
    rows = result["rows"]
    assert [c["request"] for c in rows["recorded"].compactions] == [4]
    assert rows["none"].requests[4].context > rows["recorded"].requests[4].context + 1_000
    assert rows["none"].requests[0].context == rows["replayed"].requests[0].context  # (the top summary kept)
