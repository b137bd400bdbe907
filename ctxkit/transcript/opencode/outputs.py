"""Where an OpenCode export keeps a tool call's output: a completed ``tool`` part's ``state.output``,
for the stages that replace a result (:class:`ctxkit.transcript.interface.ToolOutputs`).

A replacement is written in its place as a string, which OpenCode sends as the call's output
(``toModelMessages``). An output OpenCode pruned itself (``state.time.compacted``), an error and a
call still running are not replaced.
"""
from __future__ import annotations

from typing import Any

from ..interface import ToolOutputs
from ..model import Transcript
from .projection import writable_output


def slots(t: Transcript, i: int, d: dict) -> list[tuple[str, tuple, Any]]:
    out = []
    for k, p in enumerate(d.get("parts") if isinstance(d.get("parts"), list) else []):
        if isinstance(p, dict) and p.get("type") == "tool" and isinstance(p.get("state"), dict):
            text = writable_output(p["state"])
            if text is not None:
                out.append((str(p.get("callID") or p.get("id")), ("parts", k, "state", "output"), text))
    return out


OUTPUTS = ToolOutputs(slots, lambda out: out, lambda out, text: text)
