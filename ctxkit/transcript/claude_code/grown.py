"""Carrying the active chain over to a transcript that grew by whole lines.

``ctxkit simulate`` reads a session again before each of its requests: the file as it was then,
which is the previous read plus the lines written since (and a policy's step reads the previous
step's output plus those lines). Walking the whole ``parentUuid`` chain again at each request made
the replay's time grow with the square of the session. When the new lines only extend the active
chain (the normal case: an answer, its tool results, the next prompt, chained onto the leaf), the
chain is the earlier one plus the new entries on it, and the walk reads only the new lines
(:func:`grown_chain`; the view likewise, :func:`ctxkit.transcript.claude_code.projection.project`).

Anything else is left to a full walk: a new compact boundary or ctxkit record, an unreadable line,
a leaf that does not chain back onto the earlier leaf (a branch, a rewind), a new line whose uuid or
message id an earlier line already has, a new entry an earlier line named before it was written, a
result that answers a tool call an earlier line waited for, a sibling of the preserved segment or the
anchor it goes after (the summary, written after the boundary), a local command Claude Code 1.0
chained onto its caveat line (:mod:`ctxkit.transcript.claude_code.reused_caveat`). The result is the one a full walk
gives (``tests/test_grown_view.py`` checks it at every request of corpus sessions).

What the walk needs to go on (the uuid map, the members' uuids, message ids and tool ids) is kept
with the chain's facts under ``growth``, for the version that grows next; it is handed on, not
copied, so each growth costs its new lines.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..lineindex import BAD, SIDECHAIN
from ..model import Transcript
from ..view import View
from .fields import RECORD_TYPE, content_blocks, hook_tool_id
from .reused_caveat import is_caveat_line

#: ``Transcript.memo`` key: the :class:`Growth` a reader set (see :func:`grown_from`)
GROWN_FROM = "grown-from"
#: ``Transcript.memo`` key: (the :class:`Growth`, the entries the growth added to the chain, in order)
GROWN = "grown"
_CONVERSATION = ("user", "assistant", "attachment")


@dataclass
class Growth:
    """What a transcript read as an earlier one plus new lines takes over from the earlier one."""

    n: int  # the earlier transcript's entries: the first ``n`` of the new one are the same
    chain: tuple[list[int], dict[str, Any]]  # its active chain
    view: View | None  # its view, when it was computed
    handled: bool  # whether a record's handler made that view (then it is built again)


class _State:
    """What the chain walk of the first ``n`` entries found, for walking only the entries after them."""

    __slots__ = ("order", "n", "by_uuid", "dangling", "msg_ids", "member_uuids", "tool_ids", "waiting")

    def __init__(self) -> None:
        self.order: list[int] | None = None  # the chain it was made for (None: handed on already)
        self.n = 0
        self.by_uuid: dict[str, int] = {}  # live, main-chain entries by uuid (the first one wins)
        self.dangling: set[str] = set()  # uuids entries name (parent, source) that no entry had yet
        self.msg_ids: set[str] = set()  # the message ids of main-chain entries
        self.member_uuids: dict[str, int] = {}  # uuid of each member -> 1 in the preserved segment, else 0
        self.tool_ids: set[str] = set()  # the tool_use ids of the members
        #: entries next to a member whose results answer a tool call no member made yet -> those ids
        self.waiting: dict[int, set[str]] = {}


def grown_from(t: Transcript, earlier: Transcript) -> None:
    """Tell ``t``'s projection that its first entries are ``earlier``'s, as read from the same bytes (a
    file that grew by whole lines, or a run's output with lines added): its walk and view may then
    start from ``earlier``'s. Only the earlier chain and view are kept, not the transcript."""
    chain = earlier.memo.get("chain")
    if (chain is None or t.format != "claude-code" or earlier.format != "claude-code" or earlier.removed
            or t.overrides or t.appended or t.removed or t.n_entries < earlier.n_entries):
        return
    t.memo[GROWN_FROM] = Growth(earlier.n_entries, chain, earlier.computed_view(),
                                earlier.memo.get("view_handled", True))


def grown_chain(t: Transcript) -> tuple[list[int], dict[str, Any]] | None:
    """The active chain of ``t`` from the earlier one :func:`grown_from` named, reading only the new lines;
    None when the new lines may do more than extend it (then the whole chain is walked)."""
    growth = t.memo.pop(GROWN_FROM, None)
    if growth is None or GROWN in t.memo:
        return None
    order, facts = growth.chain
    leaf = facts.get("leaf")
    idx = t.lines
    if leaf is None or leaf >= growth.n or idx.flags[leaf] & SIDECHAIN or len(order) <= len(facts.get("segment") or ()):
        return None  # no main conversation yet (or a subagent's own file): walked in full
    state = facts.get("growth")
    if state is None or state.order is not order or state.n != growth.n:
        state = _state(t, growth.n, order, facts)
    state.order = None  # handed on: never used again for another version
    found = _grow(t, growth.n, order, facts, state)
    if found is None:
        return None
    new_order, new_facts, added = found
    t.memo[GROWN] = (growth, added)
    return new_order, new_facts


def _state(t: Transcript, n: int, order: list[int], facts: dict[str, Any]) -> _State:
    """The state of a chain walked in full (once, after a walk that was not a growth)."""
    idx = t.lines
    flags, uuids, parents, msg_ids, sources = idx.flags, idx.uuids, idx.parents, idx.msg_ids, idx.sources
    s = _State()
    s.n = n
    off = BAD | SIDECHAIN
    for i in range(n):
        u = uuids[i]
        if u and not flags[i] & off and u not in s.by_uuid:
            s.by_uuid[u] = i
    for i in range(n):
        if flags[i] & off:
            continue
        for ref in (parents[i], sources.get(i)):
            if ref and ref not in s.by_uuid:
                s.dangling.add(ref)
        if msg_ids[i]:
            s.msg_ids.add(msg_ids[i])
    segment = set(facts.get("segment") or ())
    for i in order:
        if uuids[i]:
            s.member_uuids[uuids[i]] = 1 if i in segment else 0
        if idx.type(i) == "assistant":
            s.tool_ids.update(_tool_uses(t, i))
    members, removed = set(order), facts.get("removed") or set()
    for i in range(n):
        if i in members or flags[i] & off or idx.type(i) != "user" or uuids[i] in removed:
            continue
        if parents[i] in s.member_uuids or sources.get(i) in s.member_uuids:
            answers = _answers(t, i)
            if answers and not answers <= s.tool_ids:
                s.waiting[i] = answers
    return s


def preserved_segment(boundary: dict) -> dict:
    """A compact boundary's ``preservedSegment`` (``headUuid``, ``anchorUuid``, ``tailUuid``), or {}."""
    return ((boundary.get("compactMetadata") or {}).get("preservedSegment")) or {}


def _segment_anchor(t: Transcript, facts: dict[str, Any]) -> str | None:
    """The uuid after which the walk puts the preserved segment of the chain's compaction, when it has one
    (:func:`ctxkit.transcript.claude_code.chain.active_entries`: right after the boundary until it is written)."""
    if not facts.get("segment") or facts.get("boundary") is None:
        return None
    return preserved_segment(t.entry(facts["boundary"])).get("anchorUuid") or None


def _tool_uses(t: Transcript, i: int) -> list[str]:
    return [b["id"] for b in content_blocks(t.entry(i))[0] if b.get("type") == "tool_use"]


def _answers(t: Transcript, i: int) -> set[str]:
    return {b["tool_use_id"] for b in content_blocks(t.entry(i))[0] if b.get("type") == "tool_result"}


def _grow(t: Transcript, n: int, order: list[int], facts: dict[str, Any],
          s: _State) -> tuple[list[int], dict[str, Any], list[int]] | None:
    """The walk of :func:`ctxkit.transcript.claude_code.chain.active_entries` over entries ``n`` on only."""
    idx = t.lines
    flags, uuids, parents, msg_ids, sources = idx.flags, idx.uuids, idx.parents, idx.msg_ids, idx.sources
    end = t.n_entries
    removed = facts.get("removed") or set()
    anchor = _segment_anchor(t, facts)
    fresh: list[int] = []  # the new main-chain entries
    for j in range(n, end):
        if flags[j] & BAD:
            return None
        typ = idx.type(j)
        if typ == RECORD_TYPE or (typ == "system" and t.entry(j).get("subtype") == "compact_boundary"):
            return None
        if flags[j] & SIDECHAIN:
            continue
        u = uuids[j]
        if u:
            if u == anchor:
                return None  # the preserved segment's anchor: the walk puts the segment after it, not first
            if u in s.dangling or s.by_uuid.get(u, j) < n:
                return None  # named before it was written, or a uuid an earlier line has: walked in full
            s.by_uuid.setdefault(u, j)
        fresh.append(j)
    if any(idx.type(j) == "user" and is_caveat_line(t, s.by_uuid.get(parents[j] or "")) for j in fresh):
        return None  # a local command of Claude Code 1.0: chained onto its caveat, maybe far back (reused_caveat)
    new_msgs = {msg_ids[j] for j in fresh if msg_ids[j]}
    if not new_msgs.isdisjoint(s.msg_ids):
        return None  # more of an earlier message
    for j in fresh:
        for ref in (parents[j], sources.get(j)):
            if ref and ref not in s.by_uuid:
                s.dangling.add(ref)
    s.msg_ids |= new_msgs

    def parent_of(i: int) -> int | None:
        p, hops = parents[i], 0
        while p in removed and hops < 1_000_000:
            k = s.by_uuid.get(p)
            if k is None:
                return None
            p, hops = parents[k], hops + 1
        return s.by_uuid.get(p) if p else None

    leaf = facts["leaf"]
    for j in reversed(fresh):
        if idx.type(j) in _CONVERSATION and uuids[j] and uuids[j] not in removed:
            leaf = j
            break
    path: list[int] = []
    seen: set[int] = set()
    cur: int | None = leaf
    while cur is not None and cur >= n:
        if cur in seen:
            return None  # a loop among the new entries
        seen.add(cur)
        path.append(cur)
        cur = parent_of(cur)
    if cur != facts["leaf"]:
        return None  # the new leaf does not chain onto the earlier one: a branch, a rewind
    added = set(path)
    msg_group = {msg_ids[j] for j in path if msg_ids[j] and idx.type(j) == "assistant"}

    def join(j: int) -> None:
        added.add(j)
        if uuids[j]:
            s.member_uuids[uuids[j]] = 0
        if idx.type(j) == "assistant":
            if msg_ids[j]:
                msg_group.add(msg_ids[j])
            s.tool_ids.update(_tool_uses(t, j))

    for j in path:
        join(j)
    # the dead-end siblings parallel tool calls leave (chain._stitch), among the new entries
    candidates = [j for j in fresh if j not in added and idx.type(j) in ("assistant", "user", "attachment")
                  and uuids[j] not in removed]
    waiting: dict[int, set[str]] = {}
    joined = True
    while joined:
        joined = False
        for j in candidates:
            if j in added:
                continue
            if idx.type(j) == "assistant":
                if msg_ids[j] in msg_group:
                    join(j)
                    joined = True
                continue
            p, src = parents[j], sources.get(j)
            key = p if p in s.member_uuids else src if src in s.member_uuids else None
            if key is None:
                continue
            if idx.type(j) == "attachment":  # a hook's lines after a stitched result (chain._stitch)
                if p in s.member_uuids and hook_tool_id(t.entry(j)) in s.tool_ids:
                    if s.member_uuids[p]:
                        return None
                    join(j)
                    joined = True
                continue
            answers = _answers(t, j)
            if answers and answers <= s.tool_ids:
                if s.member_uuids[key]:
                    return None  # a sibling of the preserved segment: placed with it, not at the end
                join(j)
                waiting.pop(j, None)
                joined = True
            elif answers:
                waiting[j] = answers
    if any(ids <= s.tool_ids for ids in s.waiting.values()):
        return None  # an earlier result's tool call came: it joins the chain where it was written
    s.waiting.update(waiting)
    new = parents_first(sorted(added), parent_of)  # (as the full walk orders them: a line before its parent)
    s.order, s.n = order + new, end
    new_facts = {**facts, "leaf": leaf, "path": facts["path"] + path[::-1], "growth": s}
    return s.order, new_facts, new


def parents_first(order: list[int], parent_of: Any) -> list[int]:
    """``order`` (entries in file order) with each entry after its parent where the parent is among them:
    Claude Code writes a line as its step ends, and a tool's result may be written before the answer that
    called it (a real 2.1.121 session: the result two lines above its tool_use, its ``parentUuid`` the
    answer's), while Claude Code reads the conversation along the ``parentUuid`` chain. An entry whose
    parent comes later in the file waits for it and follows it; the rest keep the file's order."""
    members = set(order)
    emitted: set[int] = set()
    waiting: dict[int, list[int]] = {}
    out: list[int] = []
    for i in order:
        p = parent_of(i)
        if p is not None and p in members and p not in emitted and p != i:
            waiting.setdefault(p, []).append(i)
            continue
        stack = [i]
        while stack:  # (an entry, then the ones that waited for it, depth first: no recursion)
            j = stack.pop()
            out.append(j)
            emitted.add(j)
            stack.extend(reversed(waiting.pop(j, ())))
    if len(out) < len(order):  # a loop of parents among them: kept, in the file's order, at the end
        out.extend(i for i in order if i not in emitted)
    return out
