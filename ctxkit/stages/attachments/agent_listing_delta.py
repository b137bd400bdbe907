r"""agent_listing_delta: which agent types the Agent tool can launch, announced as they change.

`--state` file key `agents` (or `agent_types`): a list of type names, or objects
`{"type": "Explore", "description": "...", "tools": "Read, Grep"}` (or a ready `"line"`). A line
reads `- <type>: <description> (Tools: <tools>)`, as Claude Code formats it. Replayed like the
other deltas; rendered as Claude Code 2.1.328 does (a system message). The first announcement
after a compaction (or ever) is the full list:

```
Available agent types for the Agent tool:
- Explore: Read-only search agent for broad fan-out searches ... (Tools: All tools except Agent, ...)
- Plan: Software architect agent for designing implementation plans. ... (Tools: ...)

When you launch multiple agents for independent work, send them in a single message with multiple tool uses so they run concurrently.
```

later ones only the change (`New agent types are now available for the Agent tool:` /
`The following agent types are no longer available:`, with `- <type>` lines).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .delta_base import DeltaType, names_of, section
from .types import options_schema, register

INITIAL_HEADER = "Available agent types for the Agent tool:"
ADDED_HEADER = "New agent types are now available for the Agent tool:"
REMOVED_HEADER = "The following agent types are no longer available:"
CONCURRENCY_NOTE = ("When you launch multiple agents for independent work, send them in a single message with "
                    "multiple tool uses so they run concurrently.")


def agent_line(agent_type: str, item: Mapping[str, Any]) -> str:
    if isinstance(item.get("line"), str):
        return item["line"]
    desc = item.get("description") or item.get("whenToUse") or ""
    line = f"- {agent_type}: {desc}" if desc else f"- {agent_type}"
    tools = item.get("tools")
    if isinstance(tools, list):
        tools = ", ".join(str(x) for x in tools)
    return f"{line} (Tools: {tools})" if tools else line


@register
class AgentListingDelta(DeltaType):
    name = "agent_listing_delta"
    summary = "Agent types the Agent tool can launch, announced as they appear or disappear."
    replays = ("agent_listing_delta",)
    added_key = "addedTypes"
    options_schema = options_schema({
        "max_chars": {"type": "integer", "minimum": 0, "default": 20000,
                      "description": "Most characters of added lines per run; the rest is announced next run (0: no cap)."},
        "concurrency_note": {"type": "boolean", "default": True,
                             "description": "End the first full listing with the note on launching agents concurrently."},
    })

    @classmethod
    def current(cls, env: Mapping[str, Any]) -> dict[str, str] | None:
        key = "agents" if "agents" in env else "agent_types" if "agent_types" in env else None
        if key is None:
            return None
        return {n: agent_line(n, d) for n, d in names_of(env[key], "type", "agentType", "name")}

    @classmethod
    def replay_one(cls, data: Mapping[str, Any]) -> tuple[dict[str, str | None], list[str]]:
        names = [n for n in data.get("addedTypes") or [] if isinstance(n, str)]
        lines = data.get("addedLines") or []
        added = {n: (lines[k] if k < len(lines) and isinstance(lines[k], str) else None) for k, n in enumerate(names)}
        return added, [n for n in data.get("removedTypes") or [] if isinstance(n, str)]

    @classmethod
    def build(cls, added, lines, removed, *, initial, readded, options):
        parts = []
        if added:
            parts.append((INITIAL_HEADER if initial else ADDED_HEADER) + "\n" + "\n".join(lines))
        if removed:
            parts.append(REMOVED_HEADER + "\n" + "\n".join(f"- {n}" for n in removed))
        note = bool(options.get("concurrency_note", True))
        if initial and added and note:
            parts.append(CONCURRENCY_NOTE)
        record = {"type": cls.name, "addedTypes": added, "addedLines": lines, "removedTypes": removed,
                  "isInitial": initial, "showConcurrencyNote": note}
        return record, "\n\n".join(parts)

    @classmethod
    def parse_rendered(cls, text: str) -> dict | None:
        added = section(text, INITIAL_HEADER)
        initial = added is not None
        if added is None:
            added = section(text, ADDED_HEADER)
        removed = section(text, REMOVED_HEADER)
        if added is None and removed is None:
            return None
        types = [x[2:].split(":", 1)[0].strip() for x in added or [] if x.startswith("- ")]
        return {"type": cls.name, "addedTypes": types, "addedLines": [x for x in added or [] if x.startswith("- ")],
                "removedTypes": [x[2:].strip() for x in removed or [] if x.startswith("- ")], "isInitial": initial}
