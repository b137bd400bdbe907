"""The 1M window of a session that ran with it, read from what its requests held.

Claude Code writes the model's plain id (``claude-sonnet-4-6``) in the answers of a session run with the 1M
window, so the model table gives 200,000. A recorded request that held more says otherwise: a held-out
public session (Eduardodmb/ClaudeWork, 2.1.119) went to 248,633 tokens without compacting, and ``doctor``
called it one the agent could neither send nor compact. ctxkit/tokens/session.py."""
from __future__ import annotations

import json

from builders import Call, Turn, conversation, write
from test_doctor import ctxkit


def _session(tmp_path, largest: int, model: str = "claude-sonnet-4-6"):
    """Three requests to ``model``, the last holding ``largest`` tokens (mostly cache reads)."""
    entries = conversation([Turn("Build the views", [[Call("Bash", {"command": "make"}, "ok")]] * 2, "Built.")])
    answers = [e for e in entries if e["type"] == "assistant"]
    for k, e in enumerate(answers, 1):
        held = largest * k // len(answers)
        e["message"]["model"] = model
        e["message"]["usage"] = {"input_tokens": 3, "cache_creation_input_tokens": 500,
                                 "cache_read_input_tokens": held - 503, "output_tokens": 40}
    return write(tmp_path / "s.jsonl", entries)


def _budget(tmp_path, path) -> dict:
    r = ctxkit(["stats", "--json", str(path)], tmp_path)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["budget"]


def test_a_request_over_the_models_window_says_the_session_had_the_1m_one(tmp_path):
    path = _session(tmp_path, 248_633)
    budget = _budget(tmp_path, path)
    assert (budget["model"], budget["context_window"], budget["context_window_source"]) == \
        ("claude-sonnet-4-6", 1_000_000, "session")
    r = ctxkit(["doctor", str(path), "--json"], tmp_path)
    assert r.returncode == 0, r.stdout
    assert not [f for f in json.loads(r.stdout)["findings"] if f["rule"] == "prompt-too-long"]


def test_a_session_within_the_window_keeps_the_tables(tmp_path):
    budget = _budget(tmp_path, _session(tmp_path, 150_000))
    assert (budget["context_window"], budget["context_window_source"]) == (200_000, "model table")


def test_a_policy_window_still_wins(tmp_path):
    path = _session(tmp_path, 248_633)
    r = ctxkit(["stats", "--json", "--set", "context_window=200000", str(path)], tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["budget"]["context_window"] == 200_000
    r = ctxkit(["doctor", str(path), "--json", "--set", "context_window=200000"], tmp_path)
    assert r.returncode == 1
    assert [f["rule"] for f in json.loads(r.stdout)["findings"] if f["severity"] == "error"] == ["prompt-too-long"]


def test_a_model_the_table_does_not_know_past_what_the_assumed_window_leaves(tmp_path):
    """ctxkit assumes 200,000 for a model it does not know (Claude Code counts 1,000,000): a DeepSeek session
    that went to 185,000 tokens without compacting was not counted against 200,000."""
    over = _budget(tmp_path, _session(tmp_path, 185_000, model="deepseek-v4-pro"))
    assert (over["context_window"], over["context_window_source"]) == (1_000_000, "session")
    (tmp_path / "b").mkdir()
    under = _budget(tmp_path / "b", _session(tmp_path / "b", 175_000, model="deepseek-v4-pro"))
    assert (under["context_window"], under["context_window_source"]) == (200_000, "default")
