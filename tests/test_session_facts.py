"""Session facts: the model, max_tokens and cache lifetime a transcript records are what budgets,
counts and requests use, unless a policy file or --set names them (the schema default does not)."""
from __future__ import annotations

import json

import pytest
from builders import Turn, conversation, write
from conftest import cc_sessions, needs_corpus, public_transcripts

from ctxkit import load_policy
from ctxkit.cli.main import app
from ctxkit.run_context import build_context
from ctxkit.store.disk import Store
from ctxkit.tokens import budget_for
from ctxkit.tokens.session import session_policy
from ctxkit.transcript import read_transcript
from ctxkit.transcript.claude_code.session import recorded_settings


def _newest_model(path) -> str | None:
    """The model of the newest answer, read straight from the JSON lines (main chain first)."""
    main = side = None
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            msg = entry.get("message") if isinstance(entry, dict) else None
            if entry.get("type") == "assistant" and isinstance(msg, dict) and msg.get("model") not in (None, "<synthetic>"):
                if entry.get("isSidechain"):
                    side = msg["model"]
                else:
                    main = msg["model"]
    return main or side


def _corpus_files():
    return [p / "session.jsonl" for p in cc_sessions()] + public_transcripts()


@needs_corpus
@pytest.mark.parametrize("path", _corpus_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_budgets_use_the_session_model_on_every_corpus_session(path, tmp_path):
    expected = _newest_model(path)
    assert expected, "every corpus session has an answer"
    t = read_transcript(path, on_bad_line="skip")
    policy = load_policy(cwd=tmp_path)
    assert policy.model != expected or expected == "claude-sonnet-4-5"
    ctx = build_context(policy, Store(tmp_path / "store", dry_run=True), transcript=t)
    assert ctx.policy.model == expected
    assert budget_for(ctx.policy).model == expected
    assert ctx.policy.origins["model"].startswith("session")


@needs_corpus
def test_check_and_the_request_use_the_recorded_model_and_max_tokens(corpus_session, runner):
    path = str(corpus_session("explore-edit"))

    def run(*args):
        result = runner.invoke(app, list(args))
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    # Opus 5.5 has a 1M window (the schema's default model, Sonnet 4.5, has 200,000)
    assert run("check", path, "--json")["context_window"] == 1_000_000
    body = run("view", "--to", "anthropic-request", path)
    assert (body["model"], body["max_tokens"]) == ("claude-opus-5-5", 128_000)
    # --set is an explicit choice: it wins over the session's, and the request is the one Claude Code
    # sends that model (as a run resumed with --model claude-sonnet-4-5 does): its own default max_tokens
    # (not the 128,000 recorded for Opus 5.5, capped), thinking with a budget, no effort
    body = run("view", "--to", "anthropic-request", path, "--set", "model=claude-sonnet-4-5")
    assert body["model"] == "claude-sonnet-4-5"
    assert body["max_tokens"] == 32_000
    assert body["thinking"] == {"budget_tokens": 31_999, "type": "enabled", "display": "omitted"}
    assert "output_config" not in body
    assert run("check", path, "--json", "--set", "model=claude-sonnet-4-5")["context_window"] == 200_000


def test_a_policy_file_that_names_the_model_wins(tmp_path):
    entries = conversation([Turn("hi", [], "hello")])
    for e in entries:
        if e["type"] == "assistant":
            e["message"]["model"] = "claude-opus-4-6"
    t = read_transcript(write(tmp_path / "t.jsonl", entries))
    assert session_policy(load_policy(cwd=tmp_path), t).model == "claude-opus-4-6"
    (tmp_path / "p.yaml").write_text("model: claude-haiku-4-5\n")
    named = session_policy(load_policy(str(tmp_path / "p.yaml"), cwd=tmp_path), t)
    assert named.model == "claude-haiku-4-5"
    # the output limit follows the session's model when the policy names neither: the max_tokens Claude
    # Code 2.1.328 sends Opus 4.6 (64,000; the model can write 128,000)
    assert session_policy(load_policy(cwd=tmp_path), t).max_output_tokens == 64_000


def test_the_model_attachment_before_any_answer_and_the_cache_lifetime(tmp_path):
    entries = conversation([Turn("hi", [], "hello")])
    prompt = next(e for e in entries if e["type"] == "user")
    attachment = {"type": "attachment", "uuid": "m-1", "parentUuid": prompt["uuid"], "sessionId": prompt.get("sessionId"),
                  "timestamp": prompt["timestamp"], "attachment": {"type": "model", "identity": {
                      "modelId": "claude-fable-5"}, "text": "You are powered by Fable 5."}}
    before = [prompt, attachment]
    t = read_transcript(write(tmp_path / "b.jsonl", before))
    facts = recorded_settings(t)
    assert (facts.model, facts.model_source) == ("claude-fable-5", "model attachment")
    answered = [e for e in entries]
    for e in answered:
        if e["type"] == "assistant":
            e["message"]["model"] = "claude-opus-5-5"
            e["message"]["usage"] = {"input_tokens": 3, "cache_creation_input_tokens": 900,
                                     "cache_creation": {"ephemeral_5m_input_tokens": 900, "ephemeral_1h_input_tokens": 0}}
    t = read_transcript(write(tmp_path / "a.jsonl", answered))
    facts = recorded_settings(t)
    assert (facts.model, facts.cache_ttl) == ("claude-opus-5-5", "5m")
    policy = session_policy(load_policy(cwd=tmp_path), t)
    assert (policy.cache_ttl, policy.cache_minutes) == ("5m", 5)
    assert session_policy(load_policy(sets=["request.cache_ttl=1h"], cwd=tmp_path), t).cache_ttl == "1h"


def test_message_lists_keep_the_policy(tmp_path):
    t = read_transcript(write(tmp_path / "t.jsonl", conversation([Turn("hi", [], "hello")], "anthropic")))
    policy = load_policy(cwd=tmp_path)
    assert session_policy(policy, t) is policy


@needs_corpus
def test_a_checkpoint_keeps_the_settings(corpus_session):
    """A run resumed from a checkpoint reads the settings of the lines it did not read again."""
    from ctxkit.transcript.claude_code.session import SessionFacts

    t = read_transcript(corpus_session("explore-edit"))
    kept = SessionFacts.from_json(json.loads(json.dumps(t.lines.facts.to_json())))
    assert kept.settings() == t.lines.facts.settings() == recorded_settings(t)
    assert kept.settings().model == "claude-opus-5-5" and kept.settings().max_tokens == 128_000


def _session_on(tmp_path, model: str):
    """A Claude Code session whose answers name ``model`` and that records no request (as every version
    before 2.1.3xx writes them)."""
    entries = conversation([Turn("hi", [], "hello")])
    for e in entries:
        if e["type"] == "assistant":
            e["message"]["model"] = model
    return str(write(tmp_path / f"{model}.jsonl", entries))


@pytest.mark.parametrize(("model", "window", "max_tokens"), [
    # the max_tokens Claude Code 2.1.328 sends each model by default and the window it counts against
    # (its catalog; each seen in the request and result of a run with --model, docs/tokens.md)
    ("claude-opus-4-5", 200_000, 32_000),
    ("claude-sonnet-4-5-20250929", 200_000, 32_000),
    ("claude-haiku-4-5-20251001", 200_000, 32_000),
    ("claude-opus-4-6", 200_000, 64_000),
    ("claude-sonnet-5", 1_000_000, 64_000),
    ("claude-opus-5-5", 1_000_000, 128_000),
])
def test_a_session_without_a_recorded_request_gets_what_claude_code_sends_its_model(tmp_path, runner, model,
                                                                                    window, max_tokens):
    path = _session_on(tmp_path, model)

    def run(*args):
        result = runner.invoke(app, list(args))
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    body = run("view", "--to", "anthropic-request", path)
    assert (body["model"], body["max_tokens"]) == (model, max_tokens)
    stats = run("stats", path, "--json")
    assert (stats["budget"]["context_window"], stats["budget"]["max_output"]) == (window, max_tokens)

