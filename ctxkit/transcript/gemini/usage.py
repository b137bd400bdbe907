"""What the API reported a Gemini CLI request used: a ``gemini`` message's ``tokens``.

``TokensSummary`` (``packages/core/src/services/chatRecordingTypes.ts``): ``input``
(``promptTokenCount``, cached included), ``output``, ``cached``, ``thoughts``, ``tool`` and ``total``
(``totalTokenCount``: everything the request held and the reply).
"""
from __future__ import annotations

from ..claude_code.session import RecordedSettings
from ..interface import RequestUsage, reported
from ..model import Transcript


def _copied_by_compaction(t: Transcript, i: int) -> bool:
    """Whether record ``i`` is a copy a ctxkit compaction appended after its rewind (its ``tokens``
    counted the history the compaction replaced)."""
    for j in range(i - 1, -1, -1):
        kind = t.lines.type(j) if j < t.n_lines and j not in t.overrides else None
        if kind is None and "$rewindTo" not in t.entry(j) or kind is not None and kind != "$rewindTo":
            continue
        mark = t.entry(j).get("ctxkit")
        n = mark.get("compaction") if isinstance(mark, dict) else None
        return isinstance(n, int) and j + n >= i
    return False


def message_usage(t: Transcript, entries: list[int]) -> int | None:
    """The ``tokens.total`` of the record an assistant view message was made of (input plus output
    when it has no total); None for a record a compaction copied."""
    for i in reversed(entries):
        if i < 0 or _copied_by_compaction(t, i):
            return None
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


def recorded_settings(t: Transcript) -> RecordedSettings:
    """The model the session ran with: the newest ``gemini`` message's ``model``."""
    for i in range(t.n_entries - 1, -1, -1):
        if i in t.removed:
            continue
        d = t.entry(i)
        if d.get("type") == "gemini" and isinstance(d.get("model"), str) and d["model"]:
            return RecordedSettings(model=d["model"], model_source="gemini message")
    return RecordedSettings()


def request_usage(t: Transcript, entries: list[int]) -> RequestUsage | None:
    """The ``gemini`` record's ``tokens`` (``input``, cached included, ``cached``, ``output``, ``thoughts``)
    and its ``model``."""
    for i in reversed(entries):
        d = t.entry(i)
        tokens = d.get("tokens")
        if isinstance(tokens, dict):
            cached = reported(tokens.get("cached"))
            model = d.get("model") if isinstance(d.get("model"), str) else None
            return RequestUsage(input_tokens=max(reported(tokens.get("input")) - cached, 0),
                                cache_read_input_tokens=cached,
                                output_tokens=reported(tokens.get("output")) + reported(tokens.get("thoughts")),
                                model=model)
    return None
