"""What the genuine Claude Code CLI sends in the turn after a turn that compacted itself, and after hook context.

docs/simulate.md (spotter ``4d5611e5``) leaves one real session unexplained: the first request after a
turn that compacted itself read only the tools and system prompt. ``bench/cc_turn_after_compaction.py``
records such turns with the real CLI (against the cc-harness stand-in on loopback) and compares the last
request of turn 1 with the first of turn 2. The compaction is not what changes the messages: the next
turn sends every message of the compacted turn's last request first, as the cache model assumes. What
does change them, in 2.0.67 to 2.1.150, is a PostToolUse hook's ``additionalContext``: within its turn
a text block after the tool result, from the next turn on folded into the result's content, so the next
turn rewrites from the first such result. A 2.1.39 transcript (spotter's version) does not record what a
hook printed, so simulate cannot see it; these tests keep what the CLI does. A 2.1.150 or 2.1.328
transcript does record it: ctxkit's request, at each point of such a session, is the body the CLI sent.
The ``/compact`` control
shows the comparison does tell two message lists apart. Skips with the reason when the harness or the
CLI is not here.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, SHARED

from ctxkit.cli.main import app
from ctxkit.transcript.claude_code.requests import as_blocks, without_cache_control

BENCH = ROOT / "bench" / "cc_turn_after_compaction.py"
CACHE = Path(os.environ.get("CC_HARNESS_CACHE", Path.home() / ".cache" / "cc-harness"))


def _record(tmp_path: Path, version: str, scenario: str, *flags: str) -> dict:
    package = CACHE / version / "package"
    if not (SHARED / "tools" / "cc-harness" / "mock_anthropic.py").exists():
        pytest.skip(f"cc-harness not found under {SHARED / 'tools'}")
    if not (package / "claude").exists() and not ((package / "cli.js").exists() and shutil.which("node")):
        pytest.skip(f"Claude Code {version} is not cached at {package} (or node is missing for its cli.js)")
    done = subprocess.run([sys.executable, str(BENCH), version, "stream", scenario, str(tmp_path / "run"), *flags],
                          capture_output=True, text=True, timeout=300, env=dict(os.environ, CTXKIT_SHARED=str(SHARED)))
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


@pytest.mark.parametrize(("version", "scenario", "flags"), [
    ("2.1.38", "bgearly", ("--opus", "--hooks")),  # spotter's shape: a queued task notification, Opus, compact hooks
    ("2.1.39", "bgearly", ("--opus", "--hooks")),
    ("2.1.328", "auto", ()),
])
def test_the_turn_after_an_automatic_compaction_sends_the_previous_request_again_first(tmp_path, version,
                                                                                       scenario, flags):
    report = _record(tmp_path, version, scenario, *flags)
    assert report["compacted"], "the stand-in's usage did not make the CLI compact"
    assert report["last1_messages"] >= 5  # the compacted turn went on with tool calls after its summary
    assert report["system_same"] and report["tools_same"] and report["params_differ"] == {}
    assert report["prefix_as_blocks"], (report.get("last1_at"), report.get("first2_at"))
    assert report["first2_messages"] > report["last1_messages"]


def test_after_a_manual_compact_the_next_turn_shares_no_message_of_the_turn_before(tmp_path):
    report = _record(tmp_path, "2.1.38", "manual")
    assert report["compacted"]
    assert not report["prefix_as_blocks"] and report["part_at"] == 0


@pytest.mark.parametrize("version", ["2.1.38", "2.1.39"])
def test_a_post_tool_hooks_context_is_folded_into_its_result_from_the_next_turn_on(tmp_path, version):
    report = _record(tmp_path, version, "none", "--post-tool-context")
    assert not report["compacted"]
    assert report["part_at"] == 2 and not report["prefix_as_blocks"]  # from the first tool result on
    before, after = report["last1_at"]["content"], report["first2_at"]["content"]
    assert [b["type"] for b in before] == ["tool_result", "text"] and "Captured the call." in before[1]["text"]
    assert [b["type"] for b in after] == ["tool_result"] and "Captured the call." in json.dumps(after[0]["content"])


def test_claude_code_2_1_328_keeps_a_post_tool_hooks_context_where_it_was(tmp_path):
    report = _record(tmp_path, "2.1.328", "none", "--post-tool-context")
    assert report["prefix_as_blocks"], (report.get("last1_at"), report.get("first2_at"))


def _main_bodies(run: Path) -> list[dict]:
    bodies = [json.loads(x)["body"] for x in (run / "requests.jsonl").read_text().splitlines()]
    return [b for b in bodies if b.get("tools") and not any(
        s in json.dumps(b["messages"][-1:]) for s in ("<analysis>", "[SUGGESTION MODE"))]


@pytest.mark.parametrize(("version", "unrecorded"), [
    ("2.1.150", 1),  # its first message's context (skills, date) is not written where ctxkit reads it
    ("2.1.328", 0),
])
def test_where_a_transcript_records_a_hooks_context_ctxkit_sends_it_where_the_cli_did(tmp_path, runner, version,
                                                                                     unrecorded):
    report = _record(tmp_path, version, "none", "--post-tool-context")
    requests, folded = _each_request_as_sent(tmp_path, runner, Path(report["out"]), unrecorded)
    assert requests == 7
    assert folded == (2 if version == "2.1.150" else 0)  # turn 2's two requests send turn 1's results folded


def test_a_turn_opened_by_a_slash_command_folds_the_contexts_as_the_cli_did(tmp_path, runner):
    """Turn 2 a custom command: its results are folded from there as after a typed prompt (the command's
    own line aside: 2.1.150 ends it with a newline where it meets the text the command expands to, which
    ctxkit does not send)."""
    report = _record(tmp_path, "2.1.150", "none", "--post-tool-context", "--command-turn")
    requests, folded = _each_request_as_sent(tmp_path, runner, Path(report["out"]), 1, skip_text="<command-name>")
    assert requests == 7 and folded == 2


def test_parallel_calls_hook_contexts_are_sent_where_the_cli_did(tmp_path, runner):
    """Two Bash calls in one answer, a context each: 2.1.150 sends them after both results in their turn,
    and folds each into its own call's result from the next turn on."""
    report = _record(tmp_path, "2.1.150", "parallel", "--post-tool-context")
    requests, folded = _each_request_as_sent(tmp_path, runner, Path(report["out"]), 1)
    assert requests == 4 and folded == 2


def _each_request_as_sent(tmp_path: Path, runner, run: Path, unrecorded: int,
                          skip_text: str | None = None) -> tuple[int, int]:
    """Check ctxkit's request at each point of the run's session against the body the CLI sent (its first
    ``unrecorded`` messages aside, and the messages holding ``skip_text``); (how many requests, how many
    sent a result with a context folded in)."""
    sessions = [p for p in (run / "home" / ".claude" / "projects").glob("*/*.jsonl") if not p.name.startswith("agent-")]
    lines = sessions[0].read_text().splitlines()
    answers = []  # the line each answer opens on: the request it answers was made from the lines before it
    for k, line in enumerate(lines):
        d = json.loads(line)
        mid = (d.get("message") or {}).get("id") if d.get("type") == "assistant" else None
        if mid and mid not in {m for _, m in answers}:
            answers.append((k, mid))
    bodies = _main_bodies(run)
    assert len(answers) == len(bodies)
    folded = 0
    for (cut, _), body in zip(answers, bodies, strict=True):
        (tmp_path / "prefix.jsonl").write_text("".join(x + "\n" for x in lines[:cut]))
        done = runner.invoke(app, ["view", "--to", "anthropic-request", str(tmp_path / "prefix.jsonl")])
        assert done.exit_code == 0, done.output
        got = [as_blocks(m) for m in without_cache_control(json.loads(done.stdout)["messages"])]
        sent = [as_blocks(m) for m in without_cache_control(body["messages"])]
        assert len(got) == len(sent)
        assert [m for m in got[unrecorded:] if not skip_text or skip_text not in json.dumps(m)] == \
            [m for m in sent[unrecorded:] if not skip_text or skip_text not in json.dumps(m)]
        folded += "hook additional context" in json.dumps([b.get("content") for m in sent for b in m["content"]
                                                          if b.get("type") == "tool_result"])
    return len(bodies), folded
