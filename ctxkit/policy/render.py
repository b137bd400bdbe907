"""The merged policy as YAML, each value followed by the file and line that set it.

This is ``ctxkit policy show``. The output is valid YAML that loads back to the
merged document, and is the same for the same layers (keys keep the order in
which the layers introduced them).
"""
from __future__ import annotations

import json
from typing import Any, Mapping

import yaml

from .model import Policy

INDENT = 2


def render_policy(policy: Policy) -> str:
    lines: list[str] = []
    _mapping(policy.merged, "", 0, policy.origins, lines)
    return "\n".join(lines) + "\n"


def _mapping(mapping: Mapping[str, Any], dotted: str, indent: int, origins: Mapping[str, str],
             lines: list[str], *, list_item: bool = False) -> None:
    """Emit ``mapping`` at ``indent``; as a list item, its first key follows the ``- ``."""
    for index, (key, value) in enumerate(mapping.items()):
        lead = " " * indent
        if list_item and index == 0:
            lead = " " * (indent - INDENT) + "- "
        here = f"{dotted}.{key}" if dotted else str(key)
        if here == "stages" and isinstance(value, list) and value:
            lines.append(f"{lead}stages:")
            for stage in value:
                _mapping(stage, f"stages.{stage['id']}", indent + 2 * INDENT, origins, lines, list_item=True)
        elif isinstance(value, Mapping) and value:
            lines.append(f"{lead}{flow(key)}:")
            _mapping(value, here, indent + INDENT, origins, lines)
        else:
            origin = origins.get(here)
            comment = f"  # from {origin}" if origin else ""
            lines.append(f"{lead}{flow(key)}: {flow(value)}{comment}")


def flow(value: Any) -> str:
    """``value`` on one line: YAML flow style, or JSON (also YAML) when YAML would need several lines."""
    text = yaml.safe_dump(value, default_flow_style=True, width=2**30, allow_unicode=True, sort_keys=False)
    text = text.removesuffix("\n...\n").strip()
    if "\n" in text:
        return json.dumps(value, ensure_ascii=False, default=str)
    return text
