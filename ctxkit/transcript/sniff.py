"""Whether a file found in a folder is a session ctxkit reads: what a batch takes from a folder.

A folder of sessions holds other files too (an agent's settings, its UI log, a project's
``package.json``). A ``*.jsonl`` file is taken as it is (the reader names a line it cannot read); any
other file is taken only when its content is a format's, as the reader would detect it, never for its
name alone: a ``.json`` document holding a message array whose first elements a registered format
recognises (a Gemini CLI session or checkpoint, a Cline or Roo Code history, an ``opencode export``),
a ``.md`` file that opens as an aider chat history does, a ``.jsonl.zst`` that is a zstd stream. A
document is looked at closely only when its first bytes name one of the keys a session document
opens with; one over :data:`LARGEST_DOCUMENT` is not read. (Which folders a batch does not walk into,
a ctxkit store among them, is the batch's business: :mod:`ctxkit.batch.inputs`.)
"""
from __future__ import annotations

import os
from collections.abc import Callable
from typing import BinaryIO

import orjson

from ..errors import TranscriptError
from .aider.history import looks_like_history
from .document import as_lines
from .formats import detect
from .jsonl import BOMS, ZSTD_MAGIC, as_utf8

LARGEST_DOCUMENT = 512 * 1024 * 1024
_HEAD = 64 * 1024
#: what the first bytes of a session document hold: an object's keys (a Gemini CLI session, a checkpoint,
#: an export), or an array's messages
_OBJECT_KEYS = (b'"messages"', b'"history"', b'"sessionId"')
_ARRAY_KEYS = (b'"role"',)
def is_session_file(path: str) -> bool:
    """Whether the file at ``path`` is a transcript ctxkit reads (see the module's docstring)."""
    return is_session(os.path.basename(path), lambda: open(path, "rb"))


def is_session(name: str, opener: Callable[[], BinaryIO]) -> bool:
    """Whether a file called ``name`` is a transcript ctxkit reads; ``opener`` opens it (a local file,
    an object of a bucket), and is called only for a name a session may have."""
    if name.endswith(".jsonl"):
        return True
    if not name.endswith((".json", ".md", ".zst")):
        return False
    try:
        with opener() as f:
            head = f.read(_HEAD)
            if name.endswith(".jsonl.zst"):
                return head[:4] == ZSTD_MAGIC
            if name.endswith(".zst"):
                return False
            head, whole = _without_bom(name, head, f)
            if name.endswith(".md"):
                return looks_like_history(head)
            start = head.lstrip()[:1]
            if not (start == b"{" and any(k in head for k in _OBJECT_KEYS)
                    or start == b"[" and any(k in head for k in _ARRAY_KEYS)):
                return False
            rest = f.read(LARGEST_DOCUMENT + 1 - len(head)) if len(head) == _HEAD and whole is None else b""
            if len(head) + len(rest) > LARGEST_DOCUMENT:
                return False
            data = whole if whole is not None else head + rest
    except OSError:
        return False
    found = as_lines(data)
    if found is None:
        return False
    entries = []
    for line in found[1].split(b"\n")[:50]:
        try:
            d = orjson.loads(line) if line.strip() else None
        except orjson.JSONDecodeError:
            return False
        if isinstance(d, dict):
            entries.append(d)
    return bool(entries) and detect(entries) is not None


def _without_bom(name: str, head: bytes, f: BinaryIO) -> tuple[bytes, bytes | None]:
    """``head`` as it is (and None), or, when the file opens with a byte order mark, the head of the whole
    file decoded to UTF-8 and the whole of it (at most :data:`LARGEST_DOCUMENT` read), as the reader
    takes such a file (:func:`ctxkit.transcript.jsonl.open_source`)."""
    bom, how = next(((b, h) for h, b in BOMS.items() if head.startswith(b)), (None, None))
    if bom is None:
        return head, None
    raw = head + f.read(LARGEST_DOCUMENT + 1 - len(head))
    if len(raw) > LARGEST_DOCUMENT:
        return b"", b""
    try:
        whole = as_utf8(name, raw, how)
    except TranscriptError:
        return b"", b""
    return whole[:_HEAD], whole
