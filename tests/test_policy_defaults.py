"""Each policy default is stated once: in ``schemas/policy.schema.json``.

The ``Policy`` dataclasses take their defaults from the schema (no literal of their own), the
built-in ``default.yaml`` states only its own choices (the stage list, anything that differs from
the schema), and ``ctxkit policy show`` still prints every value, labelled ``from schema default``."""
from __future__ import annotations

import ast
import dataclasses
import inspect

import yaml

from ctxkit import resources
from ctxkit.cli.main import app
from ctxkit.policy import model
from ctxkit.policy.defaults import schema_defaults
from ctxkit.policy.schema import static_schema

SCHEMA = schema_defaults(static_schema())

#: dataclass -> the schema section its fields are the properties of ("" for the top level)
SECTIONS = {model.Policy: "", model.Thresholds: "thresholds", model.ToolSets: "tools", model.Redaction: "redact"}


def _section_defaults(section: str) -> dict:
    return SCHEMA if not section else SCHEMA[section]


def _literal_defaults(cls: type) -> dict[str, str]:
    """field -> the source of its default, for fields whose default is written as a literal
    (a constant, or a tuple/list/frozenset of constants)."""
    tree = ast.parse(inspect.getsource(cls))
    out = {}
    for node in tree.body[0].body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            try:
                ast.literal_eval(node.value)
            except ValueError:
                continue
            out[node.target.id] = ast.unparse(node.value)
    return out


def test_the_policy_dataclasses_state_no_default_the_schema_states():
    duplicated = []
    for cls, section in SECTIONS.items():
        stated = _section_defaults(section)
        for name, source in _literal_defaults(cls).items():
            if name in stated:
                duplicated.append(f"{cls.__name__}.{name} = {source} (the schema says {stated[name]!r})")
    assert duplicated == []


def test_the_policy_dataclasses_default_to_the_schema():
    for cls, section in SECTIONS.items():
        stated = _section_defaults(section)
        for f in dataclasses.fields(cls):
            if f.name in stated and not isinstance(stated[f.name], dict):
                value = f.default if f.default is not dataclasses.MISSING else f.default_factory()
                expected = stated[f.name]
                assert (sorted(value) if isinstance(value, (tuple, frozenset)) else value) == (
                    sorted(expected) if isinstance(expected, list) else expected), f"{cls.__name__}.{f.name}"
    assert dict(model.Policy().summarizer) == SCHEMA["summarizer"]


def _leaves(data, path=()):
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _leaves(value, (*path, key))
    else:
        yield path, data


def test_the_builtin_default_policy_repeats_no_schema_default():
    data = yaml.safe_load((resources.policies_dir() / "default.yaml").read_text(encoding="utf-8"))
    repeated = []
    for path, value in _leaves({k: v for k, v in data.items() if k != "stages"}):
        stated = SCHEMA
        for key in path:
            stated = stated.get(key, {}) if isinstance(stated, dict) else {}
        if not isinstance(stated, dict) and stated == value:
            repeated.append(".".join(path))
    assert repeated == []


def test_policy_show_prints_the_schema_defaults_and_says_so(runner):
    r = runner.invoke(app, ["policy", "show"])
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    for line in ("model: claude-sonnet-4-5  # from schema default",
                 "max_output_tokens: 32000  # from schema default",
                 "estimator: rough  # from schema default",
                 "  summary_reserve: 20000  # from schema default",
                 "  autocompact_buffer: 13000  # from schema default",
                 "  warning_buffer: 20000  # from schema default",
                 "  blocking_buffer: 3000  # from schema default",
                 "  compactable: [Read, Bash, Shell, Grep, Glob, WebSearch, WebFetch, Edit, Write, shell, shell_command, exec_command, local_shell, apply_patch, read_file, read_many_files, run_shell_command, grep_search, search_file_content, glob, list_directory, web_fetch, google_web_search, write_file, replace, read, bash, grep, list, webfetch, websearch, edit, write, patch]  # from schema default",
                 "  collapsible: [Read, Grep, Glob, LS, WebSearch, WebFetch, NotebookRead]  # from schema default",
                 "  state_changing: [Edit, Write, MultiEdit, NotebookEdit, SendMessage, TodoWrite]  # from schema default",
                 "  use: auto  # from schema default",
                 "  max_output_tokens: 20000  # from schema default"):
        assert line in lines
    # the built-in policy's own choices still name its file
    assert any(x.startswith("  - id: microcompact  # from <builtin>/default.yaml:") for x in lines)
