"""Shell completion (``ctxkit --install-completion``) offers the values options take: policy names and files,
stage names, output formats. Checked through the CLI with the environment a shell's completion script sets."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ctxkit.cli.main import app


def complete(runner, line: str) -> list[str]:
    """What bash completion offers for the last word of ``line`` (a trailing space: a new, empty word)."""
    words = line.split()
    cword = len(words) if line.endswith(" ") else len(words) - 1
    r = runner.invoke(app, [], prog_name="ctxkit", env={"_CTXKIT_COMPLETE": "complete_bash", "COMP_WORDS": line,
                                                       "COMP_CWORD": str(cword)})
    assert r.exit_code == 0, r.output
    return r.stdout.splitlines()


@pytest.fixture
def policies(tmp_path):
    (tmp_path / "team.yaml").write_text("extends: no-llm\n")
    (tmp_path / "ci.yml").write_text("extends: default\n")
    (tmp_path / "notes.txt").write_text("not a policy\n")
    (tmp_path / "session.jsonl").write_text("")
    (tmp_path / "more").mkdir()
    (tmp_path / "more" / "strict.yaml").write_text("extends: default\n")
    return tmp_path


@pytest.mark.parametrize("line", ["ctxkit compact --policy ", "ctxkit stats -p ", "ctxkit simulate s.jsonl -p ",
                                  "ctxkit report s.jsonl --policy ", "ctxkit policy show ", "ctxkit policy lint ",
                                  "ctxkit policy validate ", "ctxkit policy show --policy "])
def test_a_policy_completes_to_builtin_names_and_policy_files(runner, policies, line):
    assert complete(runner, line) == ["claude-code-full", "default", "no-llm", "ci.yml", "more/", "team.yaml"]


def test_a_policy_completes_what_is_typed(runner, policies):
    assert complete(runner, "ctxkit compact --policy no") == ["no-llm"]
    assert complete(runner, "ctxkit policy lint te") == ["team.yaml"]
    assert complete(runner, "ctxkit policy validate more/") == ["more/strict.yaml"]
    assert complete(runner, "ctxkit compact --policy nothing") in ([], [""])  # (bash is sent an empty line)


def test_stage_names_complete(runner):
    assert complete(runner, "ctxkit compact --stage ") == ["attachments", "autocompact", "collapse", "microcompact",
                                                           "repair", "slim", "snip", "tool-result-budget"]
    assert complete(runner, "ctxkit compact --stage micro") == ["microcompact"]
    assert complete(runner, "ctxkit stages tool") == ["tool-result-budget"]


def test_output_formats_complete(runner):
    assert complete(runner, "ctxkit compact --to ") == ["anthropic", "openai"]
    assert complete(runner, "ctxkit check --output-format ") == ["text", "github"]
    assert complete(runner, "ctxkit policy validate x.yaml --output-format g") == ["github"]


def test_the_installed_command_completes_end_to_end(tmp_path):
    script = Path(sys.executable).parent / "ctxkit"
    if not script.exists():
        pytest.skip(f"no ctxkit script beside {sys.executable}")
    (tmp_path / "team.yaml").write_text("extends: no-llm\n")
    r = subprocess.run([str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                       env={**os.environ, "_CTXKIT_COMPLETE": "complete_zsh",
                            "_TYPER_COMPLETE_ARGS": "ctxkit compact --policy "})
    assert r.returncode == 0, r.stderr
    for candidate in ("claude-code-full", "default", "no-llm", "team.yaml"):
        assert f'"{candidate}"' in r.stdout
