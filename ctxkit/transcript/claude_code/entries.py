"""The Claude Code entries ctxkit writes: new chain entries and its bookkeeping records.

Each entry is shaped the way Claude Code 2.1.x writes its own (envelope fields copied from the newest
conversation entry), with deterministic uuids so that the same run writes the same bytes.
"""
from __future__ import annotations

import hashlib
import uuid as uuidlib
from collections.abc import Callable
from typing import Any

from ..model import Transcript
from .chain import CONVERSATION_TYPES, entry_type, leaf_uuid
from .records import RECORD_TYPE

_ENVELOPE_KEYS = ("userType", "entrypoint", "cwd", "sessionId", "version", "gitBranch", "slug")


def new_uuid(*parts: str) -> str:
    """A deterministic uuid (v4-shaped) from its inputs, so the same run writes the same bytes."""
    digest = hashlib.sha256("\x1f".join(parts).encode()).digest()
    return str(uuidlib.UUID(bytes=digest[:16], version=4))


def envelope(t: Transcript, parent_uuid: str | None, uuid: str, timestamp: str) -> dict:
    """The common fields of a new chain entry, copied from the newest conversation entry."""
    env: dict[str, Any] = {"parentUuid": parent_uuid, "isSidechain": False}
    ref = _newest_conversation_entry(t)
    env.update({k: ref[k] for k in _ENVELOPE_KEYS if ref is not None and k in ref})
    env["uuid"] = uuid
    env["timestamp"] = timestamp
    return env


def _newest_conversation_entry(t: Transcript) -> dict | None:
    """The last main-chain conversation entry in line order. Read from the end, entry by entry: the
    routing fields of every edited entry (:class:`~ctxkit.transcript.claude_code.metas.Metas`) are not
    worked out for a version that needs only this (a compaction asks it of several)."""
    lines, n = t.lines, t.n_lines
    for i in reversed(range(t.n_entries)):
        if i in t.removed or (i < n and lines.bad(i)) or entry_type(t, i) not in CONVERSATION_TYPES:
            continue
        as_read = i < n and i not in t.overrides  # (then the index has the flag: no entry is parsed)
        if not (lines.sidechain(i) if as_read else t.entry(i).get("isSidechain")):
            return t.entry(i)
    return None



def session_id(t: Transcript) -> str | None:
    ref = _newest_conversation_entry(t)
    return ref.get("sessionId") if ref else None


def attachment_entry(t: Transcript, parent: str | None, timestamp: str, attachment: dict, texts: list[str],
                     role: str = "user") -> dict:
    """An ``attachment`` entry rendered the way Claude Code 2.1.x writes them (``rendered`` + ``renderedRole``)."""
    uid = new_uuid(parent or "", "attachment", attachment.get("type", ""), *texts)
    entry = envelope(t, parent, uid, timestamp)
    entry.update({"type": "attachment", "attachment": attachment,
                  "rendered": [{"content": x} for x in texts], "renderedRole": role})
    return entry


def user_entry(t: Transcript, parent: str | None, timestamp: str, content: str | list, **flags: Any) -> dict:
    uid = new_uuid(parent or "", "user", repr(content)[:20000], repr(sorted(flags.items())))
    entry = envelope(t, parent, uid, timestamp)
    entry.update({"type": "user", "message": {"role": "user", "content": content}})
    entry.update(flags)
    return entry


def record_entry(t: Transcript, record: str, timestamp: str, **fields: Any) -> dict:
    """A ctxkit bookkeeping line (no uuid: it is not part of the conversation chain)."""
    entry = {"type": RECORD_TYPE, "record": record, "timestamp": timestamp}
    sid = session_id(t)
    if sid:
        entry["sessionId"] = sid
    entry.update(fields)
    return entry


def append_chain(t: Transcript, make: list[Callable[[str | None], dict]]) -> Transcript:
    """Append entries one after another on the active chain; each maker gets its parent's uuid."""
    parent = leaf_uuid(t)
    new = []
    for mk in make:
        e = mk(parent)
        new.append(e)
        parent = e.get("uuid", parent)
    return t.with_edits(append=new)

