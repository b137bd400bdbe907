"""ctxkit's hooks in the genuine Claude Code CLI, as ../shared/tools/cc-harness runs it.

``ctxkit hooks install --project`` into a scratch project (a git repository with a settings file of
its own), a session with a few tool calls, then ``/compact``: PreCompact's instructions reach the
summary request, SessionStart (compact) adds ctxkit's list to the context, and the next request the
stand-in API logs carries it. ``ctxkit hooks uninstall`` then leaves settings.json as it was, byte
for byte. Skips with the reason when the harness cannot run the CLI here.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_compaction_resume import CACHE, HARNESS, RUN

SETTINGS = b'{\n  "permissions": {\n    "allow": ["Bash(git status)"]\n  },\n  "env": {"FOO": "bar"}\n}\n'
PROMPT = "Please fix the parse_order function in app/models.py, ticket 4521"


def ctxkit(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ctxkit.cli.main", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def run_claude(root: Path, work: Path, out: Path, prompt: str, steps: list[dict], *args: str) -> str:
    scenario = root / f"scenario-{len(list(root.glob('scenario-*')))}.json"
    scenario.write_text(json.dumps({"steps": steps, "summary": "<analysis>a</analysis>\n<summary>\n1. Primary "
                                    "Request and Intent: look at the code.\n</summary>"}))
    # the hooks run `ctxkit ...`: this interpreter's scripts folder first on PATH
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    done = subprocess.run([str(RUN), str(scenario), str(work), str(out), prompt, *args], capture_output=True,
                          text=True, timeout=600, env=env)
    if done.returncode != 0 or not done.stdout.split():
        raise RuntimeError(f"run-claude.sh exited {done.returncode}: {(done.stderr or done.stdout)[-1500:]}")
    return done.stdout.split()[0]


def test_a_compaction_in_claude_code_fires_both_hooks_and_the_next_request_carries_ctxkits_context(tmp_path):
    if not RUN.exists():
        pytest.skip(f"cc-harness not found at {HARNESS}")
    if not CACHE.exists() and shutil.which("npm") is None:
        pytest.skip(f"the Claude Code CLI is not cached at {CACHE} and npm is not installed to fetch it")
    if shutil.which("ctxkit", path=str(Path(sys.executable).parent)) is None:
        pytest.skip(f"no ctxkit command beside {sys.executable} for Claude Code to run")
    work = (tmp_path / "project").resolve()
    (work / "app").mkdir(parents=True)
    (work / "app" / "models.py").write_text("class Order:\n    def parse_order(self, raw):\n        return raw\n")
    (work / "app" / "views.py").write_text("def view():\n    return 1\n")
    subprocess.run(["git", "init", "-q", str(work)], check=True, timeout=60)
    settings = work / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_bytes(SETTINGS)
    (work / "app" / "nested").mkdir()
    r = ctxkit("hooks", "install", "--project", cwd=work / "app" / "nested")  # the git root's settings
    assert r.returncode == 0, r.stderr
    assert settings.read_bytes() != SETTINGS

    out = tmp_path / "out"
    steps = [{"blocks": [{"type": "tool_use", "name": "Read", "input": {"file_path": str(work / "app/models.py")}}]},
             {"blocks": [{"type": "tool_use", "name": "Bash",
                          "input": {"command": "python3 -c 'import nosuchmod_xyz'", "description": "try"}}]},
             {"blocks": [{"type": "tool_use", "name": "Read", "input": {"file_path": str(work / "app/views.py")}}]},
             {"blocks": [{"type": "text", "text": "Read both."}]}]
    try:
        sid = run_claude(tmp_path, work, out, PROMPT, steps)
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"the cc-harness cannot run the Claude Code CLI here: {exc}")
    run_claude(tmp_path, work, out, "/compact", [], "--resume", sid)
    run_claude(tmp_path, work, out, "Go on", [{"blocks": [{"type": "text", "text": "Going on."}]}], "--resume", sid)
    requests = [json.loads(line)["body"] for line in (out / "requests.jsonl").read_text().splitlines()]

    # PreCompact: ctxkit's instructions are in the summary request, with what the summary must keep
    summary_requests = [b for b in requests if "<analysis>" in json.dumps(b["messages"][-1])]
    assert len(summary_requests) == 1
    asked = json.dumps(summary_requests[0]["messages"][-1], ensure_ascii=False)
    assert "ctxkit: the summary replaces this conversation." in asked
    assert "ticket 4521" in asked and "Errors still open" in asked and "nosuchmod_xyz" in asked

    # SessionStart (compact): the transcript records ctxkit's context, and the next request carries it
    transcript = next((out / "home" / ".claude" / "projects").glob(f"*/{sid}.jsonl"))
    added = [json.loads(line)["attachment"]["content"] for line in transcript.read_text().splitlines()
             if '"hook_additional_context"' in line and '"SessionStart"' in line]
    assert len(added) == 1 and added[0][0].startswith("ctxkit: Claude Code just compacted this conversation.")
    after = requests[requests.index(summary_requests[0]) + 1:]
    main = [b for b in after if b.get("tools")]
    assert main, "no request after the compaction"
    sent = json.dumps(main[0]["messages"], ensure_ascii=False)
    assert "This session is being continued from a previous conversation" in sent  # Claude Code's summary
    assert "ctxkit: Claude Code just compacted this conversation." in sent
    context = sent[sent.index("ctxkit: Claude Code just compacted"):]
    assert "ticket 4521" in context and "ModuleNotFoundError: No module named 'nosuchmod_xyz'" in context
    assert f"line 3 of {transcript}" in context.replace("\\n", "\n")

    r = ctxkit("hooks", "uninstall", cwd=work)
    assert r.returncode == 0, r.stderr
    assert settings.read_bytes() == SETTINGS
