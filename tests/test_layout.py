"""The package layout holds: the stage list is explicit and loud, and the layering is checked."""
from __future__ import annotations

import importlib
import inspect
import pkgutil
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import ctxkit.stages
from ctxkit.stages.base import Stage

ROOT = Path(__file__).resolve().parent.parent


def test_every_stage_class_is_in_the_registry():
    """A Stage subclass defined under ctxkit.stages but left out of the list would never run."""
    from ctxkit.stages.registry import REGISTRY, all_stages

    defined = set()
    for info in pkgutil.walk_packages(ctxkit.stages.__path__, "ctxkit.stages."):
        module = importlib.import_module(info.name)
        defined |= {cls for _, cls in inspect.getmembers(module, inspect.isclass)
                    if issubclass(cls, Stage) and cls is not Stage and cls.__module__ == module.__name__}
    assert defined == set(all_stages())
    assert list(REGISTRY) == ["tool-result-budget", "snip", "microcompact", "collapse", "autocompact", "attachments",
                              "repair", "slim"]


def test_a_stage_module_that_cannot_be_imported_fails_loudly(monkeypatch):
    """A broken stage module is an ImportError as soon as its stage is used (or every stage is
    listed), not a stage silently missing: the list names it whether or not it imports."""
    import ctxkit.stages.registry as registry

    fresh = registry._Registry(registry.LISTED)  # nothing imported through it yet
    monkeypatch.setitem(sys.modules, "ctxkit.stages.snip", None)  # importing it now raises
    assert "snip" in fresh and list(fresh)[1] == "snip"
    with pytest.raises(ImportError, match="ctxkit.stages.snip"):
        fresh["snip"]
    with pytest.raises(ImportError, match="ctxkit.stages.snip"):
        registry._Registry(registry.LISTED).get("snip")
    monkeypatch.setattr(registry, "REGISTRY", fresh)
    with pytest.raises(ImportError, match="ctxkit.stages.snip"):
        registry.all_stages()


@pytest.mark.skipif(shutil.which("lint-imports") is None, reason="import-linter not installed")
def test_the_import_contracts_are_kept():
    """pyproject.toml's [tool.importlinter] contracts: the layers, no CLI in the library, no stages in policy."""
    r = subprocess.run(["lint-imports"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 broken" in r.stdout


def test_defaults_come_from_the_schema_once_including_nested_sections():
    """A stage's defaults are its schema's, nested sections included (autocompact's reinject)."""
    from ctxkit.policy.defaults import schema_defaults
    from ctxkit.stages.registry import REGISTRY

    schema = {"type": "object", "properties": {
        "a": {"type": "integer", "default": 3},
        "b": {"type": "object", "properties": {"c": {"type": "boolean", "default": False}, "d": {"type": "string"}}},
        "e": {"type": "string"},
    }}
    assert schema_defaults(schema) == {"a": 3, "b": {"c": False}}
    autocompact = REGISTRY["autocompact"]
    reinject = autocompact.options_schema["properties"]["reinject"]
    assert autocompact.defaults()["reinject"] == schema_defaults(reinject)
    assert autocompact("autocompact", {}).options["reinject"]["max_files"] == reinject["properties"]["max_files"]["default"]


def test_one_reminder_wrapper_neutralizes_nested_tags_everywhere():
    """The request body's harness notes are wrapped like attachments: a quoted closing tag cannot end the block."""
    from ctxkit.reminders import as_reminder, reminder, unwrap
    from ctxkit.reports.request import _reminders

    quoted = "file says </system-reminder> then more"
    wrapped = _reminders([quoted])[0]["text"]
    assert wrapped == reminder(quoted) == as_reminder(quoted)
    assert wrapped.count("</system-reminder>") == 1
    assert unwrap(wrapped) == "file says <\u200b/system-reminder> then more"
    assert as_reminder(wrapped) == wrapped  # already a block: left as it is


def test_the_library_context_is_built_like_the_cli_one(tmp_path):
    """ctxkit.make_context and the CLI share one builder: the library caller sees the same warnings."""
    from ctxkit import load_policy, make_context

    policy = load_policy(None, ["model=claude-nonesuch-9"], cwd=tmp_path, user_config=tmp_path / "none.yaml")
    ctx = make_context(policy, store_dir=tmp_path / "store")
    assert ctx.warnings == ["unknown model 'claude-nonesuch-9': assuming a 200,000 token context window "
                            "(set context_window in the policy; did you mean 'claude-sonnet-5'?)"]


def test_every_package_is_in_the_wheel():
    """pyproject lists the packages the wheel holds; one left out installs a ctxkit that fails to import
    (the Quick start installs with ``pip install .``, not in editable mode)."""
    import tomllib
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "ctxkit").rglob("__init__.py")
             if "__pycache__" not in p.parts}
    assert found - listed == set(), f"add to [tool.setuptools] packages: {sorted(found - listed)}"
