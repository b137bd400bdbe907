"""``--force`` is Claude Code's ``/compact``: it compacts whatever the thresholds say; it does not clear.

Time-based microcompact clears old results only when the prompt cache is cold, forced or not: a manual
compaction on a warm cache summarizes the original results (Claude Code's ``/compact`` never replaces them
with placeholders first).
"""
from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from builders import T0, Session, iso

from ctxkit.cli.main import app

ERROR_TEXT = "ModuleNotFoundError: No module named 'shop.discounts'"


def _warm_session(tmp_path: Path) -> tuple[Path, str]:
    """Eight Bash calls (the first one failing), the last reply a minute before ``now``: a warm cache."""
    s = Session(tmp_path)
    s.prompt("make the discount tests pass")
    s.tool("Bash", {"command": "pytest tests/test_discounts.py"}, ERROR_TEXT + "\n" + "trace line\n" * 40,
           is_error=True)
    for k in range(7):
        s.tool("Bash", {"command": f"cat part{k}.txt"}, f"part {k}: " + "data " * 200)
    s.say("All parts read.")
    s.write(tmp_path / "s.jsonl")
    return tmp_path / "s.jsonl", iso(s.clock + timedelta(minutes=1))


def test_force_on_a_warm_cache_summarizes_the_original_results(runner, tmp_path):
    path, now = _warm_session(tmp_path)
    r = runner.invoke(app, ["compact", str(path), "--force", "--now", now, "--policy", "no-llm", "--report", "json",
                            "-o", "out.jsonl"])
    assert r.exit_code == 0, r.stderr
    stages = {s["id"]: s for s in json.loads(r.stderr)["stages"]}
    assert (stages["microcompact"]["action"], stages["microcompact"]["reason"]) == \
        ("nothing-to-do", "the prompt cache is warm")
    assert stages["autocompact"]["action"] == "applied"
    assert stages["autocompact"]["reason"].startswith("manual compaction (summary by extractive)")
    r = runner.invoke(app, ["view", "out.jsonl"])
    summary = json.loads(r.stdout.splitlines()[0])["content"]
    assert ERROR_TEXT in summary
    assert "[Old tool result content cleared]" not in summary


def test_force_on_a_cold_cache_still_clears_first(runner, tmp_path):
    """Two hours later the cache is cold: microcompact clears, with or without --force."""
    path, _ = _warm_session(tmp_path)
    later = iso(T0 + timedelta(hours=3))
    for k, extra in enumerate(([], ["--force"])):
        r = runner.invoke(app, ["compact", str(path), *extra, "--now", later, "--policy", "no-llm", "--report",
                                "json", "--store", f"store{k}", "-o", f"out{k}.jsonl"])
        assert r.exit_code == 0, r.stderr
        stages = {s["id"]: s for s in json.loads(r.stderr)["stages"]}
        assert stages["microcompact"]["reason"] == "cleared 3 old tool result(s)"
