"""The request for a session whose model changed (a run resumed with ``--model``, ``/model``, a fallback,
or ``--set model=X``) is the one Claude Code 2.1.328 sends that model: its own thinking (adaptive, or
enabled with a budget), its own effort (or none) and its own default max_tokens; the recorded values
only where the newest recorded request went to that same model. Small synthetic sessions shaped like
the genuine CLI's recordings (docs/formats.md, "Requests as Claude Code sends them")."""
from __future__ import annotations

import json
from datetime import datetime, timedelta

import pytest
from builders import Session, Turn, conversation, write
from test_claude_code_recorded_turns import SHAPE, Recorded

from ctxkit.cli.main import app
from ctxkit.transcript.claude_code.requests import as_blocks, digest, message_digest

#: An Opus 5.5 session's request as Claude Code 2.1.328 records it, run with ``--effort low``.
OPUS = {"model": "claude-opus-5-5", "max_tokens": 128_000, "thinking": {"type": "adaptive", "display": "omitted"},
        "output_config": {"effort": "low"},
        "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]}}
HAIKU = {"model": "claude-haiku-4-5", "max_tokens": 32_000,
         "thinking": {"budget_tokens": 31_999, "type": "enabled", "display": "omitted"},
         "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]}}


class Switched(Recorded):
    """A :class:`Recorded` session whose requests carry the given parameters (answered by their model)."""

    answering = OPUS["model"]

    def say(self, text):
        e = super().say(text)
        e["message"]["model"] = self.answering
        return e

    def request(self, rid: str, messages: list[dict], params: dict | None = None) -> None:
        params = params or OPUS
        self.answering = params["model"]
        body = {**params, "system": SHAPE["system"], "tools": SHAPE["tools"], "messages": [as_blocks(m) for m in messages]}
        self.meta("api-request", id=rid, version="2.1.328", querySource="sdk", shapeHash=digest(SHAPE), params=params,
                  keep=0, tail=[message_digest(m) for m in messages], cacheControl=[], requestDigest=digest(body))


def _session(tmp_path, params: dict, resumed_on: str | None = None):
    """A session that sent one request with ``params`` and was answered; with ``resumed_on``, then resumed
    on that model (``claude --resume ID --model M`` writes the model attachment after the new prompt)."""
    s = Switched(tmp_path)
    s.prompt("Say hi")
    s.request("r1", [{"role": "user", "content": "Say hi"}], params)
    s.say("Hi.")
    if resumed_on is not None:
        s.prompt("Continue on another model")
        powered = f"You are powered by the model named M. The exact model ID is {resumed_on}."
        s.attach({"type": "model", "identity": {"modelId": resumed_on}, "text": powered}, powered)
    s.write(tmp_path / "s.jsonl")
    return s


def _request(runner, s: Session, *args: str) -> dict:
    """What ``ctxkit view --to anthropic-request`` prints for the session, a minute after its last line."""
    now = (datetime.fromisoformat(s.entries[-1]["timestamp"].replace("Z", "+00:00")) + timedelta(minutes=1)).isoformat()
    result = runner.invoke(app, ["view", "--to", "anthropic-request", "--now", now, str(s.cwd + "/s.jsonl"), *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout.splitlines()[0])


def _model_fields(body: dict) -> tuple:
    return body["model"], body["max_tokens"], body.get("thinking"), body.get("output_config")


@pytest.mark.parametrize(("model", "max_tokens", "thinking", "output_config"), [
    # Claude Code 2.1.328's request after ``--resume ID --model M`` on an Opus 5.5 session (its recordings)
    ("claude-haiku-4-5", 32_000, {"budget_tokens": 31_999, "type": "enabled", "display": "omitted"}, None),
    ("claude-sonnet-4-5", 32_000, {"budget_tokens": 31_999, "type": "enabled", "display": "omitted"}, None),
    ("claude-opus-4-5", 32_000, {"budget_tokens": 31_999, "type": "enabled", "display": "omitted"}, {"effort": "high"}),
    ("claude-opus-4-6", 64_000, {"type": "adaptive", "display": "omitted"}, {"effort": "high"}),
    ("claude-opus-4-7", 64_000, {"type": "adaptive", "display": "omitted"}, {"effort": "xhigh"}),
    ("claude-sonnet-5-5", 128_000, {"type": "adaptive", "display": "omitted"}, {"effort": "medium"}),
    # the same model: the recorded request's own (its --effort low kept)
    ("claude-opus-5-5", 128_000, {"type": "adaptive", "display": "omitted"}, {"effort": "low"}),
])
def test_a_run_resumed_on_another_model_gets_that_model_s_thinking_and_effort(tmp_path, runner, model, max_tokens,
                                                                             thinking, output_config):
    body = _request(runner, _session(tmp_path, OPUS, resumed_on=model))
    assert _model_fields(body) == (model, max_tokens, thinking, output_config)
    # thinking on: Claude Code clears no thinking (keep: all), whichever model
    assert body["context_management"] == {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]}


def test_set_model_gets_the_request_claude_code_sends_that_model(tmp_path, runner):
    """``--set model=X`` is the user saying "the request for X": X's default max_tokens (not the recorded
    128,000 capped at X's maximum), X's thinking and effort, as a run resumed on X."""
    s = _session(tmp_path, OPUS)
    assert _model_fields(_request(runner, s)) == _model_fields({**OPUS, "model": "claude-opus-5-5"})
    body = _request(runner, s, "--set", "model=claude-haiku-4-5")
    assert _model_fields(body) == ("claude-haiku-4-5", 32_000, HAIKU["thinking"], None)
    # a budget fits under the max_tokens asked for (Claude Code's own clamp: at most max_tokens - 1)
    small = _request(runner, s, "--set", "model=claude-haiku-4-5", "--max-tokens", "8000")
    assert (small["max_tokens"], small["thinking"]["budget_tokens"]) == (8_000, 7_999)


def test_a_recorded_request_to_the_same_model_keeps_its_values(tmp_path, runner):
    """A Haiku 4.5 session run with MAX_THINKING_TOKENS=10000 and CLAUDE_CODE_MAX_OUTPUT_TOKENS=20000 (as
    recorded) keeps them; moved to another model, it gets that model's."""
    recorded = {**HAIKU, "max_tokens": 20_000, "thinking": {"budget_tokens": 10_000, "type": "enabled", "display": "omitted"}}
    s = _session(tmp_path, recorded)
    assert _model_fields(_request(runner, s)) == ("claude-haiku-4-5", 20_000, recorded["thinking"], None)
    assert _model_fields(_request(runner, s, "--set", "model=claude-haiku-4-5")) == _model_fields(recorded)
    assert _request(runner, s, "--max-tokens", "4000")["thinking"]["budget_tokens"] == 3_999
    moved = _request(runner, s, "--set", "model=claude-opus-5-5")
    assert _model_fields(moved) == ("claude-opus-5-5", 128_000, {"type": "adaptive", "display": "omitted"},
                                    {"effort": "medium"})


def test_claude_3_gets_no_thinking(tmp_path, runner):
    """Claude Code 2.1.328 sends Claude 3.x no thinking, so no thinking edits either."""
    body = _request(runner, _session(tmp_path, OPUS, resumed_on="claude-3-7-sonnet"))
    assert _model_fields(body) == ("claude-3-7-sonnet", 32_000, None, None)
    assert "context_management" not in body


def test_a_session_that_recorded_no_request_is_not_given_thinking(tmp_path, runner):
    """Before Claude Code recorded its requests (2.1.3xx) nothing says what it sent: no thinking guessed."""
    path = write(tmp_path / "old.jsonl", conversation([Turn("hi", [], "hello")]))
    result = runner.invoke(app, ["view", "--to", "anthropic-request", str(path), "--set", "model=claude-haiku-4-5"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout.splitlines()[0])
    assert (body["model"], body["max_tokens"]) == ("claude-haiku-4-5", 32_000)
    assert "thinking" not in body and "output_config" not in body
