"""What the stages need to know about a whole Claude Code session, collected while its lines are indexed.

The working directory, slug and session id (the last ones written on the main chain), whether
attachments are rendered as system messages, the permission-mode changes and the queue operations.
The attachment types and re-injection read these for every version of a run's transcript; gathered in
the one indexing pass, they cost no second reading of the file (and are kept in a checkpoint,
:mod:`ctxkit.store.checkpoint`, so that a later run reads only the lines added since).
"""
from __future__ import annotations

from typing import Any

from .model import Transcript

_NAMED = (("cwd", "cwd"), ("slug", "slug"), ("sessionId", "session_id"))


def line_facts(i: int, d: dict) -> tuple:
    """What entry ``i`` tells about the session (empty for a sidechain entry), as a value compared to
    tell whether an edit changed any of it: what :meth:`SessionFacts.add` collects from it alone."""
    one = SessionFacts()
    one.add(i, d)
    return (tuple(one.named.items()), one.system_rendered, tuple(mode for _, mode in one.modes),
            tuple(one.queue_ops))


_CONVERSATION = frozenset(("user", "assistant", "attachment"))


class SessionFacts:
    """The session's facts over the lines added so far, in line order (see the module docstring)."""

    def __init__(self) -> None:
        self.named: dict[str, str] = {}  # cwd, slug, session_id: the last value seen
        self.system_rendered = False
        self.modes: list[tuple[int, str]] = []  # (entry index, permission mode), in order
        self.queue_ops: list[dict[str, Any]] = []

    def add(self, i: int, d: dict) -> None:
        """Take in what entry ``i`` tells about the session (nothing, for a sidechain entry). Run on every
        line read: plain statements, no intermediate values."""
        if d.get("isSidechain"):
            return
        typ = d.get("type")
        if typ in _CONVERSATION:
            for key, name in _NAMED:
                value = d.get(key)
                if isinstance(value, str) and value:
                    self.named[name] = value
            if typ == "attachment" and d.get("renderedRole") == "system":
                self.system_rendered = True
        if typ in ("user", "permission-mode") and isinstance(d.get("permissionMode"), str):
            self.modes.append((i, d["permissionMode"]))
        elif typ == "mode" and isinstance(d.get("mode"), str):
            self.modes.append((i, d["mode"]))
        elif typ == "queue-operation":
            self.queue_ops.append({"operation": d.get("operation"), "content": d.get("content"),
                                   "timestamp": d.get("timestamp")})

    def copy(self) -> SessionFacts:
        new = SessionFacts()
        new.named, new.system_rendered = dict(self.named), self.system_rendered
        new.modes, new.queue_ops = list(self.modes), list(self.queue_ops)
        return new

    def as_dict(self) -> dict[str, Any]:
        """The shape the attachment state reads: ``cwd``, ``slug``, ``session_id`` (when known),
        ``system_rendered`` (when true), ``modes`` and ``queue_ops``."""
        out: dict[str, Any] = {"modes": list(self.modes), "queue_ops": list(self.queue_ops), **self.named}
        if self.system_rendered:
            out["system_rendered"] = True
        return out

    # -- kept in a checkpoint -------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {"named": self.named, "system_rendered": self.system_rendered,
                "modes": [[i, m] for i, m in self.modes], "queue_ops": self.queue_ops}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> SessionFacts:
        new = cls()
        new.named = {str(k): str(v) for k, v in doc["named"].items()}
        new.system_rendered = bool(doc["system_rendered"])
        new.modes = [(int(i), str(m)) for i, m in doc["modes"]]
        new.queue_ops = [dict(op) for op in doc["queue_ops"]]
        return new


def session_facts(t: Transcript) -> dict[str, Any]:
    """The facts of transcript ``t`` as it is now, as :meth:`SessionFacts.as_dict`."""
    return current_facts(t).as_dict()


def current_facts(t: Transcript) -> SessionFacts:
    """The facts of transcript ``t`` as it is now (edits and appended entries included); do not change
    them. Computed once per transcript version, and carried over from the version an edit was made from
    when the edit changed none of them (the usual case: stages rewrite content, not these fields)."""
    facts = t.memo.get("facts")
    if facts is None:
        earlier = t.earlier[0].get("facts") if t.earlier is not None and t.replaced_blocks_only() else None
        # content blocks are not facts: an edit of them alone keeps the earlier version's
        facts = t.memo["facts"] = earlier or t.carried("facts", line_facts) or _computed(t)
    return facts


def _facts_of(d: dict) -> tuple:
    return line_facts(0, d)  # (what line_facts finds does not depend on the index)


def _input_facts(t: Transcript, i: int) -> tuple:
    """The facts of input line ``i`` (kept with the line index: every version asks for its edited lines)."""
    kept = t.lines.memo.setdefault("input-line-facts", {})
    found = kept.get(i)
    if found is None:
        found = kept[i] = line_facts(i, t.input_entry(i))
    return found


def _computed(t: Transcript) -> SessionFacts:
    """From the facts the indexing pass collected when no edit changed any of them; else every live
    line is read again."""
    base = t.lines.facts
    n = t.n_lines
    if not isinstance(base, SessionFacts) or any(i < n for i in t.removed) or any(
            t.extract(i, _facts_of) != _input_facts(t, i) for i in t.overrides):
        facts = SessionFacts()
        for i in t.live_indexes():
            facts.add(i, t.peek(i))  # keep none of them parsed (memory follows the view)
        return facts
    facts = base.copy()
    for i in range(n, t.n_entries):
        if i not in t.removed:
            facts.add(i, t.entry(i))
    return facts
