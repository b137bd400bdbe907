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



def test_a_figure_claude_code_compacted_right_after_says_nothing_of_the_1m_window(tmp_path):
    """A request reporting 990,000 tokens to Haiku 4.5 (the stand-in's figure that makes Claude Code compact,
    or a relay's bogus one), then Claude Code's automatic compaction and another turn: Claude Code counted
    against 200,000, and so must ctxkit (it took the 1M window: autocompact at 967,000, not 167,000). The same
    figure the session went on from without compacting still says 1M."""
    entries = [json.loads(line) for line in _session(tmp_path, 990_000, model="claude-haiku-4-5").read_text()
               .splitlines()]
    prompt, answer = entries[0], entries[-1]
    for e in entries[:-1]:  # the requests before it held 20,000: only the last reports 990,000
        if e["type"] == "assistant":
            e["message"]["usage"]["cache_read_input_tokens"] = 20_000 - 503

    def then(parent: str) -> list[dict]:  # a prompt and its answer, holding 9,000 tokens
        usage = {"input_tokens": 3, "cache_creation_input_tokens": 9_000, "cache_read_input_tokens": 0,
                 "output_tokens": 40}
        return [dict(prompt, uuid="p2", parentUuid=parent),
                dict(answer, uuid="a2", parentUuid="p2", message=dict(answer["message"], id="msg_2", usage=usage))]

    boundary = {"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted",
                "parentUuid": None, "logicalParentUuid": answer["uuid"], "uuid": "b0", "isSidechain": False,
                "timestamp": answer["timestamp"], "compactMetadata": {"trigger": "auto", "preTokens": 990_040}}
    compacted = write(tmp_path / "compacted.jsonl", [*entries, boundary, *then("b0")])
    budget = _budget(tmp_path, compacted)
    assert (budget["context_window"], budget["autocompact_threshold"]) == (200_000, 167_000), budget
    went_on = write(tmp_path / "went-on.jsonl", [*entries, *then(answer["uuid"])])
    assert _budget(tmp_path, went_on)["context_window"] == 1_000_000
