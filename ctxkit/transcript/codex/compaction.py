"""A compaction written the way Codex records its own: one ``compacted`` line appended.

Codex's ``CompactedItem`` (``codex-rs/protocol/src/protocol.rs``) holds the summary (``message``) and
the ``replacement_history``: on resume (``codex-rs/core/src/session/rollout_reconstruction.rs``) the
newest such line is the history from there on, and the lines before it are never sent again. So
ctxkit appends one and changes no earlier byte: the rollout keeps everything it held, and
``ctxkit expand`` takes the line out again to give back the input byte for byte.

In a paginated rollout (Codex 0.145 on: every line carries an ``ordinal``), the line appended
carries the next one, as Codex's resume requires of the last line.

The replacement history is what Codex's own compaction builds (``compact::build_compacted_history``):
the initial context (developer messages, the contextual user messages Codex writes before the first
prompt), then the summary as a user message, then the kept tail's items as recorded.
"""
from __future__ import annotations

from typing import Any

from ..model import Transcript
from ..view import View
from .items import CTXKIT_SNIP_OPENING, CTXKIT_SUMMARY_OPENING, response_item
from .projection import CONTEXTUAL_PREFIXES, history, history_position, is_user_turn


def _is_initial_context(item: dict) -> bool:
    if item.get("type") != "message":
        return False
    if item.get("role") in ("developer", "system"):
        return True
    return item.get("role") == "user" and not is_user_turn(item) and bool(item.get("content")) \
        and any(str(c.get("text", "")).lstrip().startswith(CONTEXTUAL_PREFIXES)
                for c in item["content"] if isinstance(c, dict))


def write_compacted(t: Transcript, view: View, keep_from: int, summary: str, timestamp: str) -> Transcript:
    """``t`` with a ``compacted`` line appended: the summary of ``view.messages[:keep_from]`` and the
    kept tail (``view.messages[keep_from:]``) as its replacement history."""
    items, _ = history(t)
    start = len(items)
    if keep_from < len(view.messages):
        found = history_position(view.messages[keep_from])
        if found is None:
            raise ValueError(f"view message {keep_from} does not open at a recorded item")
        start = found
    first_prompt = next((k for k, (_, _, x) in enumerate(items) if is_user_turn(x)), len(items))
    lead = [x for _, _, x in items[:min(first_prompt, start)] if _is_initial_context(x)]
    summary_item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": summary}]}
    replacement: list[dict[str, Any]] = [*lead, summary_item, *(x for _, _, x in items[start:])]
    return t.with_edits(append=[compacted_line(t, summary, replacement, timestamp)])


def compacted_line(t: Transcript, message: str, replacement: list[dict], timestamp: str) -> dict:
    """A ``compacted`` line whose ``replacement_history`` is the history from there on (the next
    ``ordinal`` in a paginated rollout)."""
    line: dict[str, Any] = {"timestamp": timestamp}
    last = _last_ordinal(t)
    if last is not None:  # a paginated rollout (Codex 0.145 on): its resume continues from the last line's
        line["ordinal"] = last + 1
    line.update(type="compacted", payload={"message": message, "replacement_history": replacement})
    return line


def _last_ordinal(t: Transcript) -> int | None:
    """The ``ordinal`` of the rollout's last line, when it numbers its lines (``history_mode:
    "paginated"``, Codex 0.145 on: its resume refuses a rollout whose last line has none)."""
    for i in reversed(list(t.live_indexes())):
        ordinal = t.entry(i).get("ordinal")
        if isinstance(ordinal, int) and not isinstance(ordinal, bool):
            return ordinal
        return None
    return None


def is_ctxkit_compaction(d: dict) -> bool:
    """Whether a line is a ``compacted`` line ctxkit wrote (its summary opens the way ctxkit's do, or it
    is a snip's)."""
    if d.get("type") != "compacted" or not isinstance(d.get("payload"), dict):
        return False
    message = d["payload"].get("message")
    return isinstance(message, str) and message.startswith((CTXKIT_SUMMARY_OPENING, CTXKIT_SNIP_OPENING))


def uncompact(t: Transcript) -> Transcript:
    """``t`` without the ``compacted`` lines ctxkit wrote (for ``ctxkit expand``): the rollout as it was
    before, every other line as it is."""
    drop = [i for i in t.live_indexes() if response_item(t.entry(i)) is None and is_ctxkit_compaction(t.entry(i))]
    return t.with_edits(remove=drop) if drop else t
