"""Cursor's plain-text agent transcripts (``agent-transcripts/<uuid>.txt``), read-only.

Before its JSONL transcripts, Cursor wrote (and on some installs still writes) each agent chat as
plain text — the layout of every such file found committed publicly (docs/formats.md says how many):
a ``user:`` or ``assistant:`` line opens each turn, after a blank line; the prompt is wrapped in
``<user_query>``; an assistant turn holds its reasoning in ``<think>``, its text, its tool calls as
``[Tool call] <name>`` followed by indented ``key: value`` lines (a value runs on over the lines
after it, unescaped), and a ``[Tool result] <name>`` line for each call, with no result in it.
Later files hold the reasoning as ``[Thinking] `` paragraphs instead, and attachments in
``<attached_files>`` before the prompt.

Read here into the lines the JSONL reader reads (one ``{role, message: {content}}`` a turn), so the
view is the JSONL transcript's: the texts as they are, tool calls as text (there is no id to pair a
result with, and no result), ``<think>`` left out as every format leaves reasoning out (a ``[Thinking]``
paragraph stays: nothing marks where it ends and the answer begins). A line ``user:`` or
``assistant:`` inside an open ``<user_query>``, ``<attached_files>`` or ``<think>`` is text, not a turn.
Nothing says Cursor reads such a file back, and it has no room for a record: it is read, never
written (a compaction is refused; ``view --to anthropic`` writes the view).
"""
from __future__ import annotations

import json
import re

READ_ONLY = ("a Cursor plain-text transcript is read-only for ctxkit (Cursor is not known to read one back, and "
             "it has no room for a compaction): stats, view, check and doctor read it; write the view with "
             "`ctxkit view --to anthropic`")
_OPENING = re.compile(rb"\A(?:\xef\xbb\xbf)?user:\r?\n<[a-z_]+>")
_HEADERS = {"user:": "user", "assistant:": "assistant"}
_THINK = re.compile(r"<think>\n.*?</think>\n?", re.DOTALL)
#: tags whose content is text, whatever lines it holds
_OPEN_TAGS = (("<user_query>", "</user_query>"), ("<attached_files>", "</attached_files>"), ("<think>", "</think>"))


def looks_like_text(head: bytes) -> bool:
    """Whether the file opens as a Cursor plain-text transcript: ``user:``, then a tag (``<user_query>``)."""
    return _OPENING.match(head) is not None


def split(text: str) -> list[dict]:
    """The turns of the transcript, in order, each as a JSONL transcript line with the line it starts at."""
    turns: list[dict] = []
    role, start, buffer, closing = None, 0, [], None
    previous_blank = True

    def flush() -> None:
        if role is None:
            return
        body = "".join(buffer).rstrip("\n")
        if role == "assistant":
            body = _THINK.sub("", body).strip("\n")
        if body.strip():
            turns.append({"role": role, "message": {"content": [{"type": "text", "text": body}]}, "line": start})

    for n, line in enumerate(text.split("\n"), 1):
        bare = line.rstrip("\r")
        if closing is None and previous_blank and bare in _HEADERS:
            flush()
            role, start, buffer = _HEADERS[bare], n, []
            previous_blank = False
            continue
        buffer.append(line + "\n")
        if closing is not None:
            if closing in line:
                closing = None
        else:
            for opening, end in _OPEN_TAGS:
                if bare.startswith(opening) and end not in line[line.index(opening) + len(opening):]:
                    closing = end
                    break
        previous_blank = not bare.strip()
    flush()
    return turns


def as_lines(data: bytes) -> bytes:
    """The transcript's turns, one JSON object a line (what the line reader reads)."""
    text = data.decode("utf-8", errors="replace")
    return b"".join(json.dumps(t, ensure_ascii=False).encode() + b"\n" for t in split(text))
