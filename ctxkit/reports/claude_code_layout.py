"""The messages of the next request in Claude Code's own layout, for a Claude Code transcript.

With request records (Claude Code 2.1.3xx, :mod:`ctxkit.transcript.claude_code.requests`), the next
request is the newest recorded one, rebuilt exactly (its digest checked against ``requestDigest``),
followed by what the session added since, in the order Claude Code adds it:

* the conversation's new messages (the answer, its tool results, a new prompt), as the view has them;
  user messages Claude Code merged into one (a local command's lines and output with the next prompt,
  a notification after the tools-used reminder) as the blob it recorded for them;
* the system-role messages of the attachments written since; a message Claude Code recorded as a
  blob is taken from the blob (it may carry fields the attachment does not, such as
  ``output_config``);
* blobs written since that the view does not hold: the messages Claude Code composed for the request
  it was about to send (they are written just before its ``api-request`` entry).

Without a usable record (none yet; the history compacted since, by Claude Code or by ctxkit; an entry
a stage rewrote, so the digests no longer match), the blobs written since the start of the current
history are the request when there are any (Claude Code writes the whole first request of a history
as blobs), followed by the conversation written after them. Otherwise — older sessions, and a history
ctxkit compacted — the view in the best-known layout: Claude Code opens the history with one user
message holding the reminders of the first turn's attachments, then the prompt (or the compact
summary), and puts the system-role messages after it (:func:`best_known_layout`).

``fold`` (a model that takes no system-role messages): the blobs of such a session hold the system
messages folded into user messages; they are recognised as the view's messages through
:func:`ctxkit.reports.claude_code_fold.unfolded_blocks`, and what is left of system messages is folded
as Claude Code folds them (:func:`ctxkit.reports.claude_code_fold.fold`).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from ..transcript.claude_code.requests import (
    RequestRecord,
    RequestRecords,
    as_blocks,
    billing_header,
    message_digest,
    request_records,
    without_cache_control,
)
from ..transcript.model import Transcript
from ..transcript.view import ASSISTANT, ATTACHMENT, META, PROMPT, SUMMARY, SYSTEM, ViewMessage
from .claude_code_fold import (
    consecutive_holding,
    folded_run,
    name_only_announcements,
    normalized,
    piece,
    system_message,
    system_reminders,
    unfolded_blocks,
    with_answers,
)
from .claude_code_fold import fold as fold_system_messages

REMINDER_PREFIX = "<system-reminder>"
#: How the lines Claude Code writes for a command typed as a prompt start.
COMMAND_LINES = ("<command-message>", "<command-name>", "<local-command-caveat>")
#: The blocks of a system message that tell the model a tool came or went mid-session (the
#: mid-conversation-tool-changes beta): a tool denied in an earlier run and allowed in a resumed one gets
#: ``{"type": "tool_addition", "tool": {"type": "tool_reference", "name": ...}}`` after the text of the
#: ``deferred_tools_delta`` attachment that names it in ``surfacedNames``. Only the blob holds it.
TOOL_CHANGE_BLOCKS = ("tool_addition", "tool_removal")
#: The system blocks Claude Code marks as cache breakpoints when no request of the session says.
DEFAULT_SYSTEM_BREAKPOINTS = (0, 1)


@dataclass
class Layout:
    """The messages of the next request, and the record they continue (None: built from the view)."""

    messages: list[dict[str, Any]]
    record: RequestRecord | None
    records: RequestRecords
    how: str  # "recorded" | "blobs" | "view"


def claude_code_layout(t: Transcript, msgs: list[ViewMessage], *, fold: bool = False) -> Layout:
    """The next request's messages for the view messages ``msgs`` of ``t`` (see the module docstring);
    ``fold``: for a model that takes no system-role messages."""
    layout = _layout(t, msgs, fold)
    if fold:
        layout.messages = fold_system_messages(layout.messages)
    return layout


def _layout(t: Transcript, msgs: list[ViewMessage], fold: bool) -> Layout:
    records = request_records(t)
    if fold:  # (a model that takes no tool changes either)
        msgs = name_only_announcements(t, msgs)
    if not records.requests and not records.blobs:  # a session that records no requests
        return Layout(best_known_layout(msgs, fold=fold), None, records, "view")
    by_digest: dict[str, dict] = {}
    for m in msgs:
        by_digest.setdefault(message_digest(m.api()), m.api())
    start = _history_start(msgs)
    record = next((r for r in reversed(records.requests) if r.index > start), None)
    pieces = _view_pieces(msgs, fold)
    sent = records.messages(record, by_digest.get) if record is not None else None
    if record is not None and sent is not None and records.verified(record, by_digest.get) \
            and all(_in_view(m, pieces, fold) for m in sent):
        out = [without_cache_control(m) for m in sent]
        return Layout(out + _since(records, msgs, record.index, {message_digest(m) for m in out}, fold), record,
                      records, "recorded")
    lead = _lead(msgs)
    newest = max(start, records.requests[-1].index if records.requests else start)
    # Claude Code opened this history itself: it wrote the whole first request as blobs; or it wrote the
    # whole request again since its newest one (after a change between a model that takes system messages
    # and one that does not, the messages it sent before are laid out otherwise)
    for since in dict.fromkeys((start, newest)):
        blobs = sorted((at, h, m) for h, (at, m) in records.blobs.items() if at > since)
        if blobs and lead is not None \
                and any(_holds(m, _opening_text(lead)) for _, _, m in blobs if m.get("role") == "user") \
                and all(_in_view(m, pieces, fold) for _, _, m in blobs):
            out = [copy.deepcopy(m) for _, _, m in blobs]
            # (a forked session's first request: the blobs of its opening, the copied conversation after them)
            out = with_answers(_with_calls(out, msgs) if since == start else out, msgs, blobs[-1][0], fold)
            later = [m for m in msgs if min(m.entries, default=-1) > blobs[-1][0]]
            return Layout(out + [m.api() for m in later], None, records, "blobs")
    return Layout(best_known_layout(msgs, records, fold=fold), None, records, "view")


def _with_calls(blobs: list[dict], msgs: list[ViewMessage]) -> list[dict]:
    """The blobs of a history's first request, each message of tool results after the view's assistant
    message that made those calls when the blob before it is not that message. Claude Code 2.1.300 writes
    a blob only for a message it has not recorded before, and after its own compaction it had recorded
    the kept tail's answer already: the request holds the answer, the blobs do not (2.1.328 writes the
    whole request again)."""
    out: list[dict] = []
    for blob in blobs:
        ids = [b.get("tool_use_id") for b in as_blocks(blob)["content"] if isinstance(b, dict)
               and b.get("type") == "tool_result"]
        if ids and blob.get("role") == "user" and not (out and _calls(out[-1]) >= set(ids)):
            answer = next((m.api() for m in msgs if m.kind == ASSISTANT and _calls(m.api()) >= set(ids)), None)
            if answer is not None:
                out.append(answer)
        out.append(blob)
    return out


def _calls(message: dict) -> set[str]:
    """The ids of the tool calls of an assistant message (none for another)."""
    if message.get("role") != "assistant":
        return set()
    return {b["id"] for b in as_blocks(message)["content"] if isinstance(b, dict) and b.get("type") == "tool_use"
            and isinstance(b.get("id"), str)}


def _blobs_in_order(records: RequestRecords) -> list[dict]:
    """The recorded messages in the order they were written (request_records keeps only API-shaped ones)."""
    return [m for _, m in sorted(records.blobs.values(), key=lambda b: b[0])]


def _view_pieces(msgs: list[ViewMessage], fold: bool = False) -> set[str]:
    """Every piece of the view a recorded message may hold: each text (stripped; a system message's
    texts joined, too), and each other block as canonical JSON; with ``fold``, a system message's texts
    as reminders and a tool result's text stripped too (the pieces of a folded message)."""
    out: set[str] = set()
    for m in msgs:
        blocks = as_blocks(m.api())["content"]
        for b in blocks:
            out.add(piece(b))
            if fold:
                out.add(piece(normalized(b)))
        if m.role == "system":  # one message of several attachments: each one's text, and all joined
            out.update(piece(b) for b in m.content)
            out.add(_text(m.api()).strip())
            if fold:
                out.update(piece(normalized({"type": "text", "text": x})) for x in system_reminders(m.content))
    return out


def _in_view(message: dict, pieces: set[str], fold: bool = False) -> bool:
    """Whether every block of a recorded message is still in the view: a stage that rewrote or removed
    one (a cleared tool result, a dropped reminder) makes the record stale, and the request is then
    built from the view. With ``fold``, a tool result may carry reminders Claude Code appended to it.
    A system message's tool change blocks (:data:`TOOL_CHANGE_BLOCKS`) are no text of the view: they
    say nothing a stage rewrites, so they never make a record stale."""
    return all(piece(b) in pieces or _joined(piece(b), pieces)
               or (fold and all(piece(normalized(u)) in pieces for u in unfolded_blocks(b)))
               or (message.get("role") == "system" and isinstance(b, dict) and b.get("type") in TOOL_CHANGE_BLOCKS)
               for b in as_blocks(message).get("content") or [])


def _joined(text: str, pieces: set[str]) -> bool:
    """Whether ``text`` is view texts joined by blank lines (Claude Code merges the system texts of
    attachments written together, the date after the environment, say, into one message)."""
    ends, k = {0}, 0
    while k < len(text):
        if k in ends:
            for p in pieces:
                if p and text.startswith(p, k):
                    end = k + len(p)
                    ends.add(end)
                    if text.startswith("\n\n", end):
                        ends.add(end + 2)
        k += 1
    return len(text) in ends


def _history_start(msgs: list[ViewMessage]) -> int:
    """The entry index where the current history starts: its compact summary (-1: the session's start)."""
    for m in msgs:
        if m.kind == SUMMARY and m.entries:
            return min(m.entries)
    return -1


def _since(records: RequestRecords, msgs: list[ViewMessage], index: int, sent: set[str],
           fold: bool = False) -> list[dict]:
    """What the session added after entry ``index``: the view's messages (a system message as its blob
    when Claude Code recorded one), then the blobs written since that none of them is."""
    blobs = _blobs_in_order(records)
    new = [m for m in msgs if min(m.entries, default=-1) > index]
    users = [(h, m) for h, (at, m) in sorted(records.blobs.items(), key=lambda kv: kv[1][0])
             if at > index and m.get("role") == "user"]
    out: list[dict] = []
    seen = set(sent)
    k = 0
    while k < len(new):
        run, recorded = folded_run(new, k, users) if fold else _recorded_run(new, k, users)
        # the merged user message(s), then the system messages written among its parts (folded into it)
        added = [_as_recorded(new[k], blobs, fold)] if recorded is None else \
            [*recorded, *(_as_recorded(m, blobs) for m in new[k:k + run] if m.role == "system" and not fold)]
        out += added
        seen.update(message_digest(m) for m in added)
        k += run
    for h, (at, message) in sorted(records.blobs.items(), key=lambda kv: kv[1][0]):
        if at > index and h not in seen:
            out.append(copy.deepcopy(message))
            seen.add(h)
    return out


def _recorded_run(new: list[ViewMessage], k: int, users: list[tuple[str, dict]]) -> tuple[int, list[dict] | None]:
    """The user messages of the view from ``new[k]`` on that Claude Code sent as recorded messages, and
    those: it merges consecutive user messages (a prompt after a local command's lines, the reminders
    written with it, a notification after a summary of tools used), ending each text but the last with a
    newline, so the merged message is a blob and not the view's messages. A prompt that mentions a text
    file in a later turn is sent as several: the Read's call and result each a message of its own, the
    last reminder merged with the prompt (consecutive blobs, in the order written). The system messages
    among them (a resumed run's model attachment after its prompt) are sent after them. (1, None) when
    no run of consecutive blobs written since holds exactly the pieces of a run of them."""
    if new[k].role != "user" or not users:
        return 1, None
    held = [sorted(piece(b) for b in as_blocks(blob)["content"]) for _, blob in users]
    pieces: list[str] = []
    for end in range(k, len(new)):
        if new[end].role == "system":
            continue
        if new[end].role != "user":
            break
        pieces += [piece(b) for b in as_blocks(new[end].api())["content"]]
        found = consecutive_holding(held, sorted(pieces))
        if found is not None:
            return end - k + 1, [copy.deepcopy(blob) for _, blob in users[found]]
    return 1, None


def best_known_layout(msgs: list[ViewMessage], records: RequestRecords | None = None, *,
                      fold: bool = False) -> list[dict]:
    """The view as Claude Code lays out the opening of a history: the first user message holds the
    reminders of the attachments written before the first answer, then the prompt (or the compact
    summary) itself; the system-role messages of that turn follow it. The rest is the view's order.

    A message Claude Code recorded (a blob with the same text: the opening user message holding the
    prompt, a system message) is taken as recorded, so that a request built here and one rebuilt from
    the records agree wherever the conversation is the same."""
    blobs = _blobs_in_order(records) if records is not None else []
    first_answer = next((k for k, m in enumerate(msgs) if m.kind == ASSISTANT), len(msgs))
    opening = msgs[:first_answer]
    lead = _lead(opening)
    if lead is None:
        return [_as_recorded(m, blobs, fold) for m in msgs]
    reminders = [m for m in opening if m.kind == ATTACHMENT and m.role == "user"]
    recorded = next((b for b in reversed(blobs) if b.get("role") == "user" and _holds(b, _opening_text(lead))), None)
    if recorded is not None and not _in_view(recorded, _view_pieces(msgs)):
        recorded = None  # a stage changed what it holds: the view's own messages, laid out
    if recorded is not None:
        head = copy.deepcopy(recorded)
    else:
        own = list(as_blocks(lead.api())["content"])
        front = [b for m in reminders for b in as_blocks(m.api())["content"]]
        if lead.kind == PROMPT:  # a reminder the view merged into the prompt's message goes first, too
            front += [b for b in own if _is_reminder(b)]
            own = [b for b in own if not _is_reminder(b)]
        head = {"role": "user", "content": front + own} if front and own else lead.api()
    moved = {id(lead), *(id(m) for m in reminders)}
    rest = [_as_recorded(m, blobs, fold) for m in opening if id(m) not in moved and m.kind != SYSTEM]
    systems = [_as_recorded(m, blobs, fold) for m in opening if m.kind == SYSTEM]
    return [head, *rest, *systems, *(_as_recorded(m, blobs, fold) for m in msgs[first_answer:])]


def _is_reminder(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") == "text" \
        and str(block.get("text", "")).startswith(REMINDER_PREFIX)


def _lead(msgs: list[ViewMessage]) -> ViewMessage | None:
    """The message that opens the history: the compact summary, else the first prompt (a command typed as
    the prompt, ``/greet Alice``, opens it as its command lines: the view keeps them as harness text)."""
    return next((m for m in msgs if m.kind == SUMMARY), None) or next(
        (m for m in msgs if m.kind == PROMPT or m.kind == META and _opening_text(m).startswith(COMMAND_LINES)), None)


def _text(message: dict) -> str:
    return "\n\n".join(b.get("text", "") for b in as_blocks(message)["content"]
                       if isinstance(b, dict) and b.get("type") == "text")


def _opening_text(lead: ViewMessage) -> str:
    """The text that identifies the message opening a history: its first text that is not a reminder (a
    prompt, a compact summary, or the command line of a custom command, which its expansion follows)."""
    return next((b["text"] for b in as_blocks(lead.api())["content"] if isinstance(b, dict) and b.get("type") == "text"
                 and isinstance(b.get("text"), str) and not _is_reminder(b)), "")


def _holds(message: dict, text: str) -> bool:
    """Whether ``message`` has a text block (or a string content) that is ``text``, but for the newline
    Claude Code ends a text with when it merges the next user message into it."""
    return bool(text) and any(isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
                              and b["text"].removesuffix("\n") == text.removesuffix("\n")
                              for b in as_blocks(message)["content"])


def _as_recorded(m: ViewMessage, blobs: list[dict], fold: bool = False) -> dict:
    """A system message as Claude Code recorded it (a blob with the same text), else as the view has it;
    with ``fold``, one text block per attachment (each is folded as a reminder of its own)."""
    api = m.api()
    if m.role != "system":
        return api
    if fold:
        return system_message(m.content)
    text = _text(api)
    recorded = next((b for b in reversed(blobs) if b.get("role") == "system" and _text(b) == text), None)
    return copy.deepcopy(recorded) if recorded is not None else api


def first_prompt_text(messages: list[dict]) -> str:
    """The text Claude Code's billing fingerprint reads: the first text of a user message that is not a
    reminder. Usually the first message's; a prompt that mentions a file (``@app/models.py explain``)
    follows the messages of the Read it triggered, which are reminders only."""
    for message in messages:
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        for block in as_blocks(message).get("content") or []:
            text = block.get("text") if isinstance(block, dict) and block.get("type") == "text" else None
            if isinstance(text, str) and not text.startswith(REMINDER_PREFIX):
                return text
    return ""


def session_header(t: Transcript, records: RequestRecords, msgs: list[ViewMessage], messages: list[dict]) -> str | None:
    """Claude Code's billing header block for this session's next request (None when the session
    records no requests): the newest record's version, the entry point the newest conversation entry
    names."""
    if not records.version:  # (before the entries are looked through: a session that records none, on every request)
        return None
    entrypoint = next((t.entry(i).get("entrypoint") for m in reversed(msgs) for i in m.entries
                       if isinstance(t.entry(i).get("entrypoint"), str)), None)
    if not entrypoint:
        return None
    return billing_header(records.version, entrypoint, first_prompt_text(messages))


def mark_breakpoints(body: dict[str, Any], records: RequestRecords, *, shifted: int) -> None:
    """Put ``cache_control`` where Claude Code puts it: the system blocks its newest request marked
    (the first two before any request; ``shifted`` by the blocks put before them), and the last block of
    the last message."""
    if not records.shapes and not records.requests:
        return
    system = body.get("system")
    if isinstance(system, list):
        marks = [(m["path"][1], m.get("value")) for m in records.requests[-1].cache_control
                 if len(m["path"]) == 2 and m["path"][0] == "system" and isinstance(m["path"][1], int)] \
            if records.requests else [(k, {"type": "ephemeral"}) for k in DEFAULT_SYSTEM_BREAKPOINTS]
        for k, value in marks:
            if 0 <= k + shifted < len(system) and isinstance(system[k + shifted], dict):
                system[k + shifted] = {**system[k + shifted], "cache_control": value}
    messages = body.get("messages") or []
    if messages:
        last = as_blocks(messages[-1])
        blocks = list(last["content"])
        if blocks and isinstance(blocks[-1], dict):
            blocks[-1] = {**blocks[-1], "cache_control": {"type": "ephemeral"}}
            messages[-1] = {**last, "content": blocks}
