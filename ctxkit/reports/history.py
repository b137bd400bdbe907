"""A recorded session without its own compactions: the whole history, for ``simulate``'s ``none`` row and
its policy rows.

``none`` means no context management, and a policy row means this policy's management alone: neither
may inherit the compactions the session's agent made. Each main-chain ``compact_boundary`` and the
compact summary after it are left out, and the lines that chained onto them chain onto the last
conversation entry before the boundary instead (its ``logicalParentUuid`` when that entry was
written, else the last user, assistant or attachment entry before it; real files name entries that
were never written). What Claude Code re-injected after the compaction (files read again, the todo
list) stays: it is what the session held next.
"""
from __future__ import annotations

import dataclasses

import orjson

from ..transcript.model import Transcript
from .usage import RecordedRequest

_CHAINED = ("user", "assistant", "attachment")


def own_boundaries(t: Transcript) -> list[int]:
    """Entry indexes of the session's own compactions (main-chain ``compact_boundary`` entries). A Claude
    Code line's type is in the line index: only the ``system`` lines are parsed (a large session's
    others are not, when it holds none)."""
    typed = t.format == "claude-code" and not t.overrides
    return [i for i in t.live_indexes() if (not typed or i >= t.n_lines or t.lines.type(i) == "system")
            and t.entry(i).get("type") == "system" and t.entry(i).get("subtype") == "compact_boundary"
            and not t.entry(i).get("isSidechain")]


def whole_history(t: Transcript, raw_lines: list[bytes],
                  points: list[RecordedRequest]) -> tuple[list[bytes], list[RecordedRequest]]:
    """(the session's lines without its own compactions, ``points`` renumbered to those lines)."""
    boundaries = own_boundaries(t)
    if not boundaries:
        return raw_lines, points
    index_of: dict[str, int] = {}
    for i in t.live_indexes():
        uuid = t.entry(i).get("uuid")
        if isinstance(uuid, str):
            index_of.setdefault(uuid, i)
    drop: set[int] = set()
    alias: dict[str, str] = {}
    for b in boundaries:
        entry = t.entry(b)
        named = entry.get("logicalParentUuid")
        leaf = named if isinstance(named, str) and index_of.get(named, b) < b else None
        if leaf is None:
            leaf = next((t.entry(i).get("uuid") for i in range(b - 1, -1, -1)
                         if t.entry(i).get("type") in _CHAINED and not t.entry(i).get("isSidechain")
                         and isinstance(t.entry(i).get("uuid"), str)), None)
        drop.add(b)
        if isinstance(entry.get("uuid"), str) and leaf is not None:
            alias[entry["uuid"]] = leaf
    for i in t.live_indexes():
        entry = t.entry(i)
        if entry.get("isCompactSummary") and not entry.get("isSidechain") and entry.get("parentUuid") in alias:
            drop.add(i)
            if isinstance(entry.get("uuid"), str):
                alias[entry["uuid"]] = alias[entry["parentUuid"]]
    out: list[bytes] = []
    new_index: list[int] = []
    for i, line in enumerate(raw_lines):
        new_index.append(len(out))
        if i in drop:
            continue
        if i < t.n_lines and t.entry(i).get("parentUuid") in alias:
            entry = {**t.entry(i), "parentUuid": alias[t.entry(i)["parentUuid"]]}
            line = orjson.dumps(entry) + b"\n"
        out.append(line)
    return out, [dataclasses.replace(p, first_entry=new_index[p.first_entry]) for p in points]
