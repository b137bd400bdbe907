"""Trust for repository policies (issue 8): a cloned repository's .ctxkit.yaml cannot run a program or
send the key and transcript elsewhere until the user trusts the file's exact content.

Each test works in a temporary "cloned repository" with XDG_CONFIG_HOME in a temporary folder (the
``runner`` fixture), drives the CLI as a user would, and checks what ran: a marker file a hostile
summarizer command would write, and the requests a local HTTP server (tests/mock_messages_api.py)
received.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from mock_messages_api import MockMessagesAPI

from ctxkit import load_policy
from ctxkit.cli.main import app
from ctxkit.errors import PolicyError
from ctxkit.policy.trust import keys_requiring_trust, trust_file_path

KEY = "sk-ant-test-0123456789abcdef"
COMMAND_MESSAGE = (
    "{file}:4:3: error: summarizer.command comes from a repository policy that you have not trusted: it runs a "
    "shell command with your environment (API keys included). Nothing was run (read the file, then run: ctxkit "
    "policy trust {file})\nctxkit: 1 problem in the policy\n")
BASE_URL_MESSAGE = (
    "{file}:4:3: error: summarizer.base_url comes from a repository policy that you have not trusted: it sends "
    "your API key and the transcript to that host. Nothing was run (read the file, then run: ctxkit policy trust "
    "{file})\nctxkit: 1 problem in the policy\n")


def session(path: Path) -> Path:
    """A short Anthropic-format session (compacted with --force)."""
    lines: list[dict] = [{"role": "user", "content": "Refactor the billing module"}]
    for k in range(4):
        tid = f"toolu_{k:02d}"
        lines.append({"role": "assistant", "content": [
            {"type": "text", "text": f"Step {k}."},
            {"type": "tool_use", "id": tid, "name": "Bash", "input": {"command": f"step {k}"}}]})
        lines.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid,
                                                   "content": " ".join(f"r{k}_{i}" for i in range(300))}]})
    lines.append({"role": "assistant", "content": [{"type": "text", "text": "Done."}]})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def hostile_command(marker: Path) -> str:
    """A summarizer command that leaves a marker behind, then prints a valid summary."""
    script = marker.parent / "hostile.py"
    script.write_text(f"import pathlib, sys\nsys.stdin.read()\npathlib.Path({str(marker)!r}).write_text('ran')\n"
                      "print('<summary>1. Primary Request and Intent: x</summary>')\n")
    return f"{sys.executable} {script}"


@pytest.fixture
def clone(runner, tmp_path, monkeypatch):
    """A freshly cloned repository (with a src/ folder) as the working directory; the session beside it."""
    repo = tmp_path / "clone"
    (repo / "src").mkdir(parents=True)
    session(repo / "s.jsonl")
    monkeypatch.chdir(repo)
    return repo


@pytest.fixture
def api():
    with MockMessagesAPI() as server:
        yield server


def write_policy(path: Path, summarizer: dict) -> Path:
    lines = ["# a policy that came with the repository", "summarizer:"]
    lines += [f"  {key}: {json.dumps(value)}" for key, value in summarizer.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def compact(runner, *args: str, env: dict | None = None):
    return runner.invoke(app, ["compact", "--force", "s.jsonl", "-o", "out.jsonl", *args], env=env)


# -- the scenario of the issue --------------------------------------------------------------------------
def test_a_hostile_summarizer_command_runs_only_once_the_file_is_trusted(runner, clone, tmp_path):
    marker = tmp_path / "ran"
    write_policy(clone / ".ctxkit.yaml", {"use": "command", "command": hostile_command(marker)})

    refused = compact(runner)
    assert refused.exit_code == 2
    assert refused.stderr == COMMAND_MESSAGE.format(file=".ctxkit.yaml")
    assert not marker.exists() and not (clone / "out.jsonl").exists() and not (clone / ".ctxkit").exists()

    trusted = runner.invoke(app, ["policy", "trust"])
    assert trusted.exit_code == 0, trusted.stderr
    assert trusted.stderr.startswith("trusted .ctxkit.yaml (sha256 ")
    assert f"  summarizer.command: {hostile_command(marker)}\n" in trusted.stderr
    assert trusted.stderr.endswith(f"recorded in {trust_file_path()}\n")
    assert trust_file_path().is_relative_to(tmp_path / "xdg")

    ran = compact(runner)
    assert ran.exit_code == 0, ran.stderr
    assert marker.read_text() == "ran" and "summary by command" in ran.stderr

    marker.unlink()
    with (clone / ".ctxkit.yaml").open("a") as f:
        f.write("# one more line\n")  # a changed file must be trusted again
    again = compact(runner)
    assert again.exit_code == 2 and again.stderr == COMMAND_MESSAGE.format(file=".ctxkit.yaml")
    assert not marker.exists()


def test_a_hostile_base_url_is_contacted_only_once_the_file_is_trusted(runner, clone, api):
    write_policy(clone / ".ctxkit.yaml", {"use": "anthropic", "base_url": api.base_url})
    env = {"ANTHROPIC_API_KEY": KEY}

    refused = compact(runner, env=env)
    assert refused.exit_code == 2
    assert refused.stderr == BASE_URL_MESSAGE.format(file=".ctxkit.yaml")
    assert api.requests == [] and not (clone / "out.jsonl").exists()

    assert runner.invoke(app, ["policy", "trust", ".ctxkit.yaml"]).exit_code == 0
    ran = compact(runner, env=env)
    assert ran.exit_code == 0, ran.stderr
    assert len(api.message_requests) == 1
    headers = api.message_requests[0].headers  # what trusting it allows: the key goes there
    assert headers.get("x-api-key") == KEY or headers.get("authorization") == f"Bearer {KEY}"

    with (clone / ".ctxkit.yaml").open("a") as f:
        f.write("# one more line\n")
    again = compact(runner, env=env)
    assert again.exit_code == 2 and again.stderr == BASE_URL_MESSAGE.format(file=".ctxkit.yaml")
    assert len(api.message_requests) == 1


def test_the_file_found_from_a_subfolder_is_named_as_the_user_reaches_it(runner, clone, tmp_path, monkeypatch):
    marker = tmp_path / "ran"
    write_policy(clone / ".ctxkit.yaml", {"use": "command", "command": hostile_command(marker)})
    session(clone / "src" / "s.jsonl")
    monkeypatch.chdir(clone / "src")
    refused = compact(runner)
    assert refused.exit_code == 2 and refused.stderr == COMMAND_MESSAGE.format(file="../.ctxkit.yaml")
    assert runner.invoke(app, ["policy", "trust"]).exit_code == 0  # default: the file found from here
    assert compact(runner).exit_code == 0 and marker.exists()


def test_an_extended_file_cannot_smuggle_a_command_in(runner, clone, tmp_path):
    marker = tmp_path / "ran"
    (clone / "ci").mkdir()
    (clone / "ci" / "ctx.yaml").write_text(f"extends: default\nsummarizer:\n  use: command\n"
                                            f"  command: {json.dumps(hostile_command(marker))}\n")
    (clone / ".ctxkit.yaml").write_text("extends: ci/ctx.yaml\nmodel: claude-sonnet-4-5\n")

    refused = compact(runner)
    assert refused.exit_code == 2
    assert refused.stderr == (
        "ci/ctx.yaml:4:3: error: summarizer.command comes from a repository policy (extended by .ctxkit.yaml) that "
        "you have not trusted: it runs a shell command with your environment (API keys included). Nothing was run "
        "(read the file, then run: ctxkit policy trust .ctxkit.yaml)\nctxkit: 1 problem in the policy\n")
    assert not marker.exists()

    trusted = runner.invoke(app, ["policy", "trust"])
    assert "trusted .ctxkit.yaml (sha256 " in trusted.stderr and "trusted ci/ctx.yaml (sha256 " in trusted.stderr
    assert compact(runner).exit_code == 0 and marker.exists()

    marker.unlink()
    with (clone / "ci" / "ctx.yaml").open("a") as f:
        f.write("# changed upstream\n")
    assert compact(runner).exit_code == 2 and not marker.exists()


def test_trust_is_for_one_path_not_for_the_same_content_elsewhere(runner, clone, tmp_path, monkeypatch):
    marker = tmp_path / "ran"
    write_policy(clone / ".ctxkit.yaml", {"use": "command", "command": hostile_command(marker)})
    assert runner.invoke(app, ["policy", "trust"]).exit_code == 0
    other = tmp_path / "other-clone"
    other.mkdir()
    (other / ".ctxkit.yaml").write_bytes((clone / ".ctxkit.yaml").read_bytes())
    session(other / "s.jsonl")
    monkeypatch.chdir(other)
    assert compact(runner).exit_code == 2 and not marker.exists()


# -- what the user writes is trusted ----------------------------------------------------------------------
def test_the_users_own_file_policy_option_and_set_need_no_trust(runner, clone, tmp_path):
    marker = tmp_path / "ran"
    user = tmp_path / "xdg" / "ctxkit" / "policy.yaml"
    user.parent.mkdir(parents=True)
    write_policy(user, {"use": "command", "command": hostile_command(marker)})
    assert compact(runner).exit_code == 0 and marker.exists()
    user.unlink()
    marker.unlink()

    assert compact(runner, "--set", "summarizer.use=command", "--set",
                   f"summarizer.command={hostile_command(marker)}").exit_code == 0
    assert marker.exists()
    marker.unlink()

    write_policy(clone / ".ctxkit.yaml", {"use": "command", "command": hostile_command(marker)})
    named = compact(runner, "--policy", ".ctxkit.yaml")  # named on the command line: the user's word
    assert named.exit_code == 0, named.stderr
    assert marker.exists()


def test_a_user_value_set_over_the_repository_one_is_used_without_a_word(runner, clone, tmp_path):
    write_policy(clone / ".ctxkit.yaml", {"use": "command", "command": hostile_command(tmp_path / "ran")})
    result = compact(runner, "--set", "summarizer.command=echo '1. Primary Request and Intent - mine'")
    assert result.exit_code == 0, result.stderr
    assert "warning" not in result.stderr and not (tmp_path / "ran").exists()


# -- commands that would not use the settings ----------------------------------------------------------------
WARNING = ("ctxkit: warning: the repository policy sets summarizer.command (.ctxkit.yaml:4), which you have not "
           "trusted; a command that would use it refuses to run until you read the file and run: ctxkit policy "
           "trust .ctxkit.yaml\n")


@pytest.mark.parametrize("args", [["policy", "show"], ["stats", "s.jsonl"], ["view", "s.jsonl"],
                                  ["check", "s.jsonl"],
                                  ["compact", "--force", "s.jsonl", "-o", "out.jsonl", "--stage", "microcompact"]])
def test_other_commands_warn_once_and_run(runner, clone, tmp_path, args):
    write_policy(clone / ".ctxkit.yaml", {"use": "command", "command": hostile_command(tmp_path / "ran")})
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.stderr
    assert result.stderr.count("warning") == 1 and result.stderr.startswith(WARNING)
    assert not (tmp_path / "ran").exists()


def test_a_repository_policy_without_such_settings_needs_no_trust(runner, clone):
    (clone / ".ctxkit.yaml").write_text("summarizer:\n  use: extractive\n  max_output_tokens: 4000\n")
    result = compact(runner)
    assert result.exit_code == 0 and "warning" not in result.stderr and not trust_file_path().exists()


def test_an_unused_untrusted_setting_only_warns(runner, clone, api):
    # base_url is read by the anthropic summarizer only; use: extractive never contacts it
    write_policy(clone / ".ctxkit.yaml", {"use": "extractive", "base_url": api.base_url})
    result = compact(runner, env={"ANTHROPIC_API_KEY": KEY})
    assert result.exit_code == 0, result.stderr
    assert result.stderr.splitlines()[0] == (
        "ctxkit: warning: the repository policy sets summarizer.base_url (.ctxkit.yaml:4), which you have not trusted; "
        "a command that would use it refuses to run until you read the file and run: ctxkit policy trust .ctxkit.yaml")
    assert api.requests == []


# -- the list, the record, the library ------------------------------------------------------------------------
def test_the_settings_that_need_trust_are_marked_in_the_schema():
    assert keys_requiring_trust() == {
        "summarizer.command": "runs a shell command with your environment (API keys included)",
        "summarizer.base_url": "sends your API key and the transcript to that host",
        "estimator": "sends the whole transcript to Anthropic's count_tokens API",
        "redact": "decides which secrets reach the summarizer and the summary (and runs its patterns over every "
                  "message)",
    }


def test_trust_without_a_repository_policy_says_so(runner, clone):
    result = runner.invoke(app, ["policy", "trust"])
    assert result.exit_code == 2
    assert result.stderr == f"ctxkit: error: no .ctxkit.yaml in {clone} or a folder above it; name the policy file " \
                            "to trust\n"


@pytest.mark.parametrize("damage", ["{not json", "[" * 100_000 + "]" * 100_000], ids=["not-json", "nested-deep"])
def test_a_damaged_trust_record_is_named(runner, clone, tmp_path, damage):
    # nested too deeply, json.loads raised RecursionError: an internal error
    write_policy(clone / ".ctxkit.yaml", {"use": "command", "command": "true"})
    trust_file_path().parent.mkdir(parents=True)
    trust_file_path().write_text(damage)
    result = compact(runner)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"ctxkit: error: {trust_file_path()}: cannot read the record of trusted "
                                    "policies (")


def test_library_callers_are_refused_by_the_stage_too(runner, clone, tmp_path):
    from ctxkit.clock import Clock
    from ctxkit.pipeline import compile_pipeline
    from ctxkit.stages.base import Context, RunInputs
    from ctxkit.store.disk import Store
    from ctxkit.tokens import make_counter
    from ctxkit.transcript import read_transcript

    marker = tmp_path / "ran"
    write_policy(clone / ".ctxkit.yaml", {"use": "command", "command": hostile_command(marker)})
    policy = load_policy(cwd=clone)
    assert [s.key for s in policy.untrusted] == ["summarizer.command"]
    ctx = Context(policy=policy, tokens=make_counter("rough"), clock=Clock(None), store=Store(tmp_path / "store"),
                  inputs=RunInputs(force=True, cwd=clone))
    with pytest.raises(PolicyError, match="summarizer.command comes from a repository policy"):
        compile_pipeline(policy, only=["autocompact"]).run(read_transcript(str(clone / "s.jsonl")), ctx)
    assert not marker.exists()
