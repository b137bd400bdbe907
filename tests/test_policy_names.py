"""Every ``ctxkit policy`` subcommand takes a built-in policy's name or a file the same way (one resolver,
``LayerReader.named``: a value with a slash or a .yaml/.yml suffix is a file, else a built-in name), end to
end from the command line."""
from __future__ import annotations

import subprocess
import sys

import pytest

CTXKIT = [sys.executable, "-m", "ctxkit.cli.main"]


def ctxkit(tmp_path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CTXKIT, *args], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "xdg")})


def test_show_takes_a_builtin_name_as_lint_does(tmp_path):
    shown = ctxkit(tmp_path, "policy", "show", "no-llm")
    assert (shown.returncode, shown.stderr) == (0, "")
    assert "use: extractive  # from <builtin>/no-llm.yaml:" in shown.stdout
    assert shown.stdout == ctxkit(tmp_path, "policy", "show", "--policy", "no-llm").stdout
    assert ctxkit(tmp_path, "policy", "lint", "no-llm").stderr == "<builtin>/no-llm.yaml: ok\n"


def test_show_takes_a_file(tmp_path):
    (tmp_path / "p.yaml").write_text("extends: no-llm\nthresholds:\n  warning_buffer: 15000\n")
    r = ctxkit(tmp_path, "policy", "show", "p.yaml")
    assert r.returncode == 0, r.stderr
    assert "warning_buffer: 15000  # from p.yaml:3" in r.stdout


@pytest.mark.parametrize("command", ["show", "validate", "lint"])
def test_a_name_that_names_nothing_is_the_same_error_everywhere(tmp_path, command):
    r = ctxkit(tmp_path, "policy", command, "no-lm")
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == ("no-lm:1:1: error: no built-in policy named 'no-lm' (did you mean 'no-llm'?)\n"
                        "ctxkit: 1 problem in the policy\n")
    missing = ctxkit(tmp_path, "policy", command, "nosuch.yaml")
    assert missing.returncode == 2
    assert missing.stderr.splitlines()[0] == "nosuch.yaml:1:1: error: policy file 'nosuch.yaml' not found"


def test_validate_takes_a_builtin_name(tmp_path):
    r = ctxkit(tmp_path, "policy", "validate", "no-llm", "claude-code-full")
    assert (r.returncode, r.stderr) == (0, "no-llm, claude-code-full: ok\n")


def test_trust_takes_a_name_and_says_a_builtin_needs_none(tmp_path):
    r = ctxkit(tmp_path, "policy", "trust", "no-llm")
    assert (r.returncode, r.stderr) == (
        0, "<builtin>/no-llm.yaml: a built-in policy is ctxkit's own and trusted as it is; nothing to do\n")
    assert not (tmp_path / "xdg").exists()  # nothing recorded
    r = ctxkit(tmp_path, "policy", "trust", "no-lm")
    assert (r.returncode, r.stderr) == (2, "ctxkit: error: no built-in policy named 'no-lm' (did you mean 'no-llm'?)\n")


def test_show_refuses_two_policies(tmp_path):
    r = ctxkit(tmp_path, "policy", "show", "no-llm", "--policy", "default")
    assert (r.returncode, r.stderr) == (2, "ctxkit: error: name the policy once: 'no-llm' or --policy 'default'\n")
