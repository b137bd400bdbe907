"""Carrying a view over to a Claude Code transcript version that replaced tool results or off-chain entries.

Stages that clear or persist tool results (microcompact, the tool-result budget) make a new version
whose entries differ from the earlier version's only in those results' content. Its view is the
earlier view with the new results put in: nothing else is built again (:func:`carried_over`, used
by :func:`ctxkit.transcript.claude_code.projection.project`).
"""
from __future__ import annotations

from collections.abc import Callable

from ..model import REPLACED_BLOCKS, Transcript
from ..view import BlockRef, View, ViewMessage
from .fields import content_blocks


def loads_tools(result: dict) -> bool:
    """Whether a tool result loads deferred tools (``tool_reference`` blocks): Claude Code sends a text
    after it, so such a result is never swapped in place."""
    c = result.get("content")
    return isinstance(c, list) and any(isinstance(b, dict) and b.get("type") == "tool_reference" for b in c)


def carry_chain(t: Transcript) -> None:
    """Carry the active chain over to a version that only replaced tool results' content (what
    :func:`ctxkit.transcript.edits.replace_blocks` records): the walk reads no content, and the blocks
    it reads (the tool ids) are the same, which :func:`_replaced_results` checks block by block. The
    general carry (``Transcript.carried``) would compare what the walk reads of each replaced entry,
    a thousand entries for a microcompact; :func:`carried_over` then reuses the blocks checked here."""
    if "chain" in t.memo or not t.replaced_blocks_only():
        return
    chain = t.earlier[0].get("chain") if t.earlier is not None else None
    if chain is None:
        return
    new_blocks = _replaced_results(t.parent.entries, t.memo[REPLACED_BLOCKS])
    if new_blocks is not None:
        t.memo["chain"], t.memo[_CHECKED] = chain, new_blocks


_CHECKED = "replaced-results"  # t.memo: the results carry_chain found replaced in place


def carried_over(t: Transcript, contexts: Callable[[int], int] = lambda i: 0) -> View | None:
    """The view of the version ``t`` was edited from, with the tool results the edit replaced put in (a
    stage that clears or persists results edits nothing else; an entry off the walked chain may have
    any edit, none of it is in the view): the projection is not built again. None when that does not
    hold, when the earlier view went through a record's handler (a collapse), whose blocks are not
    the entries' own, or when a message with a replaced result holds a hook's context (``contexts``: how
    many an entry added, :mod:`.hook_context`): from the next turn on the context is folded into a result,
    and the replaced block, the entry's own, would put the result there without it."""
    parent = t.parent
    earlier = t.earlier[0] if t.earlier is not None else {}
    if (parent is None or t.replaced is None or parent.view is None or earlier.get("view_handled", True)
            or earlier.get("chain") is not t.memo.get("chain")):
        return None
    known = t.memo.get(REPLACED_BLOCKS)
    new_blocks = t.memo.get(_CHECKED) if _CHECKED in t.memo else \
        _replaced_results(parent.entries, known) if known is not None else {}
    if new_blocks is None:
        return None
    if known is None:
        on_chain = set(t.memo["chain"][0])  # the same walk for both versions (checked above)
        for i in t.replaced:
            if i not in on_chain:
                continue  # an entry the walk leaves out: nothing of it is in either view (edits.history_as_read)
            changed = _changed_results(parent.entries[i], t.entry(i))
            if changed is None:
                return None
            new_blocks.update((BlockRef(i, k), block) for k, block in changed)
    msgs = []
    replaced = t.replaced
    for m in parent.view.messages:
        if m.role != "user" or replaced.isdisjoint(m.entries):
            msgs.append(m)  # the same message: views are read-only once built (a handler copies what it changes)
            continue
        if any(map(contexts, m.entries)):
            return None
        content = [new_blocks.get(ref, b) if ref is not None else b for b, ref in zip(m.content, m.refs, strict=True)]
        msgs.append(ViewMessage(m.role, content, m.kind, list(m.refs), list(m.entries), m.uuid, m.timestamp,
                                m.was_string, m.msg_id))
    t.memo["view_handled"] = False
    return View(msgs, list(parent.view.notes), list(parent.view.orphans), list(parent.view.unsent))


def _changed_results(old: dict, new: dict) -> list[tuple[int, dict]] | None:
    """The blocks of user entry ``new`` that differ from ``old``, as ``(block index, block)``, when they are
    tool results that differ only in their content (and load no tools); None for any other difference."""
    if old is new:
        return []
    if old.get("type") != "user" or not _same_but(old, new, "message"):
        return None
    if not isinstance(old.get("message"), dict) or not isinstance(new.get("message"), dict) \
            or not _same_but(old["message"], new["message"], "content"):
        return None
    (before, was_string), (after, is_string) = content_blocks(old), content_blocks(new)
    if was_string or is_string or len(before) != len(after):
        return None
    out = []
    for k, (a, b) in enumerate(zip(before, after, strict=True)):
        if a is b:
            continue
        if a.get("type") != "tool_result" or b.get("type") != "tool_result" or not _same_but(a, b, "content") \
                or loads_tools(a) or loads_tools(b):
            return None
        out.append((k, b))
    return out


def _replaced_results(before: dict[int, dict], replaced: dict[BlockRef, dict]) -> dict[BlockRef, dict] | None:
    """:func:`_changed_results` for an edit that replaced these blocks in place and changed nothing else
    (:data:`REPLACED_BLOCKS`): only the blocks are compared, not the entries around them."""
    out = {}
    for ref, b in replaced.items():
        blocks, was_string = content_blocks(before[ref.entry])
        if was_string or ref.block >= len(blocks):
            return None
        a = blocks[ref.block]
        if a is b:
            continue
        if a.get("type") != "tool_result" or b.get("type") != "tool_result" or not _same_but(a, b, "content") \
                or loads_tools(a) or loads_tools(b):
            return None
        out[ref] = b
    return out


def _same_but(a: dict, b: dict, key: str) -> bool:
    """Whether two dicts hold the same fields with the same values, ``key`` aside."""
    return a.keys() == b.keys() and all(a[k] is b[k] or a[k] == b[k] for k in a if k != key)
