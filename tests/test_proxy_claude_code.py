"""The genuine Claude Code CLI through ``ctxkit proxy``: ``ANTHROPIC_BASE_URL`` at the proxy, the
cc-harness's scripted stand-in API (``../shared/tools/cc-harness/mock_anthropic.py``) behind it, set up
as ``run-claude.sh`` sets it up. Skips with the reason when the harness or the CLI is not there."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import SHARED
from proxy_upstream import RunningProxy
from test_proxy import _paired, _prefix_breaks

from ctxkit import load_policy
from ctxkit.proxy import ProxySettings
from ctxkit.proxy.conversations import live_managers

HARNESS = SHARED / "tools" / "cc-harness"
VERSION = os.environ.get("CC_VERSION", "2.1.328")
CLI = Path(os.environ.get("CC_HARNESS_CACHE", Path.home() / ".cache" / "cc-harness")) / VERSION / "package" / "claude"


class Logged:
    """A request the stand-in API logged, shaped as :func:`test_proxy._prefix_breaks` reads them."""

    def __init__(self, body: dict):
        self.body = body

    def json(self) -> dict:
        return self.body


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def stand_in(tmp_path):
    if not (HARNESS / "mock_anthropic.py").exists():
        pytest.skip(f"cc-harness not found at {HARNESS}")
    if not CLI.exists():
        pytest.skip(f"the Claude Code CLI is not cached at {CLI} (run {HARNESS / 'run-claude.sh'} once to fetch it)")
    steps = [{"blocks": [{"type": "tool_use", "name": "Bash",
                          "input": {"command": f"seq {k} 4000", "description": f"numbers from {k}"}}]}
             for k in range(1, 12)]
    steps.append({"blocks": [{"type": "text", "text": "Done printing."}]})
    scenario = tmp_path / "scenario.json"
    scenario.write_text(json.dumps({"steps": steps}))
    port, log = _free_port(), tmp_path / "requests.jsonl"
    mock = subprocess.Popen([sys.executable, str(HARNESS / "mock_anthropic.py"), str(port), str(scenario), str(log)])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    yield f"http://127.0.0.1:{port}", log
    mock.terminate()
    mock.wait(10)


def test_the_claude_code_cli_completes_a_session_through_the_proxy(tmp_path, stand_in):
    upstream, log = stand_in
    records = []
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    # Claude Code persists a Bash output over 30,000 characters itself; the policy here persists those
    # over 10,000 (each `seq` prints ~19,000), so that the proxy has something to do
    policy = load_policy("no-llm", ["stages.tool-result-budget.options.per_tool.Bash=10000"], cwd=tmp_path)
    settings = ProxySettings(upstream, live_managers(policy), store=tmp_path / "store", on_request=records.append)
    with RunningProxy(settings) as proxy:
        env = {**{k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE"))},
               "HOME": str(home), "ANTHROPIC_BASE_URL": proxy.url, "ANTHROPIC_API_KEY": "sk-ant-harness",
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1"}
        done = subprocess.run([str(CLI), "-p", "Print the numbers, step by step.", "--output-format", "json",
                               "--allowedTools", "Bash,Read,Grep,Glob,Edit,Write"], cwd=work, env=env,
                              capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["subtype"] == "success" and not result["is_error"], result
    assert "Done printing." in result["result"]
    seen = [json.loads(line)["body"] for line in log.read_text().splitlines()]
    main = [Logged(b) for b in seen if b.get("tools")]
    assert len(main) == 12
    assert all(_paired(q.json()["messages"]) for q in main)
    assert _prefix_breaks(main) <= max(1, len(main) // 10)
    managed = [r for r in records if r.managed]
    assert managed and all(r.tokens_sent < r.tokens_in for r in managed), [
        (r.path, r.tokens_in, r.tokens_sent) for r in records]
    assert all(r.status == 200 and r.error is None for r in records)
    transcripts = list((home / ".claude" / "projects").rglob("*.jsonl"))  # the tools ran for real
    assert transcripts and "\\n3999\\n4000" in transcripts[0].read_text()
