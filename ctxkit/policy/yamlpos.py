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

A policy is read in every repository that has one, so the reading is bounded:
aliases may not blow the document up (a "billion laughs" is refused while it is
composed, before anything is built), nesting stops at :data:`MAX_DEPTH`, and
control characters and tags that are not plain data are problems with their
position, like any other error in the file.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ..errors import Problem
from ..quoting import quote
from .positions import Document, Node


def _mark(node: yaml.Node | None) -> tuple[int, int]:
    if node is None:
        return 1, 1
    return node.start_mark.line + 1, node.start_mark.column + 1


def tree(node: yaml.Node) -> Node:
    """The position tree of a composed (and converted) document: see :mod:`ctxkit.policy.positions`."""
    line, col = _mark(node)
    if isinstance(node, yaml.MappingNode):
        return [line, col, [[_key_text(k), tree(k), tree(v)] for k, v in node.value]]
    if isinstance(node, yaml.SequenceNode):
        return [line, col, [tree(item) for item in node.value]]
    return [line, col, None]


def _key_text(node: yaml.Node) -> str:
    return node.value if isinstance(node, yaml.ScalarNode) else str(node.value)


def parse(text: str, file: str) -> tuple[Document | None, list[Problem]]:
    """Parse ``text``; on an error, no document and the problems, each at its position.

    An empty file is an empty mapping. Duplicate keys are problems (YAML would silently keep the last).
    What :class:`_Loader` refuses (aliases that blow up, too deep nesting, control characters, tags
    that are not plain data) is a problem too, found before any of it is built.
    """
    try:
        root, data = _load(text, file)
    except _Refused as exc:
        return None, exc.problems
    if root is None:
        return Document(file, {}, None), []
    return Document(file, data, tree(root)), _duplicate_keys(root, file)


def parse_value(text: str, file: str) -> tuple[Any, list[Problem]]:
    """One value written in YAML (``--set path=VALUE``), under the same limits as a file; empty is null."""
    try:
        return _load(text, file)[1], []
    except _Refused as exc:
        return None, exc.problems


def _load(text: str, file: str) -> tuple[yaml.Node | None, Any]:
    """(root node, plain data) of ``text``; raises :class:`_Refused` with the problems."""
    try:
        loader = _Loader(text, file)
    except yaml.reader.ReaderError as exc:  # a control character: checked over the whole text up front
        raise _Refused([_reader_problem(exc, text, file)]) from None
    try:
        root = loader.get_single_node()
        if root is None:
            return None, None
        converter = _Converter(loader, file)
        data = converter.convert(root)
        if converter.problems:
            raise _Refused(converter.problems)
        return root, data
    except yaml.MarkedYAMLError as exc:
        raise _Refused([_syntax_problem(exc, file)]) from None
    except yaml.reader.ReaderError as exc:
        raise _Refused([_reader_problem(exc, text, file)]) from None
    finally:
        loader.dispose()


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


def _reader_problem(exc: yaml.reader.ReaderError, text: str, file: str) -> Problem:
    """A character YAML does not allow: NUL and the other control characters but tab and newline, and
    the bytes a command-line argument could not decode."""
    pos = max(0, min(int(exc.position), len(text)))
    line = text.count("\n", 0, pos) + 1
    col = pos - (text.rfind("\n", 0, pos) + 1) + 1
    code = exc.character if isinstance(exc.character, int) else ord(str(exc.character)[:1] or "\0")
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (a command-line argument keeps it so)
        return Problem(file, line, col, f"invalid YAML: the byte 0x{code - 0xDC00:02X} is not UTF-8")
    return Problem(file, line, col, f"invalid YAML: the character U+{code:04X} is not allowed "
                   "(YAML holds printable characters, tab and newline)")


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


class _Refused(Exception):
    """What stops a parse: the problems to report."""

    def __init__(self, problems: list[Problem]):
        super().__init__(problems)
        self.problems = problems


#: The deepest a policy may nest (mappings and lists within each other, aliases expanded): far more
#: than any policy needs, and well within what the converter, the schema check and the merge walk.
MAX_DEPTH = 100
#: Aliases may make the document stand for this many times the values written in it (and at least
#: MIN_EXPANDED values): enough to share a block between stages, not enough to blow up ("billion laughs").
EXPANSION_RATIO = 10
MIN_EXPANDED = 10_000

_CORE = "tag:yaml.org,2002:"
#: The tags a policy may hold: plain data. Binary, sets, ordered maps, Python objects and custom
#: tags are refused, whether written explicitly or not.
_SCALAR_TAGS = frozenset(_CORE + name for name in ("str", "int", "float", "bool", "null", "timestamp"))
_COLLECTION_TAGS = {yaml.SequenceNode: _CORE + "seq", yaml.MappingNode: _CORE + "map"}


class _Loader(yaml.SafeLoader):
    """The safe loader, counting while it composes: how deep the nodes nest and how many values the
    document stands for once aliases are expanded. Composition keeps an alias as a shared node, so the
    counts grow by each anchored node's recorded size and height (nothing is expanded); past a limit
    it stops at the node or alias that crossed it, before anything is built."""

    def __init__(self, text: str, file: str):
        super().__init__(text)
        self.file = file
        self._depth = 0  # nesting of the node being composed, as written
        self._written = 0  # nodes written in the document
        self._expanded = 0  # nodes the document stands for, aliases expanded
        self._heights: list[int] = []  # height so far of each node being composed
        self._shape: dict[int, tuple[int, int]] = {}  # id(node) -> (expanded size, expanded height)

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        mark = self.peek_event().start_mark
        if self.check_event(yaml.AliasEvent):
            node = super().compose_node(parent, index)
            size, height = self._shape.get(id(node), (1, 1))  # an alias to its own ancestor: the converter reports it
            self._grow(size, self._depth + height, mark)
            self._child_height(height)
            return node
        self._depth += 1
        self._written += 1
        self._grow(1, self._depth, mark)
        before = self._expanded - 1
        self._heights.append(1)
        node = super().compose_node(parent, index)
        height = self._heights.pop()
        self._depth -= 1
        self._shape[id(node)] = (self._expanded - before, height)
        self._child_height(height)
        return node

    def _child_height(self, height: int) -> None:
        if self._heights:
            self._heights[-1] = max(self._heights[-1], height + 1)

    def _grow(self, size: int, depth: int, mark: yaml.Mark) -> None:
        self._expanded += size
        line, col = mark.line + 1, mark.column + 1
        if depth > MAX_DEPTH:
            raise _Refused([Problem(self.file, line, col, f"invalid YAML: nested more than {MAX_DEPTH} levels deep"
                                    + (" once aliases are expanded" if size > 1 else ""))])
        limit = max(MIN_EXPANDED, EXPANSION_RATIO * self._written)
        if self._expanded > limit:
            raise _Refused([Problem(
                self.file, line, col, f"invalid YAML: aliases would expand the document past {limit:,} values "
                f"({self._written:,} written so far)",
                "an alias may repeat a small block, not multiply the document")])


def _tag_name(tag: str) -> str:
    return "!!" + tag[len(_CORE):] if tag.startswith(_CORE) else tag


class _Converter:
    """Nodes to plain data: keys as written, scalars constructed by the safe loader.

    A tag that is not plain data, or a scalar its tag cannot read (``!!int x``), is a problem at the
    node; the conversion goes on so that one run reports them all.
    """

    def __init__(self, loader: yaml.SafeLoader, file: str):
        self.loader = loader
        self.file = file
        self.active: set[int] = set()
        self.problems: list[Problem] = []

    def _problem(self, node: yaml.Node, message: str, hint: str | None = None) -> None:
        line, col = _mark(node)
        self.problems.append(Problem(self.file, line, col, message, hint))

    def convert(self, node: yaml.Node) -> Any:
        if isinstance(node, yaml.ScalarNode):
            return self._scalar(node)
        if node.tag != _COLLECTION_TAGS.get(type(node)):
            kind = "list" if isinstance(node, yaml.SequenceNode) else "mapping"
            self._problem(node, f"invalid YAML: the tag {quote(_tag_name(node.tag))} is not allowed on a {kind} "
                          "in a policy", "a policy holds plain data: remove the tag")
        if id(node) in self.active:
            line, col = _mark(node)
            raise _Refused([Problem(self.file, line, col, "invalid YAML: an alias refers to a node that contains it")])
        self.active.add(id(node))
        try:
            if isinstance(node, yaml.SequenceNode):
                return [self.convert(item) for item in node.value]
            self.loader.flatten_mapping(node)  # resolves '<<' merge keys in place
            return {_key_text(k): self.convert(v) for k, v in node.value}
        finally:
            self.active.discard(id(node))

    def _scalar(self, node: yaml.ScalarNode) -> Any:
        if node.tag not in _SCALAR_TAGS:
            self._problem(node, f"invalid YAML: the tag {quote(_tag_name(node.tag))} is not allowed in a policy",
                          "a policy holds plain data: strings, numbers, true/false, null, lists and mappings")
            return None
        try:
            return self.loader.construct_object(node, deep=True)
        except (ValueError, KeyError, TypeError, AttributeError, OverflowError, yaml.YAMLError):
            self._problem(node, f"invalid YAML: {quote(node.value)} is not a valid {_tag_name(node.tag)}")
            return None
