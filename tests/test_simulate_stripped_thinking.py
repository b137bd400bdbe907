"""simulate on a session whose API stripped the thinking of earlier turns (docs/simulate.md, "Thinking
the API left out"): each new prompt's request read only the prefix before the turn before's first
thinking block, and wrote the rest again, as held-out 8e0abc0e (Claude Code 2.1.41, Sonnet 4.5) did.
The sessions here are synthetic, their usage worked out by a small model of each behaviour over the
estimated sizes of their blocks; the one that keeps the thinking is the counter-case that keeps the strip
from being assumed (most sessions on the same version and model keep it)."""
from __future__ import annotations

import json
from datetime import timedelta

from test_simulate_session_prefix import T0

from ctxkit import load_policy
from ctxkit.reports.pricing import load_pricing
from ctxkit.reports.simulate import simulate_session
from ctxkit.tokens import make_counter

SONNET = "claude-sonnet-4-5-20250929"
OVERHEAD = 14_000  # the system prompt and tools, which the transcript does not hold


def _session(tmp_path, strips: bool, turns: int = 4):
    """Turns of a prompt, an answer that thinks and calls a tool, its result, and an answer that thinks and
    replies; every request's usage as an API that strips (or keeps) the thinking of earlier turns reports
    it: the longest prefix an earlier request sent is read, the rest written, 3 tokens plain."""
    counter = make_counter("rough", model=SONNET)
    lines: list[dict] = []
    sent: list[tuple[str, bool, bool, int]] = []  # the conversation so far: (id, thinking, opens a turn, tokens)
    cached: list[tuple[tuple[str, ...], int]] = []  # (the pieces of an earlier request, their tokens)

    def add(entry: dict, seconds: int) -> None:
        lines.append({"parentUuid": lines[-1]["uuid"] if lines else None, "isSidechain": False, "sessionId": "s",
                      "version": "2.1.41", "uuid": f"u{len(lines)}", "cwd": "/w",
                      "timestamp": (T0 + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z"), **entry})

    def block(role: str, b: dict, opens: bool = False) -> None:
        sent.append((f"b{len(sent)}", b.get("type") == "thinking", opens,
                     counter.count_message({"role": role, "content": [b]})))

    def usage() -> dict:
        turn = max(i for i, p in enumerate(sent) if p[2])
        now = [p for i, p in enumerate(sent) if not (strips and p[1] and i < turn)]
        ids = tuple(p[0] for p in now)
        read = max((n for c, n in cached if ids[:len(c)] == c), default=0)
        total = OVERHEAD + sum(p[3] for p in now)
        cached.append((ids, total - 3))
        return {"input_tokens": 3, "cache_read_input_tokens": read, "cache_creation_input_tokens": total - 3 - read,
                "output_tokens": 300}

    def answer(content: list[dict], seconds: int, k: int) -> None:
        add({"type": "assistant", "message": {"id": f"msg_{k}", "type": "message", "role": "assistant",
                                              "model": SONNET, "content": content, "usage": usage()}}, seconds)
        for b in content:
            block("assistant", b)

    k = 0
    for t in range(turns):
        prompt = f"Turn {t}: look at module {t} and fix what its test reports. " * 20
        add({"type": "user", "message": {"role": "user", "content": prompt}}, 60 * t)
        block("user", {"type": "text", "text": prompt}, opens=True)
        thinking = {"type": "thinking", "thinking": f"Module {t} reads its rows twice; the test checks the sum. " * 60,
                    "signature": "sig"}
        call = {"type": "tool_use", "id": f"call{t}", "name": "Read", "input": {"file_path": f"/w/m{t}.py"}}
        answer([thinking, call], 60 * t + 5, k)
        k += 1
        result = {"type": "tool_result", "tool_use_id": f"call{t}",
                  "content": "".join(f"def f{t}_{j}(rows):\n    return sum(rows) + {j}\n" for j in range(60))}
        add({"type": "user", "message": {"role": "user", "content": [result]}}, 60 * t + 8)
        block("user", result)
        answer([{"type": "thinking", "thinking": f"The fix for module {t} is one line. " * 40, "signature": "sig"},
                {"type": "text", "text": f"Fixed module {t}."}], 60 * t + 12, k)
        k += 1
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def _errors(path) -> dict:
    result = simulate_session(str(path), [("default", load_policy(None))], load_pricing())
    return result["calibration"]["relative_error"]


def test_a_session_whose_api_stripped_earlier_thinking_is_replayed_with_it_stripped(tmp_path):
    """Kept, the replay read the whole request before at each new prompt: its cache writes came out a
    fifth under the recorded ones, its cost a tenth."""
    errors = _errors(_session(tmp_path, strips=True))
    assert all(abs(errors[k]) < 0.03 for k in ("cost_usd", "cache_read_input_tokens",
                                               "cache_creation_input_tokens")), errors


def test_none_and_the_policy_rows_send_it_stripped_too(tmp_path):
    """The same API under every row: with nothing to compact, ``none`` and the default policy write what
    the replayed row writes."""
    result = simulate_session(str(_session(tmp_path, strips=True)), [("default", load_policy(None))], load_pricing())
    rows = result["rows"]
    replayed = rows["replayed"].to_json()["cache_creation_input_tokens"]
    for row in (rows["none"], rows["policies"][0]):
        assert abs(row.to_json()["cache_creation_input_tokens"] / replayed - 1) < 0.02, (row.policy, replayed)


def test_a_session_whose_api_kept_it_is_replayed_with_it_kept(tmp_path):
    errors = _errors(_session(tmp_path, strips=False))
    assert all(abs(errors[k]) < 0.03 for k in ("cost_usd", "cache_read_input_tokens",
                                               "cache_creation_input_tokens")), errors
