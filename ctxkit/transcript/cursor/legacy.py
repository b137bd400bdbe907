"""Cursor's older agent transcripts, read-only: the plain text (``agent-transcripts/<uuid>.txt``) and
the JSON array (``agent-transcripts/<uuid>.json``) it wrote before its JSONL transcripts — the layouts
of the files found committed publicly (docs/formats.md says how many; Cursor documents none).

**Plain text**: a ``user:`` or ``assistant:`` line opens each turn, after a blank line; the prompt is
wrapped in ``<user_query>`` (attachments in ``<attached_files>`` before it); an assistant turn holds
its reasoning in ``<think>`` (later files: ``[Thinking] `` paragraphs), its text, its tool calls as
``[Tool call] <name>`` followed by indented ``key: value`` lines (a value runs on over the lines after
it, unescaped), and a ``[Tool result] <name>`` line for each call, with no result in it. A line
``user:`` or ``assistant:`` inside an open ``<user_query>``, ``<attached_files>`` or ``<think>`` is
text, not a turn.

**JSON array** (indented by two): ``{"role": "user" | "assistant", "text": ...}``, an assistant turn's
calls as ``"toolCalls": [{"toolName", "args"}]``, and ``{"role": "tool", "toolResult": {"toolName"}}``
for each call, again with no result in it.

Both are read into the lines the JSONL reader reads (one ``{role, message: {content}}`` a turn), so the
view is the JSONL transcript's: texts as they are, tool calls as text (no id to pair a result with, no
result to send; a plain-text call is its own text already), results left out, ``<think>`` left out as
every format leaves reasoning out (a ``[Thinking]`` paragraph stays: nothing marks where it ends and the
answer begins). Nothing says Cursor reads either back, and neither has room for a record: they are
read, never written (a compaction is refused; ``view --to anthropic`` writes the view).
"""
from __future__ import annotations

import json
import re

from ...side_files import parse_json

READ_ONLY = ("an older Cursor transcript (plain text or JSON) is read-only for ctxkit (Cursor is not known to "
             "read one back, and it has no room for a compaction): stats, view, check and doctor read it; write "
             "the view with `ctxkit view --to anthropic`")
_TEXT_OPENING = re.compile(rb"\A(?:\xef\xbb\xbf)?user:\r?\n<[a-z_]+>")
#: the array, or the copy holding one element a line the reader takes a JSON document into
_JSON_OPENING = re.compile(rb'\A(?:\xef\xbb\xbf)?\s*\[?\s*\{\s*"role"\s*:\s*"user"\s*,\s*"text"\s*:')
_JSON_KEYS = frozenset({"role", "text", "toolCalls", "toolResult"})
_HEADERS = {"user:": "user", "assistant:": "assistant"}
_THINK = re.compile(r"<think>\n.*?</think>\n?", re.DOTALL)
#: tags whose content is text, whatever lines it holds
_OPEN_TAGS = (("<user_query>", "</user_query>"), ("<attached_files>", "</attached_files>"), ("<think>", "</think>"))


def looks_like_text(head: bytes) -> bool:
    """Whether the file opens as an older Cursor transcript: ``user:`` then a tag (``<user_query>``), or
    a JSON array whose first element is ``{"role": "user", "text": ...}``."""
    return _TEXT_OPENING.match(head) is not None or _JSON_OPENING.match(head) is not None


def _turn(role: str, blocks: list[dict], line: int) -> dict:
    return {"role": role, "message": {"content": blocks}, "line": line}


def _text(role: str, text: str) -> str:
    return _THINK.sub("", text).strip("\n") if role == "assistant" else text


def split_text(text: str) -> list[dict]:
    """The turns of a plain-text transcript, in order, each with the line it starts at."""
    turns: list[dict] = []
    role, start, buffer, closing = None, 0, [], None
    previous_blank = True

    def flush() -> None:
        if role is None:
            return
        body = _text(role, "".join(buffer).rstrip("\n"))
        if body.strip():
            turns.append(_turn(role, [{"type": "text", "text": body}], start))

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


def split_json(elements: list) -> list[dict] | None:
    """The turns of a JSON-array transcript (None: not one), each with its element's number as its line;
    tool results, which hold nothing but the tool's name, left out."""
    turns: list[dict] = []
    for k, e in enumerate(elements, 1):
        if not isinstance(e, dict) or not set(e) <= _JSON_KEYS or e.get("role") not in ("user", "assistant", "tool"):
            return None
        if e["role"] == "tool":
            continue
        text = e.get("text")
        blocks = [{"type": "text", "text": _text(e["role"], text)}] if isinstance(text, str) and text.strip() else []
        for call in e.get("toolCalls") or []:
            if isinstance(call, dict):
                blocks.append({"type": "tool_use", "name": call.get("toolName", ""), "input": call.get("args")})
        if blocks and any(b["type"] != "text" or b["text"].strip() for b in blocks):
            turns.append(_turn(e["role"], blocks, k))
    return turns


def as_lines(data: bytes) -> bytes | None:
    """The transcript's turns, one JSON object a line (what the line reader reads); None when ``data``,
    opening as a JSON array, is not an older Cursor transcript after all (the line reader says what it is)."""
    text = data.decode("utf-8", errors="replace")
    if _JSON_OPENING.match(data):
        try:
            elements = parse_json(text) if text.lstrip("\ufeff \t\r\n").startswith("[") else \
                [parse_json(line) for line in text.split("\n") if line.strip()]
            turns = split_json(elements) if isinstance(elements, list) else None
        except ValueError:
            return None
        if turns is None:
            return None
    else:
        turns = split_text(text)
    return b"".join(json.dumps(t, ensure_ascii=False).encode() + b"\n" for t in turns)
