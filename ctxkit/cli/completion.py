"""Shell completion for the values of ctxkit's options (typer's ``--install-completion``): the policies a
``--policy`` or a ``policy`` subcommand takes (built-in names, and ``.yaml`` / ``.yml`` files and the folders
on the way to them), and stage names. Choices (``--to``, ``--report``, ``--output-format``, ``--level``)
complete from their ``Literal`` types without help from here.

Each function is given what the user has typed of the value (``incomplete``) and returns the candidates
that start with it; it reads only the built-in policy folder, the stage registry and one folder listing,
so a completion stays instant."""
from __future__ import annotations

import os

from .. import resources

POLICY_SUFFIXES = (".yaml", ".yml")


def complete_policy(incomplete: str) -> list[str]:
    """Built-in policy names, then policy files and folders under what is typed (as ``--policy`` resolves
    them: a value with a slash or a .yaml/.yml suffix is a file, anything else a built-in name)."""
    names = [n for n in resources.builtin_policy_names() if n.startswith(incomplete)]
    return names + _policy_paths(incomplete)


def _policy_paths(incomplete: str) -> list[str]:
    folder, _, start = incomplete.rpartition("/")
    where = os.path.expanduser(folder + "/" if folder else "") or "."
    prefix = folder + "/" if folder or incomplete.startswith("/") else ""
    try:
        entries = sorted(os.scandir(where), key=lambda e: e.name)
    except OSError:
        return []
    found = []
    for entry in entries:
        if not entry.name.startswith(start) or (entry.name.startswith(".") and not start.startswith(".")):
            continue
        try:
            is_dir = entry.is_dir()
        except OSError:
            continue
        if is_dir:
            found.append(f"{prefix}{entry.name}/")
        elif entry.name.endswith(POLICY_SUFFIXES):
            found.append(prefix + entry.name)
    return found


def complete_stage(incomplete: str) -> list[str]:
    """The stages' names (what ``--stage`` and ``ctxkit stages NAME`` take), as the registry lists them."""
    from ..stages.registry import REGISTRY

    return sorted(name for name in REGISTRY if name.startswith(incomplete))
