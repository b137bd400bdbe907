"""YAML that remembers where each value was written.

``yaml.safe_load`` forgets positions, so a schema error could only say *what*
is wrong. Here the file is composed into nodes (each keeps its
``start_mark``), converted to plain data, and the nodes are kept beside the
data: :meth:`Document.position` walks them along a JSON path (the
``absolute_path`` of a jsonschema error) and answers ``(line, col)``, 1-based.
A path that leads nowhere (a missing key) falls back to the nearest node that
exists, so "missing key 'id'" points at the mapping that lacks it.

Mapping keys stay the text written in the file (``on:`` is the key ``'on'``,
not ``True``), because policy keys are names; values are constructed as
``yaml.safe_load`` would.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import yaml

from ..errors import Problem
from ..quoting import quote

JsonPath = Sequence[str | int]


@dataclass
class Document:
    """A parsed policy source: its data, and how to find where any part of it was written."""

    file: str
    data: Any
    root: yaml.Node | None = None

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
        parent_path, last = list(path[:-1]), path[-1]
        node = self.root
        for segment in parent_path:
            child = _child(node, segment)
            if child is None:
                return _mark(node)
            node = child[1]
        child = _child(node, last)
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


def _mark(node: yaml.Node | None) -> tuple[int, int]:
    if node is None:
        return 1, 1
    return node.start_mark.line + 1, node.start_mark.column + 1


def _child(node: yaml.Node | None, segment: str | int) -> tuple[yaml.Node, yaml.Node] | None:
    """The (key node, value node) of ``segment`` under ``node``; for a list item both are the item.

    The last of equal keys wins, as it does when the data is built.
    """
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in reversed(node.value):
            if _key_text(key_node) == str(segment):
                return key_node, value_node
    elif isinstance(node, yaml.SequenceNode) and isinstance(segment, int) and 0 <= segment < len(node.value):
        item = node.value[segment]
        return item, item
    return None


def _key_text(node: yaml.Node) -> str:
    return node.value if isinstance(node, yaml.ScalarNode) else str(node.value)


def parse(text: str, file: str) -> tuple[Document | None, list[Problem]]:
    """Parse ``text``; on a syntax error, no document and one problem at the error's position.

    An empty file is an empty mapping. Duplicate keys are problems (YAML would silently keep the last).
    """
    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()
        problems = _duplicate_keys(root, file)
        data = _Converter(loader, file).convert(root) if root is not None else {}
    except yaml.MarkedYAMLError as exc:
        return None, [_syntax_problem(exc, file)]
    except _RecursiveAlias as exc:
        return None, [exc.problem]
    finally:
        loader.dispose()
    return Document(file, data, root), problems


def read(path: Path, file: str) -> tuple[Document | None, list[Problem]]:
    """Read and parse the file at ``path``, naming it ``file`` in problems."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, [Problem(file, 1, 1, "no such file")]
    except UnicodeDecodeError as exc:
        return None, [Problem(file, 1, 1, f"cannot read the file: not UTF-8 ({exc.reason})")]
    except OSError as exc:
        return None, [Problem(file, 1, 1, f"cannot read the file: {exc.strerror or exc}")]
    return parse(text, file)


def _syntax_problem(exc: yaml.MarkedYAMLError, file: str) -> Problem:
    mark = exc.problem_mark or exc.context_mark
    line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
    message = f"invalid YAML: {exc.problem or exc.context or 'cannot parse'}"
    hint = exc.context if exc.problem and exc.context else None
    return Problem(file, line, col, message, hint)


def _duplicate_keys(node: yaml.Node | None, file: str) -> list[Problem]:
    """Every key written twice in one mapping, at its second occurrence (``<<`` merge keys excepted)."""
    problems: list[Problem] = []
    seen_nodes: set[int] = set()
    stack = [node] if node is not None else []
    while stack:
        current = stack.pop()
        if id(current) in seen_nodes:  # aliases share nodes
            continue
        seen_nodes.add(id(current))
        if isinstance(current, yaml.MappingNode):
            first_lines: dict[str, int] = {}
            for key_node, value_node in current.value:
                key = _key_text(key_node)
                if key in first_lines and key != "<<":
                    line, col = _mark(key_node)
                    problems.append(Problem(file, line, col, f"duplicate key {quote(key)} (first at line {first_lines[key]})"))
                first_lines.setdefault(key, _mark(key_node)[0])
                stack.append(value_node)
        elif isinstance(current, yaml.SequenceNode):
            stack.extend(current.value)
    return sorted(problems, key=lambda p: (p.line, p.col))


class _RecursiveAlias(Exception):
    def __init__(self, problem: Problem):
        self.problem = problem


class _Converter:
    """Nodes to plain data: keys as written, scalars constructed by the safe loader."""

    def __init__(self, loader: yaml.SafeLoader, file: str):
        self.loader = loader
        self.file = file
        self.active: set[int] = set()

    def convert(self, node: yaml.Node) -> Any:
        if isinstance(node, yaml.ScalarNode):
            return self.loader.construct_object(node, deep=True)
        if id(node) in self.active:
            line, col = _mark(node)
            raise _RecursiveAlias(Problem(self.file, line, col, "invalid YAML: an alias refers to a node that contains it"))
        self.active.add(id(node))
        try:
            if isinstance(node, yaml.SequenceNode):
                return [self.convert(item) for item in node.value]
            self.loader.flatten_mapping(node)  # resolves '<<' merge keys in place
            return {_key_text(k): self.convert(v) for k, v in node.value}
        finally:
            self.active.discard(id(node))
