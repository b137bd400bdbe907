"""Where a Gemini CLI record keeps a tool call's output: the ``result`` of each of a ``gemini``
message's ``toolCalls`` (a list of parts, a ``functionResponse`` among them), for the stages that
replace a result (:class:`ctxkit.transcript.interface.ToolOutputs`).

A replacement is written as Gemini CLI records a result: one ``functionResponse`` part (the call's
``id`` and ``name``, as recorded) whose ``response`` is ``{"output": <text>}``, what
``convertSessionToClientHistory`` sends back as the call's answer when the session resumes. A call
without a recorded result (cancelled, cut off) has nothing to replace.
"""
from __future__ import annotations

from typing import Any

from ..interface import ToolOutputs
from ..model import Transcript
from .projection import result_text


def slots(t: Transcript, i: int, d: dict) -> list[tuple[str, tuple, Any]]:
    calls = d.get("toolCalls") if d.get("type") == "gemini" else None
    out = []
    n = 0  # the call's number among the dict ones (the projection's ids for a call without one)
    for k, c in enumerate(calls if isinstance(calls, list) else []):
        if not isinstance(c, dict):
            continue
        if c.get("result") is not None:
            cid = c.get("id") if isinstance(c.get("id"), str) else f"{d.get('id')}#{n}"
            out.append((cid, ("toolCalls", k, "result"), c["result"]))
        n += 1
    return out


def written(result: Any, text: str) -> Any:
    parts = result if isinstance(result, list) else [result]
    response = next((p["functionResponse"] for p in parts if isinstance(p, dict)
                     and isinstance(p.get("functionResponse"), dict)), None)
    if response is None:
        return [{"text": text}]
    return [{"functionResponse": {**response, "response": {"output": text}}}]


OUTPUTS = ToolOutputs(slots, result_text, written)
