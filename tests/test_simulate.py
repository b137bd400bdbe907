"""``ctxkit simulate``: recorded usage, the none baseline, policies replayed with a cache model, costs, sweeps."""
from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from builders import START, Call, Turn, conversation, write
from conftest import ROOT, cc_sessions, needs_corpus
from mock_messages_api import MockMessagesAPI

from ctxkit.cli.main import app
from ctxkit.tokens.models import model_info

EXAMPLE = ROOT / "examples" / "session.jsonl"


def run_json(runner, *args: str) -> dict:
    result = runner.invoke(app, ["simulate", *args, "--json"])
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return json.loads(result.stdout)


def usage_sums(path: Path) -> dict[str, int]:
    """The session's own figures, read here without ctxkit: main-chain model responses, each message
    id once, with the usage of its last line."""
    last: dict[str, dict] = {}
    for line in path.read_text().splitlines():
        e = json.loads(line)
        msg = e.get("message") or {}
        if (e.get("type") == "assistant" and not e.get("isSidechain") and not e.get("isApiErrorMessage")
                and msg.get("model") != "<synthetic>" and "usage" in msg):
            last[msg["id"]] = msg["usage"]
    keys = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
    return {"requests": len(last), **{k: sum(u.get(k, 0) for u in last.values()) for k in keys}}


@needs_corpus
@pytest.mark.parametrize("session", cc_sessions(), ids=lambda p: p.name)
def test_recorded_totals_are_the_sessions_own_usage_and_two_policies_are_priced(runner, session):
    doc = run_json(runner, str(session / "session.jsonl"), "-p", "default", "-p", "no-llm")
    s = doc["sessions"][0]
    own = usage_sums(session / "session.jsonl")
    assert s["recorded"]["requests"] == own["requests"]
    for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens"):
        assert abs(s["recorded"][key] - own[key]) <= 0.01 * own[key], key
    assert [p["policy"] for p in s["policies"]] == ["default", "no-llm"]
    for row in (s["recorded"], s["none"], *s["policies"]):
        assert set(row) >= {"policy", "requests", "peak_context", "compactions", "input_tokens",
                            "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens", "cost_usd",
                            "retention"}
        assert row["requests"] >= own["requests"] and row["cost_usd"] > 0
    assert doc["total"]["recorded"] == {**s["recorded"]}


def _with_usage(entries: list[dict], model: str = "claude-sonnet-4-5", gap_after: int | None = None,
                gap: timedelta = timedelta(0)) -> list[dict]:
    """Give every assistant line usage like Claude Code writes it: the same message id on each of its
    lines, output_tokens growing line by line (the last is the true count). Lines after the
    ``gap_after``-th message are moved ``gap`` later."""
    seen: dict[str, int] = {}
    for e in entries:
        if e.get("type") != "assistant":
            continue
        msg = e["message"]
        seen[msg["id"]] = seen.get(msg["id"], 0) + 1
        msg["model"] = model
        msg["usage"] = {"input_tokens": 5, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 1000,
                        "output_tokens": 10 * seen[msg["id"]]}
    if gap_after is not None:
        order = list(dict.fromkeys(e["message"]["id"] for e in entries if e.get("type") == "assistant"))
        moving = False
        for e in entries:
            if e.get("type") == "assistant" and e["message"]["id"] == order[gap_after]:
                moving = True
            if moving:
                stamp = START + (gap + (_parse(e["timestamp"]) - START))
                e["timestamp"] = stamp.strftime("%Y-%m-%dT%H:%M:%S.000Z")
    return entries


def _parse(stamp: str):
    from ctxkit.clock import parse_instant

    return parse_instant(stamp)


def _session(tmp_path: Path, name: str = "s.jsonl", **kw) -> Path:
    turns = [Turn("look at the code", [[Call("Read", {"file_path": "/w/a.py"}, "x = 1\n" * 40),
                                        Call("Bash", {"command": "ls"}, "a.py\n")]], thinking=True),
             Turn("now fix it", [[Call("Edit", {"file_path": "/w/a.py"}, "ok")]])]
    return write(tmp_path / name, _with_usage(conversation(turns), **kw))


def test_a_streamed_message_counts_once_with_its_last_output_figure(runner, tmp_path):
    path = _session(tmp_path)
    doc = run_json(runner, str(path))
    rec = doc["sessions"][0]["recorded"]
    # 4 responses: thinking + two tool_use lines (10, 20, 30 output tokens: 30), thinking + text (20),
    # then one line each (10)
    assert rec["requests"] == 4
    assert rec["output_tokens"] == 30 + 20 + 10 + 10
    assert rec["input_tokens"] == 4 * 5 and rec["cache_read_input_tokens"] == 4 * 1000
    # sonnet 4.5: $3 in, $15 out, $3.75 5m write (no 1h split recorded), $0.30 read, per million
    assert rec["cost_usd"] == round((20 * 3 + 70 * 15 + 400 * 3.75 + 4000 * 0.30) / 1e6, 6)


def test_a_small_window_the_default_policy_fits_and_none_fails(runner):
    # (a reserve and buffer small enough that the policy fits a window this small: simulate refuses one that does not)
    doc = run_json(runner, str(EXAMPLE), "--context-window", "40000", "--set", "thresholds.summary_reserve=5000",
                   "--set", "thresholds.autocompact_buffer=3000")
    s = doc["sessions"][0]
    assert s["context_window"] == 40000
    policy, none = s["policies"][0], s["none"]
    assert policy["policy"] == "default"
    assert policy["peak_context"] < 40000 and policy["failures"] == 0
    assert none["peak_context"] > 40000 and none["failures"] > 0
    assert policy["cost_usd"] < none["cost_usd"]


@needs_corpus
def test_compactions_are_replayed_and_a_session_whose_api_never_cached_is_replayed_without_a_cache(tmp_path,
                                                                                                   corpus_session):
    """The corpus sessions talked to a stand-in API that reports no cache reads or writes: every row of
    such a session is plain input (the replayed row then equals the recording); the policy compacts
    under the window where ``none`` goes over it."""
    from ctxkit import load_policy
    from ctxkit.reports.pricing import load_pricing
    from ctxkit.reports.simulate import simulate

    pol = load_policy("default", [], cwd=tmp_path)
    doc, results = simulate([str(corpus_session("multi-prompt"))], [("default", pol)], load_pricing(),
                            context_window=35000, cwd=tmp_path)
    s = doc["sessions"][0]
    row = results[0]["rows"]["policies"][0]
    assert s["policies"][0]["compactions"] == len(row.compactions) >= 1
    assert s["policies"][0]["peak_context"] < 35000
    assert s["none"]["failures"] > 0
    for name in ("replayed", "none"):
        assert s[name]["cache_read_input_tokens"] == s[name]["cache_creation_input_tokens"] == 0
    assert s["policies"][0]["cache_read_input_tokens"] == 0
    assert s["replayed"]["input_tokens"] == s["recorded"]["input_tokens"]
    assert s["calibration"]["off"] == []


def test_the_cache_lifetime_comes_from_the_policy(runner, tmp_path):
    """``request.cache_ttl`` set by the policy wins over the lifetime the session's requests had (5 minutes
    here: their usage has no ``cache_creation`` split, the API's default; the request after the pause
    read nothing, as the API's would)."""
    path = _session(tmp_path, gap_after=2, gap=timedelta(minutes=20))
    entries = [json.loads(line) for line in path.read_text().splitlines()]
    after = list(dict.fromkeys(e["message"]["id"] for e in entries if e.get("type") == "assistant"))[3]
    for e in entries:
        if e.get("type") == "assistant" and e["message"]["id"] == after:
            e["message"]["usage"].update(cache_read_input_tokens=0, cache_creation_input_tokens=1100)
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    hour = run_json(runner, str(path), "--set", "request.cache_ttl=1h")["sessions"][0]["policies"][0]
    session = run_json(runner, str(path))["sessions"][0]["policies"][0]
    five = run_json(runner, str(path), "--set", "request.cache_ttl=5m")["sessions"][0]["policies"][0]
    assert hour["cache_read_input_tokens"] > five["cache_read_input_tokens"]
    assert session == {**five, "policy": session["policy"]}
    assert hour["cache_read_input_tokens"] + hour["cache_creation_input_tokens"] == \
        five["cache_read_input_tokens"] + five["cache_creation_input_tokens"]


def test_an_unknown_model_is_priced_as_the_newest_of_its_family_with_a_warning(runner, tmp_path):
    path = _session(tmp_path, model="claude-sonnet-4-9")
    result = runner.invoke(app, ["simulate", str(path), "--json"])
    assert result.exit_code == 0
    assert (f"ctxkit: warning: {path}: no price for model 'claude-sonnet-4-9' in the shipped pricing table; priced as "
            "claude-sonnet-5-5, the newest sonnet model there\n") in result.stderr
    assert json.loads(result.stdout)["sessions"][0]["recorded"]["cost_usd"] > 0


@pytest.mark.parametrize(("spelled", "as_model"), [
    ("claude-opus-4.6-1m", "claude-opus-4-6"),  # a relay's name for Opus 4.6 with the 1M window
    ("anthropic/claude-sonnet-4.5", "claude-sonnet-4-5"),  # OpenRouter's
    ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5"),  # Bedrock's, dated
    ("claude-3-5-sonnet-v2@20241022", "claude-3-5-sonnet"),  # Vertex AI's
])
def test_a_gateways_spelling_of_a_model_is_priced_as_that_model_without_a_warning(runner, tmp_path, spelled, as_model):
    spelled_run = runner.invoke(app, ["simulate", str(_session(tmp_path, "a.jsonl", model=spelled)), "--json"])
    plain_run = runner.invoke(app, ["simulate", str(_session(tmp_path, "b.jsonl", model=as_model)), "--json"])
    assert spelled_run.exit_code == 0 and "no price" not in spelled_run.stderr, spelled_run.stderr
    cost = [json.loads(r.stdout)["sessions"][0]["recorded"]["cost_usd"] for r in (spelled_run, plain_run)]
    assert cost[0] == cost[1] > 0


@pytest.mark.parametrize(("spelled", "as_model", "warned"), [
    ("claude-3-5-haiku-latest", "claude-3-5-haiku", False),  # the API's alias: was Sonnet 5.5, 2.5 times the price
    ("claude-sonnet-4-5-thinking", "claude-sonnet-4-5", True),  # a gateway's thinking variant
    ("anthropic/claude-3.7-sonnet:thinking", "claude-3-7-sonnet", True),  # OpenRouter's
    ("claude-opus-4.6-fast", "claude-opus-4-6", True),  # a relay's, in Damon-Salvetore's real sessions
])
def test_a_model_named_with_a_suffix_is_priced_as_the_model_it_names(runner, tmp_path, spelled, as_model, warned):
    """Such names were priced as the newest model of all (Sonnet 5.5), with a warning that the table held no
    model of their family: Opus 4.6 through the relay at 40% of its price, Haiku 3.5 at 2.5 times."""
    spelled_run = runner.invoke(app, ["simulate", str(_session(tmp_path, "a.jsonl", model=spelled)), "--json"])
    plain_run = runner.invoke(app, ["simulate", str(_session(tmp_path, "b.jsonl", model=as_model)), "--json"])
    assert spelled_run.exit_code == 0, spelled_run.stderr
    cost = [json.loads(r.stdout)["sessions"][0]["recorded"]["cost_usd"] for r in (spelled_run, plain_run)]
    assert cost[0] == cost[1] > 0
    assert (f"priced as {as_model}, the model its name starts with" in spelled_run.stderr) == warned, \
        spelled_run.stderr
    assert "no model of its family" not in spelled_run.stderr


def test_a_provider_prefixed_model_has_the_models_window():
    """OpenRouter's and LiteLLM's ``openai/gpt-4.1`` and ``google/gemini-2.5-pro`` were unknown to the model
    table, so counted against the 200,000 assumed, not their 1M windows."""
    assert model_info("google/gemini-2.5-pro").context_window == model_info("gemini-2.5-pro").context_window
    assert model_info("openai/gpt-4.1").context_window == 1_047_576
    assert model_info("unsloth/qwen3-coder-next") is None


def test_a_gateways_1m_mark_gives_the_model_its_million_token_window(runner, tmp_path):
    session = run_json(runner, str(_session(tmp_path, model="claude-opus-4.6-1m")))["sessions"][0]
    assert session["context_window"] == 1_000_000


def test_pricing_file_overrides_the_table(runner, tmp_path):
    path = _session(tmp_path)
    table = tmp_path / "prices.json"
    table.write_text(json.dumps({"models": {"claude-sonnet-4-5": {"input": 1000000, "output": 0, "cache_write_5m": 0,
                                                                   "cache_write_1h": 0, "cache_read": 0}}}))
    rec = run_json(runner, str(path), "--pricing", str(table))["sessions"][0]["recorded"]
    assert rec["cost_usd"] == 20.0  # 20 input tokens at $1 each
    table.write_text(json.dumps({"models": {"m": {"input": 1}}}))
    result = runner.invoke(app, ["simulate", str(path), "--pricing", str(table)])
    assert result.exit_code == 2
    assert result.stderr == (f"ctxkit: error: --pricing '{table}': model 'm' has no number for output, "
                             "cache_write_5m, cache_write_1h, cache_read\n")


def test_a_plain_message_list_is_refused_with_the_reason(runner, tmp_path):
    path = write(tmp_path / "m.jsonl", conversation([Turn("hi")], fmt="anthropic"))
    result = runner.invoke(app, ["simulate", str(path)])
    assert result.exit_code == 2
    assert result.stderr == (f"ctxkit: error: {path}: simulate replays an agent's session (the requests it "
                             "recorded and their usage: Claude Code, Codex, Gemini CLI, ...); this one is anthropic "
                             "messages\n")


@needs_corpus
def test_sweep_marks_the_cheapest_value_that_never_went_over_the_window(runner, corpus_session):
    path = str(corpus_session("multi-prompt"))
    args = [path, "--context-window", "60000", "--set", "thresholds.summary_reserve=5000",
            "--sweep", "thresholds.autocompact_buffer=5000,13000,20000"]
    doc = run_json(runner, *args)
    s = doc["sessions"][0]
    assert [p["policy"] for p in s["policies"]] == [f"default thresholds.autocompact_buffer={v}"
                                                    for v in (5000, 13000, 20000)]
    assert len({p["compactions"] for p in s["policies"]}) > 1  # the setting changes what happens
    fitting = [(p["cost_usd"], v) for p, v in zip(s["policies"], ("5000", "13000", "20000"), strict=True) if p["failures"] == 0]
    assert s["sweep"] == {"setting": "thresholds.autocompact_buffer", "values": ["5000", "13000", "20000"],
                          "cheapest": min(fitting)[1] if fitting else None}
    table = runner.invoke(app, ["simulate", *args])
    assert table.exit_code == 0
    best = s["sweep"]["cheapest"]
    assert f"default thresholds.autocompact_buffer={best} *" in table.stdout
    assert f"cheapest thresholds.autocompact_buffer that never went over the window: {best}\n" in table.stdout


def test_a_bad_sweep_is_a_usage_error(runner):
    result = runner.invoke(app, ["simulate", str(EXAMPLE), "--sweep", "thresholds.autocompact_buffer"])
    assert result.exit_code == 2
    assert result.stderr == ("ctxkit: error: --sweep must look like SETTING=V1,V2,... (e.g. "
                             "thresholds.autocompact_buffer=13000,40000), got 'thresholds.autocompact_buffer'\n")


@needs_corpus
def test_a_model_summary_is_a_request_of_its_own(runner, corpus_session, monkeypatch):
    """With a key, autocompact asks the model: that request (history in, summary out) is counted and priced."""
    with MockMessagesAPI() as api:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
        args = [str(corpus_session("multi-prompt")), "--context-window", "60000", "--set", "thresholds.summary_reserve=5000"]
        with_key = run_json(runner, *args)["sessions"][0]
        summaries = [r for r in api.requests if r.path.endswith("/v1/messages")]
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    without = run_json(runner, *args)["sessions"][0]
    row, offline = with_key["policies"][0], without["policies"][0]
    assert row["compactions"] >= 1 and len(summaries) == row["compactions"]
    assert row["requests"] == with_key["recorded"]["requests"] + row["compactions"]
    assert offline["requests"] == without["recorded"]["requests"]  # the extractive summary is no request
    # the stand-in API of the corpus never caches: the summary's prompt is plain input, and its output is billed
    assert row["output_tokens"] > offline["output_tokens"] and row["cost_usd"] > offline["cost_usd"]


def test_an_unreadable_line_is_named_before_anything_runs(runner, tmp_path):
    lines = EXAMPLE.read_text().splitlines()
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([*lines[:3], "{bad", *lines[3:]]) + "\n")
    result = runner.invoke(app, ["simulate", str(bad)])
    assert result.exit_code == 3
    assert result.stderr == f"ctxkit: error: {bad}:4: not valid JSON: unexpected character, expected a string key\n"
    assert result.stdout == ""


def test_a_folder_or_a_glob_names_its_sessions_like_the_files_do(runner, tmp_path):
    # simulate takes what every batch command takes: a folder is every *.jsonl below it (hidden skipped)
    (tmp_path / "team" / "a").mkdir(parents=True)
    (tmp_path / "team" / ".ctxkit").mkdir()
    for name in ("a/one.jsonl", "two.jsonl", ".ctxkit/not-a-session.jsonl"):
        (tmp_path / "team" / name).write_bytes(EXAMPLE.read_bytes())
    files = run_json(runner, str(tmp_path / "team" / "a" / "one.jsonl"), str(tmp_path / "team" / "two.jsonl"))
    folder = run_json(runner, str(tmp_path / "team"))
    glob = run_json(runner, str(tmp_path / "team" / "*" / "*.jsonl"), str(tmp_path / "team" / "*.jsonl"))
    assert sorted(s["session"] for s in folder["sessions"]) == sorted(s["session"] for s in files["sessions"])
    assert folder["total"] == files["total"] == glob["total"]
    assert folder["total"]["sessions"] == 2
