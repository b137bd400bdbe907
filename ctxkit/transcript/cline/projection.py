"""The view of a Cline or Roo Code task history: the messages the agent sends when it resumes the task.

The messages in order (Anthropic-shaped, read as :mod:`ctxkit.transcript.plain` reads them), without
those Roo Code's condensing or truncation hid (:func:`.records.hidden`). A ``tool_use`` the history
never answered (the task was stopped mid-call) gets the answer both agents give it when they resume
(``resumeTaskFromHistory``, ``src/core/task/index.ts`` in Cline, ``src/core/task/Task.ts`` in Roo):
"Task was interrupted before this tool call could be completed."
"""
from __future__ import annotations

from ..lineindex import LineIndex
from ..model import Transcript
from ..plain.messages import message_uuid
from ..view import ASSISTANT, PROMPT, SUMMARY, TOOL_RESULTS, BlockRef, View, ViewMessage, normalize
from .records import hidden

INTERRUPTED = "Task was interrupted before this tool call could be completed."


def index_line(lines: LineIndex, i: int, d: dict) -> None:
    lines.set_type(i, d.get("role"))


def _kind(d: dict, role: str, blocks: list[dict]) -> str:
    if role == "assistant":
        return SUMMARY if d.get("isSummary") else ASSISTANT
    if any(b.get("type") == "tool_result" for b in blocks):
        return TOOL_RESULTS
    first = next((b.get("text", "") for b in blocks if b.get("type") == "text"), "")
    if d.get("isSummary") or first.startswith("This session is being continued from a previous conversation"):
        return SUMMARY
    return PROMPT


def project(t: Transcript) -> View:
    live = [(i, t.entry(i)) for i in t.live_indexes()]
    out = hidden(live)
    msgs: list[ViewMessage] = []
    for i, d in live:
        if i in out:
            continue
        content = d["content"]
        was_string = isinstance(content, str)
        blocks = [{"type": "text", "text": content}] if was_string else list(content)
        role = d["role"]
        refs: list[BlockRef | None] = [BlockRef(i, -1 if was_string else k) for k in range(len(blocks))]
        msgs.append(ViewMessage(role, blocks, _kind(d, role, blocks), refs, [i], message_uuid(t, i), None, was_string))
    notes: list[str] = [f"{len(out)} message(s) hidden by Roo Code's condensing or truncation: left out"] if out else []
    answered_later = 0
    with_answers: list[ViewMessage] = []
    for k, m in enumerate(msgs):
        with_answers.append(m)
        uses = [b["id"] for b in m.content if m.role == "assistant" and b.get("type") == "tool_use"
                and isinstance(b.get("id"), str)]
        if not uses:
            continue
        nxt = msgs[k + 1] if k + 1 < len(msgs) else None
        got = {b.get("tool_use_id") for b in nxt.content if b.get("type") == "tool_result"} \
            if nxt is not None and nxt.role == "user" else set()
        missing = [x for x in uses if x not in got]
        if missing:
            answered_later += len(missing)
            results = [{"type": "tool_result", "tool_use_id": x, "content": INTERRUPTED, "is_error": True}
                       for x in missing]
            with_answers.append(ViewMessage("user", results, TOOL_RESULTS, [None] * len(results), list(m.entries)))
    if answered_later:
        notes.append(f"{answered_later} tool call(s) had no result: answered as Cline does when it resumes "
                     f"({INTERRUPTED!r})")
    orphans: list[tuple[int, str]] = []
    return View(normalize(with_answers, notes, orphans), notes, orphans)
