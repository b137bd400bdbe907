"""Folding policy layers into one document, remembering who set what.

Mappings merge key by key; any other value (lists included) replaces the
value below it. ``stages`` is the exception, merged by ``id`` as pre-commit
merges hooks: an entry whose id already exists merges into that entry where it
stands (its options deep-merged; ``enabled: false`` switches it off), a new id
is appended, or placed by ``before:`` / ``after:``. Those two only position an
entry, so they are not kept in the merged document (nor is ``extends``, which
the layer reader has already followed).

Every leaf value gets an :class:`Origin` under its dotted key, stages
addressed by id (``stages.budget.options.max_result_chars``), which is what
``ctxkit policy show`` prints beside each value.

The merge never fails on a malformed layer: what it cannot merge it skips, and
the schema check has already reported it. It reports only what needs the
layers below: a placement naming an unknown stage, an entry that runs no known
stage, an id listed twice.
"""
from __future__ import annotations

import copy
from typing import Any, Collection, NamedTuple

from ..errors import Problem
from ..quoting import quote
from .hints import did_you_mean
from .positions import Document, JsonPath

PLACEMENT_KEYS = ("before", "after")
NOT_MERGED = ("extends",)


class Origin(NamedTuple):
    """Where a value was written; ``rank`` is the layer's place in the stack (higher wins)."""

    file: str
    line: int
    col: int
    rank: int

    def __str__(self) -> str:
        """``file:line``; a value with no line (a schema default) names its source alone."""
        return f"{self.file}:{self.line}" if self.line else self.file


class Merger:
    """Folds layers, lowest first, into :attr:`doc`, recording :attr:`origins`."""

    def __init__(self, stage_names: Collection[str]):
        self.doc: dict[str, Any] = {}
        self.origins: dict[str, Origin] = {}
        self._stage_names = set(stage_names)
        self._rank = 0

    def stage_uses(self) -> dict[str, str]:
        """Each merged stage id and the stage it runs (``use``, or the id itself)."""
        return {s["id"]: s.get("use", s["id"]) for s in self.doc.get("stages", [])}

    def add(self, document: Document) -> list[Problem]:
        """Merge one layer on top of those already added."""
        self._rank += 1
        data = document.data if isinstance(document.data, dict) else {}
        problems: list[Problem] = []
        for key, value in data.items():
            if key in NOT_MERGED:
                continue
            if key == "stages":
                problems += self._merge_stages(value, document)
            else:
                self._set(self.doc, key, value, [key], key, document)
        return problems

    # -- values -------------------------------------------------------------

    def _set(self, target: dict, key: str, value: Any, path: list, dotted: str, document: Document) -> None:
        """Deep-merge a non-empty mapping into ``target[key]``; anything else replaces it."""
        if isinstance(value, dict) and value:
            if not isinstance(target.get(key), dict):
                target[key] = {}
                self._forget(dotted)
            for child_key, child in value.items():
                self._set(target[key], child_key, child, [*path, child_key], f"{dotted}.{child_key}", document)
            return
        target[key] = copy.deepcopy(value)
        self._forget(dotted)
        self._record(dotted, document, path)

    def _record(self, dotted: str, document: Document, path: JsonPath) -> None:
        line, col = document.key_position(path)
        self.origins[dotted] = Origin(document.file, line, col, self._rank)

    def _forget(self, dotted: str) -> None:
        """Drop the origins of a value being replaced, and of everything under it."""
        for key in [k for k in self.origins if k == dotted or k.startswith(dotted + ".")]:
            del self.origins[key]

    # -- stages -------------------------------------------------------------

    def _merge_stages(self, entries: Any, document: Document) -> list[Problem]:
        if not isinstance(entries, list):
            return []
        stages: list[dict] = self.doc.setdefault("stages", [])
        problems: list[Problem] = []
        first_lines: dict[str, int] = {}
        for index, entry in enumerate(entries):
            if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
                continue
            path = ["stages", index]
            stage_id = entry["id"]
            if stage_id in first_lines:
                problems.append(document.problem(
                    [*path, "id"], f"duplicate stage id {quote(stage_id)} (first at line {first_lines[stage_id]})"))
            first_lines.setdefault(stage_id, document.position([*path, "id"])[0])
            target = next((s for s in stages if s["id"] == stage_id), None)
            if target is None:
                problems += self._check_runs_something(entry, path, document)
                target = {"id": stage_id}
                self._record(f"stages.{stage_id}.id", document, [*path, "id"])
                problems += _place(stages, target, entry, path, document)
            elif any(key in entry for key in PLACEMENT_KEYS):
                stages.remove(target)
                problems += _place(stages, target, entry, path, document)
            for key, value in entry.items():
                if key not in ("id", *PLACEMENT_KEYS):
                    self._set(target, key, value, [*path, key], f"stages.{stage_id}.{key}", document)
        return problems

    def _check_runs_something(self, entry: dict, path: list, document: Document) -> list[Problem]:
        """A new entry without ``use`` runs the stage named by its id, which must exist.

        (An override of an existing id needs no ``use``; an explicit ``use`` is checked by the schema.)
        """
        stage_id = entry["id"]
        if "use" in entry or stage_id in self._stage_names:
            return []
        known = [*self.stage_uses(), *self._stage_names]
        hint = did_you_mean(stage_id, known) or _listing("set 'use' to one of", sorted(self._stage_names))
        return [document.problem([*path, "id"], f"stage {quote(stage_id)} names no known stage and has no 'use'", hint)]


def _place(stages: list[dict], target: dict, entry: dict, path: list, document: Document) -> list[Problem]:
    """Insert ``target`` where ``entry``'s ``before`` / ``after`` says, else at the end."""
    given = [key for key in PLACEMENT_KEYS if key in entry]
    if len(given) > 1:
        stages.append(target)
        return [document.problem(path, f"stage {quote(target['id'])} sets both 'before' and 'after'", "use one of them")]
    if not given or not isinstance(entry[given[0]], str):  # not a string: the schema has said so
        stages.append(target)
        return []
    key, anchor = given[0], entry[given[0]]
    ids = [s["id"] for s in stages]
    if anchor not in ids:
        stages.append(target)
        if anchor == target["id"]:
            return [document.problem([*path, key], f"stage {quote(anchor)} cannot be placed {key} itself")]
        message = f"stage {quote(target['id'])} is placed {key} {quote(anchor)}, which is not a stage id"
        return [document.problem([*path, key], message, did_you_mean(anchor, ids) or _listing("stage ids", ids))]
    stages.insert(ids.index(anchor) + (key == "after"), target)
    return []


def _listing(label: str, names: list[str]) -> str | None:
    return f"{label}: {', '.join(names)}" if names else None
