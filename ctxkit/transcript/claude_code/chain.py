"""The active chain of a Claude Code transcript: which entries make up the conversation, in order.

Steps 1 to 5 of the projection (see :mod:`ctxkit.transcript.claude_code.projection`): the ``parentUuid`` walk
from the leaf back to a root, the preserved segment of a compaction, the dead-end siblings parallel
tool calls leave. Reads the routing fields from the line index, so an unedited entry is never parsed.
"""
from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import orjson

from ..lineindex import BAD, SIDECHAIN, LineIndex
from ..model import Transcript
from .carry import carry_chain
from .fields import content_blocks, hook_tool_id
from .grown import grown_chain, parents_first, preserved_segment
from .metas import Meta, Metas
from .records import records
from .reused_caveat import is_local_command, reused_caveats, written_after

CONVERSATION_TYPES = ("user", "assistant", "attachment")


def entry_type(t: Transcript, i: int) -> str | None:
    """The ``type`` of entry ``i`` (read from the line index when the entry is unedited: no parsing)."""
    if i < t.n_lines and i not in t.overrides:
        return t.lines.type(i)
    return t.entry(i).get("type")


def indexes_of(t: Transcript, names: tuple[str, ...]) -> list[int]:
    """The live entries of these types, in order: found in the line index's type codes (a scan in C,
    no entry parsed), plus the edited and appended entries of those types."""
    idx, n = t.lines, t.n_lines
    found: set[int] = set()
    for name in names:
        code = idx.type_codes.get(name)
        if code is None:
            continue
        needle, pos = bytes([code]), idx.types.find(bytes([code]))
        while pos != -1:
            found.add(pos)
            pos = idx.types.find(needle, pos + 1)
    found.update(i for i, name in idx.odd_types.items() if name in names)
    removed, overrides = t.removed, t.overrides
    out = {i for i in found if i < n and i not in overrides and i not in removed and not idx.flags[i] & BAD}
    out.update(i for i in overrides if i not in removed and t.entry(i).get("type") in names)
    out.update(i for i in range(n, t.n_entries) if i not in removed and t.entry(i).get("type") in names)
    return sorted(out)


def active_entries(t: Transcript) -> tuple[list[int], dict[str, Any]]:
    """Indexes of the entries that make up the view, in view order, and facts about the walk.

    Computed once per transcript version (kept in ``t.memo``; callers must not mutate it), and carried
    over from the version an edit was made from when the edit only replaced entries without touching
    what the walk reads (:func:`_walk_key`): stage edits rewrite content blocks, never the chain."""
    chain = t.memo.get("chain")
    if chain is None and t.replaced is not None:
        carry_chain(t)  # tool results whose content alone changed: nothing of the walk's to compare
        chain = t.memo.get("chain")
    if chain is None:
        # stage edits rewrite content blocks, not what the walk reads (_walk_key): the chain carries over
        chain = t.carried("chain", lambda i, d: _walk_key(d))
        if chain is None:
            chain = grown_chain(t)  # a file grown by lines that extend the chain: only they are walked
        if chain is None:
            chain = _active_entries(t)
        t.memo["chain"] = chain
    return chain


def _walk_key(d: dict) -> tuple:
    """Everything of an entry the chain walk reads: its routing fields and the tool ids it carries;
    the whole entry for one that is not a conversation message (a boundary, a ctxkit record)."""
    m = Meta(d)
    key: tuple = (m.type, m.uuid, m.parent, m.sidechain, m.msg_id, m.source_assistant)
    if m.type == "assistant":
        return key + tuple(b.get("id") for b in content_blocks(d)[0] if b.get("type") == "tool_use")
    if m.type == "user":
        return key + tuple(b.get("tool_use_id") for b in content_blocks(d)[0] if b.get("type") == "tool_result")
    if m.type == "attachment":
        return key + (hook_tool_id(d),)
    return key + (orjson.dumps(d, option=orjson.OPT_SORT_KEYS),)


def _active_entries(t: Transcript) -> tuple[list[int], dict[str, Any]]:
    metas = Metas.of(t)
    if not _has_main_conversation(t, metas):
        # a subagent's own transcript: every entry is on the sidechain, and that is the conversation
        metas = Metas.of(t, main=True)
    idx, dead = t.lines, t.removed
    flags = idx.flags
    by_uuid = _uuid_map(t, metas)
    removed: set[str] = set()  # uuids snip records removed
    for _i, rec in records(t, "snip"):
        removed.update(rec.get("removedUuids") or [])

    caveats = reused_caveats(t, by_uuid)
    relinks: dict[int, int | None] = {}  # entry -> the line it is read as chained onto (reused_caveat)

    def parent_of(i: int, as_written: bool = False) -> int | None:
        p = metas.parent(i)
        hops = 0
        while p in removed and hops < 1_000_000:
            j = by_uuid.get(p)
            if j is None:
                return None
            p = metas.parent(j)
            hops += 1
        if p in caveats and not as_written and caveats[p] != i and metas.type(i) == "user":
            if i not in relinks and is_local_command(t, i):  # (Claude Code 1.0's; once: each walk asks again)
                relinks[i] = written_after(t, metas, i, by_uuid[p], removed)
            if i in relinks:
                return relinks[i]
        return by_uuid.get(p) if p else None

    leaf = None
    for i in reversed(range(t.n_entries)):
        if (i in dead or (i < len(idx) and flags[i] & BAD) or metas.type(i) not in CONVERSATION_TYPES
                or metas.sidechain(i)):
            continue
        u = metas.uuid(i)
        if u and u not in removed:
            leaf = i
            break
    facts: dict[str, Any] = {"boundary": None, "leaf": leaf, "removed": removed}
    if leaf is None:
        return [], facts
    path: list[int] = []
    seen: set[int] = set()
    cur: int | None = leaf
    while cur is not None and cur not in seen:
        seen.add(cur)
        path.append(cur)
        cur = parent_of(cur)
    path.reverse()
    facts["relinks"] = dict(relinks)  # (the chain's own: what a resume of the file leaves out, doctor's to mend)
    root = path[0]
    segment: list[int] = []
    anchor: int | None = None
    if metas.type(root) == "system" and t.entry(root).get("subtype") == "compact_boundary":
        facts["boundary"] = root
        seg = preserved_segment(t.entry(root))
        head, tail = by_uuid.get(seg.get("headUuid") or ""), by_uuid.get(seg.get("tailUuid") or "")
        anchor = by_uuid.get(seg.get("anchorUuid") or "")
        if head is not None and tail is not None:
            cur, walk = tail, []
            while cur is not None and cur not in seen and len(walk) < 1_000_000:
                walk.append(cur)
                seen.add(cur)
                if cur == head:
                    break
                cur = parent_of(cur, as_written=True)  # (the tail Claude Code rebuilds)
            segment = list(reversed(walk)) if walk and walk[-1] == head else []
    members = set(path) | set(segment)
    group = {i: 1 for i in segment}
    _stitch(t, metas, members, group, removed)
    main = parents_first(sorted(i for i in members if group.get(i, 0) == 0), parent_of)
    seg_sorted = parents_first(sorted(i for i in members if group.get(i, 0) == 1), parent_of)
    if seg_sorted:
        pos = main.index(anchor) + 1 if anchor in main else (1 if main else 0)
        main = main[:pos] + seg_sorted + main[pos:]
    facts["segment"] = seg_sorted
    facts["path"] = path  # the parentUuid chain root..leaf (compaction picks a kept tail's head on it)
    return main, facts


def _uuid_map(t: Transcript, metas: Metas) -> Mapping[str, int]:
    """Live chain entries by uuid (the first line of a uuid wins). The input lines' part is built once per
    line index and shared by every version whose edits keep each edited line's uuid and side (stage edits
    rewrite content): then only the appended entries are looked up beside it (:class:`_WithAppended`;
    a compaction makes several versions of a long session, and copying its map for each cost more than
    the walk)."""
    idx, edited, dead = t.lines, metas.edited, t.removed
    n = len(idx)
    skip = BAD if metas.main else BAD | SIDECHAIN
    flags = idx.flags
    shared = not any(i < n for i in dead) and not metas.renamed()
    if shared:
        key = f"uuids-{skip}"
        lines_map = idx.memo.get(key)
        if lines_map is None:
            lines_map = {}
            for i, u in enumerate(idx.uuids):
                if u and not flags[i] & skip and u not in lines_map:
                    lines_map[u] = i
            idx.memo[key] = lines_map
    else:
        lines_map = {}
        for i, u in enumerate(idx.uuids):
            if i in edited:
                m = edited[i]
                if m.uuid and (metas.main or not m.sidechain) and i not in dead and m.uuid not in lines_map:
                    lines_map[m.uuid] = i
            elif u and not flags[i] & skip and u not in lines_map and i not in dead:
                lines_map[u] = i
    appended: dict[str, int] = {}
    for i in range(n, t.n_entries):
        m = edited[i]
        if m.uuid and (metas.main or not m.sidechain) and i not in dead and m.uuid not in lines_map \
                and m.uuid not in appended:
            appended[m.uuid] = i
    if not appended:
        return lines_map
    if shared:
        return _WithAppended(lines_map, appended)
    lines_map.update(appended)
    return lines_map


class _WithAppended(Mapping):
    """A uuid map (read-only) made of the line index's and the appended entries' (no key in both)."""

    __slots__ = ("base", "extra")

    def __init__(self, base: dict[str, int], extra: dict[str, int]):
        self.base, self.extra = base, extra

    def __getitem__(self, key: str) -> int:
        found = self.extra.get(key)
        return found if found is not None else self.base[key]

    def get(self, key: str, default: Any = None) -> Any:
        found = self.extra.get(key)
        return found if found is not None else self.base.get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self.extra or key in self.base

    def __len__(self) -> int:
        return len(self.base) + len(self.extra)

    def __iter__(self) -> Iterator[str]:
        return itertools.chain(self.base, self.extra)

    def values(self) -> Any:  # (the view Mapping gives walks the keys and looks each one up)
        return itertools.chain(self.base.values(), self.extra.values())


def _has_main_conversation(t: Transcript, metas: Metas) -> bool:
    """Whether a live user/assistant/attachment entry is off the sidechain (else: a subagent's file)."""
    idx, edited = t.lines, metas.edited
    codes = {idx.type_codes[name] for name in CONVERSATION_TYPES if name in idx.type_codes}
    flags = idx.flags
    for i, code in enumerate(idx.types):
        if code in codes and not flags[i] & (BAD | SIDECHAIN) and i not in edited and i not in t.removed:
            return True
    return any(m.type in CONVERSATION_TYPES and not m.sidechain and i not in t.removed
               and not (i < len(idx) and flags[i] & BAD) for i, m in edited.items())


def _stitch(t: Transcript, metas: Metas, members: set[int], group: dict[int, int], removed: set[str]) -> None:
    """Add dead-end siblings that parallel tool calls leave off the chain (TRANSCRIPTS.md 8, step 3b).

    A sibling is an assistant fragment of a member's message id, a user entry whose parent (or
    source assistant) is a member, or an attachment a hook wrote for a member's tool call whose parent
    is a member (Claude Code 2.1.150 chains a PostToolUse hook's lines onto the result they follow, and
    that result may be a dead end: its context would be lost with them). The candidates are looked up in maps of the line index built once
    (:func:`_sibling_maps`), so each round costs the size of the view, not of the file; rounds repeat
    until nothing is added (a stitched fragment may bring the tool_use a waiting result answers). Each
    round reads only the members the round before added: the uuids, message ids and tool ids of the
    members are gathered as they join, and a result that waited for a tool id is looked at again."""
    idx = t.lines
    by_msg, by_parent, by_source = _sibling_maps(idx, min((i for i in members if i < len(idx)), default=len(idx)))
    rerouted = metas.rerouted()  # an edit that kept an entry's routing fields: the maps find it

    def lookup(table: dict[str, int | list[int]], key: str | None) -> Iterable[int]:
        found = table.get(key) if key is not None else None
        return () if found is None else (found,) if isinstance(found, int) else found

    uuid_group: dict[str, int] = {}
    msg_group: dict[str, int] = {}
    tool_ids: set[str] = set()
    waiting: set[int] = set()  # user entries next to a member whose results answer a tool id not seen yet
    joined: Iterable[int] = sorted(members)
    while True:
        candidates: set[int] = rerouted | waiting
        for i in joined:  # what the members added last round bring
            u, g = metas.uuid(i), group.get(i, 0)
            if u:
                uuid_group[u] = g
                candidates.update(lookup(by_parent, u))
                candidates.update(lookup(by_source, u))
            if metas.type(i) == "assistant":
                mid = metas.msg_id(i)
                if mid:
                    msg_group[mid] = g
                    candidates.update(lookup(by_msg, mid))
                tool_ids.update(b["id"] for b in content_blocks(t.entry(i))[0] if b.get("type") == "tool_use")
        added: list[int] = []
        for i in sorted(candidates):
            if i in members or i in t.removed or (i < len(idx) and idx.flags[i] & BAD):
                continue
            typ = metas.type(i)
            if typ not in ("assistant", "user", "attachment") or metas.sidechain(i) or metas.uuid(i) in removed:
                continue
            if typ == "assistant" and metas.msg_id(i) in msg_group:
                added.append(i)
                group[i] = msg_group[metas.msg_id(i)]
            elif typ == "attachment":
                # what a hook wrote after a stitched result (2.1.150: its success, then its added context)
                parent = metas.parent(i)
                if parent in uuid_group and hook_tool_id(t.entry(i)) in tool_ids:
                    added.append(i)
                    group[i] = uuid_group[parent]
            elif typ == "user":
                parent, source = metas.parent(i), metas.source_assistant(i)
                if parent not in uuid_group and source not in uuid_group:
                    continue
                blocks, _ = content_blocks(t.entry(i))
                answers = [b for b in blocks if b.get("type") == "tool_result"]
                if answers and all(b["tool_use_id"] in tool_ids for b in answers):
                    added.append(i)
                    waiting.discard(i)
                    key = parent if parent in uuid_group else source
                    group[i] = uuid_group[key]
                elif answers:
                    waiting.add(i)
        if not added:
            return
        members.update(added)
        joined = added


_Map = dict[str, "int | list[int]"]


def _sibling_maps(idx: LineIndex, lo: int) -> tuple[_Map, _Map, _Map]:
    """Lines from ``lo`` on (the first member) by assistant message id, by parent uuid and by source
    assistant uuid. A sibling comes after the entry it names (an agent writes a line once the one it
    points at exists), and the fragments of a message are consecutive lines, so nothing before ``lo``
    (nor before the run of fragments ``lo`` is part of) can be one.

    Built once per line index (which never changes once read), shared by every transcript version over
    it, and built again only for an earlier ``lo``; a key found once maps to its line, one found on
    several lines to a list (most keys are on one line)."""
    while 0 < lo < len(idx) and idx.msg_ids[lo] is not None and idx.msg_ids[lo - 1] == idx.msg_ids[lo]:
        lo -= 1
    built = idx.memo.get("siblings")
    if built is None or built[0] > lo:
        n = len(idx)
        maps = (_invert(zip(range(lo, n), idx.msg_ids[lo:], strict=True)),
                _invert(zip(range(lo, n), idx.parents[lo:], strict=True)),
                _invert((i, src) for i, src in idx.sources.items() if i >= lo))
        built = idx.memo["siblings"] = (lo, maps)
    return built[1]


def _invert(pairs: Iterable[tuple[int, str | None]]) -> _Map:
    out: _Map = {}
    for i, key in pairs:
        if key is None:
            continue
        found = out.get(key)
        if found is None:
            out[key] = i
        elif isinstance(found, int):
            out[key] = [found, i]
        else:
            found.append(i)
    return out


def leaf_uuid(t: Transcript) -> str | None:
    """The uuid new entries chain onto: the leaf of the active chain."""
    order, facts = active_entries(t)
    leaf = facts.get("leaf")
    return t.entry(leaf).get("uuid") if leaf is not None else None


def uuid_index(t: Transcript) -> Mapping[str, int]:
    """uuid -> index of the first live, non-sidechain entry carrying it (without parsing every line)."""
    return _uuid_map(t, Metas.of(t))
