"""A strict check of a Messages API request body, written apart from ctxkit (it imports nothing of it, and
reads none of ``ctxkit/api_rules.json``): the rules and limits as the API documents them, and the 400
texts it answers with. :class:`mock_messages_api.MockMessagesAPI` answers with it when ``strict`` is set,
so a test can send the next request of a session and see it accepted or refused as the API would.

Mid-conversation ``system`` messages are accepted; the other rules hold across them (numbers are of the
user and assistant messages). What it cannot check: whether a thinking block's signature verifies (that needs the API's key); it
refuses an empty one, and one cut short (base64 under 100 characters: real ones are hundreds long).
"""
from __future__ import annotations

import base64
import re
import struct
from typing import Any

IMAGE_BASE64_MAX = 5 * 1024 * 1024  # vision docs: 5 MB per image (the base64 string)
IMAGE_SIDE_MAX = 8000  # 8000 x 8000 px
IMAGE_SIDE_MAX_MANY = 2000  # 2000 x 2000 px when a request has more than 20 images
MANY_IMAGES = 20
IMAGES_MAX = 100  # per request, for models with a 200k-token window
PDF_PAGES_MAX = 100
SIGNATURE_MIN = 100


def _blocks(content: Any) -> list[dict]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _png_gif_jpeg_size(raw: bytes) -> tuple[int, int] | None:
    if raw.startswith(b"\x89PNG") and len(raw) >= 24:
        return struct.unpack(">II", raw[16:24])
    if raw[:3] == b"GIF" and len(raw) >= 10:
        return struct.unpack("<HH", raw[6:10])
    if raw[:2] == b"\xff\xd8":
        i = 2
        while i + 9 <= len(raw) and raw[i] == 0xFF:
            marker, length = raw[i + 1], int.from_bytes(raw[i + 2:i + 4], "big")
            if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
                h, w = struct.unpack(">HH", raw[i + 5:i + 9])
                return w, h
            i += 2 + length
    return None


def problem(body: Any) -> str | None:
    """The API's 400 text for the first rule ``body`` breaks, or None when it would be accepted."""
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list) or not body["messages"]:
        return "messages: at least one message is required"
    # mid-conversation system messages (a documented API feature) sit between turns: the rules hold across them
    for n, m in enumerate(body["messages"]):
        if m.get("role") not in ("user", "assistant", "system"):
            return f"messages.{n}.role: Input should be 'user', 'assistant' or 'system'"
    msgs = [m for m in body["messages"] if m.get("role") != "system"]
    images: list[tuple[int, int, dict]] = []
    seen_ids: set[str] = set()
    for n, m in enumerate(msgs):
        role = m.get("role")
        blocks = _blocks(m.get("content"))
        prev = msgs[n - 1] if n else None
        prev_ids = [b.get("id") for b in _blocks(prev.get("content"))
                    if b.get("type") == "tool_use"] if prev and prev.get("role") == "assistant" else []
        other = False
        for k, b in enumerate(blocks):
            typ = b.get("type")
            if typ == "text":
                text = b.get("text")
                if text == "":
                    return "messages: text content blocks must be non-empty"
                if not str(text).strip():
                    return "messages: text content blocks must contain non-whitespace text"
            if typ in ("thinking", "redacted_thinking"):
                if role != "assistant":
                    return f"messages.{n}.content.{k}: `{typ}` blocks are only allowed in assistant messages"
                sig = b.get("signature") if typ == "thinking" else b.get("data")
                if not sig or (typ == "thinking" and len(sig) < SIGNATURE_MIN and re.fullmatch(r"[A-Za-z0-9+/=]+", sig)):
                    return f"messages.{n}.content.{k}: Invalid `signature` in `thinking` block"
            if typ == "tool_use":
                if role != "assistant":
                    return f"messages.{n}.content.{k}: tool_use blocks are only allowed in assistant messages"
                if b.get("id") in seen_ids:
                    return f"messages.{n}.content.{k}: `tool_use` ids must be unique"
                seen_ids.add(b.get("id"))
            if typ == "tool_result":
                if role != "user" or b.get("tool_use_id") not in prev_ids:
                    return (f"messages.{n}.content.{k}: unexpected `tool_use_id` found in `tool_result` blocks: "
                            f"{b.get('tool_use_id')}. Each `tool_result` block must have a corresponding `tool_use` "
                            "block in the previous message.")
                if other:
                    return (f"messages.{n - 1}: `tool_use` ids were found without `tool_result` blocks immediately "
                            f"after: {b.get('tool_use_id')}. Each `tool_use` block must have a corresponding "
                            "`tool_result` block in the next message.")
                for inner in _blocks(b.get("content")):
                    if inner.get("type") == "text" and not str(inner.get("text", "")).strip() and inner.get("text") != "":
                        return "messages: text content blocks must contain non-whitespace text"
                    if inner.get("type") == "image":
                        images.append((n, k, inner))
                    elif inner.get("type") == "document" and (bad := _document(n, k, inner)):
                        return bad
            else:
                other = True
            if typ == "image":
                images.append((n, k, b))
            if typ == "document" and (bad := _document(n, k, b)):
                return bad
        if role == "assistant":
            ids = [b.get("id") for b in blocks if b.get("type") == "tool_use"]
            if ids and n + 1 < len(msgs):
                nxt = msgs[n + 1]
                lead = []
                for b in _blocks(nxt.get("content")):
                    if b.get("type") != "tool_result":
                        break
                    lead.append(b.get("tool_use_id"))
                missing = [x for x in ids if x not in lead]
                if nxt.get("role") != "user" or missing:
                    return (f"messages.{n}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                            f"{', '.join(missing or ids)}. Each `tool_use` block must have a corresponding "
                            "`tool_result` block in the next message.")
    last = msgs[-1]
    if last.get("role") == "assistant":
        blocks = _blocks(last.get("content"))
        if blocks and blocks[-1].get("type") == "text" and blocks[-1]["text"] != blocks[-1]["text"].rstrip():
            return "messages: final assistant content cannot end with trailing whitespace"
    if len(images) > IMAGES_MAX:
        return f"messages: too many images in the request: {len(images)} > {IMAGES_MAX}"
    for n, k, img in images:
        data = (img.get("source") or {}).get("data") or ""
        if len(data) > IMAGE_BASE64_MAX:
            return f"messages.{n}.content.{k}.image.source.base64: image exceeds 5 MB maximum: {len(data)} bytes > {IMAGE_BASE64_MAX} bytes"
        size = _png_gif_jpeg_size(base64.b64decode(data)) if data else None
        if size and max(size) > IMAGE_SIDE_MAX:
            return (f"messages.{n}.content.{k}.image.source.base64.data: At least one of the image dimensions exceed "
                    f"max allowed size: {IMAGE_SIDE_MAX} pixels")
        if size and len(images) > MANY_IMAGES and max(size) > IMAGE_SIDE_MAX_MANY:
            return (f"messages.{n}.content.{k}.image.source.base64.data: At least one of the image dimensions exceed "
                    f"max allowed size for many-image requests: {IMAGE_SIDE_MAX_MANY} pixels")
    return None


def _document(n: int, k: int, block: dict) -> str | None:
    source = block.get("source") or {}
    if source.get("media_type") == "application/pdf" and source.get("type") == "base64":
        raw = base64.b64decode(source.get("data") or "")
        pages = len(re.findall(rb"/Type\s*/Page[^s]", raw))
        if pages > PDF_PAGES_MAX:
            return "A maximum of 100 PDF pages may be provided."
    return None
