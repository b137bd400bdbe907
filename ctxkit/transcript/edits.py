"""Format-neutral edits stages make, each returning a new transcript.

Stages decide on the view and edit through these functions, which know where
each format keeps things: a block's content list, how a reminder is written
(an ``attachment`` entry for Claude Code, a user message for plain formats).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from ..confined import Refused
from ..quoting import quote_id
from ..reminders import as_reminder
from . import outputs as tool_outputs
from .claude_code import chain as claude_code_chain
from .claude_code import entries as claude_code_entries
from .claude_code import records as claude_code_records
from .claude_code.fields import content_blocks
from .claude_code.hook_context import folded_into
from .formats import handler
from .model import REPLACED_BLOCKS, Transcript, deep_replace
from .shapes import problem
from .view import BlockRef, ViewMessage


@dataclass
class NewMessage:
    """A message to append after the last one: a reminder or attachment the model should read."""

    texts: list[str]
    role: str = "user"  # "user" or "system" (Claude Code renders some state as mid-conversation system text)
    attachment: dict[str, Any] | None = None  # the Claude Code attachment record, when it is one
    flags: dict[str, Any] = field(default_factory=dict)  # extra entry fields for a Claude Code user entry


def replace_blocks(t: Transcript, changes: dict[BlockRef, dict]) -> Transcript:
    """Replace content blocks (e.g. a tool_result) in the entries that hold them."""
    if not changes:
        return t
    h = handler(t.format)
    edited: dict[int, dict] = {}
    changed: list[tuple[int, tuple]] = []  # the outputs written, for the copies the agent sends with them
    for ref, block in changes.items():
        entry = edited.get(ref.entry, t.entry(ref.entry))
        if h.tool_outputs is not None and block.get("type") == "tool_result":
            edited[ref.entry], written = tool_outputs.write(t, entry, ref, block.get("content"))
            if written is not None:
                changed.append((ref.entry, written))
            continue
        if t.format == "openai":
            edited[ref.entry] = _openai_replace(entry, ref, block)
            continue
        if ref.block < 0:
            edited[ref.entry] = deep_replace(entry, list(h.content_path), [block])
        else:
            edited[ref.entry] = deep_replace(entry, [*h.content_path, ref.block], block)
    tool_outputs.write_copies(t, edited, changed)
    out = t.with_edits(replace=edited)
    if t.format == "claude-code" and all(ref.block >= 0 for ref in changes):
        # what changed, for the projection (claude_code_carry.carried_over): these blocks, nothing else
        out.memo[REPLACED_BLOCKS] = dict(changes)
    return out


def written_results(t: Transcript, m: ViewMessage) -> list[dict]:
    """The blocks of view message ``m``, each tool result a hook's context was folded into (Claude Code
    2.0.67-2.1.150 send it so from the next turn on, :mod:`.claude_code.hook_context`) as its entry holds
    it: the context is no part of the result, so a stage that stores, clears or compares results works on
    the result itself. (Else the store kept the context as the output, and a second run, finding the
    folded placeholder unlike its own, cleared the placeholder over the output.)"""
    out = m.content
    if t.format != "claude-code":
        return out
    for k, (b, ref) in enumerate(zip(m.content, m.refs, strict=True)):
        shown = b.get("content")
        if ref is None or ref.block < 0 or not isinstance(shown, str) or not shown.endswith("</system-reminder>") \
                or b.get("type") != "tool_result":  # (only then is the entry read: a fold ends with a context)
            continue
        blocks, _ = content_blocks(t.entry(ref.entry))
        own = blocks[ref.block] if ref.block < len(blocks) else None
        if isinstance(own, dict) and own.get("tool_use_id") == b.get("tool_use_id") \
                and folded_into(shown, own.get("content")):
            out = list(out) if out is m.content else out
            out[k] = own
    return out


def _openai_replace(entry: dict, ref: BlockRef, block: dict) -> dict:
    if block.get("type") == "tool_result":
        c = block.get("content")
        text = c if isinstance(c, str) else "\n\n".join(b.get("text", "") for b in c or [] if b.get("type") == "text")
        return {**entry, "content": text}
    if block.get("type") == "text":
        content = entry.get("content")
        if isinstance(content, str) or ref.block < 0:
            return {**entry, "content": block["text"]}
        new = list(content)
        new[ref.block] = {"type": "text", "text": block["text"]}
        return {**entry, "content": new}
    return entry


def append_messages(t: Transcript, items: list[NewMessage], timestamp: str) -> Transcript:
    """Append messages after the last entry: never inserted earlier, never touching an earlier byte."""
    if not items:
        return t
    if t.format == "claude-code":
        makers = []
        for item in items:
            if item.attachment is not None:
                makers.append(lambda parent, it=item: claude_code_entries.attachment_entry(
                    t, parent, timestamp, it.attachment, it.texts, it.role))
            else:
                makers.append(lambda parent, it=item: claude_code_entries.user_entry(
                    t, parent, timestamp, "\n\n".join(it.texts), **({"isMeta": True} | it.flags)))
        return claude_code_entries.append_chain(t, makers)
    lines = []
    for item in items:
        texts = item.texts if item.role == "user" else [as_reminder(x) for x in item.texts]
        if t.format == "openai":
            lines.append({"role": "user", "content": "\n\n".join(texts)})
        else:
            lines.append({"role": "user", "content": [{"type": "text", "text": x} for x in texts]})
    return t.with_edits(append=lines)


def plain_message(t: Transcript, role: str, text: str) -> dict:
    """One line of a plain transcript holding a text message."""
    if t.format == "openai":
        return {"role": role, "content": text}
    if t.format == "cursor":  # (its lines hold the message under ``message``)
        return {"role": role, "message": {"content": [{"type": "text", "text": text}]}}
    line = {"role": role, "content": [{"type": "text", "text": text}]}
    if t.format == "cline":  # Roo Code's messages carry a ``ts``: the newest one's, as Roo gives its summaries
        ts = next((d["ts"] for d in (t.entry(i) for i in reversed(list(t.live_indexes())))
                   if isinstance(d.get("ts"), int) and not isinstance(d.get("ts"), bool)), None)
        if ts is not None:
            line["ts"] = ts
    return line


def replace_plain_range(t: Transcript, entries: list[int], new_line: dict | None) -> Transcript:
    """Plain formats: remove the lines ``entries``, putting ``new_line`` (if any) where the first one was.

    (Removed lines are the caller's to archive in the store first: nothing may be lost.)
    """
    if not entries:
        return t
    first, *rest = sorted(entries)
    if new_line is None:
        return t.with_edits(remove=[first, *rest])
    return t.with_edits(replace={first: new_line}, remove=rest)


def history_as_read(t: Transcript, before: Transcript | None = None) -> tuple[Transcript, list[int]]:
    """``t`` with the edits of conversation entries that are no longer part of its view dropped, and
    the lines whose edits were; ``before``: the transcript the run started from (edits it already had are kept).
    A later stage of the same run took them out of the view (a compaction put them behind its
    boundary, a snip removed them): the model is never sent them again, so their lines are written as
    read. The history stays as the agent wrote it, as Claude Code's own compaction leaves it; and a
    run that compacts a long session writes only what its view needs (a cleared result behind the
    boundary would cost a rewritten line, its original bytes kept in the store, and a checkpoint that
    indexes it again). Nothing is dropped unless the walk of the chain is the same without those edits
    (a relinked entry behind the boundary keeps every edit): the view is then the same too."""
    if not t.overrides:
        return t, []
    if t.format != "claude-code":
        return _outputs_as_read(t, before)
    order, _ = claude_code_chain.active_entries(t)
    in_view = set(order)
    earlier = before.overrides if before is not None else {}
    types, n = claude_code_chain.CONVERSATION_TYPES, t.n_lines
    behind = [i for i in t.overrides
              if i < n and i not in in_view and i not in earlier and t.lines.type(i) in types]
    if not behind:
        return t, []
    as_read = t.without_edits(behind)
    if claude_code_chain.active_entries(as_read)[0] is not order:  # carried over: no routing field changed
        return t, []
    return as_read, behind


def _outputs_as_read(t: Transcript, before: Transcript | None) -> tuple[Transcript, list[int]]:
    """:func:`history_as_read` for a format that keeps tool outputs in lines of their own (Codex, Gemini
    CLI, OpenCode): an output replaced by this run on a line the view no longer reads (behind the
    ``compacted`` line, the ``$rewindTo``, the compaction a compaction appended) is written as read."""
    if not tool_outputs.has_outputs(t.format):
        return t, []
    view = t.view()
    in_view = {i for m in view.messages for i in m.entries} | {r.entry for m in view.messages for r in m.refs if r}
    earlier = before.overrides if before is not None else {}
    # (a line a compaction removed went to the store as it was edited: its decisions restore it)
    behind = [i for i in t.overrides if i < t.n_lines and i not in in_view and i not in earlier and i not in t.removed]
    if not behind:
        return t, []
    as_read = t.without_edits(behind)
    if as_read.view().api_messages() != view.api_messages():
        return t, []
    return as_read, behind


# -- thinking after an edit, and the originals of rewritten entries ------------------------------
THINKING_TYPES = ("thinking", "redacted_thinking")


def strip_thinking_after(t: Transcript, first_changed: int) -> tuple[Transcript, dict[int, dict]]:
    """Remove thinking blocks from every assistant message at or after view message ``first_changed``.

    A thinking block's signature covers everything before it (TRANSCRIPTS.md 9.3): once a stage
    changed message ``first_changed``, the thinking of that and every later assistant turn is
    invalid for models that check the prefix, and omitting it is valid for all models. Returns the
    new transcript and ``{entry index: original entry}`` of the entries it rewrote, for the caller
    to archive (:func:`archive_entries`). Plain lines left with no content are removed; a Claude
    Code fragment keeps an empty content list (its siblings carry the rest of the message).
    """
    if t.format == "openai":  # chat messages carry no thinking blocks
        return t, {}
    drop: dict[int, set[int]] = {}
    for m in t.view().messages[max(0, first_changed):]:
        if m.role != "assistant":
            continue
        for block, ref in zip(m.content, m.refs, strict=True):
            if block.get("type") in THINKING_TYPES and ref is not None and ref.block >= 0:
                drop.setdefault(ref.entry, set()).add(ref.block)
    if not drop:
        return t, {}
    path = list(handler(t.format).content_path)
    edited: dict[int, dict] = {}
    removed: list[int] = []
    originals: dict[int, dict] = {}
    for i, blocks in sorted(drop.items()):
        entry = t.entry(i)
        content = entry
        for key in path:
            content = content[key]
        kept = [b for k, b in enumerate(content) if k not in blocks]
        originals[i] = entry
        if not kept and t.format != "claude-code":
            removed.append(i)
        else:
            edited[i] = deep_replace(entry, path, kept)
    return t.with_edits(replace=edited, remove=removed), originals


ARCHIVE_RECORD = "archive"
#: the key of an archived Claude Code entry that has no uuid: its line number (``line:12``)
LINE_KEY = "line:"


def archive_entries(t: Transcript, store: Any, originals: dict[int, dict], timestamp: str,
                    reason: str, by_line: bool = False) -> tuple[Transcript, str | None]:
    """Keep the original of every entry a stage rewrote or removed, so nothing is lost.

    The originals go to the store as one JSON blob (Claude Code entries keyed by uuid, or by ``line:N``
    when they have none; plain lines by input line number). For Claude Code an ``archive`` record pointing at the blob is
    appended, and :func:`restore_archived` (``ctxkit expand``) puts the entries back; plain
    formats have nowhere to write a pointer, so the caller reports the path. ``by_line``: key every
    Claude Code entry by its line number (entries off the chain, whose uuid another line may carry too).
    """
    if not originals:
        return t, None
    if t.format == "claude-code":  # by uuid; a line without one (a snapshot) by its line number, ``line:N``
        payload = {(not by_line and entry.get("uuid")) or f"{LINE_KEY}{t.line_no(i)}": entry
                   for i, entry in originals.items() if (not by_line and entry.get("uuid")) or t.line_no(i)}
    else:
        payload = {str(t.line_no(i)): entry for i, entry in sorted(originals.items())}
    path = str(store.put_json(payload))
    if t.format == "claude-code" and payload:
        record = claude_code_entries.record_entry(t, ARCHIVE_RECORD, timestamp, blob=path, uuids=sorted(payload),
                                          reason=reason)
        t = t.with_edits(append=[record])
    return t, path


def restore_archived(t: Transcript, store: Any, left: list | None = None, restored: list | None = None) -> Transcript:
    """Put back the entries ``archive`` records point at (newest record first) and drop those records.

    Only a blob of the store is read (by its content-addressed name, ``store.fetch_blob``): a record
    naming any other file, or whose blob is missing from the store, stays in place, so the loss
    remains visible, and so does one whose blob is not what ctxkit archives (JSON: uuid -> an entry of
    the shape shapes.py describes: a damaged or foreign file is never read into the transcript); each
    is appended to ``left`` as ``(ARCHIVE_RECORD, blob, why refused or None)``.
    Idempotent: a transcript without archive records is returned unchanged. ``restored``, when given,
    gets the index of each line put back.
    """
    if t.format != "claude-code":
        return t
    records = claude_code_records.records(t, ARCHIVE_RECORD)
    if not records:
        return t
    by_uuid = claude_code_chain.uuid_index(t)
    edits: dict[int, dict] = {}
    done: list[int] = []
    for r, rec in reversed(records):
        blob = rec.get("blob", "")
        try:
            data = store.fetch_blob(blob if isinstance(blob, str) else "")
        except Refused as exc:
            data, why = None, exc.reason
        else:
            why = None
        entries, wrong = _archived_entries(data) if data is not None else (None, None)
        if not entries:
            if left is not None:
                left.append((ARCHIVE_RECORD, str(blob), why or wrong))
            continue
        for uid, entry in entries.items():
            if uid in by_uuid:
                edits[by_uuid[uid]] = entry
            elif uid.startswith(LINE_KEY) and uid[len(LINE_KEY):].isdigit() and 0 < int(uid[len(LINE_KEY):]) <= t.n_lines:
                edits[int(uid[len(LINE_KEY):]) - 1] = entry
        done.append(r)
    if restored is not None:
        restored.extend(sorted(edits))
    return t.with_edits(replace=edits, remove=done)


def _archived_entries(data: bytes) -> tuple[dict[str, dict], str | None]:
    """The entries of an archive blob, or why it is not one."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return {}, "is not JSON"
    if not isinstance(value, dict):
        return {}, "is not a JSON object of archived entries"
    for uid, entry in value.items():
        wrong = problem("claude-code", entry) if isinstance(entry, dict) else "is not an object"
        if wrong is not None:
            return {}, f"holds an entry {quote_id(uid, as_json=True)} that is not one ({wrong})"
    return value, None
