"""The genuine Codex CLI resumes a session ctxkit compacted, and its next request carries the compacted
history: recorded against a stand-in of the Responses API on loopback (tests/responses_standin.py,
through Codex's provider ``base_url``), compacted with ``ctxkit compact --force``, resumed with
``codex exec resume``. Codex ships its binary inside its npm package; the package is fetched once with
``npm pack`` into ~/.cache/ctxkit-tests/ (the test skips, saying why, when the registry is unreachable)."""
from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from agent_sessions import compact_in_place
from responses_standin import ResponsesStandIn, function_call, message

CODEX_VERSION = "0.171.0"
CACHE = Path.home() / ".cache" / "ctxkit-tests" / f"codex-{CODEX_VERSION}"


def _codex_binary() -> Path:
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip(f"the Codex CLI binary is fetched for linux-x64 only (this is {platform.system()} "
                    f"{platform.machine()})")
    binary = CACHE / "package" / "vendor" / "x86_64-unknown-linux-musl" / "bin" / "codex"
    if binary.exists():
        return binary
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed: the Codex CLI cannot be fetched")
    CACHE.mkdir(parents=True, exist_ok=True)
    try:
        done = subprocess.run([npm, "pack", f"@openai/codex@{CODEX_VERSION}-linux-x64", "--pack-destination",
                               str(CACHE)], capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        pytest.skip("the npm registry did not answer in time")
    tgz = CACHE / f"openai-codex-{CODEX_VERSION}-linux-x64.tgz"
    if done.returncode != 0 or not tgz.exists():
        pytest.skip(f"the npm registry is unreachable: npm pack failed ({done.stderr.strip()[-200:]})")
    with tarfile.open(tgz) as tar:
        tar.extractall(CACHE, filter="data")
    tgz.unlink()
    return binary


def _configure(home: Path, url: str) -> None:
    (home / "config.toml").write_text(f'''model = "gpt-5.1-codex"
model_provider = "standin"
[model_providers.standin]
name = "standin"
base_url = "{url}"
env_key = "STANDIN_API_KEY"
wire_api = "responses"
''')


def test_codex_resumes_a_rollout_ctxkit_compacted_with_the_compacted_history(tmp_path):
    codex = _codex_binary()
    home, work = tmp_path / "codex-home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    env = {**os.environ, "CODEX_HOME": str(home), "STANDIN_API_KEY": "test", "HOME": str(tmp_path)}
    # record: four shell calls with long outputs, then an answer
    script = [[function_call(f"call_{k}", "exec_command", {"cmd": f"seq {k} 4000"})] for k in range(4)]
    script.append([message("Counted four times.")])
    with ResponsesStandIn(script) as api:
        _configure(home, api.url)
        done = subprocess.run([str(codex), "exec", "--skip-git-repo-check", "-s", "danger-full-access",
                               "count four times"], cwd=work, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
    [rollout] = (home / "sessions").rglob("rollout-*.jsonl")
    session_id = json.loads(rollout.read_text().splitlines()[0])["payload"]["id"]
    before = rollout.read_bytes()
    # compact it in place, as a user would between two runs of the agent
    compact_in_place(rollout, "codex", tmp_path / "store")
    # resume in the genuine CLI: its next request is the compacted history, then the new prompt
    with ResponsesStandIn([[message("Resumed.")]]) as api:
        _configure(home, api.url)
        done = subprocess.run([str(codex), "exec", "--skip-git-repo-check", "resume", session_id, "and now?"],
                              cwd=work, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        sent = api.requests[0]["body"]["input"]
    texts = [c.get("text", "") for item in sent for c in item.get("content") or [] if isinstance(c, dict)]
    assert any(x.startswith("This session is being continued from a previous conversation") for x in texts)
    assert not any(item.get("type") == "function_call" for item in sent)  # summarized, not sent again
    assert "Counted four times." in texts and texts[-1] == "and now?"  # the kept tail, then the new prompt
    # and expand gives back the rollout Codex wrote, with what the resume appended after it
    done = subprocess.run([sys.executable, "-m", "ctxkit.cli.main", "expand", "--store", str(tmp_path / "store"),
                           str(rollout), "-o", str(tmp_path / "expanded.jsonl")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "expanded.jsonl").read_bytes().startswith(before)
