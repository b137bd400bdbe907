r"""mcp_instructions_delta: instructions of connected MCP servers, announced as servers come and go.

`--state` file key `mcp_servers`: a list of `{"name": "github", "instructions": "...", "status":
"connected"}` (servers whose status is not `connected`, and servers without instructions, are left
out). A server is announced as a block `## <name>` followed by its instructions; one whose
instructions changed is announced again (Claude Code compares the rendered block). Rendered as a
system message:

```
# MCP Server Instructions

The following MCP servers have provided instructions for how to use their tools and resources:

## github
Use the issue tools for ...

The following MCP servers have disconnected. Their instructions above no longer apply:
slack
```

Plain formats read earlier announcements back by their `## <name>` lines, so instructions that
themselves contain a line starting with `## ` are read back as extra (unknown) servers; those are
then reported as disconnected once.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .delta_base import DeltaType, names_of, section
from .types import options_schema, register

TITLE = "# MCP Server Instructions"
ADDED_INTRO = "The following MCP servers have provided instructions for how to use their tools and resources:"
REMOVED_HEADER = "The following MCP servers have disconnected. Their instructions above no longer apply:"


@register
class McpInstructionsDelta(DeltaType):
    name = "mcp_instructions_delta"
    summary = "Instructions of MCP servers that connected, changed or disconnected since the model was last told."
    replays = ("mcp_instructions_delta",)
    compare_content = True
    options_schema = options_schema({
        "max_chars": {"type": "integer", "minimum": 0, "default": 20000,
                      "description": "Most characters of added instruction blocks per run; the rest is announced "
                                     "next run (0: no cap)."},
    })

    @classmethod
    def current(cls, env: Mapping[str, Any]) -> dict[str, str] | None:
        if "mcp_servers" not in env:
            return None
        out = {}
        for name, d in names_of(env["mcp_servers"], "name", "serverName"):
            instructions = d.get("instructions")
            if d.get("status", "connected") == "connected" and isinstance(instructions, str) and instructions.strip():
                out[name] = f"## {name}\n{instructions}"
        return out

    @classmethod
    def replay_one(cls, data: Mapping[str, Any]) -> tuple[dict[str, str | None], list[str]]:
        names = [n for n in data.get("addedNames") or [] if isinstance(n, str)]
        blocks = data.get("addedBlocks") or []
        added = {n: (blocks[k] if k < len(blocks) and isinstance(blocks[k], str) else None) for k, n in enumerate(names)}
        return added, [n for n in data.get("removedNames") or [] if isinstance(n, str)]

    @classmethod
    def build(cls, added, lines, removed, *, initial, readded, options):
        parts = []
        if added:
            parts.append(f"{TITLE}\n\n{ADDED_INTRO}\n\n" + "\n\n".join(lines))
        if removed:
            parts.append(REMOVED_HEADER + "\n" + "\n".join(removed))
        record = {"type": cls.name, "addedNames": added, "addedBlocks": lines, "removedNames": removed}
        return record, "\n\n".join(parts)

    @classmethod
    def parse_rendered(cls, text: str) -> dict | None:
        removed = section(text, REMOVED_HEADER)
        body = text.split(REMOVED_HEADER, 1)[0]
        if not body.startswith(TITLE) and removed is None:
            return None
        names = [line[3:].strip() for line in body.split("\n") if line.startswith("## ")] if body.startswith(TITLE) else []
        return {"type": cls.name, "addedNames": names, "addedBlocks": [None] * len(names), "removedNames": removed or []}
