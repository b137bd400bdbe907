"""The fields ctxkit reads from each transcript format, and the types it relies on.

One declarative description per format, checked on every line in the indexing pass
(:func:`ctxkit.transcript.reader.read_transcript`): a line whose fields have the wrong type is a
*bad line*, reported with its file, line number, the field and its value (exit 3), or kept
untouched and left out of the view under ``--on-bad-line skip``. The projection, the stages and
``expand`` can then rely on these shapes instead of guarding every read.

What "valid" means here is deliberately narrow: only fields ctxkit reads are checked, and a field
that is absent is always fine (Claude Code's entries changed shape from 1.0 to 2.1; an entry type
ctxkit does not know passes whatever it holds, as long as its routing fields are right). Null is
allowed wherever a reader treats it as absent. Extra fields are never a problem.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..quoting import describe_content
from .claude_dir_logs import HOOK_LOG, is_hook_log_line

NULL = type(None)
_TYPE_NAMES = {str: "a string", int: "a number", float: "a number", bool: "true or false", list: "a list",
               dict: "an object", NULL: "null"}


class Bad(Exception):
    """A value of the wrong shape: the message, and the path to it (filled in as the check unwinds)."""

    def __init__(self, expected: str, value: Any):
        super().__init__(expected)
        self.expected = expected
        self.value = value
        self.path: list[str | int] = []

    def where(self) -> str:
        """The path to the value, as a reader writes it: ``message.content[2].id``."""
        text = ""
        for part in reversed(self.path):
            text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
        return text

    def describe(self) -> str:
        # what the value is, not the value: it may be a secret, and this goes to a terminal or a CI log
        return f"{self.where() or 'the line'} must be {self.expected}, got {describe_content(self.value)}"


# -- the description language ---------------------------------------------------------------------------
# A spec is a tuple of Python types (the value must be one of them), or one of the classes below. A field
# is checked only when present; ``required`` names those that must be.
Spec = Any


def _expected(types: tuple[type, ...]) -> str:
    names = list(dict.fromkeys(_TYPE_NAMES.get(t, t.__name__) for t in types))
    return " or ".join(names)


class Obj:
    """An object whose listed fields have these specs (other fields: anything).

    Checking is the indexing pass's inner loop, so plain type specs are kept as sets of exact types
    (JSON parsers make exact ``str``/``int``/``bool``...; ``type(True)`` is not ``int``) and the
    entry's own keys are walked once."""

    def __init__(self, fields: dict[str, Spec], required: tuple[str, ...] = (), nullable: bool = False):
        self.fields = fields
        self.required = required
        self.nullable = nullable
        self.simple = {k: frozenset(v) for k, v in fields.items() if isinstance(v, tuple)}
        self.nested = {k: v for k, v in fields.items() if not isinstance(v, tuple)}

    def check(self, value: Any) -> None:
        if type(value) is not dict:
            if self.nullable and value is None:
                return
            raise Bad("an object" + (" or null" if self.nullable else ""), value)
        for key in self.required:
            if key not in value:
                raise _Missing(key)
        simple, nested = self.simple, self.nested
        for key, v in value.items():
            ok = simple.get(key)
            if ok is not None:
                if type(v) in ok:
                    continue
                err = Bad(_expected(self.fields[key]), v)
            else:
                spec = nested.get(key)
                if spec is None:
                    continue
                try:
                    spec.check(v)
                    continue
                except Bad as exc:
                    err = exc
            err.path.append(key)
            raise err


class _Missing(Bad):
    """A required field that is absent."""

    def __init__(self, key: str):
        super().__init__("present", None)
        self.key = key

    def describe(self) -> str:
        where = self.where()
        return f"{where + '.' if where else ''}{self.key} is missing"


class ListOf:
    """A list whose items all match ``item``."""

    def __init__(self, item: Spec, nullable: bool = False):
        self.item = item
        self.nullable = nullable

    def check(self, value: Any) -> None:
        if not isinstance(value, list):
            if self.nullable and value is None:
                return
            raise Bad("a list" + (" or null" if self.nullable else ""), value)
        for k, v in enumerate(value):
            try:
                check(v, self.item)
            except Bad as exc:
                exc.path.append(k)
                raise


class Blocks:
    """A list of content blocks: objects with a string ``type``, each checked by its type's fields."""

    def __init__(self, by_type: dict[str, Obj]):
        self.by_type = by_type

    def check(self, value: Any) -> None:
        if not isinstance(value, list):
            raise Bad("a list of content blocks", value)
        for k, b in enumerate(value):
            try:
                if not isinstance(b, dict) or not isinstance(b.get("type"), str):
                    raise Bad("a content block (an object with a string type)", b)
                shape = self.by_type.get(b["type"])
                if shape is not None:
                    shape.check(b)
            except Bad as exc:
                exc.path.append(k)
                raise


class Tagged:
    """An object (or null) checked by the fields of its ``type``: ``common`` for every type, plus ``by_type``."""

    def __init__(self, common: dict[str, Spec], by_type: dict[str, dict[str, Spec]]):
        self.default = Obj(common, nullable=True)
        self.by_type = {name: Obj({**common, **fields}, nullable=True) for name, fields in by_type.items()}

    def check(self, value: Any) -> None:
        kind = value.get("type") if type(value) is dict else None
        self.by_type.get(kind, self.default).check(value) if type(kind) is str else self.default.check(value)


class Either:
    """The first of several specs the value matches (types are tried first: they are cheap)."""

    def __init__(self, *specs: Spec, expected: str):
        self.specs = specs
        self.expected = expected

    def check(self, value: Any) -> None:
        for spec in self.specs:
            if isinstance(spec, tuple):
                if type(value) in spec:
                    return
            elif _fits(value, spec):
                spec.check(value)
                return
        raise Bad(self.expected, value)


class OneOf:
    """One of a few string values."""

    def __init__(self, *values: str):
        self.values = values

    def check(self, value: Any) -> None:
        if value not in self.values or not isinstance(value, str):
            raise Bad("one of " + ", ".join(self.values), value)


def _fits(value: Any, spec: Spec) -> bool:
    """Whether ``value`` is of the container kind ``spec`` describes (to pick among Either's specs)."""
    if isinstance(spec, Obj):
        return isinstance(value, dict)
    if isinstance(spec, (ListOf, Blocks)):
        return isinstance(value, list)
    return True


def check(value: Any, spec: Spec) -> None:
    """Raise :class:`Bad` when ``value`` does not match ``spec``."""
    if isinstance(spec, tuple):
        if type(value) not in spec:  # exact types: bool is an int in Python, not in JSON
            raise Bad(_expected(spec), value)
        return
    spec.check(value)


# -- content blocks (Anthropic Messages API; Claude Code writes the same) --------------------------------
STR = (str,)
OPT_STR = (str, NULL)
OPT_BOOL = (bool, NULL)
OPT_INT = (int, NULL)
OPT_DICT = (dict, NULL)
ID = (str,)

_INNER_BLOCKS: dict[str, Obj] = {
    "text": Obj({"text": STR}, required=("text",)),
    "image": Obj({"source": Obj({"type": OPT_STR, "media_type": OPT_STR, "data": OPT_STR, "url": OPT_STR},
                                nullable=True)}),
    "document": Obj({"title": OPT_STR, "source": OPT_DICT}),
    "tool_reference": Obj({"tool_name": OPT_STR}),
}
BLOCKS: dict[str, Obj] = {
    **_INNER_BLOCKS,
    "thinking": Obj({"thinking": STR, "signature": OPT_STR}),
    "redacted_thinking": Obj({"data": OPT_STR}),
    "tool_use": Obj({"id": ID, "name": STR, "input": (dict,)}, required=("id",)),
    "server_tool_use": Obj({"id": ID, "name": STR, "input": (dict,)}),
    "mcp_tool_use": Obj({"id": ID, "name": STR, "input": (dict,)}),
    "tool_result": Obj({"tool_use_id": ID, "is_error": OPT_BOOL,
                        "content": Either(OPT_STR, Blocks(_INNER_BLOCKS),
                                          expected="a string, a list of content blocks or null")},
                       required=("tool_use_id",)),
    "web_search_tool_result": Obj({"tool_use_id": ID}),
    "web_fetch_tool_result": Obj({"tool_use_id": ID}),
}
CONTENT = Either(STR, Blocks(BLOCKS), expected="a string or a list of content blocks")

# -- Claude Code entries ----------------------------------------------------------------------------------
# Fields of every entry: the routing fields the index keeps, and what new entries copy from the newest one.
_ENVELOPE: dict[str, Spec] = {
    "type": STR, "uuid": OPT_STR, "parentUuid": OPT_STR, "logicalParentUuid": OPT_STR, "isSidechain": OPT_BOOL,
    "sessionId": OPT_STR, "timestamp": OPT_STR, "sourceToolAssistantUUID": OPT_STR, "requestId": OPT_STR,
    "cwd": OPT_STR, "version": OPT_STR, "gitBranch": OPT_STR, "slug": OPT_STR, "userType": OPT_STR,
    "entrypoint": OPT_STR, "agentId": OPT_STR, "isMeta": OPT_BOOL, "isCompactSummary": OPT_BOOL,
    "isApiErrorMessage": OPT_BOOL, "permissionMode": OPT_STR,
}
_MESSAGE = Obj({"role": OPT_STR, "content": CONTENT, "id": OPT_STR, "model": OPT_STR, "usage": OPT_DICT,
                "stop_reason": OPT_STR}, nullable=True)
_STRINGS = ListOf(STR, nullable=True)
RECORDS: dict[str, Obj] = {
    # what ctxkit's own records hold (ctxkit.transcript.edits, stages.snip, stages.collapse, compaction)
    "archive": Obj({"blob": STR, "uuids": _STRINGS, "reason": OPT_STR}, required=("blob",)),
    "snip": Obj({"removedUuids": _STRINGS, "ids": _STRINGS, "toolUseIds": _STRINGS}),
    "collapse": Obj({"runs": ListOf(Obj({"key": STR, "toolUseIds": ListOf(STR), "summary": STR, "by": OPT_STR},
                                        required=("key", "toolUseIds")), nullable=True)}),
    "compaction": Obj({"method": OPT_STR, "summarizedMessages": OPT_INT, "keptMessages": OPT_INT,
                       "boundaryUuid": OPT_STR, "notes": OPT_STR, "lastSummarizedId": OPT_STR,
                       "summarizer": OPT_STR}),
}
# what ctxkit.stages.attachments and view --to anthropic-request read of an attachment record, by its type
_DELTA = {"addedNames": _STRINGS, "addedLines": _STRINGS, "addedBlocks": _STRINGS, "removedNames": _STRINGS,
          "addedTypes": _STRINGS, "removedTypes": _STRINGS}
_ATTACHMENT = Tagged({"type": OPT_STR}, {
    "prompt_snapshot": {"systemPrompt": Either(OPT_STR, ListOf(STR), expected="a string or a list of strings")},
    "deferred_tools_delta": _DELTA, "agent_listing_delta": _DELTA, "mcp_instructions_delta": _DELTA,
    "date_change": {"newDate": OPT_STR}, "date": {"date": OPT_STR},
    "edited_text_file": {"filename": OPT_STR}, "file": {"filename": OPT_STR},
    "nested_memory": {"path": OPT_STR, "content": Either(OPT_STR, Obj({"path": OPT_STR}),
                                                         expected="a string or an object")},
})
CLAUDE_CODE: dict[str, Obj] = {
    "user": Obj({**_ENVELOPE, "message": _MESSAGE, "origin": Obj({"kind": OPT_STR}, nullable=True)}),
    "assistant": Obj({**_ENVELOPE, "message": _MESSAGE}),
    "attachment": Obj({**_ENVELOPE, "renderedRole": OPT_STR,
                       "attachment": _ATTACHMENT,
                       "rendered": ListOf(Either(STR, Obj({"content": Either(OPT_STR, Blocks(_INNER_BLOCKS),
                                                                             expected="a string or a list of "
                                                                             "content blocks")}),
                                                 expected="a string or an object"), nullable=True)}),
    "system": Obj({**_ENVELOPE, "subtype": OPT_STR, "content": OPT_STR,
                   "compactMetadata": Obj({"preservedSegment": Obj({"headUuid": OPT_STR, "tailUuid": OPT_STR,
                                                                    "anchorUuid": OPT_STR}, nullable=True)},
                                          nullable=True)}),
    "queue-operation": Obj({**_ENVELOPE, "operation": OPT_STR, "content": OPT_STR}),
    # the system prompt and tools Claude Code sent (ctxkit view --to anthropic-request sends them again)
    "api-request-shape": Obj({**_ENVELOPE, "shape": Obj({
        "system": ListOf(Obj({"type": OPT_STR, "text": OPT_STR}), nullable=True),
        "tools": ListOf(Obj({"name": OPT_STR}), nullable=True)}, nullable=True)}),
    "ctxkit-record": Obj({**_ENVELOPE, "record": STR}, required=("record",)),
}
_ANY_ENTRY = Obj(_ENVELOPE)


class _NotASession(Bad):
    """A line of the hook log OpenCode's Claude Code compatibility writes (:mod:`.claude_dir_logs`), met
    among a session's lines (a whole file of them is refused on its first line, naming what it is)."""

    def __init__(self) -> None:
        super().__init__("a Claude Code session line", None)

    def describe(self) -> str:
        return f"a line of {HOOK_LOG}"


def check_claude_code(d: dict) -> None:
    t = d.get("type")
    if is_hook_log_line(d):
        raise _NotASession()
    if t in ("user", "assistant") and "message" not in d:
        # Claude Code writes every user and assistant line with its message: without one the line holds
        # nothing the view could show, and a file of such lines would read as an empty session
        raise _Missing("message")
    CLAUDE_CODE.get(t, _ANY_ENTRY).check(d) if isinstance(t, str) else _ANY_ENTRY.check(d)
    if t == "ctxkit-record":
        shape = RECORDS.get(d["record"])
        if shape is not None:
            shape.check(d)


# -- plain message lists ------------------------------------------------------------------------------------
ANTHROPIC = Obj({"role": OneOf("user", "assistant", "system"), "content": CONTENT}, required=("role", "content"))
_OPENAI_PART = Obj({"type": OPT_STR, "text": STR, "image_url": Either(STR, Obj({"url": STR}),
                                                                      expected="a string or an object with a url")})
OPENAI = Obj({
    "role": STR,
    "content": Either(OPT_STR, ListOf(_OPENAI_PART), expected="a string, a list of parts or null"),
    "tool_calls": ListOf(Obj({"id": ID, "type": OPT_STR,
                              "function": Obj({"name": STR, "arguments": (str, dict, NULL)})},
                             required=("id",)), nullable=True),
    "tool_call_id": OPT_STR, "name": OPT_STR,
})


def check_anthropic(d: dict) -> None:
    ANTHROPIC.check(d)


def check_openai(d: dict) -> None:
    OPENAI.check(d)


CHECKS: dict[str, Callable[[dict], None]] = {
    "claude-code": check_claude_code, "anthropic": check_anthropic, "openai": check_openai,
}


def problem(fmt: str, d: dict) -> str | None:
    """What is wrong with entry ``d`` of a ``fmt`` transcript (None when ctxkit can read it)."""
    try:
        check = CHECKS.get(fmt)
        if check is None:
            from .interface import handler  # (a format that declares its own check)

            check = handler(fmt).check or (lambda _: None)
        check(d)
    except Bad as exc:
        return exc.describe()
    return None
