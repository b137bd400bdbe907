"""Tool outputs kept elsewhere than as ``tool_result`` blocks: reading and writing them through the
format's :class:`ctxkit.transcript.interface.ToolOutputs`.

Codex keeps an output as an item of its own (``function_call_output``), Gemini CLI inside the call
(``toolCalls[].result``), OpenCode in the tool part (``state.output``). The stages that replace a
result decide on the view's ``tool_result`` blocks, as for every format; these functions find where
the result they replace is stored, write the replacement there in the agent's own shape (so the agent
reads it back when it resumes), and give ``ctxkit expand`` the output to put the original back into.
Where the agent keeps a copy of an output that it sends too (Gemini CLI 0.61's function-response
records), the replacement is written into the copy as well (:func:`write_copies`), and expand puts
the copy back with the output.
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


def write(t: Transcript, entry: dict, ref: BlockRef, content: Any) -> tuple[dict, tuple[str, Any, Any] | None]:
    """``entry`` (entry ``ref.entry`` of ``t``) with output ``ref.block`` written as ``content`` (a
    replacement text) in the agent's shape, and what changed: ``(call id, output before, output now)``
    (None: nothing), for :func:`write_copies`."""
    found = slots(t, ref.entry, entry)
    if not 0 <= ref.block < len(found):
        return entry, None
    cid, path, raw = found[ref.block]
    text = content if isinstance(content, str) else orjson.dumps(content).decode()
    now = handler(t.format).tool_outputs.written(raw, text)
    return deep_replace(entry, list(path), now), (cid, raw, now)


def copies(fmt: str, entry: dict) -> list[str]:
    """The call ids whose outputs ``entry`` holds a copy of, sent again besides the calls' own (Gemini
    CLI's function-response records); none for a format that keeps no copies."""
    outputs = handler(fmt).tool_outputs
    return outputs.copies(entry) if outputs is not None and outputs.copies is not None else []


def mirrored(fmt: str, entry: dict, cid: str, before: Any, now: Any) -> dict:
    """``entry`` with its copy of call ``cid``'s output written as ``now``, where the copy is the output
    as it was (``before``), key for key; ``entry`` itself otherwise (one of a format that keeps no copies too)."""
    mirror = handler(fmt).tool_outputs.mirror
    return entry if mirror is None else mirror(entry, cid, before, now)


def write_copies(t: Transcript, edited: dict[int, dict], changed: list[tuple[int, tuple[str, Any, Any]]]) -> None:
    """Write each output ``changed`` (``(entry, (call id, before, now))``) into the copies the agent sends
    with it: the other entries of the view message its result is in (Gemini CLI sends a recorded batch
    of function responses merged with the calls' results). ``edited``: the entries edited so far, by
    index, which this adds to."""
    if not changed or handler(t.format).tool_outputs.copies is None:
        return
    sent_with: dict[int, list[int]] = {}
    for m in t.view().messages:
        if len(m.entries) > 1:
            for i in m.entries:
                sent_with.setdefault(i, []).extend(j for j in m.entries if j != i)
    for i, (cid, before, now) in changed:
        for j in sent_with.get(i, ()):
            entry = edited.get(j, t.entry(j))
            new = mirrored(t.format, entry, cid, before, now)
            if new is not entry:
                edited[j] = new


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
