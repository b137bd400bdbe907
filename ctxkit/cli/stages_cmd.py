"""``ctxkit stages``: the stages, and each stage's documentation and options."""
from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from ..errors import UsageError
from ..quoting import quote
from .app import (
    app,
    handle_errors,
)
from .completion import complete_stage


@app.command("stages")
@handle_errors
def stages_cmd(name: Annotated[str, typer.Argument(metavar="STAGE", help="A stage's name, to print its documentation.",
                                                                  autocompletion=complete_stage)] = "") -> None:
    """List the stages a policy can use, with their options and defaults; or document one stage."""
    import inspect

    from ..policy.hints import did_you_mean
    from ..stages import REGISTRY

    if name:
        cls = REGISTRY.get(name)
        if cls is None:
            hint = did_you_mean(name, REGISTRY)
            raise UsageError(f"unknown stage {quote(name)}{f' ({hint})' if hint else ''}; known: {', '.join(sorted(REGISTRY))}")
        # a stage documents itself in its class docstring, or (a longer text) in its module's
        doc = cls.__doc__ or ""
        module_doc = inspect.getmodule(cls).__doc__ or ""
        if len(module_doc) > len(doc):
            doc = module_doc
        sys.stdout.write(inspect.cleandoc(doc or cls.summary) + "\n\noptions (defaults):\n")
        sys.stdout.write(_options_text(cls))
        return
    for stage_name in sorted(REGISTRY):
        cls = REGISTRY[stage_name]
        sys.stdout.write(f"{stage_name}: {cls.summary}\n{_options_text(cls)}\n")


def _options_text(cls) -> str:
    from ..policy.defaults import default_of
    lines = []
    for key, spec in cls.options_schema.get("properties", {}).items():
        default = json.dumps(default_of(spec)) if default_of(spec) is not None else "(none)"
        lines.append(f"  {key} = {default}" + (f"  # {spec['description']}" if spec.get("description") else ""))
    return "\n".join(lines) + "\n"
