"""The view: the messages a model is sent next, with where each block came from.

Every format projects its transcript into a :class:`View`. Stages read the
view to decide, and edit the transcript (through the format's edit functions)
using the provenance the view carries: which transcript entry, and which block
of it, produced each block.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

# What a view message is, beyond its role: stages treat these differently.
PROMPT = "prompt"  # a real user message (typed by the user)
TOOL_RESULTS = "tool_results"  # a user message carrying tool_result blocks (maybe with trailing text)
ASSISTANT = "assistant"
META = "meta"  # harness-injected user text: reminders, skill bodies, command echoes
ATTACHMENT = "attachment"  # state appended by the harness (rendered attachment entries)
SUMMARY = "summary"  # the compact summary that opens a compacted history
SYSTEM = "system"  # a mid-conversation system message


class BlockRef(NamedTuple):
    """Where a view block lives in the transcript: entry index and index in that entry's content list
    (-1 when the entry's content is a plain string). A named tuple: one is made for every block of
    every view, and refs are dictionary keys (a tuple is made and hashed in C)."""

    entry: int
    block: int


def content_text(content: Any) -> str:
    """The text of a content in the view's (the Messages API's) shape, a tool_result's or a queued
    prompt's: a string, or the text blocks of a list joined by newlines."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


@dataclass
class ViewMessage:
    role: str
    content: list[dict]
    kind: str
    refs: list[BlockRef | None] = field(default_factory=list)  # one per block
    entries: list[int] = field(default_factory=list)  # every entry that contributed, in order
    uuid: str | None = None  # uuid of the entry that opened it (snip ids, session-memory anchors)
    timestamp: str | None = None
    was_string: bool = False  # the source content was a plain string (kept when writing the view)
    msg_id: str | None = None  # assistant: the API message id its fragments share

    def api(self) -> dict[str, Any]:
        """This message as the Messages API wants it.

        The blocks are the view's own (not copies: a view of a large transcript is counted often, and
        copying it each time would double the memory a run needs); treat them as read-only."""
        if self.was_string and len(self.content) == 1 and self.content[0].get("type") == "text":
            return {"role": self.role, "content": self.content[0]["text"]}
        if self.role == "system" and all(b.get("type") == "text" for b in self.content):
            return {"role": "system", "content": "\n\n".join(b["text"] for b in self.content)}
        return {"role": self.role, "content": list(self.content)}

    def text(self) -> str:
        """All plain text of the message (not tool results), joined."""
        return "\n".join(b.get("text", "") for b in self.content if b.get("type") == "text")

    def tool_uses(self) -> Iterator[dict]:
        return (b for b in self.content if b.get("type") == "tool_use")

    def tool_results(self) -> Iterator[dict]:
        return (b for b in self.content if b.get("type") == "tool_result")


@dataclass
class View:
    messages: list[ViewMessage]
    notes: list[str] = field(default_factory=list)  # what the projection had to repair or skip
    orphans: list[tuple[int, str]] = field(default_factory=list)  # (entry index, tool_use_id) of results answering nothing
    #: (entry index, tool_use_id) of genuine results the agent itself does not send: Claude Code's answer whose
    #: streamed fragments a line written between them split in two, each call of the first part answered
    #: as missing (:mod:`ctxkit.transcript.claude_code.split_answers`); read, kept in the file, never refused
    unsent: list[tuple[int, str]] = field(default_factory=list)
    #: Claude Code's: the message that opens the last turn, as the hook-context fold found it
    #: (:func:`ctxkit.transcript.claude_code.hook_context.fold_earlier_turns`), so that a view grown from this
    #: one folds on from there; None for a view the fold did not make as it is
    turn_opened: int | None = field(default=None, compare=False)

    def api_messages(self, *, include_system: bool = True) -> list[dict]:
        return [m.api() for m in self.messages if include_system or m.role != "system"]

    def tool_use_index(self) -> dict[str, tuple[int, int]]:
        """tool_use id -> (message index, block index)."""
        out: dict[str, tuple[int, int]] = {}
        for mi, m in enumerate(self.messages):
            if m.role == "assistant":
                for bi, b in enumerate(m.content):
                    if b.get("type") == "tool_use":
                        out[b["id"]] = (mi, bi)
        return out

    def tool_names(self) -> dict[str, str]:
        """tool_use id -> tool name."""
        return {b["id"]: b.get("name", "") for m in self.messages if m.role == "assistant" for b in m.tool_uses()}

    def shared_result_ids(self) -> set[str]:
        """The tool ids more than one tool result answers (a call id an agent used twice, a session
        pasted into another): the store keeps one decision per tool id, so a stage that replaced two
        results of one id would keep the original of one of them only (``ctxkit expand`` would put it
        back in both); the masking stages leave them whole."""
        seen: set[str] = set()
        shared: set[str] = set()
        for m in self.messages:
            for b in m.tool_results():
                tid = b.get("tool_use_id", "")
                (shared if tid in seen else seen).add(tid)
        return shared


def pairing_problems(messages: list[dict]) -> list[str]:
    """Messages API pairing rules (TRANSCRIPTS.md section 9.2) a list of API messages breaks.

    Every tool_use must be answered in the next non-system message, results first; every
    tool_result must answer a tool_use of the previous assistant message. A trailing
    assistant message with unanswered tool_use blocks is a turn in progress and allowed.
    """
    problems: list[str] = []
    convo = [m for m in messages if m.get("role") != "system"]
    for i, m in enumerate(convo):
        blocks = m["content"] if isinstance(m.get("content"), list) else []
        if m.get("role") == "assistant":
            ids = [b["id"] for b in blocks if b.get("type") == "tool_use"]
            if not ids or i == len(convo) - 1:
                continue
            nxt = convo[i + 1]
            nblocks = nxt["content"] if isinstance(nxt.get("content"), list) else []
            lead = []
            for b in nblocks:
                if b.get("type") != "tool_result":
                    break
                lead.append(b.get("tool_use_id"))
            missing = [x for x in ids if x not in lead]
            if nxt.get("role") != "user" or missing:
                problems.append(f"messages.{i}: tool_use ids without tool_result immediately after: {missing or ids}")
        elif m.get("role") == "user":
            prev_ids: set[str] = set()
            if i > 0 and convo[i - 1].get("role") == "assistant":
                pblocks = convo[i - 1]["content"] if isinstance(convo[i - 1].get("content"), list) else []
                prev_ids = {b["id"] for b in pblocks if b.get("type") == "tool_use"}
            seen_other = False
            for b in blocks:
                if b.get("type") == "tool_result":
                    if b.get("tool_use_id") not in prev_ids:
                        problems.append(f"messages.{i}: tool_result {b.get('tool_use_id')} answers no tool_use of the previous message")
                    if seen_other:
                        problems.append(f"messages.{i}: tool_result {b.get('tool_use_id')} after other content")
                else:
                    seen_other = True
    return problems


#: the content of the error result synthesized for a call no result answers (as Claude Code answers one on resume)
NO_RESULT = "[tool call interrupted: no result was recorded]"


def answer_cut_off_calls(messages: list[dict]) -> list[dict]:
    """API ``messages`` with a user message of error results after each assistant message whose calls
    another assistant message follows (a turn cut off and begun again, whose results never came): the
    API refuses such a call, and Claude Code answers it on resume with a user message of its own
    (``ensureToolResultPairing``). The view keeps the two assistant messages as the transcript has them
    (every view message stands for lines of it: doctor and repair name and fix the call there); this is
    for a request built from the view. A call in the last message is the turn in progress, left alone."""
    convo = [m for m in messages if m.get("role") != "system"]
    cut = {id(m) for m, nxt in zip(convo, convo[1:], strict=False) if m.get("role") == "assistant" == nxt.get("role")}
    if not cut:
        return messages
    out: list[dict] = []
    for m in messages:
        out.append(m)
        content = m.get("content")
        ids = [b.get("id") for b in content if b.get("type") == "tool_use"] if id(m) in cut and isinstance(
            content, list) else []
        if ids:
            out.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": x, "is_error": True,
                                                     "content": NO_RESULT} for x in ids]})
    return out


def normalize(msgs: list[ViewMessage], notes: list[str], orphans: list | None = None) -> list[ViewMessage]:
    """Merge consecutive user (and system) messages and repair what the Messages API would reject."""
    out: list[ViewMessage] = []
    for m in msgs:
        if not m.content:
            continue
        if m.role == "assistant":
            _drop_whitespace_text(m)
        prev = out[-1] if out else None
        if prev is not None and prev.role == m.role and m.role in ("user", "system"):
            if m.role == "user" and any(b.get("type") == "tool_result" for b in m.content):
                # more results of the same round (OpenAI writes one `tool` message per result): they join
                # the results at the front of the message, never after its text
                lead = next((k for k, b in enumerate(prev.content) if b.get("type") != "tool_result"),
                            len(prev.content))
                res = [k for k, b in enumerate(m.content) if b.get("type") == "tool_result"]
                rest = [k for k in range(len(m.content)) if k not in res]
                prev.content[lead:lead] = [m.content[k] for k in res]
                prev.refs[lead:lead] = [m.refs[k] for k in res]
                prev.content.extend(m.content[k] for k in rest)
                prev.refs.extend(m.refs[k] for k in rest)
                prev.entries.extend(m.entries)
                prev.was_string = False
                if prev.kind != TOOL_RESULTS and prev.kind not in (PROMPT, SUMMARY):
                    prev.kind = TOOL_RESULTS
                continue
            prev.content.extend(m.content)
            prev.refs.extend(m.refs)
            prev.entries.extend(m.entries)
            prev.was_string = False
            if prev.kind in (ATTACHMENT, META) and m.kind in (PROMPT, SUMMARY):
                prev.kind, prev.uuid = m.kind, m.uuid
            continue
        out.append(m)
    _repair_pairing(out, notes, orphans if orphans is not None else [])
    return [m for m in out if m.content]


def _drop_whitespace_text(m: ViewMessage) -> None:
    """Whitespace-only text blocks of an assistant message are not sent (the API rejects them; Claude Code
    drops them, before thinking or anywhere else)."""
    keep = [k for k, b in enumerate(m.content) if not (b.get("type") == "text" and not str(b.get("text", "")).strip())]
    if len(keep) != len(m.content):
        m.content = [m.content[k] for k in keep]
        m.refs = [m.refs[k] for k in keep]


def _repair_pairing(msgs: list[ViewMessage], notes: list[str], orphans: list) -> None:
    """Make every tool_use answered in the next message and drop results that answer nothing."""
    convo = [m for m in msgs if m.role != "system"]
    for k, m in enumerate(convo):
        if m.role != "assistant":
            continue
        ids = [b["id"] for b in m.content if b.get("type") == "tool_use"]
        nxt = convo[k + 1] if k + 1 < len(convo) else None
        if nxt is None or not ids:
            continue
        if nxt.role != "user":
            continue
        answered = {b.get("tool_use_id") for b in nxt.content if b.get("type") == "tool_result"}
        missing = [x for x in ids if x not in answered]
        if missing:
            lead = sum(1 for b in nxt.content if b.get("type") == "tool_result")
            synth = [{"type": "tool_result", "tool_use_id": x, "is_error": True, "content": NO_RESULT}
                     for x in missing]
            nxt.content[lead:lead] = synth
            nxt.refs[lead:lead] = [None] * len(synth)
            notes.append(f"synthesized an error result for {len(missing)} unanswered tool call(s): {', '.join(missing)}")
    for k, m in enumerate(convo):
        if m.role != "user":
            continue
        prev = convo[k - 1] if k > 0 else None
        ok = {b["id"] for b in prev.content if b.get("type") == "tool_use"} if prev and prev.role == "assistant" else set()
        keep = [j for j, b in enumerate(m.content) if b.get("type") != "tool_result" or b.get("tool_use_id") in ok]
        if len(keep) != len(m.content):
            dropped = [b.get("tool_use_id") for b in m.content if b.get("type") == "tool_result" and b.get("tool_use_id") not in ok]
            notes.append(f"left out {len(dropped)} tool_result(s) answering no tool_use: {', '.join(map(str, dropped))}")
            for j, b in enumerate(m.content):
                if j not in keep and m.refs[j] is not None:
                    orphans.append((m.refs[j].entry, b.get("tool_use_id")))
            m.content = [m.content[j] for j in keep]
            m.refs = [m.refs[j] for j in keep]
        # results first, text after
        res = [j for j, b in enumerate(m.content) if b.get("type") == "tool_result"]
        if res and res != list(range(len(res))):
            rest = [j for j in range(len(m.content)) if j not in res]
            m.content = [m.content[j] for j in res + rest]
            m.refs = [m.refs[j] for j in res + rest]
