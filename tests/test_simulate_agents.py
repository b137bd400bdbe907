"""``ctxkit simulate`` and ``ctxkit report`` on the other agents' sessions (Codex, Gemini CLI, Cline,
OpenCode, Cursor, aider): each agent's own usage records make the recorded row, the requests are built
from the view, and their models are priced. Sessions built with the format tests' fixture builders."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import cline_tasks as ct
import codex_rollouts as cx
import gemini_sessions as gs
import opencode_sessions as oc
import pytest
from test_aider import HISTORY
from test_cursor import assistant as cursor_assistant
from test_cursor import user as cursor_user
from test_cursor import write as cursor_write

from ctxkit.reports.pricing import Usage, load_pricing
from ctxkit.tokens.models import model_info


def ctxkit(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ctxkit.cli.main", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=300)


def _codex(d: Path) -> Path:
    lines = cx.opening()
    for k in range(12):  # token_count: input 5,000 + 2,500 k (half of it cached), output 100
        lines += cx.turn(k, f"read file {k}", [(f"c{k}", f"cat f{k}.txt", f"line {k} " * 800)], f"read f{k}",
                         second=k * 4, usage=(5_000 + 2_500 * k, 100))
    cx.write(d / "rollout.jsonl", lines)
    return d / "rollout.jsonl"


def _gemini(d: Path) -> Path:
    recs = [gs.metadata()]
    for k in range(12):  # tokens: total 3,000 + 2,100 k, of which output 80 and thoughts 20
        call = gs.tool_call(f"call-{k}", "read_file", {"path": f"f{k}"}, f"line {k} " * 800)
        recs += [gs.user(f"u{k}", f"read f{k}"), gs.gemini(f"g{k}", "", [call], tokens=3_000 + 2_100 * k),
                 gs.gemini(f"h{k}", f"read f{k}", tokens=3_100 + 2_100 * k)]
    gs.write(d / "session.jsonl", recs)
    return d / "session.jsonl"


def _cline(d: Path) -> Path:
    msgs = [ct.task("fix the bug")]
    for k in range(12):
        msgs += [ct.native_call(f"toolu_{k}", "read_file", {"path": f"f{k}"}),
                 ct.native_result(f"toolu_{k}", f"line {k} " * 800),
                 ct.say(f"Read f{k}.", metrics={"tokens": {"prompt": 3_000 + 2_100 * k, "completion": 200,
                                                           "cached": 2_000 * k}, "cost": 0.01})]
    ct.write(d / "api_conversation_history.json", msgs)
    return d / "api_conversation_history.json"


def _opencode(d: Path) -> Path:
    msgs, n = [], 1
    for k in range(12):  # step tokens: 2,000 (k + 1) in all, output 150 and reasoning 50 of it
        msgs += [oc.user(n, f"read f{k}"),
                 oc.assistant(n + 1, n, "", [oc.tool(n + 1, 0, "read", {"filePath": f"f{k}"}, f"line {k} " * 800)],
                              tokens=2_000 * (k + 1))]
        n += 2
    oc.write(d / "session-export.json", msgs)
    return d / "session-export.json"


def _cursor(d: Path) -> Path:
    lines = []
    for k in range(12):
        lines += [cursor_user(f"read f{k}"), cursor_assistant(f"f{k} holds " + f"line {k} " * 800, ("Read", {"path": f"f{k}"}))]
    cursor_write(d / "transcript.jsonl", lines)
    return d / "transcript.jsonl"


def _aider(d: Path) -> Path:
    (d / ".aider.chat.history.md").write_text(HISTORY)
    return d / ".aider.chat.history.md"


#: format -> (builder, assistant messages in the view, the recorded row's prompt and output tokens, its model)
SESSIONS = {
    "codex": (_codex, 24, (sum(5_000 + 2_500 * k for k in range(12)), 1_200), "gpt-5.1-codex"),
    "gemini": (_gemini, 24, (sum(6_100 + 4_200 * k - 200 for k in range(12)), 2_400), "gemini-2.5-pro"),
    "cline": (_cline, 24, (sum(3_000 + 2_100 * k for k in range(12)), 2_400), ""),
    "opencode": (_opencode, 12, (sum(2_000 * (k + 1) - 200 for k in range(12)), 2_400), "claude-sonnet-4-5"),
    "cursor": (_cursor, 12, (0, 0), ""),
    "aider": (_aider, 2, (0, 0), "claude-sonnet-4-5"),  # (its "Main model:" announcement)
}


@pytest.mark.parametrize("fmt", list(SESSIONS))
def test_simulate_replays_the_session_with_the_agents_own_usage_as_the_recorded_row(tmp_path, fmt):
    build, requests, (prompt, output), model = SESSIONS[fmt]
    path = build(tmp_path)
    assert json.loads(ctxkit("stats", "--json", str(path), cwd=tmp_path).stdout)["format"] == fmt
    done = ctxkit("simulate", "--json", "-p", "default", "-p", "no-llm", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    s = json.loads(done.stdout)["sessions"][0]
    assert s["model"] == model
    recorded, replayed, none = s["recorded"], s["replayed"], s["none"]
    assert recorded["requests"] == replayed["requests"] == none["requests"] == requests
    assert recorded["input_tokens"] + recorded["cache_read_input_tokens"] + recorded["cache_creation_input_tokens"] \
        == prompt and recorded["output_tokens"] == output
    assert [p["policy"] for p in s["policies"]] == ["default", "no-llm"]
    for row in (none, *s["policies"]):  # built from the view: the whole history, each request priced alike
        assert row["requests"] == requests and row["failures"] == 0 and row["output_tokens"] == output
        assert 0 < row["peak_context"] < s["context_window"]
    if prompt:  # the model's own figures: the replay lands near them
        assert abs(replayed["peak_context"] - recorded["peak_context"]) <= 0.1 * recorded["peak_context"]
    else:
        assert "records no usage" in done.stderr
    if model:
        assert none["cost_usd"] > 0 and "no price" not in done.stderr
        assert (recorded["cost_usd"] > 0) == bool(prompt)  # an agent that records no usage has no recorded bill
    else:  # nothing names the model: priced as unknown, said so, no crash
        assert recorded["cost_usd"] == none["cost_usd"] == 0 and "priced as unknown" in done.stderr


def test_codex_cached_input_is_billed_at_the_cached_rate_of_its_model(tmp_path):
    s = json.loads(ctxkit("simulate", "--json", str(_codex(tmp_path)), cwd=tmp_path).stdout)["sessions"][0]
    r = s["recorded"]
    cached = sum((5_000 + 2_500 * k) // 2 for k in range(12))
    assert r["cache_read_input_tokens"] == cached and r["cache_creation_input_tokens"] == 0
    # gpt-5.1-codex: 1.25 USD per million input, 0.125 cached, 10 output
    assert r["cost_usd"] == pytest.approx((r["input_tokens"] * 1.25 + cached * 0.125 + 1_200 * 10) / 1e6, abs=1e-6)
    assert s["context_window"] == 258_400  # the window Codex counts against (token_count), not the table's 400,000


def test_a_long_codex_session_compacts_under_a_policy_and_the_row_says_so(tmp_path):
    lines = cx.opening()
    for k in range(40):
        lines += cx.turn(k, f"read file {k}", [(f"c{k}", f"cat f{k}.txt", f"line {k} " * 3_000)], f"read f{k}",
                         second=k * 4, usage=(5_000 + 9_000 * k, 100))
    cx.write(tmp_path / "long.jsonl", lines)
    done = ctxkit("simulate", "--json", "-p", "no-llm", "--context-window", "120000", "long.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    s = json.loads(done.stdout)["sessions"][0]
    policy = s["policies"][0]
    assert s["none"]["failures"] > 0 and s["none"]["peak_context"] > 120_000  # the whole history does not fit
    assert policy["compactions"] >= 1 and policy["failures"] == 0 and policy["peak_context"] < 120_000


@pytest.mark.parametrize("fmt", ["codex", "gemini", "opencode", "aider"])
def test_report_writes_a_page_about_the_session(tmp_path, fmt):
    build, _, _, model = SESSIONS[fmt]
    done = ctxkit("report", str(build(tmp_path)), "-o", "r.html", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "r.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert model in page and "http://" not in page.replace("http://www.w3.org", "")


def test_openai_and_google_models_are_priced_by_their_own_line_and_an_unknown_one_as_unknown():
    prices = load_pricing()
    usage = Usage(input_tokens=100_000, cache_read_input_tokens=100_000, output_tokens=10_000)
    assert prices.cost("gemini-3-pro-preview", usage) == pytest.approx((100_000 * 2 + 100_000 * 0.2 + 10_000 * 12) / 1e6)
    long = Usage(input_tokens=250_000)  # over 200k tokens of prompt: Gemini's long-context rate on all of it
    assert prices.cost("gemini-2.5-pro", long) == pytest.approx(250_000 * 2.5 / 1e6)
    assert prices.cost("openai/gpt-5-mini", usage) == pytest.approx((100_000 * 0.25 + 100_000 * 0.025 + 10_000 * 2) / 1e6)
    assert not prices.warnings
    assert prices.resolve("gpt-5.9-codex") == "gpt-5.3-codex"  # the newest of its line
    assert prices.cost("deepseek-chat", usage) == 0
    assert prices.warnings == [
        "no price for model 'gpt-5.9-codex' in the shipped pricing table; priced as gpt-5.3-codex, the newest "
        "gpt-codex model there",
        "no price for model 'deepseek-chat' in the shipped pricing table; priced as unknown: its requests count "
        "0 USD (their tokens are counted)"]


def test_the_model_table_knows_the_windows_of_the_agents_models():
    assert model_info("gpt-5.1-codex").context_window == 400_000
    assert model_info("gpt-5.4").context_window == 1_050_000
    assert model_info("gemini-3-pro-preview").context_window == 1_048_576
    assert model_info("gemini-2.5-flash").max_output_tokens == 65_536


def test_an_opencode_database_is_replayed_as_its_export_is(tmp_path):
    msgs, n = [], 1
    for k in range(6):
        msgs += [oc.user(n, f"read f{k}"),
                 oc.assistant(n + 1, n, "", [oc.tool(n + 1, 0, "read", {"filePath": f"f{k}"}, f"line {k} " * 800)],
                              tokens=2_000 * (k + 1))]
        n += 2
    oc.database(tmp_path / "opencode.db", msgs)
    oc.write(tmp_path / "export.json", msgs)
    rows = []
    for name in ("opencode.db", "export.json"):
        done = ctxkit("simulate", "--json", name, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        s = json.loads(done.stdout)["sessions"][0]
        rows.append({k: s[k] for k in ("recorded", "none")})
    assert rows[0] == rows[1] and rows[0]["recorded"]["requests"] == 6 and rows[0]["recorded"]["cost_usd"] > 0


# -- the same conversation in each agent's format: a policy compacts it as often -----------------------------
def _read(k: int) -> str:
    return f"line {k} of the file, " * 600


def _prompt_size(k: int) -> int:  # what the agent recorded the k-th turn's requests held
    return 6_000 + 3_600 * k


def _same_as_claude_code(d: Path, turns: int) -> Path:
    from builders import Call, Turn, conversation, write
    entries, order = conversation([Turn(f"read f{k}", [[Call("Read", {"file_path": f"f{k}"}, _read(k))]],
                                        answer=f"read f{k}") for k in range(turns)]), {}
    for e in entries:
        if e.get("type") == "assistant":  # two responses a turn: the call, then the answer
            k = order.setdefault(e["message"]["id"], len(order)) // 2
            e["message"].update(model="claude-sonnet-4-5", usage={
                "input_tokens": _prompt_size(k) // 2, "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": _prompt_size(k) - _prompt_size(k) // 2, "output_tokens": 100})
    return write(d / "session.jsonl", entries)


def _same_as_codex(d: Path, turns: int) -> Path:
    lines = cx.opening()
    for k in range(turns):
        lines += cx.turn(k, f"read f{k}", [(f"c{k}", f"cat f{k}", _read(k))], f"read f{k}", second=k * 4,
                         usage=(_prompt_size(k), 100))
    cx.write(d / "rollout.jsonl", lines)
    return d / "rollout.jsonl"


def _same_as_gemini(d: Path, turns: int) -> Path:
    recs = [gs.metadata()]
    for k in range(turns):
        call = gs.tool_call(f"c{k}", "read_file", {"path": f"f{k}"}, _read(k))
        recs += [gs.user(f"u{k}", f"read f{k}"), gs.gemini(f"g{k}", "", [call], tokens=_prompt_size(k)),
                 gs.gemini(f"h{k}", f"read f{k}", tokens=_prompt_size(k) + 100)]
    gs.write(d / "session.jsonl", recs)
    return d / "session.jsonl"


def _same_as_opencode(d: Path, turns: int) -> Path:
    msgs, n = [], 1
    for k in range(turns):
        msgs += [oc.user(n, f"read f{k}"),
                 oc.assistant(n + 1, n, "", [oc.tool(n + 1, 0, "read", {"filePath": f"f{k}"}, _read(k))],
                              tokens=_prompt_size(k))]
        n += 2
    oc.write(d / "export.json", msgs)
    return d / "export.json"


def _same_as_cline(d: Path, turns: int) -> Path:
    msgs = [ct.task("read the files")]
    for k in range(turns):
        msgs += [ct.native_call(f"toolu_{k}", "read_file", {"path": f"f{k}"}), ct.native_result(f"toolu_{k}", _read(k)),
                 ct.say(f"read f{k}", metrics={"tokens": {"prompt": _prompt_size(k), "completion": 100, "cached": 0}})]
    ct.write(d / "api_conversation_history.json", msgs)
    return d / "api_conversation_history.json"


def _compactions(path: Path) -> int:
    done = ctxkit("simulate", "--json", "-p", "no-llm", "--context-window", "120000", str(path), cwd=path.parent)
    assert done.returncode == 0, done.stderr
    s = json.loads(done.stdout)["sessions"][0]
    assert s["none"]["failures"] > 0 and s["policies"][0]["failures"] == 0  # the history does not fit; the policy's does
    return s["policies"][0]["compactions"]


@pytest.mark.parametrize("build", [_same_as_codex, _same_as_gemini, _same_as_opencode, _same_as_cline])
def test_a_policy_compacts_an_agents_session_as_often_as_the_same_conversation_in_claude_code(tmp_path, build):
    """After a policy's compaction, the agent's next recorded usage counted the context the agent sent (its whole
    history), not the one the policy left: the replay puts the simulated request's figures where the format records
    usage, as it does in a Claude Code transcript. Before, every request after the first compaction compacted
    again (Codex 37 times in 120 requests, Gemini 38, Cline 73 where Claude Code compacts twice), and OpenCode
    never did (its kept tail's tokens counted the compacted view as large as the original)."""
    (tmp_path / "cc").mkdir()
    (tmp_path / "agent").mkdir()
    expected = _compactions(_same_as_claude_code(tmp_path / "cc", 60))
    assert expected == 2
    assert _compactions(build(tmp_path / "agent", 60)) == expected


def test_a_codex_session_keeps_its_cache_over_pauses_longer_than_five_minutes(tmp_path):
    """OpenAI reports what it caches as plain input and never a write, like the relays whose sessions
    Claude Code recorded; but the 5-minute lifetime taken for those (the Anthropic API's default) is not
    OpenAI's, whose cache outlives such a pause. A Codex rollout of six prompts eight minutes apart, each
    request reading all of the one before (as Xu-Wentao/dotfile's gpt-5.4 rollouts do): replayed with the
    5-minute lifetime it read nothing, 165% over the recorded cost (a real 22-request rollout: 24% over,
    from 2%); replayed as recorded."""
    lines = cx.opening()
    for k in range(6):
        second = k * 480
        lines += cx.turn(k, "summarize this: " + f"line {k} " * 800, [], f"summary {k}", second=second)
        prompt = 5_000 + 2_500 * k
        usage = {"input_tokens": prompt, "cached_input_tokens": prompt - 2_500 if k else 0, "output_tokens": 100,
                 "reasoning_output_tokens": 0, "total_tokens": prompt + 100}
        lines.insert(-1, cx.line("event_msg", {"type": "token_count", "info": {
            "total_token_usage": usage, "last_token_usage": usage, "model_context_window": 258_400}}, second + 3))
    cx.write(tmp_path / "rollout.jsonl", lines)
    done = ctxkit("simulate", "--json", str(tmp_path / "rollout.jsonl"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    s = json.loads(done.stdout)["sessions"][0]
    assert s["recorded"]["cache_read_input_tokens"] == sum(2_500 * k for k in range(2, 7))
    assert s["calibration"]["off"] == [], s["calibration"]
    assert s["none"]["cache_read_input_tokens"] == s["recorded"]["cache_read_input_tokens"]
