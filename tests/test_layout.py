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
    from ctxkit.stages.registry import REGISTRY, STAGES

    defined = set()
    for info in pkgutil.walk_packages(ctxkit.stages.__path__, "ctxkit.stages."):
        module = importlib.import_module(info.name)
        defined |= {cls for _, cls in inspect.getmembers(module, inspect.isclass)
                    if issubclass(cls, Stage) and cls is not Stage and cls.__module__ == module.__name__}
    assert defined == set(STAGES)
    assert list(REGISTRY) == ["tool-result-budget", "snip", "microcompact", "collapse", "autocompact", "attachments"]


def test_a_stage_module_that_cannot_be_imported_fails_loudly(monkeypatch):
    """A broken stage module is an ImportError at import time, not a stage silently missing."""
    import ctxkit.stages.registry as registry

    monkeypatch.setitem(sys.modules, "ctxkit.stages.snip", None)  # importing it now raises
    with pytest.raises(ImportError, match="ctxkit.stages.snip"):
        importlib.reload(registry)
    monkeypatch.undo()
    importlib.reload(registry)


@pytest.mark.skipif(shutil.which("lint-imports") is None, reason="import-linter not installed")
def test_the_import_contracts_are_kept():
    """pyproject.toml's [tool.importlinter] contracts: the layers, no CLI in the library, no stages in policy."""
    r = subprocess.run(["lint-imports"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 broken" in r.stdout
