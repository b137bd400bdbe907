"""The requests a Claude Code 2.1.3xx session recorded, rebuilt exactly from the transcript itself.

Claude Code 2.1.328 writes, beside the conversation, what it sent with each request:

* ``api-request-shape`` — ``{shapeHash, shape: {system, tools}}``: the system blocks and tool
  definitions (written again whenever they change; ``shapeHash`` is the digest of ``shape``);
* ``api-request-blob`` — ``{hash, message}``: a message of a request that the conversation entries
  do not hold as such (the first user message with its reminders, the system-role messages that
  carry attachments, the messages of a compacted history), written once per distinct message;
* ``api-request`` — ``{id, params, shapeHash, base, keep, tail, cacheControl, requestDigest}``: the
  request's parameters (``model``, ``betas``, ``max_tokens``, ``thinking``, ``context_management``,
  ``output_config``); its messages are the first ``keep`` messages of request ``base`` followed by
  the messages whose digests ``tail`` lists (each a blob, or a message of the conversation: an answer
  as the view merges it, a user message of tool results); ``cacheControl`` lists where the request
  put ``cache_control`` (``{path, value}``, paths into the body below).

The digests, worked out on the corpus (every one of the 58 recorded requests checks):

* a message's digest is the SHA-256 of its canonical JSON (keys sorted, no spaces, non-ASCII
  characters as UTF-8) with a string ``content`` as one text block and no ``cache_control``;
* ``requestDigest`` is the SHA-256 of the canonical JSON of ``{**params, "system": shape.system,
  "tools": shape.tools, "messages": messages}`` (string contents as one text block) once each
  ``cacheControl`` value is set as ``cache_control`` at its path.

Records come from the transcript, which may hold anything: :func:`request_records` keeps only those
shaped as the API's (a blob whose message has a role and a string or a list of blocks; a shape whose
system is a string or a list of blocks and whose tools are a list of objects; cache marks with a path
of keys and indexes), so every reader of recorded requests (the next request's layout, request bodies,
simulate) gets only what it can send.

What went over the wire besides (``requests.jsonl.gz`` in the corpus): the same body without
``betas`` (sent as the ``anthropic-beta`` header), with a first system block
``x-anthropic-billing-header: cc_version=<version>.<fingerprint>; cc_entrypoint=<entrypoint>;``
(:func:`billing_header`), ``metadata.user_id`` (a device id the transcript does not hold) and
``stream: true``.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Callable

from ..model import Transcript
from ..shapes import ANTHROPIC, Bad
from .chain import entry_type, indexes_of

RECORD_TYPES = ("api-request-shape", "api-request-blob", "api-request")
#: The entry Claude Code writes its running costs in when a run ends (the next request is a new run's).
RUN_END = "cost-state"
#: The salt of Claude Code's billing fingerprint (three characters of the first prompt, hashed with it).
FINGERPRINT_SALT = "59cf53e54c78"
FINGERPRINT_POSITIONS = (4, 7, 20)


def canonical_json(value: Any) -> bytes:
    """The bytes Claude Code digests: keys sorted, no spaces, non-ASCII characters as UTF-8."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def digest(value: Any) -> str:
    return hashlib.sha256(canonical_json(value)).hexdigest()


def as_blocks(message: dict) -> dict:
    """``message`` with a string content as one text block (how digests see it)."""
    content = message.get("content")
    return {**message, "content": [{"type": "text", "text": content}]} if isinstance(content, str) else message


def without_cache_control(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [without_cache_control(v) for v in value]
    return value


def message_digest(message: dict) -> str:
    """The digest a record's ``tail`` names ``message`` by."""
    return digest(as_blocks(without_cache_control(message)))


def with_cache_control(body: dict, marks: list[dict]) -> dict:
    """A copy of ``body`` (no part shared: a message may appear twice) with each ``{path, value}`` set."""
    out = json.loads(canonical_json(body))
    for mark in marks:
        node: Any = out
        path = mark.get("path") or []
        for step in path[:-1]:
            node = node[step]
        node[path[-1]]["cache_control"] = mark.get("value")
    return out


def billing_header(version: str, entrypoint: str, first_text: str) -> str:
    """The first system block Claude Code sends: its version with a fingerprint of the first prompt
    (the characters at positions 4, 7 and 20, or ``0`` past its end) and the entry point."""
    chars = "".join(first_text[i] if i < len(first_text) else "0" for i in FINGERPRINT_POSITIONS)
    fingerprint = hashlib.sha256(f"{FINGERPRINT_SALT}{chars}{version}".encode()).hexdigest()[:3]
    return f"x-anthropic-billing-header: cc_version={version}.{fingerprint}; cc_entrypoint={entrypoint};"


def api_shaped_message(message: Any) -> bool:
    """Whether a recorded message has the API's shape: a role (``system`` too: Claude Code sends the
    environment as a system-role message) and a string or a list of blocks, each block as the reader
    checks a message's (a text block's text a string, ...)."""
    if not isinstance(message, dict):
        return False
    try:
        ANTHROPIC.check(message)
    except Bad:
        return False
    return True


def _blocks_or_string(content: Any) -> bool:
    return isinstance(content, str) or (isinstance(content, list) and all(isinstance(b, dict) for b in content))


def api_shaped_shape(shape: Any) -> bool:
    """Whether an ``api-request-shape``'s ``shape`` is the API's: ``system`` absent, a string or a list of
    blocks; ``tools`` absent or a list of objects."""
    if not isinstance(shape, dict):
        return False
    system, tools = shape.get("system"), shape.get("tools")
    return (system is None or _blocks_or_string(system)) and \
        (tools is None or (isinstance(tools, list) and all(isinstance(x, dict) for x in tools)))


def _mark_shaped(mark: Any) -> bool:
    """A ``cacheControl`` entry: ``{path, value}``, the path a non-empty list of keys and indexes."""
    path = mark.get("path") if isinstance(mark, dict) else None
    return isinstance(path, list) and bool(path) and all(
        isinstance(step, str) or (isinstance(step, int) and not isinstance(step, bool)) for step in path)


@dataclass
class RequestRecord:
    """One ``api-request`` entry."""

    index: int  # its entry index
    id: str
    params: dict
    shape_hash: str | None
    base: str | None
    keep: int
    tail: list[str]
    cache_control: list[dict]
    request_digest: str | None
    version: str | None


@dataclass
class RequestRecords:
    """The request records of a transcript, in file order (see the module docstring)."""

    shapes: dict[str, dict] = field(default_factory=dict)
    blobs: dict[str, tuple[int, dict]] = field(default_factory=dict)  # digest -> (entry index, message)
    requests: list[RequestRecord] = field(default_factory=list)
    shape_at: list[tuple[int, str]] = field(default_factory=list)  # (entry index, shapeHash), file order
    version: str | None = None  # the Claude Code version of the newest record (request or shape)
    run_ends: list[int] = field(default_factory=list)  # entry indexes of the ends of runs (RUN_END)
    _messages: dict[str, list[dict] | None] = field(default_factory=dict)

    def by_id(self, rid: str) -> RequestRecord | None:
        return next((r for r in self.requests if r.id == rid), None)

    def messages(self, record: RequestRecord, conversation: Callable[[str], dict | None]) -> list[dict] | None:
        """The messages ``record`` sent, without ``cache_control``: ``keep`` of its base's and its tail,
        each tail digest a blob or a message ``conversation`` finds by digest; None when one is
        missing (an entry a stage rewrote, a history compacted away)."""
        if record.id in self._messages:
            return self._messages[record.id]
        out: list[dict] | None = []
        if record.keep:
            base = self.by_id(record.base) if record.base else None
            kept = self.messages(base, conversation) if base is not None and base.index < record.index else None
            out = kept[:record.keep] if kept is not None and len(kept) >= record.keep else None
        for h in record.tail:
            if out is None:
                break
            blob = self.blobs.get(h)
            message = blob[1] if blob is not None and blob[0] < record.index else conversation(h)
            if message is None:
                out = None
            else:
                out.append(message)
        self._messages[record.id] = out
        return out

    def body(self, record: RequestRecord, conversation: Callable[[str], dict | None]) -> dict | None:
        """What ``requestDigest`` digests: params, the shape's system and tools, the messages, with
        the recorded ``cache_control`` marks; None when a part is missing."""
        messages = self.messages(record, conversation)
        shape = self.shapes.get(record.shape_hash or "")
        if messages is None or shape is None:
            return None
        plain = {**record.params, "system": shape.get("system"), "tools": shape.get("tools"),
                 "messages": [as_blocks(m) for m in messages]}
        try:
            return with_cache_control(plain, record.cache_control)
        except (LookupError, TypeError):
            return None

    def verified(self, record: RequestRecord, conversation: Callable[[str], dict | None]) -> bool:
        """Whether the rebuilt request digests to the recorded ``requestDigest``."""
        body = self.body(record, conversation)
        return body is not None and record.request_digest == digest(body)

    def shape_before(self, index: int) -> dict | None:
        """The newest shape recorded before entry ``index``."""
        found = None
        for at, h in self.shape_at:
            if at >= index:
                break
            found = self.shapes.get(h, found)
        return found


def request_records(t: Transcript) -> RequestRecords:
    """The request records of ``t`` (empty for formats other than Claude Code's, and for sessions
    written before Claude Code recorded its requests). Computed once per transcript version."""
    known = t.memo.get("request_records")
    if known is not None:
        return known
    out = RequestRecords()
    if t.format == "claude-code":
        for i in indexes_of(t, (*RECORD_TYPES, RUN_END)):
            kind = entry_type(t, i)
            if kind == RUN_END:
                out.run_ends.append(i)
                continue
            entry = t.entry(i)
            if kind == "api-request-shape" and api_shaped_shape(entry.get("shape")):
                h = str(entry.get("shapeHash") or digest(entry["shape"]))
                out.shapes[h] = entry["shape"]
                out.shape_at.append((i, h))
                out.version = entry.get("version") if isinstance(entry.get("version"), str) else out.version
            elif kind == "api-request-blob" and api_shaped_message(entry.get("message")):
                h = str(entry.get("hash") or message_digest(entry["message"]))
                out.blobs.setdefault(h, (i, entry["message"]))
            elif kind == "api-request" and isinstance(entry.get("id"), str):
                out.requests.append(_record(i, entry))
                out.version = out.requests[-1].version or out.version
    t.memo["request_records"] = out
    return out


def _record(i: int, entry: dict) -> RequestRecord:
    def strings(value: Any) -> list:
        return [x for x in value if isinstance(x, str)] if isinstance(value, list) else []

    keep = entry.get("keep")
    marks = entry.get("cacheControl")
    return RequestRecord(
        index=i, id=entry["id"], params=entry.get("params") if isinstance(entry.get("params"), dict) else {},
        shape_hash=entry.get("shapeHash") if isinstance(entry.get("shapeHash"), str) else None,
        base=entry.get("base") if isinstance(entry.get("base"), str) else None,
        keep=keep if isinstance(keep, int) and not isinstance(keep, bool) and keep > 0 else 0,
        tail=strings(entry.get("tail")),
        cache_control=[m for m in marks if _mark_shaped(m)] if isinstance(marks, list) else [],
        request_digest=entry.get("requestDigest") if isinstance(entry.get("requestDigest"), str) else None,
        version=entry.get("version") if isinstance(entry.get("version"), str) else None)
