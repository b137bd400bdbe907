"""Putting the layers together: check each as it is read, merge, check the whole.

Every problem from every layer is collected before anything is raised, so one
run shows them all. Each layer is checked against the effective schema on its
own, so a problem names the file it is in; but an entry that overrides a
stage from a lower layer (``{id: budget, options: {...}}``) does not say which
stage it configures, so for the check it borrows the ``use`` merged so far,
and its options are checked against the right stage.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..errors import Problem
from . import schema
from .consistency import policy_rules
from .defaults import schema_defaults
from .layers import Layer, LayerReader
from .merge import Merger, Origin
from .model import SCHEMA_DEFAULT_ORIGIN
from .positions import FixedDocument
from .trust import UntrustedSetting, repository_positions, untrusted_settings

#: What ``ctxkit policy show`` names as the source of a value no layer wrote: the schema's ``default``.
SCHEMA_DEFAULT_LABEL = SCHEMA_DEFAULT_ORIGIN
#: The sections the compiled :class:`~ctxkit.policy.model.Policy` reads whose defaults the merged
#: document (and ``ctxkit policy show``) carries; the rest (``redact``, ``request``, the stages' and
#: attachment types' options) take theirs where they are read.
SHOWN_DEFAULTS = ("model", "max_output_tokens", "estimator", "thresholds", "tools", "summarizer")


def schema_default_layer() -> Layer:
    """The lowest layer: the schema's defaults for :data:`SHOWN_DEFAULTS`, so a built-in policy states
    only its own choices and still every value shows where it came from."""
    defaults = schema_defaults(schema.static_schema())
    data = {key: defaults[key] for key in SHOWN_DEFAULTS if key in defaults}
    return Layer(SCHEMA_DEFAULT_LABEL, FixedDocument(SCHEMA_DEFAULT_LABEL, data, line=0, col=0), builtin=True)


@dataclass
class Assembly:
    """The merged document, where each value came from, and every problem found on the way."""

    doc: dict[str, Any]
    origins: dict[str, Origin]
    problems: list[Problem]
    layers: list[str] = field(default_factory=list)  # the labels of the layers merged, lowest first
    untrusted: list[UntrustedSetting] = field(default_factory=list)
    #: dotted key -> the folder of the file that set it (resolved, symlinks followed); None for --set
    folders: dict[str, str | None] = field(default_factory=dict)


def assemble(layers: Sequence[Layer], reader: LayerReader, registry: Mapping[str, Any]) -> Assembly:
    """Merge ``layers`` on top of their bases; the problems come in layer order, each once.
    ``registry``: the stages a policy may use (name -> stage class).

    The built-in policies are not checked against the schema here: they ship with ctxkit like its
    code, and ``tests/test_startup.py`` checks each of them against the full schema. Only a layer
    someone else wrote (a file, ``--set``) is checked, so a run on the built-ins alone never
    imports jsonschema nor the stage modules it does not run (the schema names every stage's
    options): that is most of ctxkit's start-up time (docs/benchmarks.md)."""
    checker = None
    bases, problems = reader.bases(layers)
    merger = Merger(registry)
    labels: list[str] = []
    stack = [schema_default_layer(), *bases, *layers]
    added: list[int] = []  # the position in the stack of each merged layer, by merge rank
    for position, layer in enumerate(stack):
        problems += layer.problems
        if layer.document is None:
            continue
        if position and (not labels or labels[-1] != layer.label):  # several --set read as one layer
            labels.append(layer.label)
        if not layer.builtin:
            checker = checker or schema.validator(registry)
            instance = with_inherited_uses(layer.document.data, merger.stage_uses(), registry)
            problems += schema.schema_problems(layer.document, checker, instance)
        problems += merger.add(layer.document)
        added.append(position)
    problems += policy_rules(merger.doc, merger.origins)
    # positions in [*bases, *layers]: one further in the stack, above the schema's defaults
    repository = {position + 1: repo for position, repo in
                  repository_positions(bases, layers, reader.repo, reader).items()}
    untrusted = untrusted_settings(stack, added, repository, merger.origins, merger.doc) if repository else []
    folders = {key: _folder(stack[added[origin.rank - 1]]) for key, origin in merger.origins.items()}
    return Assembly(merger.doc, merger.origins, list(dict.fromkeys(problems)), labels, untrusted, folders)


def _folder(layer: Layer) -> str | None:
    """The folder of the file behind ``layer``, symlinks followed (None for ``--set``): what a relative
    path in that file's values (``summarizer.command: ./summarize.sh``) is relative to."""
    return str(layer.path.resolve().parent) if layer.path is not None else None


def with_inherited_uses(data: Any, uses: Mapping[str, str], registry: Mapping[str, Any]) -> Any:
    """A copy of ``data`` where each stage entry without ``use`` gets the ``use`` of the stage with
    the same id below it, when that stage is registered (an unknown one was reported already)."""
    if not isinstance(data, dict) or not isinstance(data.get("stages"), list):
        return data
    stages = []
    for entry in data["stages"]:
        overrides = isinstance(entry, dict) and "use" not in entry and isinstance(entry.get("id"), str)
        inherited = uses.get(entry["id"]) if overrides else None
        stages.append({**entry, "use": inherited} if isinstance(inherited, str) and inherited in registry else entry)
    return {**data, "stages": stages}
