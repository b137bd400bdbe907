"""Command-line values turned into Python values without pydantic, when they are plainly valid.

Typer checks every option's value with a pydantic ``TypeAdapter``, built the first time a command
runs: importing pydantic and building the adapters is a third of what ``ctxkit compact`` takes to
start (docs/benchmarks.md). The options ctxkit declares are few and simple (a string, a path, a
choice among a ``Literal``'s values, an integer with a minimum, a list of those, a flag), so
:class:`QuickValues` converts a value that is plainly valid the way typer's adapter would, and hands
anything else (a value out of range, a choice not offered, a kind of option not listed here) to
typer's own adapter. A wrong value therefore gets typer's message and exit code, word for word; a
right one never imports pydantic. ``tests/test_startup.py`` checks both.

:func:`install` puts one on each parameter of a command before it parses its arguments. It sets
the parameter's ``_runtime_param``, where typer (0.26 and later) keeps the converter it builds on
first use: the one place this module leans on typer's internals, and the import-set test fails
if that changes.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from typer.core import _TyperParameter

_DIGITS = re.compile(r"[0-9]+")
_UNSURE = object()


def install(command: Any, ctx: Any) -> None:
    """Give each typer parameter of ``command`` a :class:`QuickValues` (unless it has a converter)."""
    for param in command.get_params(ctx):
        if isinstance(param, _TyperParameter) and getattr(param, "_runtime_param", _UNSURE) is None:
            param._runtime_param = QuickValues(param)


class QuickValues:
    """Converts one parameter's values: plainly valid ones here, the others by typer's adapter."""

    def __init__(self, param: _TyperParameter):
        descriptor = param.type_descriptor
        self._info = descriptor.parameter_info
        self._annotation = descriptor.annotation
        self._simple = descriptor.file_annotation is None and self._info.parser is None
        self._converter: Any = None  # typer's own, built the first time a value needs it

    def coerce(self, value: Any, param: _TyperParameter, ctx: Any) -> Any:
        multiple = param.multiple or param.nargs == -1
        if value is None:  # what typer's converter does with a missing value
            return () if multiple else None
        if self._simple and ctx.token_normalize_func is None:
            if multiple and get_origin(self._annotation) is list and isinstance(value, (list, tuple)):
                item_type = get_args(self._annotation)[0]
                items = [self._one(item, item_type) for item in value]
                if not any(item is _UNSURE for item in items):
                    return items
            elif not multiple:
                quick = self._one(value, self._annotation)
                if quick is not _UNSURE:
                    return quick
        return self._typer_converter(param).coerce(value, param=param, ctx=ctx)

    def _one(self, value: Any, kind: Any) -> Any:
        """``value`` as ``kind`` when that is certain, else :data:`_UNSURE`."""
        if not isinstance(value, str):
            return _UNSURE
        if kind is str:
            return value
        if get_origin(kind) is Literal:
            return value if value in get_args(kind) and self._info.case_sensitive else _UNSURE
        if kind is int and _DIGITS.fullmatch(value) and not self._info.clamp:
            number = int(value)
            low, high = self._info.min, self._info.max
            return number if (low is None or number >= low) and (high is None or number <= high) else _UNSURE
        if kind is Path and self._plain_path() and value and "\0" not in value:
            # typer checks an existing path is readable (readable=True by default): leave that to it
            return Path(value) if not os.path.exists(value) or os.access(value, os.R_OK) else _UNSURE
        return _UNSURE

    def _plain_path(self) -> bool:
        """A path option with typer's defaults: no check beyond "readable if it exists"."""
        info = self._info
        return (not info.exists and info.file_okay and info.dir_okay and not info.writable
                and not info.resolve_path and info.path_type is None)

    def _typer_converter(self, param: _TyperParameter) -> Any:
        """Typer's own converter (pydantic): for the values this class is not sure of."""
        if self._converter is None:
            param._runtime_param = None
            self._converter = param.get_runtime_param()
            param._runtime_param = self  # the next value may be a plain one again
        return self._converter
