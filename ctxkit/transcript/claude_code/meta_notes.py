"""The meta user entries Claude Code 2.1.332 rewrites when it sends them: a hook's text and its own notes.

Why a module of its own: from 2.1.332 on, a meta user entry that a hook wrote (a Stop hook's feedback, a
prompt-submit hook that stopped the turn) carries ``hookText: true`` and ``hookTextLead``, and one that
Claude Code wrote to itself (a retry after a malformed tool call, a PermissionDenied hook's retry) carries
``ownNote: true``. The entry keeps the bare text; the request carries it wrapped, so a view of the entry
as written would differ from what the model read, and every recorded request after it would look stale.
What 2.1.332's request builder does (read in its ``cli.js``; the blob it records for the message is the
same text):

* ``hookText``: ``<system-reminder>\\n{lead}\\n{text}\\n</system-reminder>``, where ``lead`` is the
  entry's ``hookTextLead`` when that starts with :data:`HOOK_LEAD` and holds no newline, else
  :data:`HOOK_LEAD_DEFAULT`; in ``text`` a ``<`` that opens a ``system-reminder`` tag (or ends the text,
  alone or before ``/``) becomes ``&lt;``, so hook output cannot close the wrapper early;
* ``ownNote``: ``<system-reminder>\\n{text}\\n</system-reminder>``, the text as written unless it is the
  PermissionDenied hook's retry note, which is sent as the entry's ``ownNoteText`` (when that is one of
  Claude Code's: :data:`RETRY_NOTE_LEAD`, no control character nor ``<``), else as :data:`RETRY_NOTE_SENT`.

Both only for an ``isMeta`` entry whose content is a string (or one text block); earlier versions write
neither field, so their entries are sent as written.
"""
from __future__ import annotations

import re

from ...reminders import REMINDER_CLOSE, REMINDER_OPEN

#: How every hook lead Claude Code 2.1.332 writes starts.
HOOK_LEAD = "The text below is the output of a hook"
#: The lead it sends when an entry's own is missing or not one of its leads.
HOOK_LEAD_DEFAULT = HOOK_LEAD + ", not a message from the user."
#: The note a PermissionDenied hook's retry is written as; sent as the entry's ``ownNoteText``.
RETRY_NOTE = "The PermissionDenied hook indicated you may retry this tool call."
#: How the ``ownNoteText`` Claude Code sends in its place starts.
RETRY_NOTE_LEAD = "The refusal above is not final for this call:"
#: What it sends for the retry note when the entry's ``ownNoteText`` is not one of its own.
RETRY_NOTE_SENT = RETRY_NOTE_LEAD + (
    " the PermissionDenied hook set up for this session allows one more try, which goes through the same permission"
    " check. If the user asked for what this call does, make it again now. If they did not, leave it, and in your"
    " next words to them say that you made this call without being asked and that it was refused before it ran;"
    " then go on with what they did ask for.")
_TAG_OPEN = re.compile(r"<(?=\s*(?:/\s*)?system-reminder\b)", re.I)
_TRAILING_OPEN = re.compile(r"<(?=\s*(?:/\s*)?\Z)")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029<]")


def sent_meta_text(d: dict, text: str) -> str:
    """The text Claude Code sends for user entry ``d`` whose content is the one text ``text``."""
    if d.get("isMeta") is not True:
        return text
    if d.get("hookText") is True:
        lead = d.get("hookTextLead")
        if not (isinstance(lead, str) and lead.startswith(HOOK_LEAD) and "\n" not in lead):
            lead = HOOK_LEAD_DEFAULT
        return _wrapped(f"{lead}\n{_TRAILING_OPEN.sub('&lt;', _TAG_OPEN.sub('&lt;', text), count=1)}")
    if d.get("ownNote") is True:
        own = d.get("ownNoteText")
        if text == RETRY_NOTE:
            text = own if isinstance(own, str) and own.startswith(RETRY_NOTE_LEAD) and not _CONTROL.search(own) \
                else RETRY_NOTE_SENT
        return _wrapped(text)
    return text


def _wrapped(text: str) -> str:
    return f"{REMINDER_OPEN}\n{text}\n{REMINDER_CLOSE}"
