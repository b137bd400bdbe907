"""What the genuine Claude Code 2.1.328 CLI sends after a run resumed on another model, against what
``ctxkit view --to anthropic-request`` builds at the same point of its session.

``bench/record_cc_sessions.py`` runs the real CLI (against the cc-harness stand-in on loopback): an Opus
5.5 session resumed with ``--model claude-haiku-4-5`` (thinking enabled with a budget, no effort) and one
resumed with ``--model claude-opus-4-8`` (adaptive, effort "high", and no ``output_config`` left on the
system messages: Opus 4.8 takes no per-turn effort). Before each recorded request the session is cut and
ctxkit's request must carry the model-dependent fields Claude Code sent. The message layout is not
compared here (tests/test_claude_code_requests.py does, for the shared corpus). Skips with the reason when
the harness or the CLI is not here.
"""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, SHARED

from ctxkit.cli.main import app

VERSION = "2.1.328"
CLI = Path(os.environ.get("CC_HARNESS_CACHE", Path.home() / ".cache" / "cc-harness")) / VERSION / "package" / "claude"
#: The fields of a request that depend on the model it goes to.
FIELDS = ("model", "max_tokens", "thinking", "output_config", "context_management")


def _run(prompt: str, *args: str) -> dict:
    return {"prompt": prompt, "steps": [{"blocks": [{"type": "text", "text": "Hello there."}]}],
            **({"args": list(args)} if args else {})}


def _recorded(tmp_path: Path, model: str) -> Path:
    """An Opus 5.5 session resumed on ``model``, recorded with the genuine CLI: its folder."""
    if not (SHARED / "tools" / "cc-harness" / "mock_anthropic.py").exists():
        pytest.skip(f"cc-harness not found under {SHARED / 'tools'}")
    if not CLI.exists():
        pytest.skip(f"Claude Code {VERSION} is not cached at {CLI}")
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    scenario = {"runs": [_run("Say hello", "--model", "claude-opus-5-5"), _run("Say hello again", "--model", model)]}
    (scenarios / "switch.json").write_text(json.dumps(scenario))
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "record_cc_sessions.py"), str(scenarios),
                           str(tmp_path / "out")], capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, TMPDIR=str(tmp_path), CC_VERSION=VERSION))
    assert done.returncode == 0 and "FAILED" not in done.stderr, done.stderr[-2000:]
    return tmp_path / "out" / "switch"


def _cuts(session: Path) -> list[tuple[bytes, str, dict]]:
    """(the session before each recorded request, that request's time, the body the CLI sent there)."""
    lines = (session / "session.jsonl").read_bytes().splitlines(keepends=True)
    cuts = [i for i, line in enumerate(lines) if json.loads(line).get("type") == "api-request"]
    with gzip.open(session / "requests.jsonl.gz", "rt", encoding="utf-8") as f:
        bodies = [row["body"] for row in map(json.loads, f) if "count_tokens" not in row.get("path", "")]
    assert len(bodies) == len(cuts) == 2
    return [(b"".join(lines[:cut]), json.loads(lines[cut])["timestamp"], body)
            for cut, body in zip(cuts, bodies, strict=True)]


@pytest.mark.parametrize(("model", "thinking"), [
    ("claude-haiku-4-5", {"budget_tokens": 31_999, "type": "enabled", "display": "omitted"}),
    ("claude-opus-4-8", {"type": "adaptive", "display": "omitted"}),
])
def test_the_request_after_a_resume_on_another_model_has_the_fields_claude_code_sent(tmp_path, runner, model,
                                                                                    thinking):
    cuts = _cuts(_recorded(tmp_path, model))
    # what the CLI did send: Opus 5.5's own, then the new model's
    assert (cuts[0][2]["model"], cuts[0][2]["output_config"]) == ("claude-opus-5-5", {"effort": "medium"})
    assert (cuts[1][2]["model"], cuts[1][2]["thinking"]) == (model, thinking)
    for k, (lines, now, sent) in enumerate(cuts):
        path = tmp_path / f"cut{k}.jsonl"
        path.write_bytes(lines)
        result = runner.invoke(app, ["view", "--to", "anthropic-request", "--now", now, str(path)])
        assert result.exit_code == 0, result.output
        body = json.loads(result.stdout.splitlines()[0])
        assert {f: body.get(f) for f in FIELDS} == {f: sent.get(f) for f in FIELDS}, f"request {k}"
        # a message carries the per-turn effort only in a request to a model that takes it (Opus 5.5)
        for request in (body, sent):
            carried = [m["output_config"] for m in request["messages"] if "output_config" in m]
            assert carried == ([{"effort": "medium"}] if request["model"] == "claude-opus-5-5" else []), f"request {k}"
