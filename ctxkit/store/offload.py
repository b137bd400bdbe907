"""Moving tool output to the store and back: the ``<persisted-output>`` replacement and its ledger records.

Shared by the stages that take tool output out of the view (tool-result-budget
persists it with a preview, microcompact clears it) and by ``ctxkit expand``,
which puts it back. A ledger record (``Store.record_decision``) has the shape::

    {"state": "replaced" | "cleared", "replacement": <the exact text the model saw>,
     "blob": <path of the stored original>, "original": "text" | "json", "by": <stage id>}

(plus ``"empty": <the original>`` and ``"blob": ""`` for an empty result replaced by a note, and
``"absent": true`` when the result had no ``content`` key at all, kept when it is cleared later),
or ``{"state": "seen"}`` for a result the model has seen in full (frozen: never replaced later).

Records are kept per scope (:func:`decision_scope`: the transcript's session), since
transcripts sharing a store reuse tool ids. The stored original is the content as the
transcript holds it: for an OpenAI ``tool`` message the line's own ``content`` value
(:func:`original_content`), not the Anthropic blocks the view shows.
"""
from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

import orjson

from ..confined import Refused
from ..tokens.counters import RoughCounter
from ..transcript import outputs as tool_outputs
from ..transcript.view import content_text
from .disk import Store

if TYPE_CHECKING:
    from ..transcript.model import Transcript
    from ..transcript.view import BlockRef

PERSISTED_OPEN = "<persisted-output>"
PERSISTED_CLOSE = "</persisted-output>"
PREVIEW_BYTES = 2_000
#: What microcompact puts in place of a cleared tool result (its default ``placeholder``).
CLEARED_PLACEHOLDER = "[Old tool result content cleared]"


def decision_scope(t: Transcript) -> str:
    """The ledger scope of a transcript's decisions: which session they belong to.

    Claude Code: the session id of the transcript's first entry that has one (stable when a
    resumed session goes on in the same file under a new id). Plain message lists:
    :func:`ctxkit.store.sessions.session_key`, a hash of the first line (a compaction that
    rewrites the first line starts a new scope: a new prefix).
    """
    if t.format == "claude-code":
        for i in t.live_indexes():
            sid = t.peek(i).get("sessionId")  # peek: a file of metadata lines is not kept parsed
            if isinstance(sid, str) and sid:
                return sid
    from .sessions import session_key

    return session_key(t)


def original_content(t: Transcript, ref: BlockRef | None, block: dict) -> Any:
    """What to store as a tool_result's original: the block's content, except for OpenAI ``tool``
    messages, where it is the line's own ``content`` (text and image_url parts as written), and formats
    that keep outputs elsewhere (:mod:`ctxkit.transcript.outputs`), where it is the output as stored."""
    if t.format == "openai" and ref is not None:
        return t.entry(ref.entry).get("content")
    if ref is not None and tool_outputs.has_outputs(t.format):
        found, raw = tool_outputs.stored(t, ref)  # (Codex's output item, Gemini's result parts, ...)
        if found:
            return raw
    return block.get("content")


def content_absent(t: Transcript, ref: BlockRef | None, block: dict) -> bool:
    """Whether the tool result has no ``content`` key at all (the API allows it: an empty result),
    as opposed to an empty or ``null`` one: ``ctxkit expand`` must give back the same shape."""
    if t.format == "openai" and ref is not None:
        return "content" not in t.entry(ref.entry)
    if ref is not None and tool_outputs.has_outputs(t.format):
        return False  # an output the format stores: present, if empty
    return "content" not in block


def to_openai_content(content: Any) -> Any:
    """An original as an OpenAI ``tool`` message's content: Anthropic blocks (from ledgers written
    before originals were kept as the line had them) become OpenAI parts; anything else is kept."""
    if not isinstance(content, list):
        return content
    out = []
    for b in content:
        if isinstance(b, dict) and b.get("type") == "image" and isinstance(b.get("source"), dict):
            src = b["source"]
            url = src.get("url") if src.get("type") == "url" else \
                f"data:{src.get('media_type', '')};base64,{src.get('data', '')}"
            out.append({"type": "image_url", "image_url": {"url": url or ""}})
        else:
            out.append(b)
    return out


def content_size(content: Any) -> int:
    """Characters of text in a tool_result's content (images and documents do not count here)."""
    return len(content_text(content))


def shrinks(content: Any, placeholder: str) -> bool:
    """Whether ``placeholder`` in place of text ``content`` makes the view smaller: in characters, and in
    Claude Code's estimate, which counts a text that looks like JSON (``[Old tool result content
    cleared]``) at 2 characters a token, not 4: cleared, a 57-character Grep result (``Found 1 file`` and
    its path, Claude Code 1.0.17) made the count 3 tokens larger."""
    if content_size(content) <= len(placeholder):
        return False
    rough = RoughCounter()
    return rough.count_message({"role": "user", "content": content}) > rough.count_message(
        {"role": "user", "content": placeholder})


def has_media(content: Any) -> bool:
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") in ("image", "document") for b in content)


def is_empty(content: Any) -> bool:
    if content is None:
        return True
    if isinstance(content, str):
        return not content.strip()
    if isinstance(content, list):
        return not content or all(isinstance(b, dict) and b.get("type") == "text" and not b.get("text", "").strip()
                                  for b in content)
    return False


def human_size(n_bytes: int) -> str:
    """Sizes as Claude Code prints them (its ``formatFileSize``): 812 bytes, 43.9KB, 2KB, 1.2MB: one decimal,
    a trailing ``.0`` dropped."""
    if n_bytes < 1024:
        return f"{n_bytes} bytes"
    value, unit = n_bytes / 1024, "KB"
    for bigger in ("MB", "GB"):
        if value < 1024:
            break
        value, unit = value / 1024, bigger
    # JavaScript's toFixed(1): the float's exact value rounded half up (Python's format rounds half to even)
    from decimal import ROUND_HALF_UP, Decimal  # (only a persisted output's message prints a size)

    text = str(Decimal(value).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))
    return f"{text[:-2] if text.endswith('.0') else text}{unit}"


def preview(text: str, limit_bytes: int = PREVIEW_BYTES) -> tuple[str, bool]:
    """The first ``limit_bytes`` of ``text``, cut at the last line end inside them; (preview, truncated)."""
    data = text.encode("utf-8")
    if len(data) <= limit_bytes:
        return text, False
    head = data[:limit_bytes]
    cut = head.rfind(b"\n")
    if cut > 0:
        head = head[:cut]
    return head.decode("utf-8", errors="ignore"), True


def original_bytes(content: Any) -> tuple[bytes, str, str]:
    """How a tool_result's original content is stored: (bytes, file suffix, "text"|"json")."""
    suffix, kind = _stored_as(content)
    return (content.encode("utf-8") if kind == "text" else orjson.dumps(content)), suffix, kind


def _stored_as(content: Any) -> tuple[str, str]:
    return (".txt", "text") if isinstance(content, str) else (".json", "json")


def content_digest(content: Any, known: dict[int, tuple[Any, str]] | None = None) -> str:
    """A short fingerprint of a tool_result's content (what a decision was made about). ``known``: the
    fingerprints a run already took, by identity (:attr:`ctxkit.store.disk.Store.digests`): the budget
    fingerprints every result of the view, and microcompact asks again about each."""
    if known is None:
        return _sha256_of(content)[0][:32]
    found = known.get(id(content))
    if found is not None and found[0] is content:
        return found[1]
    digest = _sha256_of(content)[0][:32]
    known[id(content)] = (content, digest)  # the content is held: its identity is not reused meanwhile
    return digest


_recent: list[tuple[Any, str, bytes]] = []  # (content, its SHA-256, its bytes): the last few hashed


def _sha256_of(content: Any) -> tuple[str, bytes]:
    """The SHA-256 (hex) of a content's stored bytes, and the bytes. A stage hashes the same content
    two or three times in a row (is a decision about it? store it; record what was seen): the last few
    are remembered by identity (held here, so an identity is never reused while remembered)."""
    for held, digest, data in _recent:
        if held is content:
            return digest, data
    data = original_bytes(content)[0]
    digest = hashlib.sha256(data).hexdigest()
    _recent.insert(0, (content, digest, data))
    del _recent[4:]
    return digest, data


def decision_applies(record: dict[str, Any] | None, content: Any,
                     known: dict[int, tuple[Any, str]] | None = None) -> bool:
    """Whether a ledger record is about *this* result: its content is the recorded replacement, or one of
    the contents the decision was made on (``accepts``). Tool ids repeat across conversations (``call_0``),
    so a record with the same id but other content is someone else's: never replayed over this one.
    Records written before fingerprints existed have no ``accepts`` and apply as before."""
    if not record:
        return False
    if content == record.get("replacement"):
        return True
    accepts = record.get("accepts")
    return accepts is None or content_digest(content, known) in accepts


def store_original(store: Store, content: Any) -> tuple[str, str]:
    """Save a tool_result's original content; returns (blob path, "text"|"json")."""
    suffix, kind = _stored_as(content)
    digest, data = _sha256_of(content)
    return store.put_blob_file(data, suffix, digest=digest), kind


def persisted_message(text: str, blob_path: str, preview_bytes: int = PREVIEW_BYTES) -> str:
    """The replacement the model sees for a persisted output (the shape Claude Code uses)."""
    shown, truncated = preview(text, preview_bytes)
    size = human_size(len(text.encode("utf-8")))
    body = (f"{PERSISTED_OPEN}\nOutput too large ({size}). Full output saved to: {blob_path}\n\n"
            f"Preview (first {human_size(preview_bytes)}):\n{shown}\n")
    if truncated:
        body += "...\n"
    return body + PERSISTED_CLOSE


def load_original(store: Store, record: dict[str, Any], default: Any = None) -> Any:
    """The original content a ledger record points at, or ``default`` when the blob is gone (pass a
    sentinel to tell a gone blob from a stored ``null``). Raises :class:`ctxkit.confined.Refused`
    when the record names something that is not a blob of the store."""
    data = store.fetch_blob(record.get("blob", ""))
    if data is None:
        return default
    # a blob that does not hold what its record says (damaged on disk) is refused, never guessed at:
    # ``ctxkit expand`` leaves that tool result as it is and reports it (exit 1)
    if record.get("original") == "json":
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            raise Refused(record.get("blob", ""), "damaged: its record says JSON, the blob is not JSON") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Refused(record.get("blob", ""), f"damaged: not UTF-8 text (byte {exc.start})") from None
