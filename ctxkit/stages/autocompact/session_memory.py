"""Session memory: markdown notes kept during a session, so that compaction is reading a file.

Claude Code keeps a notes file up to date in the background while a session
runs, and remembers the last message the notes cover. When autocompact comes,
it first tries to use those notes as the summary and to keep, verbatim, the
messages the notes do not cover yet: no model call at compaction time.

ctxkit does the same in two steps:

* ``ctxkit memory update --session-memory NOTES.md`` (:func:`update_notes`)
  writes or refreshes the notes with the summarizer of the policy (the earlier
  notes plus the messages since the last update) and records, in the store,
  the id of the last message they cover;
* ``ctxkit compact --session-memory NOTES.md``: the autocompact stage calls
  :func:`plan_session_memory`, which turns the notes and that id into a
  compaction plan, or says why it cannot (no notes, an empty template, the
  id is no longer in the view, the notes are the ones an earlier compaction
  already used); the stage then falls back to a summary. It also falls back
  when the result would still be above the autocompact threshold.

Notes without a recorded id (written by hand, or with another store: Claude
Code's case of a resumed session) take the seeds' *conservative path*: the
notes are taken to cover the whole view (``lastSummarizedIndex = messages.length
- 1``), so no message is kept for being after them, and the kept tail is only
the minimum one (``session_memory.min_tokens`` / ``min_text_messages``, grown
backwards from the end). After a compaction the id is forgotten and the notes'
digest is kept as ``stale_notes_sha256``: the same notes, unchanged, cover
nothing the new summary does not, so they are not used again until ``ctxkit
memory update`` (or an edit) changes them.

Message ids: for Claude Code the ``uuid`` of the message's last entry; for
plain message lists a hash of the line (:func:`ctxkit.transcript.plain.messages.message_uuid`).
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...fileio import atomic_write
from ...side_files import read_side_text
from ...store.sessions import session_key
from ...summarize.prompt import continuation_message
from ...transcript.model import Transcript
from ...transcript.plain import messages as plain
from ...transcript.view import View, ViewMessage

STATE_KEY = "session_memory"

#: What an empty notes file looks like: headings and placeholders only. A file with nothing
#: but this (or any other headings-and-placeholders skeleton) counts as empty.
NOTES_TEMPLATE = """# Session notes

## Task
_What the user asked for, in their words._

## Files and functions
_The files that matter and why._

## Errors and corrections
_What went wrong and how it was fixed._

## Current state
_What is being worked on right now, and the next step._
"""

#: Focus instructions given to the summarizer when it writes the notes.
NOTES_INSTRUCTIONS = (
    "These are the session's running notes: they must be able to replace the whole conversation so far. "
    "If the conversation opens with earlier notes, merge them with everything that happened since; keep "
    "every user message and the current state of the work."
)

_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_PLACEHOLDER = re.compile(r"^\s*(?:[-*]\s*)?(?:_[^_]*_|\*[^*]*\*|\[[^\]]*\]|\.\.\.|…|-|\*)\s*$")


def strip_comments(text: str) -> str:
    return _COMMENT.sub("", text)


def is_empty_notes(text: str | None) -> bool:
    """Whether ``text`` holds no notes: nothing but headings, HTML comments and placeholder lines."""
    if text is None:
        return True
    for line in strip_comments(text).splitlines():
        s = line.strip()
        if not s or s.startswith("#") or _PLACEHOLDER.match(s):
            continue
        return False
    return True


def read_notes(path: Path | None) -> str | None:
    """The notes file's text, or None when there is no such file (not written yet).

    Read within its bound (:mod:`ctxkit.side_files`): a folder, device, FIFO or a file over the bound
    is a usage error naming ``--session-memory``."""
    if path is None:
        return None
    return read_side_text(path, "--session-memory", missing_ok=True)


def notes_summary(text: str) -> str:
    """The notes as the model reads them after a compaction (bookkeeping comments removed)."""
    lines = strip_comments(text).strip().splitlines()
    return "\n".join(line.rstrip() for line in lines).strip()


# -- message ids ------------------------------------------------------------------------------------
def entry_id(t: Transcript, i: int) -> str:
    if t.format == "claude-code":
        uid = t.entry(i).get("uuid")
        if isinstance(uid, str):
            return uid
    return plain.message_uuid(t, i)


def message_id(t: Transcript, m: ViewMessage) -> str | None:
    """The id that names message ``m`` (its last entry: the point the notes cover up to)."""
    return entry_id(t, m.entries[-1]) if m.entries else None


def find_message(t: Transcript, view: View, mid: str) -> int | None:
    """Index of the view message holding the entry named ``mid``, or None."""
    for k in range(len(view.messages) - 1, -1, -1):
        if any(entry_id(t, i) == mid for i in view.messages[k].entries):
            return k
    return None


def memory_state(store: Any, t: Transcript) -> dict[str, Any]:
    return dict(store.session_state(session_key(t)).get(STATE_KEY) or {})


def notes_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def forget(store: Any, *transcripts: Transcript, notes_path: Path | None = None) -> None:
    """After a compaction the recorded id is behind the boundary: the notes need a fresh update first.

    The digest of the notes as they are now is kept (``stale_notes_sha256``), so that the same notes
    are not taken for notes of unknown coverage (the conservative path) at the next compaction. Given
    the transcript before and after the compaction: a plain message list's session key is its first
    line, which the compaction changes."""
    keys = list(dict.fromkeys(session_key(t) for t in transcripts))
    state = dict(store.session_state(keys[0]).get(STATE_KEY) or {}) if keys else {}
    text = read_notes(notes_path)
    stale = notes_digest(text) if text is not None else state.get("notes_sha256")
    for key in keys:
        if stale:
            store.update_session_state(key, **{STATE_KEY: {"stale_notes_sha256": stale}})
        elif store.session_state(key).get(STATE_KEY):
            store.update_session_state(key, **{STATE_KEY: None})


# -- using the notes at compaction time -------------------------------------------------------------
@dataclass
class MemoryPlan:
    """Notes usable as the summary of ``view.messages[:last + 1]``."""

    summary: str
    last_index: int  # the last message the notes cover
    notes_path: Path
    last_id: str | None  # None: no id recorded, the conservative path (the notes taken to cover everything)


def plan_session_memory(t: Transcript, view: View, store: Any, path: Path | None) -> tuple[MemoryPlan | None, str]:
    """The session-memory plan, or None and the reason it cannot be used."""
    if path is None:
        return None, "no --session-memory file"
    text = read_notes(path)
    if text is None:
        return None, f"the session memory file {path} does not exist"
    if is_empty_notes(text):
        return None, f"the session memory file {path} is an empty template"
    state = memory_state(store, t)
    last_id = state.get("last_summarized_id")
    if not last_id:
        if state.get("stale_notes_sha256") == notes_digest(text):
            return None, ("the notes are unchanged since the last compaction, which they do not cover "
                          "(run `ctxkit memory update` first)")
        # the seeds' conservative path (a resumed session): the notes cover the whole view, keep the minimum tail
        return MemoryPlan(notes_summary(text), len(view.messages) - 1, Path(path), None), ""
    idx = find_message(t, view, last_id)
    if idx is None:
        return None, f"the last-summarized message {last_id} is no longer in the view"
    return MemoryPlan(notes_summary(text), idx, Path(path), last_id), ""


# -- writing the notes: `ctxkit memory update` -----------------------------------------------------
@dataclass
class MemoryUpdate:
    path: Path
    action: str  # "written" | "refreshed" | "unchanged"
    last_id: str | None
    summarized_messages: int
    summarizer: str
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"path": str(self.path), "action": self.action, "last_summarized_id": self.last_id,
                "summarized_messages": self.summarized_messages, "summarizer": self.summarizer, **self.details}


def _safe_end(view: View) -> int:
    """How many messages the notes may cover: not a trailing assistant turn still waiting for tool results."""
    end = len(view.messages)
    if end and view.messages[-1].role == "assistant" and any(view.messages[-1].tool_uses()):
        end -= 1
    return end


def render_notes(summary: str, last_id: str, timestamp: str) -> str:
    return (f"# Session notes\n\n<!-- ctxkit session memory: covers the conversation up to message {last_id} "
            f"({timestamp}); refresh with `ctxkit memory update` -->\n\n{summary.strip()}\n")


def update_notes(t: Transcript, path: Path, *, summarizer: Any, store: Any, timestamp: str) -> MemoryUpdate:
    """Write or refresh the notes at ``path`` and record the last message they cover.

    The summarizer reads the earlier notes (as a continuation message, so the
    extractive summarizer carries their sections forward) and the messages
    after the last recorded id; or the whole view when there are no usable
    notes or the id is gone (e.g. after a compaction). The file is replaced
    atomically; the store's state is saved by the caller's ``flush``.
    Raises :class:`ctxkit.errors.LLMError` when the summarizer fails (the old
    notes stay as they were).
    """
    path = Path(path)
    view = t.view()
    existing = read_notes(path)
    state = memory_state(store, t)
    start = 0
    carried: str | None = None
    if existing is not None and not is_empty_notes(existing) and state.get("last_summarized_id"):
        idx = find_message(t, view, state["last_summarized_id"])
        if idx is not None:
            start, carried = idx + 1, notes_summary(existing)
    end = _safe_end(view)
    name = getattr(summarizer, "name", type(summarizer).__name__)
    if start >= end:
        return MemoryUpdate(path, "unchanged", state.get("last_summarized_id"), 0, name,
                            {"reason": "no new messages since the last update"})
    messages: list[dict] = []
    if carried:
        messages.append({"role": "user", "content": continuation_message(carried)})
    messages.extend(m.api() for m in view.messages[start:end] if m.role != "system")
    # the extractive summarizer would only echo the focus text; a model is steered by it
    summary = summarizer.summarize(messages, instructions=None if name == "extractive" else NOTES_INSTRUCTIONS)
    last_id = message_id(t, view.messages[end - 1])
    text = render_notes(summary, last_id or "?", timestamp)
    atomic_write(path, text.encode("utf-8"))
    store.update_session_state(session_key(t), **{STATE_KEY: {
        "last_summarized_id": last_id, "notes": str(path.resolve()),
        "notes_sha256": notes_digest(text), "updated_at": timestamp}})
    action = "refreshed" if carried else "written"
    return MemoryUpdate(path, action, last_id, end - start, name, {"covered_messages": end})


def update_in_context(t: Transcript, ctx: Any, path: Path | None = None) -> MemoryUpdate:
    """``ctxkit memory update``: :func:`update_notes` with the run's summarizer, store and clock.

    ``path`` defaults to ``--session-memory``. Raises :class:`ctxkit.errors.UsageError`
    without one, :class:`ctxkit.errors.LLMError` when the summarizer fails.
    """
    from ...errors import UsageError
    from ...summarize import summarizer_for_run
    from ...summarize.redaction_report import redaction_summary

    path = path or ctx.inputs.session_memory
    if path is None:
        raise UsageError("ctxkit memory update needs the notes file: --session-memory FILE")
    update = update_notes(t, Path(path), summarizer=summarizer_for_run(ctx), store=ctx.store, timestamp=ctx.timestamp())
    update.details["redacted"] = redaction_summary(ctx)
    return update
