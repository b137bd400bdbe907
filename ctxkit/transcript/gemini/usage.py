"""What the API reported a Gemini CLI request used: a ``gemini`` message's ``tokens``.

``TokensSummary`` (``packages/core/src/services/chatRecordingTypes.ts``): ``input``
(``promptTokenCount``, cached included), ``output``, ``cached``, ``thoughts``, ``tool`` and ``total``
(``totalTokenCount``: everything the request held and the reply).
"""
from __future__ import annotations

from ..model import Transcript


def message_usage(t: Transcript, entries: list[int]) -> int | None:
    """The ``tokens.total`` of the record an assistant view message was made of (input plus output
    when it has no total)."""
    for i in reversed(entries):
        if i < 0:
            continue
        tokens = t.entry(i).get("tokens")
        if not isinstance(tokens, dict):
            continue
        total = tokens.get("total")
        if isinstance(total, int) and not isinstance(total, bool) and total > 0:
            return total
        parts = [tokens.get(k) for k in ("input", "output")]
        ints = [v for v in parts if isinstance(v, int) and not isinstance(v, bool) and v >= 0]
        if ints:
            return sum(ints)
    return None
