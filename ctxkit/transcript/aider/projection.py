"""The view of an aider chat history: its user and assistant messages (tool messages left out, as
``--restore-chat-history`` leaves them out), in order; consecutive messages of one role are one."""
from __future__ import annotations

from ..lineindex import LineIndex
from ..model import Transcript
from ..view import ASSISTANT, PROMPT, BlockRef, View, ViewMessage, normalize


def looks_like(d: dict) -> bool:
    return d.get("aider") in ("user", "assistant", "tool") and isinstance(d.get("content"), str)


def index_line(lines: LineIndex, i: int, d: dict) -> None:
    lines.set_type(i, d.get("aider"))


def check(d: dict) -> None:
    return None


def project(t: Transcript) -> View:
    msgs: list[ViewMessage] = []
    tools = 0
    for i in t.live_indexes():
        d = t.entry(i)
        role = d.get("aider")
        if role == "tool":
            tools += 1
            continue
        block = {"type": "text", "text": d["content"]}
        if msgs and msgs[-1].role == role == "assistant":
            msgs[-1].content.append(block)
            msgs[-1].refs.append(BlockRef(i, -1))
            msgs[-1].entries.append(i)
            continue
        msgs.append(ViewMessage(role, [block], ASSISTANT if role == "assistant" else PROMPT, [BlockRef(i, -1)], [i],
                                f"aider-line-{d.get('line')}"))
    notes = [f"{tools} tool message(s) (aider's own output) left out, as aider leaves them out"] if tools else []
    orphans: list[tuple[int, str]] = []
    return View(normalize(msgs, notes, orphans), notes, orphans)
