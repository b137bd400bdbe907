"""Policies: YAML layers, validated against ``schemas/policy.schema.json``, merged, compiled.

The public surface::

    load_policy(policy=None, sets=(), cwd=None, user_config=None, *, stages) -> Policy
    validate_file(path, *, stages) -> list[Problem]
    effective_schema(stages) -> dict

``stages`` is the registry of stages a policy may use (name -> stage class):
this package never imports ``ctxkit.stages``; ``ctxkit.load_policy`` (the
library's entry point) and the CLI pass ``ctxkit.stages.registry.REGISTRY``.
    render_policy(policy) -> str
    find_repo_policy(cwd) -> Path | None

Inside, one module per concern: ``layers`` finds and reads the layers,
``yamlpos`` keeps the line and column of every value, ``schema`` builds the
stage-aware schema and words its errors, ``merge`` folds the layers and records
origins, ``consistency`` checks the merged whole (settings that contradict each other), ``loader`` runs those in order,
``render`` prints the result, ``model`` is the compiled :class:`Policy`,
``trust`` decides whether a repository's policy may run commands or reach the
network.

Must not import: stages, pipeline, reports, the CLI; nor read or write
transcripts.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping, Sequence

from ..errors import PolicyError, Problem
from .layers import CLI_LABELS, LIBRARY_LABELS, Labels, LayerReader, find_repo_policy, user_config_path
from .loader import assemble
from .model import Policy, StageSpec, Thresholds, ToolSets
from .schema import effective_schema

__all__ = [
    "CLI_LABELS",
    "LIBRARY_LABELS",
    "Labels",
    "Policy",
    "PolicyError",
    "Problem",
    "StageSpec",
    "Thresholds",
    "ToolSets",
    "effective_schema",
    "find_repo_policy",
    "load_policy",
    "render_policy",
    "user_config_path",
    "validate_file",
]


def load_policy(policy: str | None = None, sets: Sequence[str] = (), cwd: Path | None = None,
                user_config: Path | None = None, *, stages: Mapping[str, Any], labels: Labels = CLI_LABELS) -> Policy:
    """The policy for a run: built-in base, user file, repository file, ``policy``, ``sets``.

    ``user_config`` None means ``$XDG_CONFIG_HOME/ctxkit/policy.yaml``. Raises :class:`PolicyError`
    with every problem of every layer; ``labels`` name ``policy`` and ``sets`` in them: the CLI's
    options by default, the arguments (:data:`LIBRARY_LABELS`) when ``ctxkit.load_policy`` calls.
    """
    reader = LayerReader(Path.cwd() if cwd is None else Path(cwd), labels)
    assembly = assemble(reader.layers(policy, sets, user_config), reader, stages)
    if assembly.problems:
        raise PolicyError(assembly.problems)
    compiled = Policy.from_mapping(assembly.doc, {key: str(origin) for key, origin in assembly.origins.items()})
    return dataclasses.replace(compiled, layers=tuple(assembly.layers), untrusted=tuple(assembly.untrusted),
                               origin_folders=MappingProxyType(assembly.folders))


def render_policy(policy: Policy) -> str:
    """The merged policy as YAML with the origin of each value (``ctxkit policy show``)."""
    from .render import render_policy as render  # PyYAML's dumper: imported by the command that prints

    return render(policy)


def validate_file(path: str | Path, *, stages: Mapping[str, Any]) -> list[Problem]:
    """Every problem of one policy file, checked on its own: on top of what it ``extends`` (or
    ``default``), without the user's or the repository's files. Empty when it is valid. A ``Path`` is a
    file; a string is a file or a built-in name, as ``--policy`` takes it (``ctxkit policy validate``)."""
    reader = LayerReader(Path.cwd())
    layer = reader.file(path) if isinstance(path, Path) else reader.named(path)
    return assemble([layer], reader, stages).problems
