"""Defaults come from the schema: the one function that reads them out of a JSON Schema.

Every options schema (each stage's, each attachment type's, nested sections such
as autocompact's ``reinject``) states its defaults with ``default``; everything
else (a stage's options before the policy's, ``ctxkit stages NAME``, the docs)
derives them here, so a default is written once.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def default_of(spec: Mapping[str, Any]) -> Any:
    """A property's default; for an object property without one, the defaults of its own
    properties (recursively); None when the schema gives none."""
    return schema_defaults({"properties": {"_": spec}}).get("_")


def schema_defaults(schema: Mapping[str, Any]) -> dict[str, Any]:
    """property -> its default (see :func:`default_of`), for the properties of an object schema
    that have one."""
    out = {}
    for key, spec in (schema.get("properties") or {}).items():
        if not isinstance(spec, Mapping):
            continue
        if "default" in spec:
            out[key] = spec["default"]  # an explicit default, null included
        elif spec.get("properties"):
            nested = schema_defaults(spec)
            if nested:
                out[key] = nested
    return out
