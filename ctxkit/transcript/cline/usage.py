"""What the API reported a Cline request used: an assistant message's ``metrics.tokens``.

``ClineMessageMetricsInfo`` (cline/cline ``src/shared/messages/metrics.ts``): ``tokens.prompt`` (every
input token, cached ones included), ``tokens.completion``, ``tokens.cached`` (a part of ``prompt``),
and ``cost``. Older histories, and Roo Code's, record none: their size is estimated.
"""
from __future__ import annotations

from ..model import Transcript


def _count(v) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


def message_usage(t: Transcript, entries: list[int]) -> int | None:
    """``prompt + completion`` of the message an assistant view message was made of."""
    for i in reversed(entries):
        if i < 0:
            continue
        metrics = t.entry(i).get("metrics")
        tokens = metrics.get("tokens") if isinstance(metrics, dict) else None
        if not isinstance(tokens, dict):
            continue
        prompt, completion = _count(tokens.get("prompt")), _count(tokens.get("completion"))
        if prompt is not None or completion is not None:
            return (prompt or 0) + (completion or 0)
    return None
