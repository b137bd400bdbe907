"""Where each part of a policy was written: a parsed policy source, without YAML.

A :class:`Document` holds a layer's data and a *position tree* beside it, which
:meth:`Document.position` walks along a JSON path (the ``absolute_path`` of a
jsonschema error, the dotted key of a merged value) to answer ``(line, col)``,
1-based. A path that leads nowhere (a missing key) falls back to the nearest
node that exists, so "missing key 'id'" points at the mapping that lacks it.

The tree is plain lists, one node per value: ``[line, col, children]`` where
``children`` is None for a scalar, a list of nodes for a list, and a list of
``[key text, key node, value node]`` for a mapping. :mod:`ctxkit.policy.yamlpos`
builds it from YAML; the built-in policies ship it precompiled
(:mod:`ctxkit.policy.builtin_forms`), so a run on them never imports YAML.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from ..errors import Problem

JsonPath = Sequence[str | int]
#: ``[line, col, children]``, see the module docstring
Node = list


@dataclass
class Document:
    """A parsed policy source: its data, and how to find where any part of it was written."""

    file: str
    data: Any
    root: Node | None = None

    def position(self, path: JsonPath) -> tuple[int, int]:
        """Where the value at ``path`` starts, or the nearest existing parent when it does not exist."""
        node = self.root
        for segment in path:
            child = _child(node, segment)
            if child is None:
                break
            node = child[1]
        return _mark(node)

    def key_position(self, path: JsonPath) -> tuple[int, int]:
        """Where the *key* of the last segment is written: unknown keys and provenance point there."""
        if not path:
            return self.position(path)
        node = self.root
        for segment in list(path[:-1]):
            child = _child(node, segment)
            if child is None:
                return _mark(node)
            node = child[1]
        child = _child(node, path[-1])
        return _mark(child[0] if child else node)

    def problem(self, path: JsonPath, message: str, hint: str | None = None, *, at_key: bool = False) -> Problem:
        line, col = self.key_position(path) if at_key else self.position(path)
        return Problem(self.file, line, col, message, hint)


@dataclass
class FixedDocument(Document):
    """A source with no file behind it (``--set``): every path is at one place."""

    line: int = 1
    col: int = 1

    def position(self, path: JsonPath) -> tuple[int, int]:
        return self.line, self.col

    def key_position(self, path: JsonPath) -> tuple[int, int]:
        return self.line, self.col


def _mark(node: Node | None) -> tuple[int, int]:
    return (1, 1) if node is None else (node[0], node[1])


def _child(node: Node | None, segment: str | int) -> tuple[Node, Node] | None:
    """The (key node, value node) of ``segment`` under ``node``; for a list item both are the item.
    The last of equal keys wins, as it does when the data is built."""
    children = node[2] if node is not None else None
    if not children:
        return None
    if isinstance(children[0][0], str):  # a mapping: [key text, key node, value node] (a node starts with its line)
        for key, key_node, value_node in reversed(children):
            if key == str(segment):
                return key_node, value_node
        return None
    if isinstance(segment, int) and 0 <= segment < len(children):
        return children[segment], children[segment]
    return None
