"""The documentation: generated parts up to date, one source per text, links that resolve, examples that run.

The README's ``console`` examples are run as a newcomer would run them from a clone (no corpus,
no API key, no user policy), and what they print is compared line by line with what the README
shows.
"""
from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from typer.testing import CliRunner

from ctxkit.cli.main import app

README = ROOT / "README.md"
DOCS = ROOT / "docs"
# Pages other branches add; linked from the README already. Remove an entry once its page exists.
PENDING_PAGES: set[str] = set()
README_MAX_BYTES = 15 * 1024


def markdown_files() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


def test_generated_docs_are_up_to_date():
    """Stage pages, the command reference and the module table match the code (else: python docs/gen_docs.py)."""
    r = subprocess.run([sys.executable, str(DOCS / "gen_docs.py"), "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def stage_names() -> list[str]:
    from ctxkit.stages import REGISTRY

    return sorted(REGISTRY)


@pytest.mark.parametrize("name", stage_names())
def test_a_stage_page_says_exactly_what_ctxkit_stages_prints(name):
    """One source: the page's prose is the text `ctxkit stages NAME` prints, and it is there only once."""
    r = CliRunner().invoke(app, ["stages", name])
    assert r.exit_code == 0, r.output
    prose = r.stdout.split("\n\noptions (defaults):\n")[0]
    page = (DOCS / "stages" / f"{name}.md").read_text(encoding="utf-8")
    assert page.count(prose) == 1
    assert len(prose) > 1500  # the full documentation, not a one-line summary
    assert not (DOCS / f"{name}.md").exists()  # no second, hand-written copy


def _leaf_options(schema: dict, prefix: str = "") -> list[str]:
    out = []
    for key, spec in schema.get("properties", {}).items():
        out += _leaf_options(spec, f"{prefix}{key}.") if "properties" in spec else [prefix + key]
    return out


@pytest.mark.parametrize("name", stage_names())
def test_a_stage_page_has_a_row_with_the_default_for_every_option(name):
    from ctxkit.stages import REGISTRY
    from ctxkit.stages.attachments import ATTACHMENT_TYPES

    page = (DOCS / "stages" / f"{name}.md").read_text(encoding="utf-8")
    schemas = {"": REGISTRY[name].options_schema}
    if name == "attachments":
        schemas |= {kind: cls.options_schema for kind, cls in ATTACHMENT_TYPES.items()}
    for kind, schema in schemas.items():
        section = page.split(f"### `{kind}`")[1].split("\n### ")[0] if kind else page.split("## Options")[1]
        for option in _leaf_options(schema):
            rows = [line for line in section.splitlines() if line.startswith(f"| `{option}` |")]
            assert rows, f"{name} {kind}: no row for {option}"
    assert page.count("| `max_tokens` | `20000` |") == (1 if name == "attachments" else 0)


def test_the_readme_stays_small():
    assert README.stat().st_size <= README_MAX_BYTES


LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)


def github_anchor(heading: str) -> str:
    """The id GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    return {github_anchor(m.group(1)) for m in re.finditer(r"^#+ (.+)$", text, re.M)}


def test_every_relative_link_resolves():
    broken = []
    for md in markdown_files():
        text = FENCE.sub("", md.read_text(encoding="utf-8"))
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target):
                continue  # https:, mailto:
            file_part, _, anchor = target.partition("#")
            dest = (md.parent / file_part).resolve() if file_part else md
            rel = dest.relative_to(ROOT).as_posix() if dest.is_relative_to(ROOT) else str(dest)
            if rel in PENDING_PAGES:
                continue
            if not dest.exists():
                broken.append(f"{md.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                broken.append(f"{md.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


# --- the README's examples, run ------------------------------------------------------------------

def console_examples(text: str) -> list[tuple[str, list[str]]]:
    """Every ``$ command`` of the README's ``console`` blocks, with the lines shown after it."""
    out: list[tuple[str, list[str]]] = []
    for block in re.findall(r"^```console\n(.*?)^```", text, re.M | re.S):
        for line in block.splitlines():
            if line.startswith("$ "):
                out.append((line[2:], []))
            else:
                out[-1][1].append(line)
    return out


def _lines(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return lines


SCRATCH = "/tmp/readme-ex"  # the README's scratch folder; the test uses a fresh one of the same length


@pytest.fixture
def scratch(tmp_path):
    """A fresh folder whose path is as long as the README's: the persisted preview names the stored file by
    its absolute path, so the token counts the README shows depend on that length."""
    folder = Path("/tmp") / ("r" + secrets.token_hex(4))
    assert len(str(folder)) == len(SCRATCH)
    try:
        folder.mkdir()
    except OSError as exc:
        pytest.skip(f"cannot create {folder}: {exc}")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_the_readme_examples_print_what_the_readme_shows(scratch, tmp_path):
    examples = console_examples(README.read_text(encoding="utf-8"))
    assert examples and SCRATCH in examples[0][0], "the first example makes the scratch folder"
    assert not any("shared/" in cmd for cmd, _ in examples), "the README's examples run without ../shared"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CTXKIT_"))}
    env |= {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}", "HOME": str(tmp_path),
            "XDG_CONFIG_HOME": str(tmp_path / "config"), "COLUMNS": "100", "NO_COLOR": "1"}
    cwd, where = ROOT, tmp_path / "pwd"
    for command, shown in examples:
        if "| jq" in command and shutil.which("jq") is None:
            continue
        script = command.replace(SCRATCH, str(scratch))
        r = subprocess.run(["bash", "-c", f'{script}\n__rc=$?; pwd > "{where}"; exit $__rc'], cwd=cwd, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
        cwd = Path(where.read_text().strip())
        output = r.stdout.replace(str(scratch), SCRATCH)
        assert "Traceback" not in output and r.returncode not in (4, 127), f"$ {command}\n{output}"
        assert _lines(output) == _lines("\n".join(shown)), f"$ {command}"
    assert cwd == scratch  # every example ran in the scratch folder, none in the clone


def example_pages() -> list[str]:
    """The pages whose first ``python`` block is a working example followed by what "it prints:"."""
    return [p.name for p in sorted(DOCS.glob("*.md"))
            if "```python\n" in (text := p.read_text(encoding="utf-8")) and "it prints:\n\n```" in text]


@pytest.mark.parametrize("page", example_pages())
def test_a_pages_example_prints_what_the_page_shows(page, tmp_path, monkeypatch, capsys):
    """Run in a folder holding a copy of examples/session.jsonl, with no user policy."""
    text = (DOCS / page).read_text(encoding="utf-8")
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    shown = re.search(r"it prints:\n\n```\n(.*?)```", text, re.S).group(1)
    shutil.copy(ROOT / "examples" / "session.jsonl", tmp_path / "session.jsonl")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # no user policy layer
    exec(compile(code, f"docs/{page}", "exec"), {})
    assert _lines(capsys.readouterr().out) == _lines(shown)
    if page == "library.md":
        assert (tmp_path / "compacted.jsonl").stat().st_size > 0


def test_the_library_and_context_manager_pages_have_examples():
    assert {"library.md", "context-manager.md"} <= set(example_pages())
