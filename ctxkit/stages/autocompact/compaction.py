"""Writing a compaction into a transcript: a summary replaces the history, a recent tail stays verbatim.

Autocompact decides *what* to summarize and *what* to keep; this module knows
*how* each format records it, so that the output is a transcript its own tools
still read:

* **Claude Code** — exactly what Claude Code 2.1.x appends when it compacts
  (see corpus ``autocompact`` / ``manual-compact``): a ``system`` /
  ``compact_boundary`` entry (``parentUuid: null``, ``logicalParentUuid`` = the
  old leaf, ``compactMetadata`` with ``trigger``, ``preTokens``, ``postTokens``
  and the ``preservedSegment`` head/anchor/tail), then the summary as a
  ``user`` entry with ``isCompactSummary: true`` chained on the boundary, then
  the re-injected attachments chained on the summary. Nothing is rewritten:
  the old entries stay in the file behind the boundary (nothing lost), and the
  kept tail is not copied but *linked*: ``preservedSegment`` names its first
  and last entries, and readers (Claude Code, and :mod:`ctxkit.transcript.claude_code`)
  splice it in right after the summary. A ``ctxkit-record`` line notes how the
  summary was made.
* **Anthropic / OpenAI message lists** — no place for bookkeeping: the
  summarized lines are archived in the store, replaced by one user message
  holding the summary (which names the archive), and the kept tail follows
  unchanged. Leading system messages (the system prompt) stay where they are.
* **Codex CLI rollouts** — one ``compacted`` line appended, as Codex records its own
  (:mod:`ctxkit.transcript.codex.compaction`); **Gemini CLI sessions** — a ``$rewindTo`` and the new
  history appended (:mod:`ctxkit.transcript.gemini.compaction`); **OpenCode exports** — a compaction message and its
  summary appended (:mod:`ctxkit.transcript.opencode.compaction`).

The kept tail never splits a tool_use from its tool_result: :func:`safe_start`
and :func:`choose_tail_start` only cut in front of a message that carries no
tool results, and for Claude Code :func:`feasible_keep_from` checks, by
projecting a trial compaction, that the tail Claude Code will rebuild is exactly
the tail that was chosen.

Over 400 lines: every format's way of recording a compaction and of undoing it, which share the
summary text and the checks of the kept tail.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from ...confined import BLOB_NAME, Refused
from ...errors import CtxkitError
from ...summarize.prompt import CONTINUATION_PREFIX, continuation_message
from ...transcript import codex, gemini, opencode
from ...transcript.claude_code import chain as claude_code_chain
from ...transcript.claude_code import entries as claude_code_entries
from ...transcript.codex.compaction import uncompact as uncompact_codex
from ...transcript.codex.compaction import write_compacted
from ...transcript.edits import NewMessage, append_messages, plain_message, replace_plain_range
from ...transcript.gemini.compaction import document_lines as gemini_document_lines
from ...transcript.gemini.compaction import in_document as in_gemini_document
from ...transcript.gemini.compaction import uncompact as uncompact_gemini
from ...transcript.gemini.compaction import write_compacted as write_gemini_compacted
from ...transcript.model import Transcript
from ...transcript.opencode.compaction import uncompact as uncompact_opencode
from ...transcript.opencode.compaction import write_compacted as write_opencode_compacted
from ...transcript.shapes import problem
from ...transcript.view import SUMMARY, SYSTEM, View, ViewMessage

#: The sentence that follows the summary when recent messages are kept verbatim after it.
TAIL_NOTE = (
    "The messages that follow this summary are the most recent ones from before the compaction, kept word for "
    "word. The summary was written without them, so they may show that something it lists as pending is done."
)
BOUNDARY_CONTENT = "Conversation compacted"
RECORD_KIND = "compaction"


class CompactionError(CtxkitError):
    """A compaction could not be written as planned (the transcript is left as it was)."""


@dataclass
class Compaction:
    """What to write: the summary of ``view.messages[:keep_from]``, the kept tail, the re-injected state."""

    summary: str  # the summary body (nine sections, or session-memory notes), not yet wrapped
    keep_from: int  # index in view.messages of the first kept message (len(messages): nothing kept)
    trigger: str = "auto"  # "auto" | "manual"
    pre_tokens: int = 0
    method: str = "summary"  # "summary" | "session-memory"
    reinjected: list[NewMessage] = field(default_factory=list)
    transcript_hint: str | None = None  # where the full pre-compaction history can be read
    record: dict[str, Any] = field(default_factory=dict)  # extra facts for the ctxkit record (Claude Code)


@dataclass
class Written:
    transcript: Transcript
    post_tokens: int
    details: dict[str, Any]


# -- where a tail may start ---------------------------------------------------------------------
def safe_start(view: View, i: int) -> bool:
    """Whether the kept tail may begin at message ``i``: it must not be the tool results of message ``i-1``."""
    if i >= len(view.messages):
        return True
    m = view.messages[i]
    return not (m.role == "user" and any(b.get("type") == "tool_result" for b in m.content))


def floor_index(t: Transcript, view: View) -> int:
    """The first message a kept tail may include.

    Not the summary of an earlier compaction (the new summary covers it), not
    a message of an earlier compaction's preserved segment (Claude Code
    cannot chain a new segment through it), and for plain formats not the
    leading system messages (they stay in place).
    """
    floor = 0
    for i, m in enumerate(view.messages):
        if m.kind == SUMMARY:
            floor = i + 1
    if t.format == "claude-code":
        _, facts = claude_code_chain.active_entries(t)
        segment = set(facts.get("segment") or [])
        if segment:
            for i, m in enumerate(view.messages):
                if segment & set(m.entries):
                    floor = max(floor, i + 1)
    else:
        lead = 0
        while lead < len(view.messages) and view.messages[lead].kind == SYSTEM:
            lead += 1
        floor = max(floor, lead)
    return min(floor, len(view.messages))


def has_text(m: ViewMessage) -> bool:
    """A message with words in it (a prompt or an assistant reply), as opposed to only tool traffic."""
    return m.role in ("user", "assistant") and any(b.get("type") == "text" and str(b.get("text", "")).strip()
                                                   for b in m.content)


def choose_tail_start(view: View, count: Callable[[list[dict]], int], start: int, floor: int, *,
                      min_tokens: int = 0, min_text_messages: int = 0, min_rounds: int = 0,
                      max_tokens: int) -> int:
    """Where the kept tail begins (Claude Code's ``calculateMessagesToKeepIndex``).

    Starts at ``start`` (moved back to a safe cut), then grows backwards one
    round at a time (an assistant message together with its tool results, or
    a lone message) until the tail holds ``min_tokens`` tokens,
    ``min_text_messages`` messages with text and ``min_rounds`` rounds, never
    going below ``floor`` and never adding a round that would take it past
    ``max_tokens``.
    """
    n = len(view.messages)
    start = max(min(start, n), floor)
    while start > floor and not safe_start(view, start):
        start -= 1
    tokens = count([m.api() for m in view.messages[start:]])
    texts = sum(1 for m in view.messages[start:] if has_text(m))
    rounds = 0
    while start > floor and (tokens < min_tokens or texts < min_text_messages or rounds < min_rounds):
        prev = start - 1
        while prev > floor and not safe_start(view, prev):
            prev -= 1
        if not safe_start(view, prev):
            break
        unit = view.messages[prev:start]
        unit_tokens = count([m.api() for m in unit])
        if tokens + unit_tokens > max_tokens:
            break
        tokens += unit_tokens
        texts += sum(1 for m in unit if has_text(m))
        rounds += 1
        start = prev
    return start


# -- the summary message --------------------------------------------------------------------------
def summary_text(summary: str, *, kept_tail: bool, transcript_hint: str | None = None) -> str:
    """The text of the user message that opens the compacted history."""
    text = continuation_message(summary, transcript_hint=transcript_hint)
    return f"{text}\n\n{TAIL_NOTE}" if kept_tail else text


# -- writing -------------------------------------------------------------------------------------------
def write_compaction(t: Transcript, view: View, c: Compaction, *, count: Callable[[list[dict]], int], store: Any,
                     timestamp: str) -> Written:
    """Write compaction ``c`` of ``t`` (whose view is ``view``); returns the new transcript and facts.

    ``count`` counts API messages (the post-compaction size goes into the
    boundary, as Claude Code records it). Raises :class:`CompactionError`
    when the tail cannot be kept as chosen; ``t`` itself is never changed.
    """
    if not 0 <= c.keep_from <= len(view.messages):
        raise CompactionError(f"keep_from {c.keep_from} is outside the view (0..{len(view.messages)})")
    if not safe_start(view, c.keep_from):
        raise CompactionError(f"the kept tail would start with tool results (message {c.keep_from})")
    if t.format == "claude-code":
        return _write_claude_code(t, view, c, count, timestamp)
    if t.format in _APPENDED and not (t.format == gemini.NAME and in_gemini_document(t)):
        return _write_appended(t, view, c, count, timestamp)
    return _write_plain(t, view, c, count, store, timestamp)


def _write_appended(t: Transcript, view: View, c: Compaction, count: Callable[[list[dict]], int],
                    timestamp: str) -> Written:
    """Codex (a ``compacted`` line) and Gemini CLI (a rewind and the new history): lines appended, as the
    agent's resume reads them; no earlier byte changes, so nothing goes to the store. Re-injected
    attachments are not written (these agents have no such messages)."""
    text = summary_text(c.summary, kept_tail=c.keep_from < len(view.messages))
    write = _APPENDED[t.format]
    try:
        new = write(t, view, c.keep_from, text, timestamp)
    except ValueError as exc:
        raise CompactionError(str(exc)) from None
    return Written(new, count(new.view().api_messages()), {"compacted_line": new.n_entries})


#: the formats a compaction is appended to, as the agent's resume reads it: their writers
_APPENDED = {codex.NAME: write_compacted, gemini.NAME: write_gemini_compacted, opencode.NAME: write_opencode_compacted}


def _kept_facts(t: Transcript, view: View, keep_from: int) -> dict[str, Any] | None:
    """Head, tail and member uuids of the kept tail on the active chain, or None when nothing is kept."""
    kept = view.messages[keep_from:]
    if not kept:
        return None
    _, facts = claude_code_chain.active_entries(t)
    path = facts.get("path") or []
    on_path = {i: pos for pos, i in enumerate(path)}
    kept_entries = [i for m in kept for i in m.entries]
    head = next((i for i in kept_entries if i in on_path), None)
    if head is None:
        raise CompactionError("the kept tail has no entry on the active chain")
    tail = path[-1]
    members = path[on_path[head]:]
    uuids = [t.entry(i).get("uuid") for i in members if t.entry(i).get("type") in ("user", "assistant")]
    all_uuids = [t.entry(i).get("uuid") for i in sorted(set(members) | set(kept_entries))]
    return {"head": t.entry(head)["uuid"], "tail": t.entry(tail)["uuid"], "uuids": [u for u in uuids if u],
            "all": [u for u in all_uuids if u]}


def _write_claude_code(t: Transcript, view: View, c: Compaction, count: Callable[[list[dict]], int],
                       timestamp: str) -> Written:
    leaf = claude_code_chain.leaf_uuid(t)
    sid = claude_code_entries.session_id(t) or ""
    kept = _kept_facts(t, view, c.keep_from)
    boundary_uuid = claude_code_entries.new_uuid(sid, "compact_boundary", leaf or "", timestamp, c.method)
    text = summary_text(c.summary, kept_tail=kept is not None, transcript_hint=c.transcript_hint)
    summary = claude_code_entries.user_entry(t, boundary_uuid, timestamp, text, isVisibleInTranscriptOnly=True,
                                     isCompactSummary=True)
    metadata: dict[str, Any] = {"trigger": c.trigger, "preTokens": int(c.pre_tokens), "postTokens": 0}
    if kept is not None:
        metadata["preservedSegment"] = {"headUuid": kept["head"], "anchorUuid": summary["uuid"],
                                        "tailUuid": kept["tail"]}
        metadata["preservedMessages"] = {"anchorUuid": summary["uuid"], "uuids": kept["uuids"],
                                         "allUuids": kept["all"]}
    boundary = claude_code_entries.envelope(t, None, boundary_uuid, timestamp)
    boundary.update({"logicalParentUuid": leaf, "type": "system", "subtype": "compact_boundary",
                     "content": BOUNDARY_CONTENT, "isMeta": False, "level": "info", "compactMetadata": metadata})
    record = claude_code_entries.record_entry(t, RECORD_KIND, timestamp, method=c.method, summarizedMessages=c.keep_from,
                                      keptMessages=len(view.messages) - c.keep_from, boundaryUuid=boundary_uuid,
                                      **c.record)
    base = t.n_entries
    new = t.with_edits(append=[boundary, summary, record])
    new = append_messages(new, c.reinjected, timestamp)
    agent = _sidechain_agent(t)
    if agent is not None:  # a subagent's own transcript: the new entries belong to its sidechain too
        new = new.with_edits(replace={i: {**new.entry(i), "isSidechain": True, **agent}
                                      for i in range(base, new.n_entries) if "uuid" in new.entry(i)})
        boundary = {**boundary, "isSidechain": True, **agent}
    if kept is not None:
        _check_tail(view, c.keep_from, new.view())
    post = count(new.view().api_messages())
    metadata = {**metadata, "postTokens": post}
    new = new.with_edits(replace={base: {**boundary, "compactMetadata": metadata}})
    details = {"boundary_uuid": boundary_uuid, "summary_uuid": summary["uuid"], "logical_parent": leaf}
    if kept is not None:
        details.update(head_uuid=kept["head"], tail_uuid=kept["tail"])
    return Written(new, post, details)


def _sidechain_agent(t: Transcript) -> dict[str, Any] | None:
    """``{"agentId": ...}`` when ``t`` is a subagent's own transcript (its active chain is a sidechain:
    the projection falls back to it only when there is no main conversation), else None."""
    _, facts = claude_code_chain.active_entries(t)
    leaf = facts.get("leaf")
    d = t.entry(leaf) if leaf is not None else {}
    if not d.get("isSidechain"):
        return None
    return {"agentId": d["agentId"]} if isinstance(d.get("agentId"), str) else {}


def _blocks(msgs: list[ViewMessage]) -> list[tuple[str, dict]]:
    return [(m.role, b) for m in msgs for b in m.content]


def _check_tail(view: View, keep_from: int, new_view: View) -> None:
    """The compacted view must show the summary and then exactly the kept messages (before any re-injection)."""
    idx = max((i for i, m in enumerate(new_view.messages) if m.kind == SUMMARY), default=None)
    if idx is None:
        raise CompactionError("the compacted transcript shows no summary")
    after = _blocks(new_view.messages[idx:])[1:]  # the summary's own text block first
    want = _blocks(view.messages[keep_from:])
    if after[:len(want)] != want:
        raise CompactionError("the kept tail would not be rebuilt as chosen from the compacted transcript")


def feasible_keep_from(t: Transcript, view: View, keep_from: int, *, attempts: int = 6) -> int:
    """``keep_from``, or the nearest later safe cut whose tail a reader rebuilds exactly (Claude Code).

    The tail is linked, not copied, so it must be a stretch of the active
    chain. A trial compaction (no attachments) is projected for each
    candidate; ``len(view.messages)`` (keep nothing) always works.
    """
    n = len(view.messages)
    if t.format != "claude-code":
        return keep_from
    tried = 0
    for k in range(keep_from, n):
        if not safe_start(view, k):
            continue
        if tried >= attempts:
            break
        tried += 1
        try:
            trial = Compaction(summary="(trial)", keep_from=k)
            _write_claude_code(t, view, trial, lambda msgs: 0, "1970-01-01T00:00:00.000Z")
            return k
        except CompactionError:
            continue
    return n


def _write_plain(t: Transcript, view: View, c: Compaction, count: Callable[[list[dict]], int], store: Any,
                 timestamp: str) -> Written:
    lead = 0
    while lead < len(view.messages) and view.messages[lead].kind == SYSTEM:
        lead += 1
    if c.keep_from < lead:
        raise CompactionError("the kept tail would start inside the leading system messages")
    kept_entries = {i for m in view.messages[c.keep_from:] for i in m.entries}
    removed = sorted({i for m in view.messages[lead:c.keep_from] for i in m.entries} - kept_entries)
    if not removed:
        raise CompactionError("nothing to summarize")
    gemini_document = t.format in (gemini.NAME, gemini.CHECKPOINT_FORMAT.name)
    if gemini_document:  # every record up to the kept tail goes: those the view leaves out Gemini CLI may send
        end = min(kept_entries, default=t.n_entries)
        removed = sorted(({i for i in t.live_indexes() if removed[0] <= i < end} | set(removed)) - kept_entries)
    # the re-injected lines are archived too, so that ``ctxkit expand`` takes them out again (a Gemini
    # document gets none: no such messages; the model's acknowledgement after the summary is taken out so)
    reinjected = [] if gemini_document else list(append_messages(t, c.reinjected, timestamp).appended[len(t.appended):])
    # (no acknowledgement before a kept tail that opens with the model's own turn)
    model_next = c.keep_from < len(view.messages) and view.messages[c.keep_from].role == "assistant"
    after = gemini_document_lines(t, "", timestamp)[1:len(removed)] if gemini_document and not model_next else []
    archive = store.put_json({"format": t.format, "compacted_at": timestamp,
                              "messages": [t.entry(i) for i in removed], "reinjected": reinjected + after})
    hint = c.transcript_hint or str(archive)
    text = summary_text(c.summary, kept_tail=c.keep_from < len(view.messages), transcript_hint=hint)
    if gemini_document:  # the summary, then the acknowledgement, where the first summarized ones were
        lines = gemini_document_lines(t, text, timestamp)[:1] + after
        new = t.with_edits(replace=dict(zip(removed, lines, strict=False)), remove=removed[len(lines):])
    else:
        new = replace_plain_range(t, removed, plain_message(t, "user", text))
    new = new.with_edits(append=reinjected)
    post = count(new.view().api_messages())
    return Written(new, post, {"archive": str(archive), "archived_lines": len(removed)})


# -- undoing (``ctxkit expand``) -------------------------------------------------------------------------
def uncompact_plain(t: Transcript, store: Any, left: list | None = None) -> Transcript:
    """Undo every compaction of a plain message list (for ``ctxkit expand``): each summary line ctxkit
    wrote gives way to the lines its history blob holds, and the lines it re-injected after the kept
    tail are taken out. The blob is read only from the store, by its content-addressed name
    (``store.fetch_blob``); a summary naming something else is not ctxkit's (a Claude Code session's
    own summary, converted to a message list) and stays, and so does one whose blob is gone, damaged
    or refused, appended to ``left`` as ``("compaction", blob, why refused or None)``. A compaction of
    a compaction comes back one level per call: the caller repeats until nothing changes. Claude
    Code transcripts keep the history behind the boundary: nothing to do for them here."""
    if t.format == "claude-code":
        return t
    if t.format == codex.NAME:
        return uncompact_codex(t)
    if t.format == gemini.NAME and not in_gemini_document(t):
        return uncompact_gemini(t)
    if t.format == opencode.NAME:
        return uncompact_opencode(t)
    live = list(t.live_indexes())
    restore: dict[int, list[dict]] = {}
    drop: set[int] = set()
    fmt = t.format  # an OpenAI list's kept tail alone may read as Anthropic's: its history says which it is
    for pos, i in enumerate(live):
        entry = t.entry(i)
        found = _HISTORY_HINT.search(_text(entry)) if "user" in (entry.get("role"), entry.get("type")) else None
        if not found or not _text(entry).startswith(CONTINUATION_PREFIX) or not _is_blob_name(found.group(1)):
            continue
        try:
            data, why = store.fetch_blob(found.group(1)), None
        except Refused as exc:
            data, why = None, exc.reason
        messages, reinjected, wrong, fmt = _history(data, fmt) if data is not None else ([], [], None, fmt)
        if not messages:
            if left is not None:
                left.append((RECORD_KIND, found.group(1), why or wrong))
            continue
        restore[i] = messages
        drop.update(_run_of(t, live[pos + 1:], reinjected))
    if not restore:
        return t
    # plain lines have no insert edit: write the whole list again, the history in place of each summary
    out = [e for i in live if i not in drop for e in restore.get(i, [t.entry(i)])]
    return t.with_edits(remove=live, append=out).as_format(fmt)


_HISTORY_HINT = re.compile(r"read the full transcript at: (\S+)")


def _text(entry: dict) -> str:
    content = entry["message"].get("content") if isinstance(entry.get("message"), dict) else \
        entry.get("content", entry.get("parts"))  # (a Gemini content's parts)
    if isinstance(content, str):
        return content
    return "".join(b["text"] for b in content or [] if isinstance(b, dict) and b.get("type", "text") == "text"
                   and isinstance(b.get("text"), str)) if isinstance(content, list) else ""


def _is_blob_name(path: str) -> bool:
    return bool(BLOB_NAME.fullmatch(path.replace("\\", "/").rsplit("/", 1)[-1]))


def _history(data: bytes, fmt: str) -> tuple[list[dict], list[dict], str | None, str]:
    """(the archived lines, the re-injected lines, None, the list's format) of a compaction's history
    blob, or none and why the blob is not one (damaged, or not ctxkit's): the summary then stays rather
    than foreign content. ``fmt``: the format the list reads as, unless the blob names another plain one."""
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        return [], [], "is not JSON", fmt
    if not isinstance(doc, dict):
        return [], [], "is not a compaction's history", fmt
    messages, reinjected = doc.get("messages"), doc.get("reinjected", [])
    fmt = doc["format"] if doc.get("format") in ("anthropic", "openai") else fmt
    if not (isinstance(messages, list) and messages and isinstance(reinjected, list)
            and all(isinstance(m, dict) and problem(fmt, m) is None for m in [*messages, *reinjected])):
        return [], [], "is not a compaction's history", fmt
    return messages, reinjected, None, fmt


def _run_of(t: Transcript, after: list[int], lines: list[dict]) -> list[int]:
    """The indexes of the first stretch of ``after`` whose entries are exactly ``lines`` (none if none is)."""
    n = len(lines)
    for start in range(len(after) - n + 1) if n else ():
        if all(t.entry(after[start + k]) == lines[k] for k in range(n)):
            return after[start:start + n]
    return []
