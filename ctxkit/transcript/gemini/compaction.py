"""A compaction Gemini CLI's resume honours: a ``$rewindTo`` the first message, then the new history.

Gemini CLI does not record its own compression (the compressed history lives in memory only), so
ctxkit writes what its loader (``loadConversationRecord``) reads back: ``{"$rewindTo": <first
message id>}`` drops every message recorded so far, and the message records appended after it —
the session context Gemini CLI wrote before the first prompt, the summary as a ``user`` message,
then the kept tail's records as recorded — are the conversation
from there on; what Gemini CLI appends when it resumes follows them. (A ``$set`` of ``messages``
would be read too, but it hides every message recorded after it from the next resume.)

No earlier byte changes: ``ctxkit expand`` takes ctxkit's lines out again (the rewind line carries
``"ctxkit": {"compaction": <lines it opens>}``, a key Gemini CLI does not read), giving back the
session byte for byte.
"""
from __future__ import annotations

import hashlib

from ..model import Transcript
from ..view import View
from . import contents
from .projection import IGNORED_USER_OPENINGS
from .records import conversation, text_of

MARK = "ctxkit"


def write_compacted(t: Transcript, view: View, keep_from: int, summary: str, timestamp: str) -> Transcript:
    messages, _ = conversation(t)
    if not messages:
        raise ValueError("the session holds no message to compact")
    kept_ids = {m.uuid for m in view.messages[keep_from:] if m.uuid}
    start = next((k for k, (_, rec) in enumerate(messages) if rec.get("id") in kept_ids), len(messages))
    tail = [rec for _, rec in messages[start:]]
    # what Gemini CLI wrote before the first prompt and never sends as such (its session context) stays first
    first_prompt = next((k for k, (_, rec) in enumerate(messages) if rec.get("type") == "user" and
                         text_of(rec.get("content")).strip() and
                         not text_of(rec.get("content")).strip().startswith(IGNORED_USER_OPENINGS)), len(messages))
    lead = [rec for _, rec in messages[:min(first_prompt, start)] if rec.get("type") == "user"]
    sid = hashlib.sha256(f"{messages[0][1].get('id')}|{timestamp}|{summary}".encode()).hexdigest()[:32]
    summary_record = {"id": f"ctxkit-summary-{sid}", "timestamp": timestamp, "type": "user",
                      "content": [{"text": summary}]}
    rewind = {"$rewindTo": messages[0][1].get("id"), MARK: {"compaction": 1 + len(lead) + len(tail)}}
    return t.with_edits(append=[rewind, *lead, summary_record, *tail])


def uncompact(t: Transcript) -> Transcript:
    """``t`` without the lines ctxkit's compactions wrote (for ``ctxkit expand``)."""
    live = list(t.live_indexes())
    drop: list[int] = []
    for pos, i in enumerate(live):
        d = t.entry(i)
        mark = d.get(MARK) if "$rewindTo" in d else None
        n = mark.get("compaction") if isinstance(mark, dict) else None
        if isinstance(n, int) and not isinstance(n, bool) and n >= 0:
            drop += live[pos:pos + 1 + n]
    return t.with_edits(remove=drop) if drop else t


def in_document(t: Transcript) -> bool:
    """Whether ``t`` was read from one JSON document (an older session file, a ``/chat save`` checkpoint):
    Gemini CLI reads its ``messages`` (its ``history``) as they are, with no ``$rewindTo``, so a
    compaction there puts the summary in place of what it summarizes (the store keeps the original)."""
    return t.source.document is not None


def document_lines(t: Transcript, text: str, timestamp: str) -> list[dict]:
    """What takes the place of the summarized messages in a document: the summary as a ``user`` record
    (an older session file), or as a ``user`` content and the model's acknowledgement, as Gemini CLI's
    own compression writes them (a checkpoint: the roles of a history alternate)."""
    if t.format == contents.NAME:
        return contents.summary_lines(text)
    sid = hashlib.sha256(f"{timestamp}|{text}".encode()).hexdigest()[:32]
    return [{"id": f"ctxkit-summary-{sid}", "timestamp": timestamp, "type": "user", "content": [{"text": text}]}]
