"""Transcripts kept as one JSON document, read as lines and written back as the document.

Cline and Roo Code keep a task's history as one JSON array (``api_conversation_history.json``,
written by ``JSON.stringify`` on one line); ``opencode export`` prints one object whose
``messages`` array holds the session (indented by two); Gemini CLI's older session files hold theirs in
``messages`` too, and its ``/chat save`` checkpoints their history in ``history`` (or are the bare
array). The reader works on lines, so such a file
is read from a copy holding each element of that array on a line of its own — the element's own
bytes when they hold no newline, compact JSON otherwise — and the writer puts the document back
together: the bytes before the first element, each element as it was (an unchanged line gives the
element's original bytes back, whatever whitespace they held), the separators between them, the
bytes after the last. So an unchanged document is written back byte for byte, and an edited one
changes only where an element changed (a new element is laid out as the document's others are).

The document is recognised by its content (a first byte ``[``, or an object with a ``messages`` or
``history`` array that is not one JSONL line), never by the file's name.
"""
from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import BinaryIO

import orjson

_WS = b" \t\r\n"
#: what a scan of a JSON value stops at: a string's start, or a bracket
_STOPS = re.compile(rb'["\[\]{}]')
_STRING_END = re.compile(rb'(?:[^"\\]|\\.)*"', re.DOTALL)


@dataclass
class Document:
    """How a JSON document was laid out around the array its lines were taken from."""

    head: bytes  # everything before the first element (or before the closing bracket of an empty array)
    separators: list[bytes]  # between element k and k + 1 (``,`` and any whitespace)
    tail: bytes  # everything after the last element
    #: an element's line in the copy -> its bytes in the document, where they differ
    originals: dict[bytes, bytes] = field(default_factory=dict)
    #: the indentation of an element on a line of its own, and the indentation step (None: compact)
    indent: bytes | None = None
    step: int = 2
    #: the line ending of the layout (a document written on Windows, or checked out there, has ``\r\n``)
    newline: bytes = b"\n"


def _skip_ws(data: bytes, pos: int) -> int:
    n = len(data)
    while pos < n and data[pos] in _WS:
        pos += 1
    return pos


def _value_end(data: bytes, pos: int) -> int:
    """The offset just past the JSON value starting at ``pos`` (the document parses: only its extent is
    looked for here)."""
    first = data[pos:pos + 1]
    if first == b'"':
        m = _STRING_END.match(data, pos + 1)
        return m.end()
    if first not in (b"[", b"{"):
        m = re.compile(rb"[^,\]}\s]+").match(data, pos)
        return m.end()
    depth, at = 0, pos
    while True:
        m = _STOPS.search(data, at)
        c = m.group()
        if c == b'"':
            at = _STRING_END.match(data, m.end()).end()
            continue
        depth += 1 if c in (b"[", b"{") else -1
        at = m.end()
        if depth == 0:
            return at


def _array_elements(data: bytes, start: int) -> tuple[list[tuple[int, int]], int]:
    """The spans of the elements of the array whose ``[`` is at ``start``, and the offset of its ``]``."""
    spans, pos = [], _skip_ws(data, start + 1)
    while data[pos:pos + 1] != b"]":
        end = _value_end(data, pos)
        spans.append((pos, end))
        pos = _skip_ws(data, end)
        if data[pos:pos + 1] == b",":
            pos = _skip_ws(data, pos + 1)
    return spans, pos


def _member_array(data: bytes, start: int, member: str) -> int | None:
    """The offset of the ``[`` of the top-level member ``member`` (``messages``, ``history``) of the object at ``start``."""
    pos = _skip_ws(data, start + 1)
    while data[pos:pos + 1] == b'"':
        key_end = _value_end(data, pos)
        key = orjson.loads(data[pos:key_end])
        pos = _skip_ws(data, _skip_ws(data, key_end) + 1)  # past the colon
        if key == member and data[pos:pos + 1] == b"[":
            return pos
        pos = _skip_ws(data, _value_end(data, pos))
        if data[pos:pos + 1] == b",":
            pos = _skip_ws(data, pos + 1)
    return None


def as_lines(data: bytes) -> tuple[Document, bytes] | None:
    """``data`` as a document and the lines of its copy, when it is a JSON document holding an array of
    entries (None: not one — a JSONL file, or something the line reader will name the error of)."""
    start = _skip_ws(data, 0)
    first = data[start:start + 1]
    if first not in (b"[", b"{"):
        return None
    if first == b"{":
        line_end = data.find(b"\n", start)
        try:
            orjson.loads(data[start:line_end if line_end >= 0 else len(data)])
            return None  # a first line that is a whole object: JSONL
        except orjson.JSONDecodeError:
            pass
    try:
        whole = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None  # not one document either: the line reader says where it breaks
    if isinstance(whole, list):
        if not all(isinstance(e, dict) for e in whole):
            return None
        array = start
    elif isinstance(whole, dict) and (key := "messages" if "messages" in whole else "history") and \
            isinstance(whole.get(key), list) and all(isinstance(e, dict) for e in whole[key]):
        array = _member_array(data, start, key)
        if array is None:
            return None
    else:
        return None
    spans, close = _array_elements(data, array)
    doc = Document(head=data[:spans[0][0]] if spans else data[:close], separators=[],
                   tail=data[spans[-1][1]:] if spans else data[close:])
    lines = []
    for k, (a, b) in enumerate(spans):
        raw = data[a:b]
        if b"\n" in raw or b"\r" in raw:
            line = orjson.dumps(orjson.loads(raw))
            doc.originals[line] = raw
        else:
            line = raw
        lines.append(line + b"\n")
        if k + 1 < len(spans):
            doc.separators.append(data[b:spans[k + 1][0]])
    sep = doc.separators[0] if doc.separators else doc.head[doc.head.rfind(b"[") + 1:]
    if b"\n" in sep:
        doc.indent = sep[sep.rfind(b"\n") + 1:]
        doc.newline = b"\r\n" if sep.endswith(b"\r\n" + doc.indent) else b"\n"
        inner = re.search(rb"\n([ \t]+)\S", data[spans[0][0]:spans[0][1]]) if spans else None
        if inner is not None:
            doc.step = max(1, len(inner.group(1)) - len(doc.indent))
    return doc, b"".join(lines)


def copy_of_lines(lines: bytes) -> BinaryIO:
    """A temporary file holding the document's lines, at its start."""
    copy = tempfile.TemporaryFile(prefix="ctxkit-document-")
    copy.write(lines)
    copy.seek(0)
    return copy


def _element(doc: Document, line: bytes) -> bytes:
    original = doc.originals.get(line)
    if original is not None:
        return original
    if doc.indent is None:
        return line
    text = json.dumps(orjson.loads(line), indent=doc.step, ensure_ascii=False)
    return text.replace("\n", (doc.newline + doc.indent).decode()).encode()


class _Collect:
    """A stream that collects what is written (the document's lines, as the transcript writes them)."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def write(self, b: bytes) -> int:
        self.parts.append(bytes(b))
        return len(b)

    def flush(self) -> None:
        pass


@contextmanager
def documenting(out: BinaryIO, doc: Document | None) -> Iterator[BinaryIO]:
    """A stream the transcript's lines are written to, that writes them to ``out`` as the document
    ``doc`` lays them out (``out`` itself when ``doc`` is None)."""
    if doc is None:
        yield out
        return
    sink = _Collect()
    yield sink
    lines = [ln for ln in b"".join(sink.parts).split(b"\n") if ln.strip()]
    default = doc.separators[-1] if doc.separators else (b"," + doc.newline + doc.indent if doc.indent is not None
                                                          else b",")
    out.write(doc.head)
    for k, line in enumerate(lines):
        if k:
            out.write(doc.separators[k - 1] if k - 1 < len(doc.separators) else default)
        out.write(_element(doc, line))
    out.write(doc.tail)
