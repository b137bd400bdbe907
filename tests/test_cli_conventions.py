"""The conventions a user expects of a command line tool (ruff, pre-commit, llm): exact text, exit codes.

--version, -h, shell completion, help that names values instead of Python types, one error style for
every usage error, did-you-mean, a closed pipe is not a failure, check --json, a report that says
which policy and store it used, a warning for a model the table does not know.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
import typer
from conftest import ROOT

import ctxkit
from ctxkit.cli.main import app

EXAMPLE = ROOT / "examples" / "session.jsonl"
CTXKIT = [sys.executable, "-m", "ctxkit.cli.main"]


def invoke(runner, args, input=None):
    return runner.invoke(app, args, input=input, prog_name="ctxkit")


def command_paths() -> list[list[str]]:
    """Every command and group, as the words a user types: [], ["compact"], ["policy"], ["policy", "show"]..."""
    paths: list[list[str]] = []

    def walk(cmd, path):
        paths.append(path)
        for name, sub in sorted(getattr(cmd, "commands", {}).items()):
            walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return paths


def all_params():
    """(command words, click parameter) for every parameter of every command."""
    def walk(cmd, path):
        for param in cmd.params:
            yield path, param
        for name, sub in sorted(getattr(cmd, "commands", {}).items()):
            yield from walk(sub, [*path, name])

    yield from walk(typer.main.get_command(app), [])


# -- --version, -h, completion ----------------------------------------------------------------------

def test_version(runner):
    r = invoke(runner, ["--version"])
    assert (r.exit_code, r.stdout, r.stderr) == (0, f"ctxkit {ctxkit.__version__}\n", "")


@pytest.mark.parametrize("path", command_paths(), ids=lambda p: " ".join(p) or "ctxkit")
def test_dash_h_is_help_everywhere(runner, path):
    long, short = invoke(runner, [*path, "--help"]), invoke(runner, [*path, "-h"])
    assert long.exit_code == short.exit_code == 0
    assert short.stdout == long.stdout
    assert f"Usage: {' '.join(['ctxkit', *path])} " in short.stdout
    assert "-h, --help  " in short.stdout


def test_show_completion_prints_a_script_that_completes_commands_and_choices(tmp_path):
    env = {**os.environ, "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    script = subprocess.run([*CTXKIT, "--show-completion", "bash"], env=env, capture_output=True, text=True)
    assert script.returncode == 0, script.stderr
    assert "complete -o default -F _ctxkit_completion ctxkit" in script.stdout
    assert "_CTXKIT_COMPLETE=complete_bash" in script.stdout
    # what the script asks ctxkit when the user presses TAB
    for words, cword, expected in (("ctxkit comp", 1, "compact\n"),
                                   ("ctxkit compact --to ", 3, "anthropic\nopenai\n"),
                                   ("ctxkit check --level w", 3, "warning\n")):
        done = subprocess.run(CTXKIT, env={**env, "_CTXKIT_COMPLETE": "complete_bash", "COMP_WORDS": words,
                                           "COMP_CWORD": str(cword)}, capture_output=True, text=True)
        assert (done.returncode, done.stdout) == (0, expected), done.stderr


def test_install_completion_writes_the_shell_startup_file(tmp_path):
    env = {**os.environ, "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1", "HOME": str(tmp_path)}
    p = subprocess.run([*CTXKIT, "--install-completion", "bash"], env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(f"bash completion installed in {tmp_path / '.bash_completions' / 'ctxkit.sh'}\n")
    assert "_CTXKIT_COMPLETE=complete_bash" in (tmp_path / ".bash_completions" / "ctxkit.sh").read_text()
    assert "source" in (tmp_path / ".bashrc").read_text()


# -- help names values, not Python types -------------------------------------------------------------

# typer's <str>, <int>, <int range>, <list[str]>, <path>...; click's TEXT, INTEGER, PATH...
TYPE_PLACEHOLDER = re.compile(r"<(?:str|int|float|bool|path|file|dir|datetime|uuid|(?:list|tuple)\[[^\]]*\]"
                              r"|\w+ range|[\w-]+(?:\|[\w-]+)+)>|\b(?:TEXT|INTEGER|FLOAT|BOOLEAN|PATH|FILENAME|"
                              r"DIRECTORY|UUID)\b")


@pytest.mark.parametrize("path", command_paths(), ids=lambda p: " ".join(p) or "ctxkit")
def test_no_help_shows_a_type_placeholder(runner, path):
    text = invoke(runner, [*path, "--help"]).stdout
    assert TYPE_PLACEHOLDER.findall(text) == [], text


def test_every_value_is_named_by_a_metavar():
    """Structural twin of the test above: a new option without a metavar fails here even if typer
    invents a placeholder the regular expression does not know."""
    unnamed = [f"ctxkit {' '.join(path)} {param.opts[0] if param.opts else param.name}"
               for path, param in all_params()
               if not getattr(param, "is_flag", False) and not param.metavar]
    assert unnamed == []


def test_a_choice_is_listed_in_help_and_enforced(runner):
    help_text = invoke(runner, ["compact", "-h"]).stdout
    assert "  --to [anthropic|openai]  " in help_text
    assert "  --report [text|json|none]  " in help_text
    assert "  --level [warning|autocompact|blocking]" in invoke(runner, ["check", "-h"]).stdout


# -- one error style ----------------------------------------------------------------------------------

@pytest.mark.parametrize("args, stderr", [
    (["compact", "--bogus"],
     "ctxkit: error: no such option: --bogus (possible options: --jobs)\nTry 'ctxkit compact -h' for help.\n"),
    (["compact", "--stae", "x"],
     "ctxkit: error: no such option: --stae (possible options: --stage, --state, --store)\n"
     "Try 'ctxkit compact -h' for help.\n"),
    (["policy", "validate"],
     "ctxkit: error: missing argument 'FILE|NAME'\nTry 'ctxkit policy validate -h' for help.\n"),
    (["compact", "--to", "markdown"],
     "ctxkit: error: invalid value for '--to': 'markdown' is not one of 'anthropic', 'openai'\n"
     "Try 'ctxkit compact -h' for help.\n"),
    (["check", "--level", "high"],
     "ctxkit: error: invalid value for '--level': 'high' is not one of 'warning', 'autocompact', 'blocking'\n"
     "Try 'ctxkit check -h' for help.\n"),
    (["stats", "--context-window", "lots"],
     "ctxkit: error: invalid value for '--context-window': input should be a valid integer, unable to parse "
     "string as an integer\nTry 'ctxkit stats -h' for help.\n"),
    (["stats", "--context-window", "10"],
     "ctxkit: error: invalid value for '--context-window': input should be greater than or equal to 1000\n"
     "Try 'ctxkit stats -h' for help.\n"),
    (["compac"],
     "ctxkit: error: no such command 'compac' (did you mean 'compact'?)\nTry 'ctxkit -h' for help.\n"),
    (["policy", "shwo"],
     "ctxkit: error: no such command 'shwo' (did you mean 'show'?)\nTry 'ctxkit policy -h' for help.\n"),
    (["compact", "--to"], "ctxkit: error: option '--to' requires an argument\n"),
])
def test_usage_errors_have_one_style(runner, args, stderr):
    r = invoke(runner, args, input="")
    assert (r.exit_code, r.stderr, r.stdout) == (2, stderr, "")


def test_usage_errors_have_one_style_from_the_real_entry_point():
    p = subprocess.run([*CTXKIT, "view", "--format", "yaml"], capture_output=True, text=True, input="")
    assert (p.returncode, p.stdout) == (2, "")
    assert p.stderr == ("ctxkit: error: invalid value for '--format' / '-f': 'yaml' is not one of 'auto', 'claude-code', "
                        "'anthropic', 'openai', 'codex', 'gemini'\nTry 'ctxkit view -h' for help.\n")


def test_no_command_shows_the_help_on_stderr(runner):
    r = invoke(runner, [])
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.startswith("Usage: ctxkit [OPTIONS] COMMAND [ARGS]...\n")


def test_unknown_stage_has_did_you_mean(runner, tmp_path):
    r = invoke(runner, ["compact", str(EXAMPLE), "--stage", "microcompcat", "--store", str(tmp_path / "st")])
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr == ("ctxkit: error: unknown stage 'microcompcat' (did you mean 'microcompact'?); known: "
                        "attachments, autocompact, collapse, microcompact, repair, slim, snip, tool-result-budget\n")
    r = invoke(runner, ["stages", "snpi"])
    assert (r.exit_code, r.stderr) == (2, "ctxkit: error: unknown stage 'snpi' (did you mean 'snip'?); known: "
                                          "attachments, autocompact, collapse, microcompact, repair, slim, snip, "
                                          "tool-result-budget\n")


# -- a closed pipe is not a failure ------------------------------------------------------------------

def _into_closed_pipe(args: list[str]) -> subprocess.CompletedProcess:
    """Run ctxkit with stdout a pipe whose reader has already gone: the first write fails with EPIPE,
    as in `ctxkit ... | head -1` once head has exited (deterministic, unlike racing head)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run([*CTXKIT, *args], stdout=write_end, stderr=subprocess.PIPE, text=True,
                              stdin=subprocess.DEVNULL)
    finally:
        os.close(write_end)


@pytest.mark.parametrize("args", [
    ["stats", str(EXAMPLE)],
    ["view", str(EXAMPLE)],
    ["policy", "show"],
    ["--help"],
    ["compact", "--help"],
    ["--version"],
], ids=" ".join)
def test_a_closed_pipe_exits_0_silently(args, tmp_path):
    p = _into_closed_pipe(args)
    assert (p.returncode, p.stderr) == (0, "")


def test_stats_into_head_exits_0():
    """The same through a shell pipeline, as a user types it."""
    p = subprocess.run(f"{' '.join(CTXKIT)} stats {EXAMPLE} | head -1; exit ${{PIPESTATUS[0]}}", shell=True,
                       executable="/bin/bash", capture_output=True, text=True)
    assert (p.returncode, p.stderr) == (0, "")
    assert p.stdout.startswith("22 messages, 56,139 tokens") and p.stdout.count("\n") == 1


# -- check --json -------------------------------------------------------------------------------------

def test_check_json_is_one_object_and_keeps_the_exit_codes(runner):
    r = invoke(runner, ["check", str(EXAMPLE), "--json"])
    assert (r.exit_code, r.stderr) == (0, "")
    assert r.stdout.count("\n") == 1
    assert json.loads(r.stdout) == {
        "tokens": 56139, "level": "ok", "estimator": "rough", "fail_at": "autocompact", "threshold": 167000,
        "failed": False, "thresholds": {"warning": 147000, "autocompact": 167000, "blocking": 177000},
        "context_window": 200000, "context_window_source": "model table"}
    r = invoke(runner, ["check", str(EXAMPLE), "--json", "--context-window", "60000"])
    assert r.exit_code == 1
    data = json.loads(r.stdout)
    assert (data["level"], data["threshold"], data["failed"], data["context_window_source"]) == \
        ("blocking", 27000, True, "--context-window")


# -- the compact report says what it used ------------------------------------------------------------

def test_compact_report_names_the_policy_layers_and_the_store(runner, tmp_path):
    (tmp_path / ".ctxkit.yaml").write_text("thresholds:\n  autocompact_buffer: 20000\n")
    store = tmp_path / "st"
    args = ["compact", str(EXAMPLE), "-o", str(tmp_path / "out.jsonl"), "--store", "st", "--set", "estimator=rough",
            "--set", "max_output_tokens=20000"]
    r = invoke(runner, args)
    assert r.exit_code == 0, r.stderr
    assert r.stderr.splitlines()[-1] == f"policy: <builtin>/default.yaml < .ctxkit.yaml < --set; store: {store}"
    r = invoke(runner, [*args, "--report", "json", "--policy", "no-llm"])
    report = json.loads(r.stderr)
    assert (report["policy"], report["store"]) == (
        ["<builtin>/default.yaml", ".ctxkit.yaml", "<builtin>/no-llm.yaml", "--set"], str(store))


# -- a model the table does not know ------------------------------------------------------------------

UNKNOWN_MODEL = ("ctxkit: warning: unknown model 'claude-sonet-4-5': assuming a 200,000 token context window "
                 "(set context_window in the policy; did you mean 'claude-sonnet-4-5'?)\n")


@pytest.mark.parametrize("args", [
    ["compact", str(EXAMPLE), "-o", "out.jsonl", "--store", "st"],
    ["view", str(EXAMPLE)],
    ["stats", str(EXAMPLE), "--json"],
    ["check", str(EXAMPLE)],
    ["snip", str(EXAMPLE), "--ids", "nope", "--store", "st"],
    ["policy", "show"],
], ids=lambda a: a[0])
def test_an_unknown_model_is_warned_about_once_in_every_command(runner, args):
    r = invoke(runner, [*args, "--set", "model=claude-sonet-4-5"])
    assert r.stderr.count("unknown model") == 1, r.stderr
    assert r.stderr.startswith(UNKNOWN_MODEL)


def test_a_known_model_or_a_set_window_is_not_warned_about(runner):
    assert "unknown model" not in invoke(runner, ["check", str(EXAMPLE)]).stderr
    r = invoke(runner, ["check", str(EXAMPLE), "--set", "model=my-model", "--set", "context_window=100000"])
    assert "unknown model" not in r.stderr


# -- help says what the code does ------------------------------------------------------------------

