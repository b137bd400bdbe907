"""Where a Codex rollout keeps a tool call's output: the ``output`` of a ``function_call_output`` or
``custom_tool_call_output`` item on a line of its own (``payload.output``; a bare 0.3x line's
``output``), for the stages that replace a result (:class:`ctxkit.transcript.interface.ToolOutputs`).

The output is a string, a list of content items (``input_text``, ``input_image``), or in older
rollouts ``{content, success}`` (codex-rs/protocol/src/models.rs, ``FunctionCallOutputPayload``,
which reads a string or a list). A replacement is written as a string (``content`` of the older
object): Codex reads it and sends it as the call's output. A ``tool_search_output`` (its ``tools``) is
no place for a text, and an item copied into a ``compacted`` line's history is not a line's own: neither
is offered.
"""
from __future__ import annotations

from typing import Any

from ..interface import ToolOutputs
from ..model import Transcript
from .items import response_item
from .projection import output_content

_WRITABLE = ("function_call_output", "custom_tool_call_output")


def slots(t: Transcript, i: int, d: dict) -> list[tuple[str, tuple, Any]]:
    item = response_item(d)
    if item is None or item.get("type") not in _WRITABLE or not isinstance(item.get("call_id"), str):
        return []
    out = item.get("output")
    if not isinstance(out, (str, list, dict)):
        return []
    path = ("payload", "output") if item is not d else ("output",)
    return [(item["call_id"], path, out)]


def written(out: Any, text: str) -> Any:
    return {**out, "content": text} if isinstance(out, dict) else text


OUTPUTS = ToolOutputs(slots, output_content, written)
