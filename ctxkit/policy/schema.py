"""The policy schema, and schema errors said in words a person reads.

``schemas/policy.schema.json`` holds the static structure. The stages that
exist are passed in (the library and the CLI pass ``ctxkit.stages.registry.REGISTRY``;
this package never imports the stages), so :func:`effective_schema` adds them: ``use`` becomes an enum of the registered
names, and each entry's ``options`` is checked against the options schema of
the stage it uses. That is the schema ``ctxkit policy schema`` prints and the
one every layer is validated against.

jsonschema's own messages (``'lots' is not of type 'integer'``) name neither
the key nor the place; :func:`schema_problems` rewrites each error as
``thresholds.autocompact_buffer must be an integer, got 'lots'`` at the line
and column where the value was written.
"""
from __future__ import annotations

import copy
import functools
import json
import re
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional, Sequence

from .. import resources
from ..errors import Problem
from ..quoting import quote
from .hints import did_you_mean
from .positions import Document

if TYPE_CHECKING:  # jsonschema is imported when a policy is checked, not with this module (start-up time)
    from jsonschema import Draft202012Validator, ValidationError

#: The stages a policy may use: name -> stage class (``ctxkit.stages.base.Stage``: its ``options_schema``
#: and ``extend_policy_schema``). Passed in; this package does not import the stages.
Registry = Mapping[str, Any]

SCHEMA_FILE = "policy.schema.json"


@functools.lru_cache(maxsize=None)
def _static_text() -> str:
    return (resources.schemas_dir() / SCHEMA_FILE).read_text(encoding="utf-8")


def static_schema() -> dict[str, Any]:
    """The schema file as written (a fresh copy: callers may change it)."""
    return json.loads(_static_text())


def effective_schema(registry: Registry) -> dict[str, Any]:
    """The static schema with ``use`` limited to the stages of ``registry`` (name -> stage class)
    and their options checked; each stage may add the policy sections it reads
    (``extend_policy_schema``: the attachments stage adds each attachment type's options)."""
    schema = static_schema()
    stage = schema["$defs"]["stage"]
    stage["properties"]["use"]["enum"] = sorted(registry)
    rules = [_options_rule(name, registry[name].options_schema) for name in sorted(registry)]
    if rules:  # allOf must not be empty
        stage["allOf"] = rules
    for name in sorted(registry):
        registry[name].extend_policy_schema(schema)
    return schema


def _options_rule(name: str, options_schema: Mapping[str, Any]) -> dict[str, Any]:
    """``if`` the entry uses ``name`` (given as ``use``, or as ``id`` when ``use`` is absent),
    ``then`` its options must fit that stage's options schema.

    The options schema gets its own ``$id`` so that any ``$ref`` inside it resolves within it.
    """
    uses_it = {
        "anyOf": [
            {"required": ["use"], "properties": {"use": {"const": name}}},
            {"not": {"required": ["use"]}, "required": ["id"], "properties": {"id": {"const": name}}},
        ]
    }
    options = {"$id": f"urn:ctxkit:stage:{name}:options", **copy.deepcopy(dict(options_schema))}
    return {"if": uses_it, "then": {"properties": {"options": options}}}


def validator(registry: Registry) -> Draft202012Validator:
    from jsonschema import Draft202012Validator

    # formats are checked ("format": "regex" compiles redact.patterns as the policy is read)
    return Draft202012Validator(effective_schema(registry), format_checker=Draft202012Validator.FORMAT_CHECKER)


def schema_problems(document: Document, checker: Draft202012Validator, instance: Any = None) -> list[Problem]:
    """Every schema error in ``document``, as problems sorted by position.

    ``instance`` defaults to the document's data; the loader passes a copy where override
    entries carry the ``use`` inherited from lower layers, so their options are checked too.
    Where a value has the wrong type, other complaints about the same value are dropped.
    """
    instance = document.data if instance is None else instance
    errors = list(checker.iter_errors(instance))
    mistyped = {tuple(e.absolute_path) for e in errors if e.validator == "type"}
    problems: list[Problem] = []
    for error in errors:
        path = list(error.absolute_path)
        if error.validator != "type" and tuple(path) in mistyped:
            continue
        problems.extend(_describe(error, path, document, instance))
    return sorted(dict.fromkeys(problems), key=lambda p: (p.line, p.col, p.message))


def _describe(error: ValidationError, path: list, document: Document, instance: Any) -> list[Problem]:
    where = dotted(path, instance)
    if error.validator == "additionalProperties":
        return [_unknown_key(error, path, key, where, document) for key in _extra_keys(error)]
    if error.validator == "required":
        missing = [key for key in error.validator_value if key not in error.instance]
        owner = f"{where} is missing" if where else "missing"
        return [document.problem(path, f"{owner} required key '{key}'") for key in missing]
    describe = _MESSAGES.get(str(error.validator), _fallback)
    message, hint = describe(error, where or "the policy", path)
    return [document.problem(path, message, hint)]


def _extra_keys(error: ValidationError) -> list[str]:
    known = error.schema.get("properties", {})
    patterns = error.schema.get("patternProperties", {})
    return [
        key for key in error.instance
        if key not in known and not any(re.search(p, str(key)) for p in patterns)
    ]


def _unknown_key(error: ValidationError, path: list, key: str, where: str, document: Document) -> Problem:
    known = list(error.schema.get("properties", {}))
    message = f"unknown key {quote(key)}" + (f" in {where}" if where else "")
    hint = did_you_mean(key, known) or (f"known keys: {', '.join(known)}" if known else None)
    return document.problem([*path, key], message, hint, at_key=True)


def dotted(path: Sequence[str | int], instance: Any) -> str:
    """A JSON path as a reader writes it: ``tools.compactable[2]``; stage entries by id, ``stages[budget]``."""
    text, node = "", instance
    for segment in path:
        if isinstance(segment, int):
            node = node[segment] if isinstance(node, list) and segment < len(node) else None
            stage_id = node.get("id") if text == "stages" and isinstance(node, dict) else None
            text += f"[{stage_id if isinstance(stage_id, str) else segment}]"
        else:
            node = node.get(segment) if isinstance(node, dict) else None
            text += f".{segment}" if text else str(segment)
    return text


def show(value: Any) -> str:
    """A value as the user wrote it in YAML: strings quoted, containers by kind."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, str):
        return quote(value)
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return str(value)


_TYPE_NAMES = {
    "integer": "an integer",
    "number": "a number",
    "string": "a string",
    "boolean": "true or false",
    "object": "a mapping",
    "array": "a list",
    "null": "null",
}

Message = tuple[str, Optional[str]]


def _type(error: ValidationError, subject: str, path: list) -> Message:
    types = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
    wanted = " or ".join(_TYPE_NAMES.get(t, t) for t in types)
    return f"{subject} must be {wanted}, got {show(error.instance)}", None


def _enum(error: ValidationError, subject: str, path: list) -> Message:
    choices = [str(c) for c in error.validator_value]
    hint = did_you_mean(error.instance, choices)
    if len(path) == 3 and path[0] == "stages" and path[2] == "use":
        return f"unknown stage {show(error.instance)} in 'use'", hint or (
            f"known stages: {', '.join(choices)}" if choices else "no stages are installed")
    return f"{subject} must be one of {', '.join(choices)}, got {show(error.instance)}", hint


def _bound(word: str) -> Callable[[ValidationError, str, list], Message]:
    def describe(error: ValidationError, subject: str, path: list) -> Message:
        return f"{subject} must be {word} {error.validator_value}, got {show(error.instance)}", None

    return describe


def _min_length(error: ValidationError, subject: str, path: list) -> Message:
    if error.validator_value == 1:
        return f"{subject} must not be empty", None
    return f"{subject} must be at least {error.validator_value} characters long", None


def _pattern(error: ValidationError, subject: str, path: list) -> Message:
    return f"{subject} must match {error.validator_value}, got {show(error.instance)}", None


def _unique(error: ValidationError, subject: str, path: list) -> Message:
    seen: list[Any] = []
    for item in error.instance:
        if item in seen:
            return f"{subject} lists {show(item)} more than once", None
        seen.append(item)
    return f"{subject} must not repeat items", None


def _const(error: ValidationError, subject: str, path: list) -> Message:
    return f"{subject} must be {show(error.validator_value)}, got {show(error.instance)}", None


def _format(error: ValidationError, subject: str, path: list) -> Message:
    if error.validator_value == "regex":
        return f"{subject} is not a valid regular expression: {error.cause or error.message}", (
            "Python re syntax")
    return f"{subject} must be a valid {error.validator_value}, got {show(error.instance)}", None


def _fallback(error: ValidationError, subject: str, path: list) -> Message:
    return f"{subject}: {error.message}", None


_MESSAGES: dict[str, Callable[[ValidationError, str, list], Message]] = {
    "type": _type,
    "enum": _enum,
    "const": _const,
    "minimum": _bound("at least"),
    "maximum": _bound("at most"),
    "exclusiveMinimum": _bound("greater than"),
    "exclusiveMaximum": _bound("less than"),
    "minLength": _min_length,
    "pattern": _pattern,
    "uniqueItems": _unique,
    "format": _format,
}
