"""``ctxkit tools``: tool definitions an agent can offer its model (``tools snip``)."""
from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from .app import (
    app,
    handle_errors,
)
from .conventions import CtxkitApp

tools_app = CtxkitApp(help="Tool definitions an agent can offer its model.", no_args_is_help=True,
                        add_completion=False)
app.add_typer(tools_app, name="tools")


@tools_app.command("snip")
@handle_errors
def tools_snip(as_json: Annotated[bool, typer.Option("--json", help="Print the definition as JSON.")] = False
               ) -> None:
    """The `snip` tool's definition (Messages API tool schema): offer it to a model so it can remove turns."""
    from ..reports.tool_definitions import snip_tool

    tool = snip_tool()
    if as_json:
        sys.stdout.write(json.dumps(tool, indent=2) + "\n")
    else:
        sys.stdout.write(f"{tool['name']}: {tool['description']}\n")
