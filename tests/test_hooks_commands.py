"""``ctxkit hooks pre-compact`` and ``ctxkit hooks session-start`` as Claude Code runs them: the hook's
JSON on stdin, the answer on stdout, and never a failure that would break the session."""
from __future__ import annotations

import hashlib
import json
import string

import pytest
from builders import Call, Turn, conversation, entry, write
from conftest import CC_CORPUS

from ctxkit.cli.main import app

GITHUB_TOKEN = "ghp_" + "".join(string.ascii_letters[b % 52] for b in hashlib.shake_256(b"hooks").digest(36))
PROMPT = f"Fix `parse_order` in app/models.py for ticket 4521; the deploy token is {GITHUB_TOKEN}"
TURNS = [
    Turn(PROMPT, [[Call("Read", {"file_path": "app/models.py"}, "class Order: ...")],
                  [Call("Bash", {"command": "pytest tests/test_orders.py"}, "E   KeyError: 'total'\nFAILED test_total",
                        is_error=True)],
                  [Call("Bash", {"command": "python -m build"}, "error: invalid command 'bdist_wheel'",
                        is_error=True)],
                  [Call("Bash", {"command": "python -m build"}, "Successfully built ctxkit")]],
         answer="The test still fails on the missing total."),
    Turn("Now also check app/views.py", [[Call("Read", {"file_path": "app/views.py"}, "def view(): ...")]]),
]


def hook_input(event: str, transcript, cwd, **extra) -> str:
    return json.dumps({"session_id": "s-1", "transcript_path": str(transcript), "cwd": str(cwd),
                       "hook_event_name": event, **extra})


@pytest.fixture
def session(tmp_path):
    return write(tmp_path / "s-1.jsonl", conversation(TURNS))


def test_pre_compact_prints_the_sections_and_what_the_summary_must_keep(runner, tmp_path, session):
    r = runner.invoke(app, ["hooks", "pre-compact"],
                      input=hook_input("PreCompact", session, tmp_path, trigger="manual", custom_instructions=""))
    assert r.exit_code == 0, r.stderr
    assert r.stderr == ""
    out = r.stdout
    assert out.startswith("ctxkit: the summary replaces this conversation. Write it in these nine sections:\n"
                          "1. Primary Request and Intent:\n   Everything the user has asked for")
    assert "9. Optional Next Step:" in out
    assert ("The user's prompts (2):\n- \"Fix `parse_order` in app/models.py for ticket 4521; the deploy token is "
            "[REDACTED:github-token]\"\n- \"Now also check app/views.py\"\n") in out
    assert GITHUB_TOKEN not in out
    assert "Files read or changed (2):\n- `app/models.py`\n- `app/views.py`\n" in out
    assert "Shell commands run (2):\n- `pytest tests/test_orders.py`\n- `python -m build`\n" in out
    # the build error was fixed by running the same command again; the test failure was not
    assert "Errors still open (2):\n- \"E KeyError: 'total'\"\n- \"FAILED test_total\"" in out
    assert "bdist_wheel" not in out


def test_session_start_before_the_compaction_is_written_names_everything_with_where_it_is(runner, tmp_path,
                                                                                          session):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "models.py").write_text("class Order: ...\n")
    r = runner.invoke(app, ["hooks", "session-start"], input=hook_input("SessionStart", session, tmp_path,
                                                                        source="compact"))
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    assert list(out) == ["hookSpecificOutput"] and out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    text = out["hookSpecificOutput"]["additionalContext"]
    assert text.startswith("ctxkit: Claude Code just compacted this conversation. Its summary may not keep what "
                           "follows, 8 things the conversation held")
    assert f"[REDACTED:github-token]\": line 1 of {session}\n" in text
    assert "- `app/models.py`: read it again\n" in text
    assert "- `app/views.py`: read it again (no longer on disk)" in text
    assert f"- \"E KeyError: 'total'\": line 5 of {session}" in text


def _compacted(tmp_path, summary: str, after: list[dict] | None = None):
    """The session, then a compaction of it as Claude Code writes one: a boundary and the summary."""
    entries = conversation(TURNS)
    boundary = entry("system", None, uuid="b-1", parent=None, subtype="compact_boundary",
                     content="Conversation compacted", logicalParentUuid=entries[-1]["uuid"],
                     compactMetadata={"trigger": "manual", "preTokens": 5000})
    text = ("This session is being continued from a previous conversation that ran out of context. The summary "
            "below covers the earlier portion of the conversation.\n\nSummary:\n" + summary)
    summary_line = entry("user", {"role": "user", "content": text}, uuid="u-sum", parent="b-1", isCompactSummary=True)
    return write(tmp_path / "s-1.jsonl", [*entries, boundary, summary_line, *(after or [])])


def test_session_start_after_a_written_compaction_names_only_what_the_summary_lost(runner, tmp_path):
    path = _compacted(tmp_path, f"1. The user asked: \"{PROMPT}\". Read app/models.py; ran `python -m build`.")
    r = runner.invoke(app, ["hooks", "session-start"], input=hook_input("SessionStart", path, tmp_path,
                                                                       source="compact"))
    assert r.exit_code == 0, r.stderr
    text = json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"]
    assert text.startswith("ctxkit: the compaction dropped 5 of the 8 things the conversation before it held")
    assert "The user's prompts (1):\n- \"Now also check app/views.py\": line 11 of" in text
    assert "Files read or changed (1):\n- `app/views.py`" in text
    assert "app/models.py`" not in text and "python -m build" not in text and "4521" not in text
    assert "Errors still open (2):" in text
    # a summary that keeps everything: nothing to add
    everything = ("Prompts: " + PROMPT + " / Now also check app/views.py. Files: app/models.py app/views.py. "
                  "Commands: pytest tests/test_orders.py, python -m build. Errors: E KeyError: 'total' FAILED test_total")
    path = _compacted(tmp_path, everything)
    r = runner.invoke(app, ["hooks", "session-start"], input=hook_input("SessionStart", path, tmp_path,
                                                                       source="compact"))
    assert (r.exit_code, r.stdout, r.stderr) == (0, "", "")


def test_session_start_on_other_sources_prints_nothing(runner, tmp_path, session):
    for source in ("startup", "resume", "clear"):
        r = runner.invoke(app, ["hooks", "session-start"], input=hook_input("SessionStart", session, tmp_path,
                                                                           source=source))
        assert (r.exit_code, r.stdout, r.stderr) == (0, "", "")


def test_what_the_hooks_print_stays_within_10000_characters(runner, tmp_path):
    turns = [Turn(f"Prompt number {k}: " + "please handle this carefully " * 12,
                  [[Call("Read", {"file_path": f"src/module_{k}.py"}, "x")]]) for k in range(400)]
    path = write(tmp_path / "long.jsonl", conversation(turns))
    r = runner.invoke(app, ["hooks", "session-start"], input=hook_input("SessionStart", path, tmp_path,
                                                                       source="compact"))
    text = json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"]
    assert len(text) <= 10_000
    assert "The user's prompts (400; the" in text and "oldest left out here):" in text
    assert "Prompt number 399:" in text and "src/module_399.py" in text  # the most recent are kept
    r = runner.invoke(app, ["hooks", "pre-compact"], input=hook_input("PreCompact", path, tmp_path, trigger="auto"))
    assert r.exit_code == 0 and len(r.stdout) <= 10_001


def test_the_policy_applies_and_an_untrusted_repository_policy_cannot_turn_redaction_off(runner, tmp_path, session):
    (tmp_path / "tickets.yaml").write_text("redact:\n  patterns:\n  - {regex: 'ticket \\d+', name: ticket}\n")
    r = runner.invoke(app, ["hooks", "pre-compact", "--policy", str(tmp_path / "tickets.yaml")],
                      input=hook_input("PreCompact", session, tmp_path, trigger="auto"))
    assert r.exit_code == 0, r.stderr
    assert "for [REDACTED:ticket];" in r.stdout
    (tmp_path / ".ctxkit.yaml").write_text("redact:\n  enabled: false\n")
    r = runner.invoke(app, ["hooks", "pre-compact"], input=hook_input("PreCompact", session, tmp_path, trigger="auto"))
    assert r.exit_code == 0, r.stderr
    assert GITHUB_TOKEN not in r.stdout and "[REDACTED:github-token]" in r.stdout


@pytest.mark.parametrize("command", ["pre-compact", "session-start"])
@pytest.mark.parametrize("stdin, says", [
    ("not json", "the hook's input on stdin is not JSON: "),
    ("[1]", "the hook's input on stdin is not a JSON object"),
    ('{"transcript_path": "/nonexistent/s.jsonl", "source": "compact", "cwd": "/"}', "/nonexistent/s.jsonl"),
])
def test_a_failing_hook_says_why_and_exits_1_so_the_session_goes_on(runner, command, stdin, says):
    r = runner.invoke(app, ["hooks", command], input=stdin)
    assert r.exit_code == 1  # not 2: on PreCompact, 2 would block the compaction
    assert r.stdout == ""
    assert r.stderr.startswith(f"ctxkit hooks {command}: ")
    assert says in r.stderr
    assert r.stderr.endswith("; Claude Code goes on without it\n")


def test_a_bad_policy_fails_the_hook_without_blocking(runner, tmp_path, session):
    r = runner.invoke(app, ["hooks", "pre-compact", "--policy", "nosuch"],
                      input=hook_input("PreCompact", session, tmp_path, trigger="auto"))
    assert r.exit_code == 1
    assert r.stderr.startswith("ctxkit hooks pre-compact: --policy:1:1: error: ")


def test_session_start_measures_a_compaction_claude_code_wrote(runner, tmp_path):
    """The corpus's manual /compact, cut where Claude Code had written the compaction and the model had
    not answered yet: what its real summary (and the files it attached again) lost, and only that."""
    source = CC_CORPUS / "manual-compact" / "session.jsonl"
    if not source.exists():
        pytest.skip(f"the corpus session {source} is not here")
    lines = source.read_bytes().split(b"\n")
    cut = next(i for i, line in enumerate(lines) if b'"Now add a discount parameter' in line)
    path = tmp_path / "session.jsonl"
    path.write_bytes(b"\n".join(lines[:cut]) + b"\n")
    r = runner.invoke(app, ["hooks", "session-start"], input=hook_input("SessionStart", path, tmp_path,
                                                                       source="compact"))
    assert r.exit_code == 0, r.stderr
    text = json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"]
    assert text.startswith("ctxkit: the compaction dropped 2 of the 4 things the conversation before it held")
    assert text.endswith(f"The user's prompts (1):\n- \"Explain the models\": line 3 of {path}\n\n"
                         f"Shell commands run (1):\n- `seq 1 2000`: line 29 of {path}")


def test_beside_a_ctxkit_store_session_start_gives_the_expand_command_that_restores_it(runner, tmp_path):
    big = "\n".join(f"test_case_{k} PASSED in 0.0{k % 10}s" for k in range(4000))
    turns = [Turn("Run the whole test suite", [[Call("Bash", {"command": "pytest -v"}, big)]])]
    path = write(tmp_path / "s.jsonl", conversation(turns))
    r = runner.invoke(app, ["compact", str(path), "-o", str(path), "--policy", "no-llm",
                            "--stage", "tool-result-budget"])
    assert r.exit_code == 0, r.stderr
    assert big not in path.read_text()  # the output went to the store beside the session
    r = runner.invoke(app, ["hooks", "session-start"], input=hook_input("SessionStart", path, tmp_path,
                                                                       source="compact"))
    text = json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"]
    store = tmp_path / ".ctxkit"
    assert text.endswith(f"Outputs ctxkit moved to its store ({store}) are put back by: ctxkit expand {path} -o FILE")
    r = runner.invoke(app, ["expand", str(path), "-o", str(tmp_path / "full.jsonl")])
    assert r.exit_code == 0, r.stderr
    assert json.dumps(big)[1:-1] in (tmp_path / "full.jsonl").read_text()
