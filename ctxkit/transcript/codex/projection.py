"""The view of a Codex CLI rollout: the history Codex itself rebuilds on resume, as messages.

What Codex sends is rebuilt the way ``codex-rs/core/src/session/rollout_reconstruction.rs`` replays a
rollout: response items in order; a ``compacted`` line with a ``replacement_history`` replaces the
history so far with it (one without, from older versions: the user messages so far and the summary);
an ``event_msg`` ``thread_rolled_back`` drops the newest ``num_turns`` user turns (a line whose
``num_turns`` is no ``u32`` — ``true``, ``1.5``, ``-1`` — Codex fails to parse and skips: so does the
view, with a warning; the line is kept as it is). Then, as
``codex-rs/core/src/context_manager/normalize.rs`` does before every request, every call without a
result gets Codex's own answer (``aborted``) and a result that answers no call is left out.

Response items become Messages API blocks: a call (``function_call``, ``custom_tool_call``,
``local_shell_call``, ``tool_search_call``) a ``tool_use`` with its ``call_id``, its output the
``tool_result`` right after the assistant message; a ``developer`` message a system message. Left
out, as Codex leaves them out of a request or as no other model can read them: ``ghost_snapshot``
items, ``reasoning`` (its content is encrypted for the model that wrote it).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import orjson

from .. import carried
from ..lineindex import BAD, LineIndex
from ..model import Transcript
from ..view import ASSISTANT, META, PROMPT, SUMMARY, SYSTEM, TOOL_RESULTS, BlockRef, View, ViewMessage
from .items import (
    ABORTED,
    CALL_TYPES,
    CTXKIT_SUMMARY_OPENING,
    OUTPUT_TYPES,
    ROLLOUT_TYPES,
    event,
    kind,
    response_item,
    text_of,
)

#: user messages Codex writes itself (context, not a turn the user typed): codex-rs/core's contextual
#: user fragments
CONTEXTUAL_PREFIXES = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions for",
                       "<user_shell_command>", "<turn_aborted>", "<skill>", "<subagent_notification>")
#: lines of a rollout that say nothing the model is sent
_SILENT = ("session_meta", "turn_context", "event_msg", "world_state", "state", "rollout_reference",
           "inter_agent_communication_metadata", "token_usage_record")


def index_line(lines: LineIndex, i: int, d: dict) -> None:
    lines.set_type(i, kind(d))


def is_user_turn(item: dict) -> bool:
    """Whether a response item opens a user turn (what ``thread_rolled_back`` counts)."""
    if item.get("type") != "message" or item.get("role") != "user":
        return False
    return not text_of(item.get("content")).lstrip().startswith(CONTEXTUAL_PREFIXES)


def history(t: Transcript) -> tuple[list[tuple[int, int, dict]], list[str]]:
    """The response items Codex would send, as ``(entry, position in a replacement history or -1, item)``,
    and notes on what the replay skipped."""
    h = _History()
    h.feed(t, 0)
    return h.items, h.notes()


class _History:
    """The replay of a rollout's lines in order (:func:`history`), kept to go on with more lines."""

    def __init__(self) -> None:
        self.items: list[tuple[int, int, dict]] = []
        self.unknown: dict[str, int] = {}
        self.warnings: list[str] = []

    def feed(self, t: Transcript, start: int, only_appends: bool = False) -> bool:
        """Replay entries ``start`` on. ``only_appends``: refuse (False, nothing changed) entries that do
        more than add items (a compaction, a rollback)."""
        lines = [] if only_appends else None
        for i in range(start, t.n_entries):
            if i in t.removed or (i < t.n_lines and t.lines.flags[i] & BAD):
                continue
            d = t.entry(i)
            if lines is not None:
                k = kind(d)
                if k == "compacted" or k == "event_msg" and (event(d) or {}).get("type") == "thread_rolled_back":
                    return False
                lines.append(i)
                continue
            self._one(i, d)
        for i in lines or ():
            self._one(i, t.entry(i))
        return True

    def _one(self, i: int, d: dict) -> None:
        item = response_item(d)
        if item is not None:
            self.items.append((i, -1, item))
            return
        k = kind(d)
        if k == "compacted":
            payload = d.get("payload") or {}
            replacement = payload.get("replacement_history")
            if isinstance(replacement, list):
                self.items = [(i, n, x) for n, x in enumerate(replacement) if isinstance(x, dict)]
            else:  # before replacement histories: the user's messages so far, then the summary
                kept = [x for x in self.items if is_user_turn(x[2])]
                summary = {"type": "message", "role": "user",
                           "content": [{"type": "input_text", "text": str(payload.get("message", ""))}]}
                self.items = kept + [(i, -2, summary)]
        elif k == "event_msg":
            ev = event(d) or {}
            if ev.get("type") == "thread_rolled_back":
                n = ev.get("num_turns")
                if _is_u32(n):
                    self.items = _drop_turns(self.items, n)
                else:
                    self.warnings.append(
                        f"warning: line {i + 1}: a thread_rolled_back whose num_turns is not a count "
                        f"({orjson.dumps(n).decode()[:40]}): Codex cannot read the line and skips it, "
                        "so no turn is dropped; kept as it is")
        elif k == "inter_agent_communication":
            return
        elif k not in _SILENT and k not in ROLLOUT_TYPES:
            self.unknown[k] = self.unknown.get(k, 0) + 1

    def notes(self) -> list[str]:
        return self.warnings + [f"warning: {n} line(s) of a record type this ctxkit does not know ({k}): kept as they are, "
                "left out of the view" for k, n in sorted(self.unknown.items())]


def _is_u32(n: Any) -> bool:
    """Whether ``num_turns`` deserializes as codex-rs's ``ThreadRolledBackEvent.num_turns: u32`` (serde_json
    takes no bool, float, negative or larger number for one: the line fails to parse and Codex skips it)."""
    return isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 2 ** 32


def _drop_turns(items: list[tuple[int, int, dict]], n: int) -> list[tuple[int, int, dict]]:
    if n <= 0:
        return items
    turns = [k for k, (_, _, x) in enumerate(items) if is_user_turn(x)]
    if not turns:
        return items
    cut = turns[0] if n >= len(turns) else turns[-n]
    return items[:cut]


def _input(item: dict) -> dict:
    typ = item.get("type")
    if typ == "function_call":
        raw = item.get("arguments")
        try:
            parsed = orjson.loads(raw) if isinstance(raw, str) else raw
        except orjson.JSONDecodeError:
            parsed = None
        return parsed if isinstance(parsed, dict) else {"arguments": raw}
    if typ == "custom_tool_call":
        return {"input": item.get("input")}
    if typ == "local_shell_call":
        action = item.get("action")
        return action if isinstance(action, dict) else {}
    args = item.get("arguments")
    return args if isinstance(args, dict) else {"arguments": args}


def _tool_name(item: dict) -> str:
    typ = item.get("type")
    if typ == "local_shell_call":
        return "local_shell"
    if typ == "tool_search_call":
        return "tool_search"
    name = item.get("name")
    ns = item.get("namespace")
    return f"{ns}.{name}" if isinstance(ns, str) and isinstance(name, str) else str(name or typ)


def _result_content(item: dict) -> Any:
    if item.get("type") == "tool_search_output":
        return orjson.dumps(item.get("tools", [])).decode()
    return output_content(item.get("output"))


def output_content(out: Any) -> Any:
    """An output item's ``output`` as a ``tool_result``'s content. An empty text item is left out: Codex
    0.144 ends a command's output with one when the command printed nothing (``Script completed ... Output:``,
    then ``""``), and the Messages API refuses an empty text block."""
    if isinstance(out, dict):  # an older payload: {content, success}
        out = out.get("content", "")
    if isinstance(out, list):
        blocks = []
        for c in out:
            if isinstance(c, dict) and isinstance(c.get("text"), str) and c["text"]:
                blocks.append({"type": "text", "text": c["text"]})
            elif isinstance(c, dict) and isinstance(c.get("image_url"), str):
                blocks.append({"type": "image", "source": {"type": "url", "url": c["image_url"]}})
        return blocks or ""
    return out if isinstance(out, str) else ""


def _blocks(item: dict, entry: int, pos: int) -> tuple[list[dict], list[BlockRef | None]]:
    content = item.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}], [BlockRef(entry, -1) if pos == -1 else None]
    blocks, refs = [], []
    for k, c in enumerate(content if isinstance(content, list) else []):
        if not isinstance(c, dict):
            continue
        if isinstance(c.get("text"), str):
            blocks.append({"type": "text", "text": c["text"]})
        elif isinstance(c.get("image_url"), str):
            blocks.append({"type": "image", "source": {"type": "url", "url": c["image_url"]}})
        else:
            continue
        refs.append(BlockRef(entry, k) if pos == -1 else None)
    return blocks, refs


def position(k: int) -> str:
    """The id of a view message: where the item that opened it is in the history (``codex:<k>``), so a
    compaction knows which items a kept tail starts at."""
    return f"{POSITION}{k}"


def history_position(m: ViewMessage) -> int | None:
    """The history position a view message opened at (None for the tool results Codex answers)."""
    uid = m.uuid or ""
    return int(uid[len(POSITION):]) if uid.startswith(POSITION) and uid[len(POSITION):].isdigit() else None


POSITION = "codex:"


def project(t: Transcript) -> View:
    """The view of ``t``; when ``t`` grew by lines from a transcript projected before (a replay's next
    request: :mod:`ctxkit.transcript.carried`), that projection's state goes on with the new lines only."""
    return carried.project(t, _Projection)


class _Projection(carried.Fold):
    """Response items to view messages, in order, kept to go on with more items: the messages closed so
    far, and the assistant message still open (its calls may be answered by the items to come)."""

    def __init__(self) -> None:
        self.history = _History()
        self.done = 0  # the history's items folded into messages
        self.outputs: dict[str, tuple[int, int, dict]] = {}  # the first output of each call id, of every item
        self.msgs: list[ViewMessage] = []  # the messages closed
        self.cur: ViewMessage | None = None  # the assistant message open, its calls waiting
        self.pending: list[str] = []
        self.answered: set[str] = set()
        self.aborted: set[str] = set()  # calls a closed message answered as Codex does (no output came)
        self.loop_notes: list[str] = []
        self.t: Transcript | None = None

    def grow(self, t: Transcript) -> bool:
        """Fold ``t``'s entries after the ones folded already (all of them, for a new state); False, nothing
        folded, when a new entry rewrites the history or answers a call a closed message answered already."""
        fresh = not self.n
        if not self.history.feed(t, self.n, only_appends=not fresh):
            return False
        new = self.history.items[self.done:]
        if not fresh and any(x.get("type") in OUTPUT_TYPES and x.get("call_id") in self.aborted for _, _, x in new):
            return False  # (a full projection redoes what this one fed)
        for entry, pos, item in new:
            cid = item.get("call_id")
            if item.get("type") in OUTPUT_TYPES and isinstance(cid, str):
                self.outputs.setdefault(cid, (entry, pos, item))
        if self.cur is not None:  # the open message goes on: a copy (the earlier view holds the other)
            self.cur = replace(self.cur, content=list(self.cur.content), refs=list(self.cur.refs),
                               entries=list(self.cur.entries))
        self.t = t
        for here in range(self.done, len(self.history.items)):
            self._item(here, *self.history.items[here])
        self.done, self.n, self.t = len(self.history.items), t.n_entries, None
        return True

    def _results(self, pending: list[str]) -> tuple[list[dict], list[BlockRef | None], list[int]]:
        """The tool results answering ``pending``: each call's output, or Codex's answer when none came."""
        blocks, refs, entries = [], [], []
        for cid in pending:
            found = self.outputs.get(cid)
            if found is None:
                blocks.append({"type": "tool_result", "tool_use_id": cid, "content": ABORTED})
                refs.append(None)
            else:
                entry, pos, out = found
                blocks.append({"type": "tool_result", "tool_use_id": cid, "content": _result_content(out)})
                # (the output's place in its line, for the stages that replace it: codex.outputs)
                refs.append(BlockRef(entry, 0) if pos == -1 and out.get("type") != "tool_search_output" else None)
                entries.append(entry)
        return blocks, refs, entries

    def _close(self) -> None:
        cur = self.cur
        if cur is None:
            return
        self.msgs.append(cur)
        blocks, refs, entries = self._results(self.pending)
        for cid in self.pending:
            if cid not in self.outputs:
                self.aborted.add(cid)
            self.answered.add(cid)
        if blocks:
            self.msgs.append(ViewMessage("user", blocks, TOOL_RESULTS, refs, entries or list(cur.entries[-1:])))
        self.cur, self.pending = None, []

    def _assistant(self, entry: int, here: int) -> ViewMessage:
        if self.cur is None:
            self.cur = ViewMessage("assistant", [], ASSISTANT, [], [], uuid=position(here))
        cur = self.cur
        if not cur.entries or cur.entries[-1] != entry:
            cur.entries.append(entry)
            stamp = self.t.entry(entry).get("timestamp")  # when the model answered: microcompact's cache gap
            cur.timestamp = stamp if isinstance(stamp, str) else cur.timestamp
        return cur

    def _item(self, here: int, entry: int, pos: int, item: dict) -> None:
        typ = item.get("type")
        role = item.get("role")
        if typ in CALL_TYPES:
            cid = item.get("call_id") or item.get("id")
            if not isinstance(cid, str) or cid in self.answered or cid in self.pending:
                return
            m = self._assistant(entry, here)
            m.content.append({"type": "tool_use", "id": cid, "name": _tool_name(item), "input": _input(item)})
            m.refs.append(BlockRef(entry, -1) if pos == -1 else None)
            self.pending.append(cid)
        elif typ in OUTPUT_TYPES:
            cid = item.get("call_id")
            if cid in self.pending:
                self._close()
            elif cid not in self.answered:
                self.loop_notes.append(f"line {entry + 1}: a tool output answers no call ({cid}): left out, as Codex does")
        elif typ == "message" and role == "assistant":
            blocks, refs = _blocks(item, entry, pos)
            if self.pending:
                self._close()
            m = self._assistant(entry, here)
            m.content.extend(blocks)
            m.refs.extend(refs)
        elif typ in ("web_search_call", "image_generation_call"):
            action = item.get("action") if isinstance(item.get("action"), dict) else {}
            what = action.get("query") or action.get("url") or item.get("status") or ""
            m = self._assistant(entry, here)
            m.content.append({"type": "text", "text": f"[{typ}: {what}]"})
            m.refs.append(None)
        elif typ == "message":
            self._close()
            blocks, refs = _blocks(item, entry, pos)
            if role in ("developer", "system"):
                self.msgs.append(ViewMessage("system", blocks, SYSTEM, refs, [entry], uuid=position(here)))
            else:
                k = PROMPT if is_user_turn(item) else META
                if pos == -2 or text_of(item.get("content")).startswith(CTXKIT_SUMMARY_OPENING):
                    k = SUMMARY
                self.msgs.append(ViewMessage("user", blocks, k, refs, [entry], uuid=position(here)))
        elif typ in ("compaction", "compaction_summary"):
            self._close()
            self.msgs.append(ViewMessage("user", [{"type": "text", "text": "[Codex compaction: an encrypted summary "
                                                   "of the history before it]"}], SUMMARY, [None], [entry],
                                         uuid=position(here)))

    def view(self) -> View:
        """The view: the messages closed, then the open one answered (without closing it: more items may
        answer its calls)."""
        msgs = [m for m in self.msgs if m.content]
        aborted = len(self.aborted)
        cur = self.cur
        if cur is not None:
            if cur.content:
                msgs.append(cur)
            blocks, refs, entries = self._results(self.pending)
            aborted += sum(1 for cid in self.pending if cid not in self.outputs)
            if blocks:
                msgs.append(ViewMessage("user", blocks, TOOL_RESULTS, refs, entries or list(cur.entries[-1:])))
        notes = [*self.history.notes(), *self.loop_notes]
        if aborted:
            notes.append(f"{aborted} tool call(s) had no output: answered {ABORTED!r}, as Codex answers them")
        return View(msgs, notes)
