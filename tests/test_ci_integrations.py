"""CI integrations (docs/ci.md): GitHub annotations, the pre-commit hooks, the composite action, run for real."""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from builders import session
from conftest import ROOT

from ctxkit.cli.github import annotation
from ctxkit.cli.main import app

BAD_POLICY = "extends: default\nthresholds:\n  autocompact_buffer: -5\nstages:\n  - id: x\n    use: nosuch\n"
BIN = str(Path(sys.executable).parent)  # where `ctxkit` is installed beside this Python

pytestmark = pytest.mark.usefixtures("no_overhead")  # their sessions are sized against small windows


def run(args, cwd, env=None):
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PATH": BIN + os.pathsep + os.environ["PATH"], **(env or {})})


def test_policy_validate_github_prints_one_annotation_per_problem(runner, tmp_path):
    (tmp_path / "BAD.yaml").write_text(BAD_POLICY)
    r = runner.invoke(app, ["policy", "validate", "BAD.yaml", "--output-format", "github"])
    assert r.exit_code == 2
    assert r.stdout.splitlines() == [
        "::error file=BAD.yaml,line=3,col=23::thresholds.autocompact_buffer must be at least 0, got -5",
        "::error file=BAD.yaml,line=6,col=10::unknown stage 'nosuch' in 'use' (known stages: attachments, "
        "autocompact, collapse, microcompact, repair, slim, snip, tool-result-budget)"]
    assert r.stderr.splitlines()[-1] == "ctxkit: 2 problems in the policy"  # the usual report, on stderr


def test_check_github_annotates_failing_and_bad_transcripts(runner, tmp_path):
    (tmp_path / "d").mkdir()
    session(tmp_path / "d" / "big.jsonl", rounds=8)
    session(tmp_path / "d" / "small.jsonl", rounds=1, size=10)
    (tmp_path / "d" / "bad.jsonl").write_text('{"role": "user", "content": "a"}\n{oops\n')
    one = runner.invoke(app, ["check", "d/big.jsonl", "--context-window", "40000", "--output-format", "github"])
    assert (one.exit_code, one.stdout) == (1, "::error file=d/big.jsonl,line=18,col=1::21963 tokens reach the "
                                              "autocompact threshold 7000 (level blocking); compact this session\n")
    many = runner.invoke(app, ["check", "d", "--context-window", "40000", "--output-format", "github"])
    assert many.exit_code == 3
    assert many.stdout.splitlines() == [
        "::error file=d/bad.jsonl,line=2,col=1::d/bad.jsonl:2: not valid JSON: unexpected character, expected a "
        "string key",
        "::error file=d/big.jsonl,line=18,col=1::21963 tokens reach the autocompact threshold 7000 (level blocking); "
        "compact this session"]


def test_annotations_escape_what_would_end_the_command():
    assert annotation("warning", "a,b:c.yaml", 2, 5, "50% done\nnext") == \
        "::warning file=a%2Cb%3Ac.yaml,line=2,col=5::50%25 done%0Anext\n"


def test_pre_commit_hooks_run_on_sample_files(tmp_path):
    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"ctxkit-policy-validate", "ctxkit-check"}
    for hook in hooks.values():
        assert hook["language"] == "python" and hook["entry"].split()[0] == "ctxkit"
    # which files each hook is given (pre-commit matches `files` with re.search)
    policy_files = re.compile(hooks["ctxkit-policy-validate"]["files"])
    assert [bool(policy_files.search(p)) for p in (".ctxkit.yaml", "team/.ctxkit.yml", "ctxkit.yaml", "x.ctxkit.yaml")] \
        == [True, True, False, False]
    assert re.search(hooks["ctxkit-check"]["files"], "sessions/a.jsonl") and \
        not re.search(hooks["ctxkit-check"]["files"], "a.json")
    (tmp_path / "ok").mkdir()
    (tmp_path / "ok" / ".ctxkit.yaml").write_text("extends: no-llm\n")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / ".ctxkit.yaml").write_text(BAD_POLICY)
    entry = shlex.split(hooks["ctxkit-policy-validate"]["entry"])
    assert run(entry + ["ok/.ctxkit.yaml"], tmp_path).returncode == 0
    r = run(entry + ["ok/.ctxkit.yaml", "bad/.ctxkit.yaml"], tmp_path)
    assert r.returncode == 2
    assert r.stderr.splitlines()[0] == "bad/.ctxkit.yaml:3:23: error: thresholds.autocompact_buffer must be at " \
                                       "least 0, got -5"
    session(tmp_path / "small.jsonl", rounds=1, size=10)
    session(tmp_path / "huge.jsonl", rounds=12, size=20_000)  # over the default 167,000-token threshold
    entry = shlex.split(hooks["ctxkit-check"]["entry"])
    r = run(entry + ["small.jsonl"], tmp_path)
    assert (r.returncode, r.stdout) == (0, "small.jsonl: 52 tokens; autocompact threshold 167000; level ok\n")
    r = run(entry + ["small.jsonl", "huge.jsonl"], tmp_path)
    assert r.returncode == 1
    assert r.stdout.splitlines() == ["small.jsonl: 52 tokens; autocompact threshold 167000; level ok",
                                     "huge.jsonl: 516937 tokens; autocompact threshold 167000; level blocking"]
    r = run(entry + ["--level", "blocking", "--context-window", "1000000", "huge.jsonl"], tmp_path)  # a hook's args
    assert r.returncode == 0


def _render(text: str, inputs: dict[str, str]) -> str:
    return re.sub(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}", lambda m: inputs[m[1]], text)


def test_the_action_checks_a_path_with_annotations(tmp_path):
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    steps = action["runs"]["steps"]
    install = next(s for s in steps if "pip install" in s.get("run", ""))
    assert '"$GITHUB_ACTION_PATH"' in install["run"]  # the action installs the ctxkit it ships with
    checks = [s for s in steps if "ctxkit " in s.get("run", "")]
    assert len(checks) == 1
    (tmp_path / "sessions" / ".ctxkit").mkdir(parents=True)
    session(tmp_path / "sessions" / "small.jsonl", rounds=1, size=10)
    session(tmp_path / "sessions" / "big.jsonl", rounds=8)
    (tmp_path / "sessions" / ".ctxkit" / "not-a-session.jsonl").write_text("{oops\n")  # a store: skipped
    defaults = {name: spec.get("default", "") for name, spec in action["inputs"].items()}

    def step(**given):
        inputs = {**defaults, **given}
        env = {k: _render(str(v), inputs) for k, v in checks[0].get("env", {}).items()}
        return run(["bash", "-e", "-c", _render(checks[0]["run"], inputs)], tmp_path, env)

    r = step(path="sessions")  # the default threshold: both are far under
    assert (r.returncode, r.stdout) == (0, "")
    (tmp_path / "tight.yaml").write_text("extends: no-llm\ncontext_window: 40000\n")
    r = step(path="sessions/*.jsonl", policy="tight.yaml")
    assert r.returncode == 1
    assert r.stdout == ("::error file=sessions/big.jsonl,line=18,col=1::21963 tokens reach the autocompact threshold "
                        "7000 (level blocking); compact this session\n")
    r = step(path="sessions", policy="tight.yaml", level="blocking")
    assert r.returncode == 1 and "level blocking" in r.stdout
