"""aider's chat history (``.aider.chat.history.md``), read-only: the messages aider restores from it.

aider (Aider-AI/aider) writes the file as Markdown as the chat goes (``aider/io.py``:
``# aider chat started at <time>`` for each run, the user's input as ``#### `` lines
(``user_input``), aider's own notes and tool output as ``> `` lines (``tool_output``), the model's
replies as they are (``ai_output``)), and reads it back with ``--restore-chat-history`` through
``split_chat_history_markdown`` (``aider/utils.py``): ``# `` lines skipped, consecutive ``#### ``
lines one user message, ``> `` lines a tool message (left out), anything else the assistant's.
Read here the same way (Python's ``splitlines``, as aider's). There is nothing a compaction could
write that aider would read back as one: a history is read, never written.
"""
from __future__ import annotations

import json

NAME = "aider"
OPENING = b"# aider chat started at"
READ_ONLY = ("an aider chat history is read-only for ctxkit (aider would read a compaction back as chat text): "
             "stats, view, check and doctor read it; write the view with `ctxkit view --to anthropic`")


def looks_like_history(head: bytes) -> bool:
    return head.lstrip().startswith(OPENING)


def split(text: str) -> list[dict]:
    """The messages of the history, as ``split_chat_history_markdown`` splits them (tool messages
    included), each with the line it starts at."""
    messages: list[dict] = []
    buffers: dict[str, list[str]] = {"user": [], "assistant": [], "tool": []}
    starts: dict[str, int] = {}

    def flush(role: str) -> None:
        content = "".join(buffers[role])
        if content.strip():
            messages.append({"aider": role, "content": content, "line": starts[role]})
        buffers[role] = []

    def add(role: str, text: str, n: int) -> None:
        if not buffers[role]:
            starts[role] = n
        buffers[role].append(text)

    for n, line in enumerate(text.splitlines(keepends=True), 1):
        if line.startswith("# "):
            continue
        if line.startswith("> "):
            flush("assistant")
            flush("user")
            add("tool", line[2:], n)
            continue
        if line.startswith("#### "):
            flush("assistant")
            flush("tool")
            add("user", line[5:], n)
            continue
        flush("user")
        flush("tool")
        add("assistant", line, n)
    flush("assistant")
    flush("user")
    flush("tool")
    return messages


def as_lines(data: bytes) -> bytes:
    """The history's messages, one JSON object a line (what the line reader reads)."""
    text = data.decode("utf-8", errors="replace")
    return b"".join(json.dumps(m, ensure_ascii=False).encode() + b"\n" for m in split(text))
