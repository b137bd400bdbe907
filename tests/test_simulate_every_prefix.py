"""An API that caches every prefix on its own (DeepSeek's Anthropic-compatible API, which 341 held-out Claude
Code files ran on): it caches each request's whole prompt, and most often its answer, at no
breakpoint, and reports what it read in units of 128 tokens. Replayed with the Anthropic API's breakpoints, the
replay's cache misses ran 10% to 47% over DeepSeek's on 62 of 291 sessions, once priced (a miss costs 50 to 120
times a hit); replayed as that API, 14 (docs/simulate.md, "Claude Code on DeepSeek")."""
from __future__ import annotations

import json
from datetime import timedelta

from test_simulate_session_prefix import T0

from ctxkit import load_policy
from ctxkit.reports.api_cache import caches_every_prefix
from ctxkit.reports.cache_model import CacheResult, Piece, PromptCache
from ctxkit.reports.pricing import Usage, load_pricing
from ctxkit.reports.simulate import simulate_session
from ctxkit.reports.usage import RecordedRequest

UNIT = 128
ANSWER = 700  # tokens of each answer: its thinking and two calls


def _pieces(*sizes: int, start: int = 0) -> list[Piece]:
    return [Piece(bytes([start + k]) * 16, float(n)) for k, n in enumerate(sizes)]


def test_every_prompt_is_cached_whole_and_read_in_units():
    cache = PromptCache(writes_as_input=True, unit=UNIT)
    first = _pieces(600, 400)
    assert cache.request(None, "deepseek-v4-pro", first, 300) == CacheResult(0, 0, 0, 1000)
    # the whole first prompt, at no breakpoint, read in whole units; the rest is plain input (no write)
    assert cache.request(None, "deepseek-v4-pro", first + _pieces(300, start=9), 300) == CacheResult(896, 0, 0, 404)
    # a request that goes on from the first prompt another way reads it, however far back it ended
    assert cache.request(None, "deepseek-v4-pro", first + _pieces(50, 50, start=20), 300).read == 896
    # another model's cache is its own
    assert cache.request(None, "deepseek-v4-flash", first, 300).read == 0


def _deepseek_session(tmp_path, requests: int = 12, path=None, sidechain: bool = False):
    """A turn of tool calls on DeepSeek: each request's prompt 2,400 tokens more than the one before (its
    answer, thinking and two calls, and their two results), and each read the prompt and answer before it, in
    128-token units. Written to ``path`` (default ``s.jsonl``); ``sidechain``: as a subagent's file."""
    lines: list[dict] = []

    def add(entry: dict, seconds: int) -> None:
        lines.append({"parentUuid": lines[-1]["uuid"] if lines else None, "isSidechain": sidechain, "sessionId": "s",
                      "version": "2.1.100", "uuid": f"u{len(lines)}", "cwd": "/w",
                      "timestamp": (T0 + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z"), **entry})

    add({"type": "user", "message": {"role": "user", "content": "Read every module and fix the failing test. "
                                     + "The suite is slow, read carefully. " * 900}}, 0)
    prompt = 20_000
    for k in range(requests):
        read = 0 if k == 0 else (prompt - 2_400 + ANSWER) // UNIT * UNIT
        usage = {"input_tokens": prompt - read, "cache_read_input_tokens": read, "cache_creation_input_tokens": 0,
                 "output_tokens": ANSWER}
        calls = [f"call_{k}a", f"call_{k}b"]  # two calls at once: Claude Code writes each result on a line of its own
        add({"type": "assistant", "message": {
            "id": f"msg_{'sub_' if sidechain else ''}{k}", "type": "message", "role": "assistant", "model": "deepseek-v4-pro", "usage": usage,
            "content": [{"type": "thinking", "thinking": f"Step {k}: the failing test reads both modules. " * 60,
                         "signature": ""},
                        *({"type": "tool_use", "id": c, "name": "Read", "input": {"file_path": f"/w/{c}.py"}}
                          for c in calls)]}}, 10 * k + 5)
        for c in calls:
            add({"type": "user", "message": {"role": "user", "content": [{
                "type": "tool_result", "tool_use_id": c,
                "content": "".join(f"def {c}_{j}(rows):\n    return sum(rows) + {j}\n" for j in range(80))}]}},
                10 * k + 8)
        prompt += 2_400
    path = path or tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def test_a_deepseek_session_is_replayed_with_its_misses(tmp_path):
    """Each request's misses are what it added after the prompt and answer before, and the rest of a unit:
    replayed at Claude Code's breakpoints, the answer was a miss too (only a new prompt's request read the
    answer before it)."""
    result = simulate_session(str(_deepseek_session(tmp_path)), [("default", load_policy(None))], load_pricing())
    recorded, replayed = result["rows"]["recorded"].to_json(), result["rows"]["replayed"].to_json()
    assert replayed["cache_creation_input_tokens"] == 0
    assert abs(replayed["input_tokens"] / recorded["input_tokens"] - 1) < 0.02, (replayed, recorded)
    assert abs(replayed["cache_read_input_tokens"] / recorded["cache_read_input_tokens"] - 1) < 0.01


def test_a_subagent_on_it_reads_its_answers_too(tmp_path):
    """A subagent's conversation goes to the same API: each of its requests read the answer before it as the
    main chain's did. Replayed with a cache event only before a new prompt (a subagent's events had none), each
    missed it: its plain input came out a fifth over (on DeepSeek's rates a miss costs 50 to 120 times a hit)."""
    session = _deepseek_session(tmp_path)
    folder = tmp_path / "s" / "subagents"
    folder.mkdir(parents=True)
    _deepseek_session(tmp_path, path=folder / "agent-a1.jsonl", sidechain=True)
    result = simulate_session(str(session), [("default", load_policy(None))], load_pricing())
    recorded = result["rows"]["sidechain"].requests
    replayed = [r for r in result["rows"]["replayed"].requests if r.kind == "subagent"]
    assert len(replayed) == len(recorded) == 12

    def total(requests, key: str) -> int:
        return sum(getattr(r.usage, key) for r in requests)

    assert abs(total(replayed, "input_tokens") / total(recorded, "input_tokens") - 1) < 0.02
    assert abs(total(replayed, "cache_read_input_tokens") / total(recorded, "cache_read_input_tokens") - 1) < 0.01


def _points(model: str, reads: list[int], write: int = 0) -> list[RecordedRequest]:
    return [RecordedRequest(f"msg_{k}", k, None, model, Usage(input_tokens=900, cache_read_input_tokens=r,
                                                             cache_creation_input_tokens=write), False)
            for k, r in enumerate(reads)]


def test_such_an_api_is_told_by_its_reads():
    assert caches_every_prefix(_points("deepseek-v4-pro", [0, 19_968, 21_632])) == UNIT
    assert caches_every_prefix(_points("deepseek-v4-pro", [0, 19_968])) == 0  # one read: a chance
    # a relay that caches the tools and system prompt only, and reports no write, reads the same at every request:
    # one chance in 128 that it is a multiple, however many requests read it
    assert caches_every_prefix(_points("claude-opus-4-5", [25_856] * 12)) == 0
    assert caches_every_prefix(_points("deepseek-v4-pro", [0, 19_968, 21_600])) == 0  # not in units
    assert caches_every_prefix(_points("claude-sonnet-4-6", [0, 19_968, 21_632], write=500)) == 0  # writes
    # OpenAI's API reads in 128-token units too, but does not cache the answer: a Codex rollout keeps the
    # model that replays it within 0.1% (as this one, +11.7% on cost)
    assert caches_every_prefix(_points("gpt-5.4", [0, 19_968, 21_632])) == 0
