"""What an OpenCode session export is: the output of ``opencode export <session>``.

Defined by OpenCode's source (sst/opencode): ``packages/opencode/src/cli/cmd/export.ts`` prints
``{info: Session.Info, messages: [{info, parts}]}`` (``JSON.stringify(..., null, 2)``); a message's
``info`` and its ``parts`` are ``MessageV2`` (``packages/opencode/src/session/message-v2.ts``):
``info.role`` ``user`` or ``assistant`` (``id``, ``sessionID``, ``parentID``, ``modelID``,
``providerID``, ``tokens``, ``cost``, ``summary``, ``finish``, ``error``); parts of type ``text``,
``reasoning``, ``file``, ``tool`` (``callID``, ``tool``, ``state``: ``status`` ``pending``,
``running``, ``completed`` — ``input``, ``output``, ``time.compacted`` when pruned —, ``error``),
``step-start``, ``step-finish`` (``tokens``, ``cost``), ``compaction`` (``auto``, ``tail_start_id``),
``subtask``, ``patch``, ``snapshot``, ``agent``, ``retry``.
"""
from __future__ import annotations

from ..lineindex import BAD
from ..model import Transcript
from ..shapes import Bad

NAME = "opencode"
PART_TYPES = frozenset({"text", "reasoning", "file", "tool", "step-start", "step-finish", "compaction", "subtask",
                        "patch", "snapshot", "agent", "retry"})


def looks_like(d: dict) -> bool:
    info = d.get("info")
    return isinstance(info, dict) and info.get("role") in ("user", "assistant") and isinstance(d.get("parts"), list)


def check(d: dict) -> None:
    if not isinstance(d.get("info"), dict):
        exc = Bad("an object", d.get("info"))
        exc.path.append("info")
        raise exc
    if not isinstance(d.get("parts"), list):
        exc = Bad("a list", d.get("parts"))
        exc.path.append("parts")
        raise exc


def messages(t: Transcript) -> list[tuple[int, dict]]:
    """Every readable message line, in order, as ``(entry, message)``."""
    return [(i, t.entry(i)) for i in t.live_indexes()
            if not (i < t.n_lines and t.lines.flags[i] & BAD)]


def newest_compaction(msgs: list[tuple[int, dict]]) -> tuple[int, int] | None:
    """The positions in ``msgs`` of the newest compaction that completed (``filterCompacted``,
    ``message-v2.ts``): a user message with a ``compaction`` part that a summary ``assistant`` message
    (``summary``, ``finish``, no ``error``) names as its ``parentID``; ``(marker, summary)``, None when none did."""
    markers: dict = {}
    latest = None
    for pos, (_, m) in enumerate(msgs):
        info = m["info"]
        if info.get("role") == "user" and any(isinstance(p, dict) and p.get("type") == "compaction" for p in m["parts"]):
            markers[info.get("id")] = pos
        elif info.get("role") == "assistant" and info.get("summary") and info.get("finish") and not info.get("error") \
                and info.get("parentID") in markers:
            latest = (markers[info["parentID"]], pos)
    return latest


def history(msgs: list[tuple[int, dict]]) -> list[tuple[int, dict]]:
    """The messages OpenCode sends on, in the order it sends them (``filterCompacted``,
    ``message-v2.ts``): everything, until a compaction completes (:func:`newest_compaction`). From the
    newest such one on: that message and its summary first, then the tail the compaction kept (from its
    ``tail_start_id`` up to the compaction), then what came after the summary."""
    latest = newest_compaction(msgs)
    if latest is None:
        return list(msgs)
    marker, summary = latest
    part = next(p for p in msgs[marker][1]["parts"] if isinstance(p, dict) and p.get("type") == "compaction")
    tail = next((pos for pos, (_, m) in enumerate(msgs) if part.get("tail_start_id")
                 and m["info"].get("id") == part["tail_start_id"]), None)
    if tail is None or tail >= marker:
        return msgs[marker:]
    return msgs[marker:summary + 1] + msgs[tail:marker] + msgs[summary + 1:]


def unknown_parts(msgs: list[tuple[int, dict]]) -> dict[str, int]:
    found: dict[str, int] = {}
    for _, m in msgs:
        for p in m["parts"]:
            typ = p.get("type") if isinstance(p, dict) else None
            if typ not in PART_TYPES:
                found[str(typ)] = found.get(str(typ), 0) + 1
    return found
