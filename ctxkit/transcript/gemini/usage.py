"""What the API reported a Gemini CLI request used: a ``gemini`` message's ``tokens``.

``TokensSummary`` (``packages/core/src/services/chatRecordingTypes.ts``): ``input``
(``promptTokenCount``, cached included), ``output``, ``cached``, ``thoughts``, ``tool`` and ``total``
(``totalTokenCount``: everything the request held and the reply).
"""
from __future__ import annotations

import bisect

from ..claude_code.session import RecordedSettings
from ..interface import RequestUsage, UsageWriter, reported
from ..model import Transcript

#: ``Transcript.memo`` key of :func:`_rewinds`
REWINDS = "gemini_rewinds"


def _rewinds(t: Transcript) -> tuple[list[int], list[int | None]]:
    """The lines of every ``$rewindTo`` record, in order, and for each how many lines a ctxkit compaction
    wrote after it (None: not ctxkit's). Found once per transcript version: a scan back from each
    message was quadratic in a session whose messages carry no ``tokens``."""
    found = t.memo.get(REWINDS)
    if found is None:
        lines: list[int] = []
        counts: list[int | None] = []
        for j in range(t.n_entries):
            as_read = j < t.n_lines and j not in t.overrides
            if as_read and (t.lines.bad(j) or t.lines.type(j) != "$rewindTo"):
                continue  # (a line no reader can parse is no rewind)
            if not as_read and "$rewindTo" not in t.entry(j):
                continue
            mark = t.entry(j).get("ctxkit")
            n = mark.get("compaction") if isinstance(mark, dict) else None
            lines.append(j)
            counts.append(n if isinstance(n, int) and not isinstance(n, bool) else None)
        found = t.memo[REWINDS] = (lines, counts)
    return found


def _copied_by_compaction(t: Transcript, i: int) -> bool:
    """Whether record ``i`` is a copy a ctxkit compaction appended after its rewind (its ``tokens``
    counted the history the compaction replaced): the nearest rewind before it is ctxkit's, and wrote it."""
    lines, counts = _rewinds(t)
    k = bisect.bisect_left(lines, i) - 1
    return k >= 0 and counts[k] is not None and lines[k] + counts[k] >= i


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
        if i in t.removed or i < t.n_lines and t.lines.bad(i):  # (a line cut short, skipped: nothing to read)
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


def replace_usage(entry: dict, usage: RequestUsage) -> bool:
    """A ``gemini`` record's ``tokens`` report ``usage``'s input (``input``, the cached ones included,
    ``cached`` the cache reads; ``total`` is that and the output, thoughts and tool tokens kept)."""
    tokens = entry.get("tokens")
    if entry.get("type") != "gemini" or not isinstance(tokens, dict):
        return False
    held = usage.prompt_tokens
    entry["tokens"] = {**tokens, "input": held, "cached": usage.cache_read_input_tokens,
                       "total": held + sum(reported(tokens.get(k)) for k in ("output", "thoughts", "tool"))}
    return True


USAGE_WRITER = UsageWriter(b'"tokens"', replace_usage)
