"""The strings of API messages that a summarizer reads, walked copy-on-write: text blocks, tool inputs (a
value under a secret-named key handed to ``keyed`` whole), tool results, a document's title; thinking is
left out. :meth:`ctxkit.summarize.redact.Redactor.messages` redacts them through it."""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

_TOOL_CALLS = ("tool_use", "server_tool_use", "mcp_tool_use")


def walk_messages(messages: Sequence[Mapping[str, Any]], fn: Callable[[str], str],
                  keyed: Callable[[str, str], str | None]) -> list[dict[str, Any]]:
    """``messages`` with ``fn`` applied to each string a summarizer reads, and thinking dropped.

    Copy on write: a message, block or tool input in which nothing changed is the same object (the
    summarizers only read them; most of a long session holds no secret, so the walk allocates little)."""
    out = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            new_content: Any = fn(content)
        elif isinstance(content, (list, tuple)):
            new_content = _walk_list(content, lambda b: _walk_block(b, fn, keyed))
        else:
            new_content = content
        if "content" in message:
            out.append(_with(message, "content", new_content))
        else:
            out.append(message if isinstance(message, dict) else dict(message))
    return out


def _walk_list(items: Sequence[Any], walk: Callable[[Any], Any]) -> Any:
    """``items`` walked (None: left out), or ``items`` itself when every one came back unchanged."""
    new = [walk(b) for b in items]
    if isinstance(items, list) and all(a is b and a is not None for a, b in zip(new, items, strict=True)):
        return items
    return [b for b in new if b is not None]


def _walk_block(block: Any, fn: Callable[[str], str], keyed: Callable[[str, str], str | None]) -> Any:
    if isinstance(block, str):
        return fn(block)
    if not isinstance(block, Mapping):
        return block
    kind = block.get("type")
    if kind in ("thinking", "redacted_thinking"):
        return None
    if kind == "text" and isinstance(block.get("text"), str):
        return _with(block, "text", fn(block["text"]))
    if kind == "document" and isinstance(block.get("title"), str):  # a summarizer is shown its title
        return _with(block, "title", fn(block["title"]))
    if kind in _TOOL_CALLS:  # (a call without an input is given ``"input": None``, as it always was)
        return _with(block, "input", _walk_value(block.get("input"), fn, keyed)) if "input" in block \
            else {**block, "input": None}
    if kind == "tool_result":
        content = block.get("content")
        if isinstance(content, str):
            return _with(block, "content", fn(content))
        if isinstance(content, (list, tuple)):
            return _with(block, "content", _walk_list(content, lambda b: _walk_block(b, fn, keyed)))
    return block if isinstance(block, dict) else dict(block)


def _with(block: Mapping[str, Any], key: str, value: Any) -> dict[str, Any]:
    """``block`` (a message or a block) with ``key`` set to ``value``: itself when that is what it holds."""
    if value is block.get(key) and isinstance(block, dict):
        return block
    return {**block, key: value}


def _walk_value(value: Any, fn: Callable[[str], str], keyed: Callable[[str, str], str | None]) -> Any:
    """A tool input with ``fn`` applied to its strings; a value under a secret-named key is replaced whole.
    Unchanged values are returned as they are (copy on write)."""
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, Mapping):
        out = {}
        changed = not isinstance(value, dict)
        for k, v in value.items():
            marker = keyed(str(k), v) if isinstance(v, str) else None
            new = marker if marker is not None else _walk_value(v, fn, keyed)
            changed = changed or new is not v
            out[k] = new
        return out if changed else value
    if isinstance(value, (list, tuple)):
        items = [_walk_value(v, fn, keyed) for v in value]
        return value if isinstance(value, list) and all(a is b for a, b in zip(items, value, strict=True)) else items
    return value
