"""A snip in a Gemini CLI session: a ``$rewindTo`` the first message, then every message of the
conversation but the snipped turns' (their function-response records with them), as a compaction is written (:mod:`.compaction`, whose mark ``ctxkit expand``
reads to take the lines out again). A turn is the records from its prompt up to the next prompt.
"""
from __future__ import annotations

from ..model import Transcript
from ..view import View
from .compaction import MARK
from .records import conversation


def drop_turns(t: Transcript, view: View, spans: list[tuple[int, int]], timestamp: str) -> Transcript:
    """``t`` without the turns ``view.messages[s:e]`` of ``spans`` in the conversation Gemini CLI resumes."""
    messages, _ = conversation(t)
    ids = [rec.get("id") for _, rec in messages]
    gone: set[int] = set()
    for s, e in spans:
        opening = view.messages[s].uuid
        closing = view.messages[e].uuid if e < len(view.messages) else None
        if opening not in ids or e < len(view.messages) and closing not in ids:
            raise ValueError(f"view messages {s}..{e} do not open at recorded messages")
        gone.update(range(ids.index(opening), ids.index(closing) if closing is not None else len(ids)))
    kept = [rec for k, (_, rec) in enumerate(messages) if k not in gone]
    return t.with_edits(append=[{"$rewindTo": ids[0], MARK: {"compaction": len(kept)}}, *kept])
