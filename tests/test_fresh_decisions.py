"""Frozen decisions after a policy change: the report says so, and ``compact --fresh`` starts over.

A result microcompact cleared stays cleared on every later run (the model's earlier view must not
change under it: the prompt cache). With ``keep_recent`` raised, the report names the clearings the
current policy would not make; ``--fresh`` puts back what earlier runs took (as expand does), sets
their decisions aside (they still restore the older output) and decides again. Run end to end from
the command line on the README's example session.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "session.jsonl"
NOW = ["--now", "2026-11-20T13:00:00Z"]  # two hours after the last reply: the cache is cold
KEEP_10 = ["--set", "stages.microcompact.options.keep_recent=10"]
PLACEHOLDER = "[Old tool result content cleared]"


def ctxkit(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ctxkit.cli.main", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=120)


def line_of(stderr: str, stage: str) -> str:
    return next(x for x in stderr.splitlines() if x.startswith(f"{stage}:"))


@pytest.fixture
def folder(tmp_path):
    shutil.copy(EXAMPLE, tmp_path / "session.jsonl")
    first = ctxkit("compact", "session.jsonl", "-o", "c1.jsonl", *NOW, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert line_of(first.stderr, "microcompact").startswith("microcompact: applied: cleared 3 old tool result(s)")
    return tmp_path


def test_the_report_says_which_frozen_clearings_the_changed_policy_would_not_make(folder):
    again = ctxkit("compact", "session.jsonl", "-o", "c2.jsonl", *NOW, *KEEP_10, cwd=folder)
    assert again.returncode == 0, again.stderr
    assert line_of(again.stderr, "microcompact").startswith(  # (the tokens depend on the store's path)
        "microcompact: applied: replayed earlier clearing; 3 result(s) stay cleared by an earlier run that this "
        "policy would keep (keep_recent 10): decisions are frozen, `compact --fresh` makes them again [")
    # on the earlier output too, where the placeholders are in the input itself
    on_output = ctxkit("compact", "c1.jsonl", "-o", "c3.jsonl", *NOW, *KEEP_10, "--report", "json", cwd=folder)
    report = json.loads(on_output.stderr)
    micro = next(s for s in report["stages"] if s["id"] == "microcompact")
    assert len(micro["details"]["frozen_unlike_policy"]) == 3
    # the policy that made them: nothing to say
    same = ctxkit("compact", "session.jsonl", "-o", "c4.jsonl", *NOW, cwd=folder)
    assert "stay cleared" not in same.stderr


def test_the_budget_says_which_frozen_previews_and_full_results_the_changed_limits_would_not_make(folder):
    raised = ctxkit("compact", "session.jsonl", "-o", "c2.jsonl", *NOW, "--set",
                    "stages.tool-result-budget.options.max_result_chars=400000", "--set",
                    "stages.tool-result-budget.options.per_tool.Bash=400000", cwd=folder)
    assert line_of(raised.stderr, "tool-result-budget").startswith(
        "tool-result-budget: applied: persisted 0 result(s), replayed 1, noted 0 empty; 1 result(s) keep an "
        "earlier run's decision that this policy would not make (persisted under a lower limit, or seen in full "
        "under a higher one): decisions are frozen, `compact --fresh` makes them again [")  # the 177 KB test log
    # a lower limit under which no result seen in full would be persisted (a preview would be longer): no note
    lowered = ctxkit("compact", "session.jsonl", "-o", "c3.jsonl", *NOW, "--set",
                     "stages.tool-result-budget.options.max_result_chars=10", cwd=folder)
    assert "earlier run's decision" not in lowered.stderr
    fresh = ctxkit("compact", "session.jsonl", "-o", "c4.jsonl", *NOW, "--fresh", "--set",
                   "stages.tool-result-budget.options.max_result_chars=400000", "--set",
                   "stages.tool-result-budget.options.per_tool.Bash=400000", cwd=folder)
    # the log in full (and the empty `git status` the model had answered left as it was)
    assert line_of(fresh.stderr, "tool-result-budget") == "tool-result-budget: nothing-to-do (every tool result is within budget)"


def test_fresh_decides_again_and_every_output_still_expands(folder):
    fresh = ctxkit("compact", "session.jsonl", "-o", "c2.jsonl", *NOW, *KEEP_10, "--fresh", cwd=folder)
    assert fresh.returncode == 0, fresh.stderr
    assert line_of(fresh.stderr, "microcompact") == "microcompact: nothing-to-do (nothing old enough to clear)"
    assert "earlier decisions set aside" in fresh.stderr
    assert PLACEHOLDER not in (folder / "c2.jsonl").read_text()
    # frozen again, under the new decisions: a later run without --fresh does not bring the old ones back
    later = ctxkit("compact", "session.jsonl", "-o", "c3.jsonl", *NOW, *KEEP_10, cwd=folder)
    assert line_of(later.stderr, "microcompact") == "microcompact: nothing-to-do (nothing old enough to clear)"
    assert (folder / "c3.jsonl").read_bytes() == (folder / "c2.jsonl").read_bytes()
    # nothing lost: the output written under the set-aside decisions still comes back, and so does the new one
    for out in ("c1.jsonl", "c2.jsonl"):
        back = ctxkit("expand", out, "-o", f"back-{out}", cwd=folder)
        assert back.returncode == 0, back.stderr
        assert (folder / f"back-{out}").read_bytes() == (folder / "session.jsonl").read_bytes()


def test_fresh_on_an_earlier_output_starts_from_what_expand_gives_back(folder):
    """The input is the earlier output (placeholders and a persisted preview in it): --fresh puts the
    originals back first, then the new policy decides."""
    fresh = ctxkit("compact", "c1.jsonl", "-o", "c2.jsonl", *NOW, *KEEP_10, "--fresh", cwd=folder)
    assert fresh.returncode == 0, fresh.stderr
    # the 3 results microcompact cleared, the persisted log among them (the empty result was answered: no note)
    assert "--fresh: 3 tool output(s) put back as they were" in " ".join(fresh.stderr.split())
    assert PLACEHOLDER not in (folder / "c2.jsonl").read_text()
    assert line_of(fresh.stderr, "tool-result-budget").startswith("tool-result-budget: applied: persisted 1 result(s)")
    back = ctxkit("expand", "c2.jsonl", "-o", "back.jsonl", cwd=folder)
    assert back.returncode == 0, back.stderr
    assert (folder / "back.jsonl").read_bytes() == (folder / "session.jsonl").read_bytes()


@pytest.mark.parametrize("to", ["anthropic", "openai"])
def test_fresh_on_a_compacted_message_list_decides_from_the_whole_history(tmp_path, to):
    (tmp_path / "m.json").write_text(ctxkit("view", "--to", to, str(EXAMPLE), cwd=tmp_path).stdout)
    assert ctxkit("compact", "--force", "m.json", "-o", "c.json", cwd=tmp_path).returncode == 0
    fresh = ctxkit("compact", "--format", to, "c.json", "-o", "f.json", "--fresh", *KEEP_10,
                   "--set", "stages.autocompact.enabled=false", "--force", cwd=tmp_path)
    assert fresh.returncode == 0, fresh.stderr
    assert line_of(fresh.stderr, "microcompact") == "microcompact: nothing-to-do (nothing old enough to clear)"
    out = (tmp_path / "f.json").read_text()
    assert len(out.splitlines()) == len((tmp_path / "m.json").read_text().splitlines())  # the summary undone
    assert PLACEHOLDER not in out
