"""``ctxkit expand`` gives back what ctxkit took, and no more: the agent's own persisted outputs stay.

Claude Code moves a large tool output out of the transcript itself: the line holds a
``<persisted-output>`` preview and the output is in ``<session id>/tool-results/`` beside the
session. ctxkit did not take it out, so expand leaves the preview as the agent wrote it and
``cmp restored.jsonl session.jsonl`` holds (the README's proof that nothing is lost);
``--inline-agent-outputs`` inlines those files on request. Run from the command line, in the folder
layout Claude Code writes.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from builders import Call, Turn, conversation
from conftest import CC_CORPUS

SID = "s-1"  # the builders' session id
AGENT_OUTPUT = "".join(f"test_{i:04d} PASSED\n" for i in range(3000))  # what Claude Code saved aside
PREVIEW = (f"<persisted-output>\nOutput too large (58.6KB). Full output saved to: /home/dev/.claude/projects/-work/"
           f"{SID}/tool-results/b7x2k9q1.txt\n\nPreview (first 2KB):\n{AGENT_OUTPUT[:2000]}\n...\n</persisted-output>")


def ctxkit(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ctxkit.cli.main", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=120)


def _project(tmp_path, *, preview_first: bool = False):
    """A Claude Code project folder: the session, and its tool-results/ folder holding one output the
    agent persisted; the session also has results ctxkit will persist and clear (the agent's preview
    among them when ``preview_first``: it is then old enough for microcompact)."""
    agents = [[Call("Bash", {"command": "pytest -q"}, PREVIEW)]]
    turns = [Turn("Run the whole test suite and fix what fails.", [
        *(agents if preview_first else []),
        *[[Call("Read", {"file_path": f"/work/src/m{k}.py"}, f"def f{k}():\n    return {k}\n" * 300)]
          for k in range(8)],  # old: microcompact clears them
        [Call("Bash", {"command": "cat build.log"}, "build line\n" * 6000)],  # over tool-result-budget's limit
        *([] if preview_first else agents),  # recent: left alone by ctxkit
    ], answer="All green.")]
    folder = tmp_path / "projects" / "-work"
    (folder / SID / "tool-results").mkdir(parents=True)
    (folder / SID / "tool-results" / "b7x2k9q1.txt").write_text(AGENT_OUTPUT)
    (folder / f"{SID}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in conversation(turns)))
    return folder


@pytest.fixture
def project(tmp_path):
    return _project(tmp_path)


def test_expand_gives_back_the_session_byte_for_byte_leaving_the_agents_own_previews(project):
    compacted = ctxkit("compact", f"{SID}.jsonl", "-o", "compacted.jsonl", cwd=project)  # the README's run
    assert compacted.returncode == 0, compacted.stderr
    assert "persisted 1 result(s)" in compacted.stderr and "cleared 5 old tool result(s)" in compacted.stderr
    back = ctxkit("expand", "compacted.jsonl", "-o", "restored.jsonl", cwd=project)
    assert back.returncode == 0, back.stderr
    assert back.stderr == "restored 6 tool output(s)\n"
    assert (project / "restored.jsonl").read_bytes() == (project / f"{SID}.jsonl").read_bytes()


def test_inline_agent_outputs_puts_the_agents_own_files_in_on_request(project):
    assert ctxkit("compact", f"{SID}.jsonl", "-o", "compacted.jsonl", cwd=project).returncode == 0
    back = ctxkit("expand", "compacted.jsonl", "-o", "full.jsonl", "--inline-agent-outputs", cwd=project)
    assert back.returncode == 0, back.stderr
    full = (project / "full.jsonl").read_text().splitlines(keepends=True)
    original = (project / f"{SID}.jsonl").read_text().splitlines(keepends=True)
    changed = [(a, b) for a, b in zip(original, full, strict=True) if a != b]
    assert len(changed) == 1  # the line holding the preview, and only it
    assert json.loads(changed[0][1])["message"]["content"][0]["content"] == AGENT_OUTPUT
    assert "<persisted-output>" in changed[0][0]


def test_an_agents_preview_ctxkit_cleared_comes_back_as_the_preview_or_inlined_on_request(tmp_path):
    project = _project(tmp_path, preview_first=True)
    compacted = ctxkit("compact", f"{SID}.jsonl", "-o", "compacted.jsonl", cwd=project)
    assert "microcompact: applied: cleared" in compacted.stderr, compacted.stderr
    assert "b7x2k9q1.txt" not in (project / "compacted.jsonl").read_text()  # the preview, cleared
    assert ctxkit("expand", "compacted.jsonl", "-o", "restored.jsonl", cwd=project).returncode == 0
    assert (project / "restored.jsonl").read_bytes() == (project / f"{SID}.jsonl").read_bytes()
    assert ctxkit("expand", "compacted.jsonl", "-o", "full.jsonl", "--inline-agent-outputs", cwd=project).returncode == 0
    assert AGENT_OUTPUT in [json.loads(x)["message"]["content"][0].get("content") for x in
                            (project / "full.jsonl").read_text().splitlines()
                            if '"tool_result"' in x]


@pytest.mark.skipif(not (CC_CORPUS / "big-outputs" / "tool-results").is_dir(), reason="shared corpus not found")
def test_a_recorded_session_with_its_tool_results_comes_back_byte_for_byte(tmp_path):
    """The corpus session whose big output Claude Code persisted, with its tool-results/ beside it, as
    the README runs it: compact, expand, cmp."""
    shutil.copytree(CC_CORPUS / "big-outputs", tmp_path / "s", ignore=shutil.ignore_patterns("workdir", "*.gz"))
    folder = tmp_path / "s"
    assert ctxkit("compact", "session.jsonl", "-o", "compacted.jsonl", cwd=folder).returncode == 0
    back = ctxkit("expand", "compacted.jsonl", "-o", "restored.jsonl", cwd=folder)
    assert back.returncode == 0, back.stderr
    assert (folder / "restored.jsonl").read_bytes() == (folder / "session.jsonl").read_bytes()
