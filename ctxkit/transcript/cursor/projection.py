"""Cursor agent transcripts (``~/.cursor/projects/<project>/agent-transcripts/<uuid>/<uuid>.jsonl``).

Cursor is not open source: the format is as Cursor writes it (since early 2026) and as the public
readers of it take it — one JSON object a line, ``{"role": "user" | "assistant", "message":
{"content": [blocks]}}``; ``text`` blocks (a prompt wrapped in ``<user_query>``), and ``tool_use``
blocks holding a ``name`` and an ``input`` but no id, and no result anywhere in the file. Lines are
split on ``\\n`` only: a text may hold U+2028 or U+2029, which JSON allows unescaped.

**The view**: the messages in order, each text as it is; a tool call, which has no id to pair a result
with and no result to send, as a text block naming it and its input (``[Tool call] Read {...}``), so
the view stays a valid request and still shows what the agent did.
"""
from __future__ import annotations

import json

from ..lineindex import LineIndex
from ..model import Transcript
from ..plain.messages import message_uuid
from ..view import ASSISTANT, PROMPT, SUMMARY, BlockRef, View, ViewMessage, normalize

NAME = "cursor"
CTXKIT_SUMMARY_OPENING = "This session is being continued from a previous conversation"


def looks_like(d: dict) -> bool:
    message = d.get("message")
    return d.get("role") in ("user", "assistant") and isinstance(message, dict) and "content" in message \
        and not any(k in d for k in ("type", "uuid", "sessionId", "content"))


def check(d: dict) -> None:
    from ..shapes import Bad

    if d.get("role") not in ("user", "assistant"):  # the projection and the line index key on it
        exc = Bad('"user" or "assistant"', d.get("role"))
        exc.path.append("role")
        raise exc
    content = d.get("message", {}).get("content") if isinstance(d.get("message"), dict) else None
    if not isinstance(content, (str, list)):
        exc = Bad("a string or a list", content)
        exc.path += ["content", "message"]
        raise exc


def index_line(lines: LineIndex, i: int, d: dict) -> None:
    lines.set_type(i, d.get("role"))


def project(t: Transcript) -> View:
    msgs: list[ViewMessage] = []
    calls = 0
    for i in t.live_indexes():
        d = t.entry(i)
        content = d["message"]["content"]
        items = [{"type": "text", "text": content}] if isinstance(content, str) else content
        blocks, refs = [], []
        for k, b in enumerate(items):
            if not isinstance(b, dict):
                continue
            if b.get("type") == "text" and isinstance(b.get("text"), str) and b["text"]:
                blocks.append({"type": "text", "text": b["text"]})
            elif b.get("type") == "tool_use":
                calls += 1
                args = json.dumps(b.get("input"), ensure_ascii=False) if b.get("input") is not None else ""
                blocks.append({"type": "text", "text": f"[Tool call] {b.get('name', '')} {args}".rstrip()})
            else:
                continue
            refs.append(BlockRef(i, -1 if isinstance(content, str) else k))
        if not blocks:
            continue
        role = d["role"]
        kind = ASSISTANT if role == "assistant" else \
            SUMMARY if blocks[0]["text"].startswith(CTXKIT_SUMMARY_OPENING) else PROMPT
        msgs.append(ViewMessage(role, blocks, kind, refs, [i], message_uuid(t, i)))
    notes = [f"{calls} tool call(s) recorded without an id or a result (as Cursor records them): shown as text"] \
        if calls else []
    orphans: list[tuple[int, str]] = []
    return View(normalize(msgs, notes, orphans), notes, orphans)
