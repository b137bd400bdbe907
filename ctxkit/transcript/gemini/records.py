"""What one line of a Gemini CLI session recording is, and the conversation its lines add up to.

Defined by Gemini CLI's own source (google-gemini/gemini-cli):
``packages/core/src/services/chatRecordingTypes.ts`` (``MessageRecord``: ``id``, ``timestamp``,
``type`` — ``user``, ``gemini``, ``info``, ``error``, ``warning`` —, ``content``; a ``gemini``
message's ``toolCalls``, ``thoughts``, ``tokens``, ``model``; ``RewindRecord``,
``MetadataUpdateRecord``, ``PartialMetadataRecord``) and ``loadConversationRecord`` in
``packages/core/src/services/chatRecordingService.ts``: a first line of metadata (``sessionId``,
``projectHash``, ...); message records upserted by ``id`` (a record with an id already seen replaces
it where it stands); ``{"$set": {...}}`` merged into the metadata, its ``messages`` (Gemini CLI
0.61) replacing the conversation so far (later records add to them); ``{"$rewindTo": id}`` removing
that message and every later one (all of them when the id is unknown). (The first JSONL versions took
a non-empty ``$set`` of ``messages`` for the whole conversation, whatever came after it; 0.61 writes
one as its second line, holding the session context, so it is read the way 0.61 reads it.)
"""
from __future__ import annotations

from typing import Any

from ..lineindex import BAD
from ..model import Transcript
from ..shapes import Bad

NAME = "gemini"
MESSAGE_TYPES = ("user", "gemini", "info", "error", "warning")


def looks_like(d: dict) -> bool:
    if "role" in d or "message" in d or "uuid" in d:
        return False
    if isinstance(d.get("$rewindTo"), str) or isinstance(d.get("$set"), dict):
        return True
    if "type" not in d and isinstance(d.get("sessionId"), str) and isinstance(d.get("projectHash"), str):
        return True
    return d.get("type") in MESSAGE_TYPES and isinstance(d.get("id"), str) and "content" in d


def kind(d: dict) -> str:
    if "$rewindTo" in d:
        return "$rewindTo"
    if "$set" in d:
        return "$set"
    typ = d.get("type")
    if isinstance(typ, str):
        return typ
    if "sessionId" in d:
        return "metadata"
    return next((k for k in d if k.startswith("$")), "unknown")


def check(d: dict) -> None:
    """The fields the projection relies on, in a message record and in each message a ``$set`` holds
    (those are the conversation too: a wrong type there is named by the ``$set`` line)."""
    if "$set" in d:
        update = d["$set"]
        if not isinstance(update, dict):
            _bad("an object", update, "$set")
        for k, m in enumerate(update["messages"] if isinstance(update.get("messages"), list) else ()):
            try:
                if isinstance(m, dict):
                    _check_message(m)
            except Bad as exc:
                exc.path += [k, "messages", "$set"]
                raise
    _check_message(d)


def _check_message(m: dict) -> None:
    if m.get("type") not in MESSAGE_TYPES:
        return  # a record of a kind this ctxkit does not know passes whatever it holds (it is not read)
    if m.get("type") == "gemini" and m.get("toolCalls") is not None and not isinstance(m["toolCalls"], list):
        _bad("a list", m["toolCalls"], "toolCalls")
    if m.get("timestamp") is not None and not isinstance(m["timestamp"], str):
        _bad("a string", m["timestamp"], "timestamp")


def _bad(expected: str, value: Any, field: str) -> None:
    exc = Bad(expected, value)
    exc.path.append(field)
    raise exc


def conversation(t: Transcript) -> tuple[list[tuple[int, dict]], list[str]]:
    """The messages Gemini CLI loads on resume, as ``(entry holding it, record)``, and notes on what
    was skipped."""
    c = Conversation()
    c.feed(t, 0)
    return list(c.messages.values()), c.notes()


def _rewrites(d: dict) -> bool:
    """Whether a line does more than put messages (see :meth:`Conversation._one`)."""
    if isinstance(d.get("$rewindTo"), str):
        return True
    if isinstance(d.get("id"), str):
        return False
    if isinstance(d.get("$set"), dict):
        return isinstance(d["$set"].get("messages"), list)
    return isinstance(d.get("sessionId"), str) and isinstance(d.get("projectHash"), str) \
        and isinstance(d.get("messages"), list)


class Conversation:
    """The load of a recording's lines in order (:func:`conversation`), kept to go on with more lines."""

    def __init__(self) -> None:
        self.messages: dict[str, tuple[int, dict]] = {}
        self.unknown: dict[str, int] = {}

    def feed(self, t: Transcript, start: int, only_upserts: bool = False) -> list[str] | None:
        """Load entries ``start`` on; the ids of the messages they put. ``only_upserts``: refuse (None,
        nothing changed) entries that do more than put messages (a rewind, a ``$set`` of messages)."""
        todo = [i for i in range(start, t.n_entries) if i not in t.removed and not (i < t.n_lines and t.lines.flags[i] & BAD)]
        if only_upserts and any(map(_rewrites, map(t.entry, todo))):
            return None
        put: list[str] = []
        for i in todo:
            self._one(i, t.entry(i), put)
        return put

    def _put(self, i: int, records: Any, put: list[str]) -> None:
        for m in records if isinstance(records, list) else ():
            if isinstance(m, dict) and isinstance(m.get("id"), str):
                self.messages[m["id"]] = (i, m)
                put.append(m["id"])

    def _one(self, i: int, d: dict, put: list[str]) -> None:
        messages = self.messages
        rewind = d.get("$rewindTo")
        if isinstance(rewind, str):
            if rewind in messages:
                keys = list(messages)
                for key in keys[keys.index(rewind):]:
                    del messages[key]
            else:
                messages.clear()
        elif isinstance(d.get("id"), str):
            messages[d["id"]] = (i, d)
            put.append(d["id"])
        elif isinstance(d.get("$set"), dict):
            if isinstance(d["$set"].get("messages"), list):  # the conversation from here on
                messages.clear()
                self._put(i, d["$set"]["messages"], put)
        elif isinstance(d.get("sessionId"), str) and isinstance(d.get("projectHash"), str):
            self._put(i, d.get("messages"), put)
        else:
            self.unknown[kind(d)] = self.unknown.get(kind(d), 0) + 1

    def notes(self) -> list[str]:
        return [f"warning: {n} line(s) of a record type this ctxkit does not know ({k}): kept as they are, "
                "left out of the view" for k, n in sorted(self.unknown.items())]


def text_of(content: Any) -> str:
    """The text of a ``PartListUnion`` (a string, a part, or a list of them)."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return ""
    return "".join(p if isinstance(p, str) else p.get("text", "") if isinstance(p, dict) and
                   isinstance(p.get("text"), str) else "" for p in content)
