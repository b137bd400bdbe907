"""``ctxkit doctor`` on a Claude Code session whose model is another provider's behind an Anthropic-style API.

Real sessions run Claude Code against DeepSeek (LeoDChen/claude-config: ``deepseek-v4-pro``, Claude Code
2.1.114-2.1.144), whose thinking blocks carry a 36-character UUID as their signature, and against MiniMax
(adrianstanca1/vps-config: ``minimax-m2.7``, 2.1.81), whose carry an empty one; the sessions went on
sending them back. Anthropic's checks of a signature are no rules of those APIs.
"""
from __future__ import annotations

import json
import uuid

import pytest
from builders import Call, Turn, conversation, write
from test_doctor import ctxkit


def _thinking_session(tmp_path, model: str, sign=lambda thought: str(uuid.uuid5(uuid.NAMESPACE_URL, thought))):
    """Two turns with thinking before each call and answer, every answer written by ``model``, every
    thinking block signed by ``sign`` (by default with a UUID, as DeepSeek signs it)."""
    entries = conversation([
        Turn("List the files", [[Call("Bash", {"command": "ls"}, "a.py b.py")]], "Two files.", thinking=True),
        Turn("Read a.py", [[Call("Read", {"file_path": "a.py"}, "print(1)")]], "It prints 1.", thinking=True)])
    signed = 0
    for e in entries:
        if e["type"] == "assistant":
            e["message"]["model"] = model
            for b in e["message"]["content"]:
                if b["type"] == "thinking":
                    b["signature"] = sign(b["thinking"])
                    signed += 1
    assert signed == 4
    return write(tmp_path / "s.jsonl", entries)


def _findings(tmp_path, path) -> tuple[int, list[dict]]:
    r = ctxkit(["doctor", str(path), "--json"], tmp_path)
    return r.returncode, json.loads(r.stdout)["findings"]


@pytest.mark.parametrize("model", ["deepseek-v4-pro", "deepseek-reasoner"])
def test_another_providers_thinking_signature_is_not_judged_by_anthropics_length(tmp_path, model):
    code, findings = _findings(tmp_path, _thinking_session(tmp_path, model))
    assert code == 0, findings
    assert not [f for f in findings if f["rule"].startswith("thinking")]


def test_another_providers_empty_signature_is_no_error(tmp_path):
    code, findings = _findings(tmp_path, _thinking_session(tmp_path, "minimax-m2.7", sign=lambda thought: ""))
    assert code == 0, findings
    assert not [f for f in findings if f["rule"].startswith("thinking")]


@pytest.mark.parametrize(("sign", "rule"), [(None, "thinking-signature-truncated"),
                                            (lambda thought: "", "thinking-signature-missing")])
def test_a_claude_models_short_or_empty_signature_is_still_an_error(tmp_path, sign, rule):
    """The same sessions on a Claude model: a 36-character signature is one cut short (Anthropic's are
    hundreds of characters), an empty one none at all."""
    path = _thinking_session(tmp_path, "claude-sonnet-4-6", **({"sign": sign} if sign else {}))
    code, findings = _findings(tmp_path, path)
    assert code == 1
    assert {f["rule"] for f in findings if f["severity"] == "error"} == {rule}
