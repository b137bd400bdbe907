"""Plain message-list formats: Anthropic Messages API messages and OpenAI chat messages, one per line.

These formats have no place for bookkeeping, so what a stage removes from the
view is removed from the output too (the removed lines are archived in the
store first, and the stage's report says where).
"""
from __future__ import annotations

import hashlib
from typing import Any

import orjson

from ..jsonl import dumps
from ..lineindex import LineIndex
from ..model import Transcript
from ..view import ASSISTANT, META, PROMPT, SUMMARY, SYSTEM, TOOL_RESULTS, BlockRef, View, ViewMessage, normalize

ANTHROPIC = "anthropic"
OPENAI = "openai"
_OPENAI_ONLY_ROLES = ("tool", "developer", "function")


def index_line(lines: LineIndex, i: int, d: dict) -> None:
    lines.set_type(i, d.get("role"))  # a string or absent: the shape was checked


def looks_like_openai(d: dict) -> bool:
    if d.get("role") in _OPENAI_ONLY_ROLES or "tool_calls" in d or "function_call" in d or "tool_call_id" in d:
        return True
    content = d.get("content")
    return isinstance(content, list) and any(isinstance(b, dict) and b.get("type") in ("image_url", "input_text",
                                                                                        "input_image") for b in content)


def looks_like_anthropic(d: dict) -> bool:
    return d.get("role") in ("user", "assistant", "system") and "content" in d


def message_uuid(t: Transcript, i: int) -> str:
    """A stable id for a plain message (they carry none): a hash of its line (for a line a stage wrote,
    of the bytes the writer will write, so the id is the same once the output is read back)."""
    if i < t.n_lines and i not in t.overrides:
        raw = t.raw_line(i)[0]
    else:
        raw = dumps(t.entry(i))
    return hashlib.sha256(raw).hexdigest()[:32]


def _kind(role: str, blocks: list[dict]) -> str:
    if role == "system":
        return SYSTEM
    if role == "assistant":
        return ASSISTANT
    if any(b.get("type") == "tool_result" for b in blocks):
        return TOOL_RESULTS
    texts = [b.get("text", "") for b in blocks if b.get("type") == "text"]
    if texts and texts[0].startswith("This session is being continued from a previous conversation"):
        return SUMMARY
    if texts and all(x.lstrip().startswith("<system-reminder>") for x in texts):
        return META
    return PROMPT


# -- Anthropic -------------------------------------------------------------------------------------
def project_anthropic(t: Transcript) -> View:
    msgs = []
    for i in t.live_indexes():
        d = t.entry(i)  # its shape was checked when the line was read (shapes.ANTHROPIC)
        content = d["content"]
        was_string = isinstance(content, str)
        blocks = [{"type": "text", "text": content}] if was_string else list(content)
        role = d["role"]
        refs = [BlockRef(i, -1 if was_string else k) for k in range(len(blocks))]
        msgs.append(ViewMessage(role, blocks, _kind(role, blocks), refs, [i], message_uuid(t, i), None, was_string))
    notes: list[str] = []
    orphans: list[tuple[int, str]] = []
    return View(normalize(msgs, notes, orphans), notes, orphans)


# -- OpenAI ----------------------------------------------------------------------------------------
def _openai_content_blocks(content: Any) -> list[dict]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    out = []
    for b in content:
        if not isinstance(b, dict):
            continue
        t = b.get("type")
        if t in ("text", "input_text", "output_text"):
            out.append({"type": "text", "text": b.get("text", "")})
        elif t in ("image_url", "input_image"):
            url = b.get("image_url")
            url = url.get("url") if isinstance(url, dict) else url
            out.append(_image_block(url or ""))
        else:
            out.append({"type": "text", "text": orjson.dumps(b).decode()})
    return out


def _image_block(url: str) -> dict:
    if url.startswith("data:") and ";base64," in url:
        media, data = url[5:].split(";base64,", 1)
        return {"type": "image", "source": {"type": "base64", "media_type": media, "data": data}}
    return {"type": "image", "source": {"type": "url", "url": url}}


def project_openai(t: Transcript) -> View:
    msgs = []
    for i in t.live_indexes():
        d = t.entry(i)
        role = d.get("role", "user")  # the shape was checked when the line was read (shapes.OPENAI)
        uid = message_uuid(t, i)
        if role in ("system", "developer"):
            blocks = _openai_content_blocks(d.get("content"))
            msgs.append(ViewMessage("system", blocks, SYSTEM, [BlockRef(i, k) for k in range(len(blocks))], [i], uid))
        elif role in ("tool", "function"):
            msgs.append(ViewMessage("user", [_tool_result(d)], TOOL_RESULTS, [BlockRef(i, 0)], [i], uid))
        elif role == "assistant":
            blocks = _openai_content_blocks(d.get("content"))
            refs: list[BlockRef | None] = [BlockRef(i, k) for k in range(len(blocks))]
            uses = _tool_uses(d)
            blocks += uses
            refs += [None] * len(uses)
            msgs.append(ViewMessage("assistant", blocks, ASSISTANT, refs, [i], uid))
        else:
            blocks = _openai_content_blocks(d.get("content"))
            msgs.append(ViewMessage("user", blocks, _kind("user", blocks), [BlockRef(i, k) for k in range(len(blocks))],
                                    [i], uid, None, isinstance(d.get("content"), str)))
    notes: list[str] = []
    orphans: list[tuple[int, str]] = []
    return View(normalize(msgs, notes, orphans), notes, orphans)


def _tool_result(d: dict) -> dict:
    return {"type": "tool_result", "tool_use_id": d.get("tool_call_id") or d.get("name", ""),
            "content": d.get("content") if isinstance(d.get("content"), str) else _openai_content_blocks(d.get("content"))}


def _tool_uses(d: dict) -> list[dict]:
    out = []
    for call in d.get("tool_calls") or []:
        fn = call.get("function") or {}
        args = fn.get("arguments") or "{}"
        try:
            parsed = args if isinstance(args, dict) else orjson.loads(args)
        except (orjson.JSONDecodeError, TypeError):
            parsed = {"arguments": args}
        out.append({"type": "tool_use", "id": call["id"], "name": fn.get("name", ""),
                    "input": parsed if isinstance(parsed, dict) else {"arguments": parsed}})
    return out


def from_openai(message: dict) -> dict | None:
    """One OpenAI chat message as an Anthropic-shaped one, as :func:`project_openai` reads it (a ``tool``
    message: a user message of its one ``tool_result``); None for a ``system`` or ``developer`` one, which
    the Messages API carries outside its messages."""
    role = message.get("role", "user")
    if role in ("system", "developer"):
        return None
    if role in ("tool", "function"):
        return {"role": "user", "content": [_tool_result(message)]}
    blocks = _openai_content_blocks(message.get("content"))
    if role == "assistant":
        return {"role": "assistant", "content": blocks + _tool_uses(message)}
    return {"role": "user", "content": blocks}


def to_openai(messages: list[dict]) -> list[dict]:
    """Anthropic-shaped API messages -> OpenAI chat messages (tool results become ``tool`` messages)."""
    out: list[dict] = []
    for m in messages:
        content = m["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if m["role"] == "system":
            out.append({"role": "system", "content": _plain_text(blocks)})
        elif m["role"] == "assistant":
            msg: dict[str, Any] = {"role": "assistant", "content": _plain_text([b for b in blocks if b.get("type") == "text"]) or None}
            calls = [{"id": b["id"], "type": "function",
                      "function": {"name": b.get("name", ""), "arguments": orjson.dumps(b.get("input") or {}).decode()}}
                     for b in blocks if b.get("type") == "tool_use"]
            if calls:
                msg["tool_calls"] = calls
            out.append(msg)
        else:
            for b in blocks:
                if b.get("type") == "tool_result":
                    c = b.get("content")
                    out.append({"role": "tool", "tool_call_id": b.get("tool_use_id"),
                                "content": c if isinstance(c, str) else _plain_text(c or [])})
            rest = [b for b in blocks if b.get("type") != "tool_result"]
            if rest:
                parts = []
                for b in rest:
                    if b.get("type") == "image":
                        src = b.get("source") or {}
                        url = src.get("url") or f"data:{src.get('media_type')};base64,{src.get('data', '')}"
                        parts.append({"type": "image_url", "image_url": {"url": url}})
                    else:
                        parts.append({"type": "text", "text": b.get("text", "") if b.get("type") == "text" else orjson.dumps(b).decode()})
                if all(p["type"] == "text" for p in parts):
                    out.append({"role": "user", "content": "\n\n".join(p["text"] for p in parts)})
                else:
                    out.append({"role": "user", "content": parts})
    return out


def _plain_text(blocks: list[dict]) -> str:
    return "\n\n".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")
