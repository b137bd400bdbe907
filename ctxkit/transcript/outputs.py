"""Tool outputs kept elsewhere than as ``tool_result`` blocks: reading and writing them through the
format's :class:`ctxkit.transcript.interface.ToolOutputs`.

Codex keeps an output as an item of its own (``function_call_output``), Gemini CLI inside the call
(``toolCalls[].result``), OpenCode in the tool part (``state.output``). The stages that replace a
result decide on the view's ``tool_result`` blocks, as for every format; these functions find where
the result they replace is stored, write the replacement there in the agent's own shape (so the agent
reads it back when it resumes), and give ``ctxkit expand`` the output to put the original back into.
"""
from __future__ import annotations

from typing import Any

import orjson

from .formats import handler
from .model import Transcript, deep_replace
from .view import BlockRef


def has_outputs(fmt: str) -> bool:
    """Whether the format keeps tool outputs through a :class:`ToolOutputs` declaration."""
    return handler(fmt).tool_outputs is not None


def slots(t: Transcript, i: int, entry: dict) -> list[tuple[str, tuple, Any]]:
    """The outputs entry ``i`` holds when it is ``entry``: ``(call id, key path, output as stored)`` (none
    for a format without a declaration)."""
    outputs = handler(t.format).tool_outputs
    return outputs.slots(t, i, entry) if outputs is not None else []


def stored(t: Transcript, ref: BlockRef) -> tuple[bool, Any]:
    """``(True, the output as stored)`` for a view ``tool_result`` made of a declared output, else
    ``(False, None)``."""
    found = slots(t, ref.entry, t.entry(ref.entry))
    return (True, found[ref.block][2]) if 0 <= ref.block < len(found) else (False, None)


def shown(fmt: str, raw: Any) -> Any:
    """An output as stored, as the view's ``tool_result`` content."""
    return handler(fmt).tool_outputs.shown(raw)


def write(t: Transcript, entry: dict, ref: BlockRef, content: Any) -> dict:
    """``entry`` (entry ``ref.entry`` of ``t``) with output ``ref.block`` written as ``content`` (a
    replacement text) in the agent's shape."""
    found = slots(t, ref.entry, entry)
    if not 0 <= ref.block < len(found):
        return entry
    _, path, raw = found[ref.block]
    text = content if isinstance(content, str) else orjson.dumps(content).decode()
    return deep_replace(entry, list(path), handler(t.format).tool_outputs.written(raw, text))


def put_back(t: Transcript, i: int, entry: dict, k: int, original: Any) -> dict:
    """``entry`` (entry ``i`` of ``t``) with output ``k`` as it was stored (``ctxkit expand``)."""
    _, path, _ = slots(t, i, entry)[k]
    return deep_replace(entry, list(path), original)


def shows_result(t: Transcript, i: int, entry: dict, tid: Any, content: Any) -> bool:
    """Whether ``entry`` (entry ``i`` of ``t`` as read) shows ``content`` as the result of call ``tid``: in
    its own ``content`` (an OpenAI ``tool`` message), a declared output, or a ``tool_result`` block."""
    fmt = t.format
    if fmt == "openai":
        return entry.get("content") == content
    if has_outputs(fmt):
        return any(cid == tid and shown(fmt, raw) == content for cid, _, raw in slots(t, i, entry))
    blocks: Any = entry
    for key in handler(fmt).content_path:
        blocks = blocks.get(key) if isinstance(blocks, dict) else None
    return isinstance(blocks, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" and b.get("tool_use_id") == tid
        and b.get("content") == content for b in blocks)
