r"""deferred_tools_delta: which deferred tools (schemas loaded on demand via ToolSearch) came or went.

`--state` file key `deferred_tools` (or `tools`): a list of names, or of objects
`{"name": ..., "line": ...}`; with `tools`, objects marked `"deferred": false` are left out. The
earlier deltas in the view are replayed (added names join, removed names leave) to know what the
model was told; only what was added or removed is appended. After a compaction boundary the replay
starts empty, so the full current list is announced again; a name removed and later added back is
announced again. Added names are sorted as Claude Code sorts them (case-insensitively). Rendered as
Claude Code 2.1.328 does (a system message):

```
The following deferred tools are now available via ToolSearch. Their schemas are NOT loaded — calling them directly will fail with InputValidationError. Use ToolSearch with query "select:<name>[,<name>...]" to load tool schemas before calling them:
mcp__github__create_issue

The following deferred tools are no longer available (their MCP server disconnected). Do not search for them — ToolSearch will return no match:
WebSearch
```

An absent key means "unknown" (the delta stays quiet); an empty list means "none".
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .delta_base import DeltaType, names_of, section
from .types import options_schema, register

ADDED_HEADER = ("The following deferred tools are now available via ToolSearch. Their schemas are NOT loaded — "
                "calling them directly will fail with InputValidationError. Use ToolSearch with query "
                "\"select:<name>[,<name>...]\" to load tool schemas before calling them:")
REMOVED_HEADER = ("The following deferred tools are no longer available (their MCP server disconnected). "
                  "Do not search for them — ToolSearch will return no match:")


@register
class DeferredToolsDelta(DeltaType):
    name = "deferred_tools_delta"
    summary = "Deferred tools that appeared or disappeared since the model was last told."
    replays = ("deferred_tools_delta",)
    options_schema = options_schema({
        "max_chars": {"type": "integer", "minimum": 0, "default": 20000,
                      "description": "Most characters of added lines per run; the rest is announced next run (0: no cap)."},
    })

    @classmethod
    def current(cls, env: Mapping[str, Any]) -> dict[str, str] | None:
        if "deferred_tools" in env:
            items = names_of(env["deferred_tools"], "name")
        elif "tools" in env:
            items = [(n, d) for n, d in names_of(env["tools"], "name") if d.get("deferred", True)]
        else:
            return None
        return {n: (d.get("line") if isinstance(d.get("line"), str) else n) for n, d in items}

    @classmethod
    def replay_one(cls, data: Mapping[str, Any]) -> tuple[dict[str, str | None], list[str]]:
        names = [n for n in data.get("addedNames") or [] if isinstance(n, str)]
        lines = data.get("addedLines") or []
        added = {n: (lines[k] if k < len(lines) and isinstance(lines[k], str) else None) for k, n in enumerate(names)}
        return added, [n for n in data.get("removedNames") or [] if isinstance(n, str)]

    @classmethod
    def build(cls, added, lines, removed, *, initial, readded, options):
        parts = []
        if added:
            parts.append(ADDED_HEADER + "\n" + "\n".join(lines))
        if removed:
            parts.append(REMOVED_HEADER + "\n" + "\n".join(removed))
        record = {"type": cls.name, "addedNames": added, "addedLines": lines, "removedNames": removed,
                  "wireHiddenNames": [], "readdedNames": readded}
        return record, "\n\n".join(parts)

    @classmethod
    def parse_rendered(cls, text: str) -> dict | None:
        added = section(text, ADDED_HEADER[:60])
        removed = section(text, REMOVED_HEADER[:60])
        if added is None and removed is None:
            return None
        return {"type": cls.name, "addedNames": added or [], "addedLines": added or [], "removedNames": removed or []}
