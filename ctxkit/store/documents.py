"""The shapes of the store's two documents, ``ledger.json`` and ``state.json``, checked when loaded.

A store is input too: a damaged or foreign document must give a clear error naming the file, never
a crash deep in a stage (:class:`ctxkit.store.disk.StoreError`, raised by the store with what these
functions return). The ledger's decisions are described in :mod:`ctxkit.store.offload`.
"""
from __future__ import annotations

from typing import Any

LEDGER_FORMAT = 2

#: a decision's fields and their JSON types (:mod:`ctxkit.store.offload`); ``replacement``/``empty`` are any JSON
_DECISION_FIELDS: dict[str, tuple[type, ...]] = {"state": (str,), "blob": (str,), "original": (str,),
                                                 "by": (str,), "absent": (bool,)}
#: state.json: ``session -> {key: value}``; the keys ctxkit reads, and the types of their fields
_STATE_FIELDS: dict[str, dict[str, tuple[type, ...]]] = {
    "autocompact": {"consecutive_failures": (int,), "last_error": (str,), "last_failure_at": (str,)},
    "session_memory": {"last_summarized_id": (str,), "notes": (str,), "notes_sha256": (str,),
                       "updated_at": (str,), "stale_notes_sha256": (str,)},
    "cached_microcompact": {"pins": (list,)},
}


def _type_name(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "a number",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__)


def _check_fields(value: Any, fields: dict[str, tuple[type, ...]], where: str) -> str | None:
    if not isinstance(value, dict):
        return f"{where} is {_type_name(value)}, not an object"
    for key, types in fields.items():
        if key in value:
            v = value[key]
            ok = isinstance(v, types) and not (bool not in types and isinstance(v, bool))
            if key == "consecutive_failures" and ok and v < 0:
                ok = False
            if not ok:
                want = "a count" if key == "consecutive_failures" else _type_name(types[0]())
                return f"{where}.{key} is {_type_name(v)}{' ' + repr(v) if not isinstance(v, (dict, list)) else ''}, not {want}"
    return None


def check_object(doc: Any) -> str | None:
    return None if isinstance(doc, dict) else f"the document is {_type_name(doc)}, not an object"


def _check_decisions(records: Any, where: str) -> str | None:
    if not isinstance(records, dict):
        return f"{where} is {_type_name(records)}, not an object"
    for tid, decision in records.items():
        problem = _check_fields(decision, _DECISION_FIELDS, f'{where}["{tid}"]')
        if problem:
            return problem
    return None


def check_ledger(doc: Any) -> str | None:
    """What is wrong with a ledger document, None when nothing: ``{"format": 2, "sessions": {scope:
    {tool_use_id: decision}}, "unscoped": {tool_use_id: decision}}``, or a format-1 flat
    ``{tool_use_id: decision}``; a decision is an object whose fields have the types of :mod:`ctxkit.store.offload`."""
    if not isinstance(doc, dict):
        return check_object(doc)
    if "format" not in doc:  # format 1
        return _check_decisions(doc, "the ledger")
    if doc["format"] != LEDGER_FORMAT:
        return f"format {doc['format']!r}, not {LEDGER_FORMAT} (written by another ctxkit?)"
    sessions = doc.get("sessions", {})
    if not isinstance(sessions, dict):
        return f"sessions is {_type_name(sessions)}, not an object"
    for scope, records in sessions.items():
        problem = _check_decisions(records, f'sessions["{scope}"]')
        if problem:
            return problem
    return _check_decisions(doc.get("unscoped", {}), "unscoped")


def check_state(doc: Any) -> str | None:
    """What is wrong with a state document, None when nothing: ``{session: {key: value}}``, where the
    keys ctxkit reads (``autocompact``, ``session_memory``, ``cached_microcompact``) are objects with
    fields of known types."""
    if not isinstance(doc, dict):
        return check_object(doc)
    for session, values in doc.items():
        if not isinstance(values, dict):
            return f'["{session}"] is {_type_name(values)}, not an object'
        for key, fields in _STATE_FIELDS.items():
            if key in values:
                problem = _check_fields(values[key], fields, f'["{session}"].{key}')
                if problem:
                    return problem
    return None


def parse_ledger(doc: dict[str, Any]) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """(scoped sessions, unscoped records) of a ledger document (checked by :func:`check_ledger`)."""
    if "format" in doc:
        sessions = {scope: dict(records) for scope, records in doc.get("sessions", {}).items()}
        return sessions, dict(doc.get("unscoped", {}))
    # format 1: a flat tool_use_id -> decision document
    return {}, dict(doc)
