"""Claude Code's ``settings.json``: ctxkit's hook entries merged in and taken out again, as text.

``ctxkit hooks install`` must never clobber what a user keeps there (other hooks, permissions,
environment, key order, indentation), and ``ctxkit hooks uninstall`` must leave the file as it was
before, byte for byte. Loading the JSON and dumping it again would do neither: it reformats the whole
file. So the file is edited as text: the JSON is parsed once to check it and once more by a small
scanner that knows where each member and element starts and ends, and ctxkit's entries are inserted
(or cut out) at those places, the rest of the text untouched.

Each insertion has an exact inverse, so uninstall needs no record of what install did:

* into a container that has members, a member is appended after the last one as ``,`` + the
  whitespace found before that last one + the member; removing it cuts from the end of the member
  before it to its own end;
* into an empty container (``{}``, ``[ ]``), it goes right after the opening bracket as a newline,
  the indentation + the member; removing the only member cuts from the bracket to its end, so the
  whitespace that was there before is left;
* a container install creates (the ``hooks`` object, an event's list, the whole file) is written
  with its closing bracket on a line of its own; once its last ctxkit entry is cut out, what is left
  is exactly ``{`` + newline + indentation + ``}``: a container in that shape is removed with it (the
  file, when it is the top object and install created the file).

A group install adds is recognised by its content (the same matcher and the one ctxkit command):
groups a user wrote, or edited to hold more, are left alone.
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..fileio import atomic_write
from ..quoting import quote

#: What install adds, per event: Claude Code runs the command with the hook's JSON input on stdin.
#: PreCompact's matcher is the trigger (manual, auto: both); SessionStart's the source.
HOOK_TIMEOUT_SECONDS = 60
PRE_COMPACT_COMMAND = "ctxkit hooks pre-compact"
SESSION_START_COMMAND = "ctxkit hooks session-start"
ENTRIES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("PreCompact", {"matcher": "", "hooks": [{"type": "command", "command": PRE_COMPACT_COMMAND,
                                              "timeout": HOOK_TIMEOUT_SECONDS}]}),
    ("SessionStart", {"matcher": "compact", "hooks": [{"type": "command", "command": SESSION_START_COMMAND,
                                                        "timeout": HOOK_TIMEOUT_SECONDS}]}),
)


class SettingsError(UsageError):
    """The settings file cannot be edited (not JSON, not an object, a hooks value of the wrong type)."""


@dataclass
class Node:
    """A JSON value's place in the text: ``start``..``end`` (end exclusive); an object's or array's
    ``items`` (key or None, the key's start or the value's, the value node) in order."""

    kind: str  # "object", "array" or "scalar"
    start: int
    end: int
    items: list[tuple[str | None, int, Node]]

    def member(self, key: str) -> Node | None:
        """An object's value for ``key`` (the last one, as JSON parsers take it), or None."""
        found = None
        for k, _, node in self.items:
            if k == key:
                found = node
        return found


# -- scanning ---------------------------------------------------------------------------------------
_WS = " \t\r\n"


class _Scanner:
    """Positions of the values of a text already known to be valid JSON (``json.loads`` checked it)."""

    def __init__(self, text: str):
        self.text = text

    def skip(self, i: int) -> int:
        while i < len(self.text) and self.text[i] in _WS:
            i += 1
        return i

    def string_end(self, i: int) -> int:
        i += 1
        while self.text[i] != '"':
            i += 2 if self.text[i] == "\\" else 1
        return i + 1

    def value(self, i: int) -> Node:
        i = self.skip(i)
        ch = self.text[i]
        if ch == "{":
            return self._container(i, "object", "}")
        if ch == "[":
            return self._container(i, "array", "]")
        if ch == '"':
            return Node("scalar", i, self.string_end(i), [])
        j = i
        while j < len(self.text) and self.text[j] not in _WS + ",]}":
            j += 1
        return Node("scalar", i, j, [])

    def _container(self, i: int, kind: str, close: str) -> Node:
        items: list[tuple[str | None, int, Node]] = []
        j = self.skip(i + 1)
        while self.text[j] != close:
            key = None
            first = j
            if kind == "object":
                end = self.string_end(j)
                key = json.loads(self.text[j:end])
                j = self.skip(end) + 1  # the colon
            node = self.value(j)
            items.append((key, first, node))
            j = self.skip(node.end)
            if self.text[j] == ",":
                j = self.skip(j + 1)
        return Node(kind, i, j + 1, items)


def parse(text: str, name: str) -> Node:
    """The top object of a settings file's ``text``; :class:`SettingsError` naming ``name`` and the line
    when it is not JSON or not an object."""
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        raise SettingsError(f"{name}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}; fix or move it, "
                            "then run the command again (nothing was written)") from None
    top = _Scanner(text).value(0)
    if top.kind != "object":
        raise SettingsError(f"{name}:1:1: Claude Code's settings must be a JSON object; nothing was written")
    return top


# -- text around a node -----------------------------------------------------------------------------
def _line_indent(text: str, at: int) -> str:
    start = text.rfind("\n", 0, at) + 1
    end = start
    while end < len(text) and text[end] in " \t":
        end += 1
    return text[start:end]


def _indent_unit(text: str) -> str:
    """The file's indentation step: the first indented line's leading whitespace (two spaces when none)."""
    for line in text.splitlines()[1:]:
        lead = line[:len(line) - len(line.lstrip(" \t"))]
        if lead and line.strip():
            return lead
    return "  "


def _dump(value: Any, unit: str, indent: str) -> str:
    """``value`` as JSON written with ``unit`` per level, its lines after the first indented by ``indent``."""
    return json.dumps(value, indent=unit, ensure_ascii=False).replace("\n", "\n" + indent)


def _insert(text: str, container: Node, member: str, unit: str) -> str:
    """``text`` with ``member`` (a ``"key": value`` or a value, already dumped for its indentation)
    added at the end of ``container`` (see the module docstring)."""
    if container.items:
        last_key_start = container.items[-1][1]
        last_end = container.items[-1][2].end
        before = len(text[:last_key_start]) - len(text[:last_key_start].rstrip(_WS))
        sep = text[last_key_start - before:last_key_start]
        return text[:last_end] + "," + sep + member + text[last_end:]
    indent = _line_indent(text, container.start) + unit
    return text[:container.start + 1] + "\n" + indent + member + text[container.start + 1:]


def _member_indent(text: str, container: Node, unit: str) -> str:
    """The indentation a new member of ``container`` gets (that of its last member, else one step in)."""
    if container.items:
        return _line_indent(text, container.items[-1][1])
    return _line_indent(text, container.start) + unit


def _cut(text: str, container: Node, index: int) -> str:
    """``text`` without member ``index`` of ``container`` (the inverse of :func:`_insert`)."""
    items = container.items
    start, node = items[index][1], items[index][2]
    if index > 0:
        return text[:items[index - 1][2].end] + text[node.end:]
    if len(items) > 1:
        return text[:start] + text[items[1][1]:]
    return text[:container.start + 1] + text[node.end:]


def _created_shape(text: str, node: Node) -> bool:
    """Whether ``node`` is an empty container left as install creates them: the bracket, a newline,
    the indentation of the line it opens on, the closing bracket."""
    return (node.kind in ("object", "array") and not node.items
            and text[node.start + 1:node.end - 1] == "\n" + _line_indent(text, node.start))


# -- install / uninstall ----------------------------------------------------------------------------
def _groups(top: Node, text: str, event: str, name: str) -> Node | None:
    hooks = top.member("hooks")
    if hooks is None:
        return None
    if hooks.kind != "object":
        raise SettingsError(f"{name}:{_line(text, hooks.start)}: \"hooks\" must be an object; nothing was written")
    groups = hooks.member(event)
    if groups is not None and groups.kind != "array":
        raise SettingsError(f"{name}:{_line(text, groups.start)}: \"hooks\".\"{event}\" must be a list; nothing was "
                            "written")
    return groups


def _line(text: str, at: int) -> str:
    line = text.count("\n", 0, at) + 1
    return f"{line}:{at - (text.rfind(chr(10), 0, at) + 1) + 1}"


def _is_ours(text: str, node: Node, entry: dict[str, Any]) -> bool:
    try:
        return json.loads(text[node.start:node.end]) == entry
    except json.JSONDecodeError:  # pragma: no cover - the scanner only gives whole values
        return False


def merged(text: str | None, name: str, entries: Sequence[tuple[str, dict]] = ENTRIES) -> str:
    """The settings text with ``entries`` (event, group) added where they are missing; ``text`` None:
    the file does not exist yet. Already there: the text as it is (install twice changes nothing)."""
    if text is None:
        return json.dumps({"hooks": {event: [entry] for event, entry in entries}}, indent=2) + "\n"
    unit = _indent_unit(text)
    for event, entry in entries:
        top = parse(text, name)
        groups = _groups(top, text, event, name)
        if groups is not None and any(_is_ours(text, node, entry) for _, _, node in groups.items):
            continue
        hooks = top.member("hooks")
        if hooks is None:
            indent = _member_indent(text, top, unit)
            text = _insert(text, top, '"hooks": ' + _dump({event: [entry]}, unit, indent), unit)
        elif groups is None:
            indent = _member_indent(text, hooks, unit)
            text = _insert(text, hooks, json.dumps(event) + ": " + _dump([entry], unit, indent), unit)
        else:
            text = _insert(text, groups, _dump(entry, unit, _member_indent(text, groups, unit)), unit)
    return text


def unmerged(text: str, name: str, entries: Sequence[tuple[str, dict]] = ENTRIES) -> str | None:
    """The settings text with ctxkit's ``entries`` taken out (and the containers install created for
    them); None when nothing is left of a file install created."""
    while True:
        top = parse(text, name)
        edit = next(_removals(text, top, name, entries), None)
        if edit is None:
            break
        text = edit
    if _created_shape(text, top) and text[top.end:] in ("", "\n"):
        return None
    return text


def _removals(text: str, top: Node, name: str, entries: Sequence[tuple[str, dict]]) -> Iterator[str]:
    """The text with one more ctxkit entry (or a container left empty in install's shape) cut out."""
    hooks = top.member("hooks")
    for event, entry in entries:
        groups = _groups(top, text, event, name)
        if groups is None:
            continue
        for index, (_, _, node) in enumerate(groups.items):
            if _is_ours(text, node, entry):
                yield _cut(text, groups, index)
                return
    if hooks is None:
        return
    for index, (key, _, node) in enumerate(hooks.items):
        if key in {event for event, _ in entries} and _created_shape(text, node):
            yield _cut(text, hooks, index)
            return
    if _created_shape(text, hooks):
        yield _cut(text, top, max(i for i, (k, _, _) in enumerate(top.items) if k == "hooks"))


# -- the files --------------------------------------------------------------------------------------
def settings_path(scope: str, cwd: Path, home: Path | None = None) -> Path:
    """``.claude/settings.json`` of the project (``scope`` "project": the git root above ``cwd``, else
    ``cwd``) or of the user (``~/.claude/settings.json``)."""
    if scope == "user":
        return (home if home is not None else Path.home()) / ".claude" / "settings.json"
    root = cwd
    for folder in (cwd, *cwd.parents):
        if (folder / ".git").exists():
            root = folder
            break
    return root / ".claude" / "settings.json"


def _read(path: Path) -> str | None:
    target = Path(os.path.realpath(path))
    try:
        data = target.read_bytes()
    except FileNotFoundError:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise SettingsError(f"{path}:{line}: not UTF-8 text; nothing was written") from None


def _write(path: Path, text: str) -> None:
    """Atomically, through a symbolic link to its target (a settings file kept in a dotfiles repository)."""
    target = Path(os.path.realpath(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(target, text.encode("utf-8"))


@dataclass
class Change:
    """What install or uninstall did to one settings file."""

    path: Path
    action: str  # "installed", "already installed", "removed", "not installed", "deleted"

    def message(self) -> str:
        return f"{self.action}: {quote(str(self.path))}"


def install(path: Path) -> Change:
    """Merge ctxkit's hook entries into the settings file at ``path`` (created when missing)."""
    before = _read(path)
    after = merged(before, str(path))
    if after == before:
        return Change(path, "already installed")
    _write(path, after)
    return Change(path, "installed")


def uninstall(path: Path) -> Change:
    """Take ctxkit's hook entries out of the settings file at ``path``; delete it if install created it."""
    before = _read(path)
    if before is None:
        return Change(path, "not installed")
    after = unmerged(before, str(path))
    if after is None:
        os.unlink(os.path.realpath(path))
        return Change(path, "deleted")
    if after == before:
        return Change(path, "not installed")
    _write(path, after)
    return Change(path, "removed")
