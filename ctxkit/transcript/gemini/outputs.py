"""Where a Gemini CLI record keeps a tool call's output: the ``result`` of each of a ``gemini``
message's ``toolCalls`` (a list of parts, a ``functionResponse`` among them), for the stages that
replace a result (:class:`ctxkit.transcript.interface.ToolOutputs`).

A replacement is written as Gemini CLI records a result: one ``functionResponse`` part (the call's
``id`` and ``name``, as recorded) whose ``response`` is ``{"output": <text>}``, what
``convertSessionToClientHistory`` sends back as the call's answer when the session resumes. A call
without a recorded result (cancelled, cut off) has nothing to replace.

Gemini CLI 0.61 keeps a second copy of each output: the parts it sent as a batch of function
responses, recorded as a ``user`` message of their own (``recordSyntheticMessage`` in
``geminiChat.ts``: each call's ``responseParts``, in the calls' order, the same parts as the calls'
``result``), which ``convertSessionToClientHistory`` sends again on resume. A replacement is written
there too (:func:`mirror`), so the agent sends it in both places; only over a run of parts that is,
key for key, the result as it was — a copy that differs is no copy of it, and is left as recorded —
so ``ctxkit expand``, putting the result back, puts the copy back to the same bytes.
"""
from __future__ import annotations

import json
from typing import Any

import orjson

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


def _response_id(p: Any) -> Any:
    response = p.get("functionResponse") if isinstance(p, dict) else None
    return response.get("id") if isinstance(response, dict) else None


def copies(d: dict) -> list[str]:
    """The call ids of the function responses a recorded batch (a ``user`` message) holds."""
    content = d.get("content") if d.get("type") == "user" else None
    return [cid for p in content if isinstance(cid := _response_id(p), str)] if isinstance(content, list) else []


def _as_parts(output: Any) -> list | None:
    """An output as the parts Gemini CLI sends for it: a list as it is, a part as one (a string result
    is sent as a response Gemini CLI makes up, which no recorded batch holds)."""
    return output if isinstance(output, list) else [output] if isinstance(output, dict) else None


def _same(a: list, b: list) -> bool:
    """Whether two runs of parts are the same, key for key in the same order (what gives the same bytes)."""
    try:
        return orjson.dumps(a) == orjson.dumps(b)
    except orjson.JSONEncodeError:  # (an integer beyond 64 bits)
        return json.dumps(a) == json.dumps(b)


def mirror(d: dict, cid: str, old: Any, new: Any) -> dict:
    """``d`` (a recorded batch) with the run of parts that is call ``cid``'s output ``old`` replaced by
    ``new``; ``d`` itself when it holds no such run."""
    before, after = _as_parts(old), _as_parts(new)
    content = d.get("content") if d.get("type") == "user" else None  # (the records :func:`copies` names)
    if not before or after is None or not isinstance(content, list):
        return d
    n = len(before)
    for k, p in enumerate(content):
        if _response_id(p) == cid and _same(content[k:k + n], before):
            return {**d, "content": [*content[:k], *after, *content[k + n:]]}
    return d


OUTPUTS = ToolOutputs(slots, result_text, written, copies, mirror)
