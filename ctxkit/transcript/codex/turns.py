"""A snip in a Codex rollout: a ``compacted`` line whose ``replacement_history`` is the history without
the snipped turns (and no summary: its ``message`` is ctxkit's snip note, which Codex does not send).

Codex's resume takes the newest ``compacted`` line's history as the conversation from there on
(``rollout_reconstruction.rs``), so the turns are gone from what it sends next while every line the
rollout held stays as it was; ``ctxkit expand`` takes the line out again (``compaction.uncompact``).
A turn is the items from its prompt up to the next prompt: its calls, their outputs, the answers.
"""
from __future__ import annotations

from ..model import Transcript
from ..view import View
from .compaction import compacted_line
from .items import CTXKIT_SNIP_OPENING
from .projection import history, history_position


def drop_turns(t: Transcript, view: View, spans: list[tuple[int, int]], timestamp: str) -> Transcript:
    """``t`` without the turns ``view.messages[s:e]`` of ``spans`` in the history Codex resumes."""
    items, _ = history(t)
    gone: set[int] = set()
    for s, e in spans:
        first = history_position(view.messages[s])
        end = history_position(view.messages[e]) if e < len(view.messages) else len(items)
        if first is None or end is None:
            raise ValueError(f"view messages {s}..{e} do not open at recorded items")
        gone.update(range(first, end))
    replacement = [x for k, (_, _, x) in enumerate(items) if k not in gone]
    note = f"{CTXKIT_SNIP_OPENING} {len(gone)} item(s) of {len(spans)} turn(s) left out of the history"
    return t.with_edits(append=[compacted_line(t, note, replacement, timestamp)])
