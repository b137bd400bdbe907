"""A recorded session without its own compactions: the whole history, for ``simulate``'s ``none`` row and
its policy rows.

``none`` means no context management, and a policy row means this policy's management alone: neither
may inherit the compactions the session's agent made. Each main-chain ``compact_boundary`` and the
compact summary after it (Claude Code 1.0: the summary alone, which starts the chain anew) are left
out, and the lines that chained onto them chain onto the last conversation entry before the boundary
instead (its ``logicalParentUuid`` when that entry was
written, else the last user, assistant or attachment entry before it; real files name entries that
were never written). What Claude Code re-injected after the compaction (files read again, the todo
list) stays: it is what the session held next.
"""
from __future__ import annotations

import dataclasses

import orjson

from ..transcript.lineindex import SIDECHAIN
from ..transcript.model import Transcript
from .usage import RecordedRequest

_CHAINED = ("user", "assistant", "attachment")


def is_compaction(entry: dict, answered: bool = True, sidechain: bool = False) -> bool:
    """Whether a main-chain entry starts one of the session's own compactions: a ``compact_boundary``
    (Claude Code 2.x, and 1.0 from its late releases), or a compact summary that starts the chain anew
    (``parentUuid`` null: Claude Code 1.0 up to at least 1.0.90 wrote no boundary line, only the summary).
    ``answered``: whether the session made a request before the entry; a summary before any is the one a
    continued session starts with (1.0 began a new file with the previous session's summary), not a
    compaction of this session's history. So is a boundary before any request: Claude Code 2.1 writes one
    at the top of the file a `/clear` started when it compacts what came before the `/clear`; that
    history is in the earlier file, and the session's first request already holds the summary.
    ``sidechain``: the entry is of a subagent's own file, whose lines are all sidechain ones."""
    if (entry.get("isSidechain") and not sidechain) or not answered:
        return False
    if entry.get("type") == "system":
        return entry.get("subtype") == "compact_boundary"
    return entry.get("type") == "user" and bool(entry.get("isCompactSummary")) and entry.get("parentUuid") is None


def own_boundaries(t: Transcript, sidechain: bool = False) -> list[int]:
    """Entry indexes of the session's own compactions (:func:`is_compaction`); ``sidechain``: of a subagent's
    own file (:mod:`ctxkit.reports.compaction_agents`), whose lines are all sidechain ones. A Claude Code
    line's type is in the line index: only the ``system`` and ``user`` lines are parsed."""
    typed = t.format == "claude-code" and not t.overrides
    out, answered = [], False
    for i in t.live_indexes():
        if typed and i < t.n_lines:
            kind = t.lines.type(i)
            if kind == "assistant" and (sidechain or not t.lines.flags[i] & SIDECHAIN):
                answered = True
            if kind not in ("system", "user"):
                continue
        entry = t.peek(i)
        if is_compaction(entry, answered, sidechain):
            out.append(i)
        answered = answered or (entry.get("type") == "assistant" and (sidechain or not entry.get("isSidechain")))
    return out


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
