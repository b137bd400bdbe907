"""Where the built-in policies and the JSON Schemas live.

They sit at the top of the repository (``policies/``, ``schemas/``) and ship in
the wheel as the packages ``ctxkit.policies`` and ``ctxkit.schemas``. From a
source checkout that was not installed, the top-level folders are used.
"""
from __future__ import annotations

import importlib
from pathlib import Path

_REPO_ROOT = Path(__file__).resolve().parent.parent


def _folder(package: str, fallback: str) -> Path:
    """The folder of ``package`` (found by importing it: ``importlib.resources`` would cost every run
    more than the rest of this module), else the top-level folder of a checkout."""
    try:
        for location in getattr(importlib.import_module(package), "__path__", ()):
            if Path(location).is_dir():
                return Path(location)
    except ModuleNotFoundError:
        pass
    return _REPO_ROOT / fallback


def policies_dir() -> Path:
    """The folder holding the built-in policies (``default.yaml``, ``no-llm.yaml``, ...)."""
    return _folder("ctxkit.policies", "policies")


def schemas_dir() -> Path:
    """The folder holding ``policy.schema.json``."""
    return _folder("ctxkit.schemas", "schemas")


def builtin_policy_names() -> list[str]:
    return sorted(p.stem for p in policies_dir().glob("*.yaml"))
