"""The tool-result budget decides like Claude Code: its per-tool limits, capped at the global one, and its words.

The recorded sessions hold what Claude Code persisted: a ``<persisted-output>`` preview in the transcript
and the full output in the session's ``tool-results/`` folder. Put those outputs back inline and
``ctxkit compact --stage tool-result-budget`` must persist exactly the same results.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from builders import Session
from conftest import cc_sessions

from ctxkit.cli.main import app
from ctxkit.store.offload import human_size

_SAVED_TO = re.compile(r"Full output saved to: (\S+)")


def _sessions_with_persisted_outputs() -> list[Path]:
    return [p for p in cc_sessions() if (p / "tool-results").is_dir() and any((p / "tool-results").iterdir())]


def _inline(session: Path, out: Path) -> set[str]:
    """Write ``session.jsonl`` with every persisted output put back inline; returns the tool_use ids Claude Code
    persisted."""
    persisted: set[str] = set()
    lines = []
    for line in (session / "session.jsonl").read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        content = (entry.get("message") or {}).get("content") if entry.get("type") == "user" else None
        for block in content if isinstance(content, list) else []:
            text = block.get("content") if block.get("type") == "tool_result" else None
            if isinstance(text, str) and text.startswith("<persisted-output>"):
                name = Path(_SAVED_TO.search(text).group(1)).name
                block["content"] = (session / "tool-results" / name).read_text(encoding="utf-8")
                persisted.add(block["tool_use_id"])
        lines.append(json.dumps(entry, ensure_ascii=False))
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return persisted


SESSIONS = _sessions_with_persisted_outputs()


@pytest.mark.skipif(not SESSIONS, reason="no recorded session with persisted tool outputs")
@pytest.mark.parametrize("session", SESSIONS, ids=[p.name for p in SESSIONS])
def test_the_budget_persists_what_claude_code_persisted(runner, session):
    expected = _inline(session, Path("inline.jsonl"))
    assert expected
    r = runner.invoke(app, ["compact", "inline.jsonl", "--stage", "tool-result-budget", "--report", "json",
                            "-o", "out.jsonl"])
    assert r.exit_code == 0, r.stderr
    details = json.loads(r.stderr)["stages"][0]["details"]
    assert set(details["persisted"]) == expected
    # and the preview says it as Claude Code said it: "Preview (first 2KB):"
    out = Path("out.jsonl").read_text(encoding="utf-8")
    assert out.count("Preview (first 2KB):") == len(expected) and "2.0KB" not in out


def _bash_session(tmp_path: Path, size: int) -> Path:
    s = Session(tmp_path)
    s.prompt("run the tests")
    s.tool("Bash", {"command": "pytest"}, "y" * size)
    s.tool("Grep", {"pattern": "x"}, "z" * size)
    s.write(tmp_path / "s.jsonl")
    return tmp_path / "s.jsonl"


def _persisted(runner, path: Path, *sets: str) -> list[str]:
    args = ["compact", str(path), "--stage", "tool-result-budget", "--report", "json", "-o", "out.jsonl"]
    for s in sets:
        args += ["--set", s]
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stderr)["stages"][0]["details"]["persisted"]


def test_bash_output_over_30000_characters_is_persisted_other_tools_at_50000(runner, tmp_path):
    assert _persisted(runner, _bash_session(tmp_path, 30_001)) == ["toolu_2"]  # Bash, not Grep
    assert _persisted(runner, _bash_session(tmp_path, 30_000)) == []


def test_per_tool_limits_are_capped_at_the_global_limit(runner, tmp_path):
    path = _bash_session(tmp_path, 60_000)
    # a per-tool limit above the global 50,000 does not let a 60,000-character result through
    assert _persisted(runner, path, "stages.tool-result-budget.options.per_tool={Grep: 100000}") == \
        ["toolu_2", "toolu_4"]
    # an entry of your own is added to the defaults: Bash keeps its 30,000
    path = _bash_session(tmp_path, 40_000)
    assert _persisted(runner, path, "stages.tool-result-budget.options.per_tool={Grep: 35000}") == \
        ["toolu_2", "toolu_4"]


@pytest.mark.parametrize("n,text", [(812, "812 bytes"), (2_000, "2KB"), (2_048, "2KB"), (1_280, "1.3KB"),
                                    (44_954, "43.9KB"), (1_258_291, "1.2MB"), (3 * 1024 ** 3, "3GB")])
def test_sizes_are_written_as_claude_code_writes_them(n, text):
    assert human_size(n) == text
