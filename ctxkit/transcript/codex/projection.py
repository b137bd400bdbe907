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

from typing import Any

import orjson

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
    items: list[tuple[int, int, dict]] = []
    notes: list[str] = []
    unknown: dict[str, int] = {}
    for i in range(t.n_entries):
        if i in t.removed or (i < t.n_lines and t.lines.flags[i] & BAD):
            continue
        d = t.entry(i)
        item = response_item(d)
        if item is not None:
            items.append((i, -1, item))
            continue
        k = kind(d)
        if k == "compacted":
            payload = d.get("payload") or {}
            replacement = payload.get("replacement_history")
            if isinstance(replacement, list):
                items = [(i, n, x) for n, x in enumerate(replacement) if isinstance(x, dict)]
            else:  # before replacement histories: the user's messages so far, then the summary
                kept = [x for x in items if is_user_turn(x[2])]
                summary = {"type": "message", "role": "user",
                           "content": [{"type": "input_text", "text": str(payload.get("message", ""))}]}
                items = kept + [(i, -2, summary)]
        elif k == "event_msg":
            ev = event(d) or {}
            if ev.get("type") == "thread_rolled_back":
                n = ev.get("num_turns")
                if _is_u32(n):
                    items = _drop_turns(items, n)
                else:
                    notes.append(f"warning: line {i + 1}: a thread_rolled_back whose num_turns is not a count "
                                 f"({orjson.dumps(n).decode()[:40]}): Codex cannot read the line and skips it, "
                                 "so no turn is dropped; kept as it is")
        elif k == "inter_agent_communication":
            continue
        elif k not in _SILENT and k not in ROLLOUT_TYPES:
            unknown[k] = unknown.get(k, 0) + 1
    for k, n in sorted(unknown.items()):
        notes.append(f"warning: {n} line(s) of a record type this ctxkit does not know ({k}): kept as they are, "
                     "left out of the view")
    return items, notes


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
    """An output item's ``output`` as a ``tool_result``'s content."""
    if isinstance(out, dict):  # an older payload: {content, success}
        out = out.get("content", "")
    if isinstance(out, list):
        blocks = []
        for c in out:
            if isinstance(c, dict) and isinstance(c.get("text"), str):
                blocks.append({"type": "text", "text": c["text"]})
            elif isinstance(c, dict) and isinstance(c.get("image_url"), str):
                blocks.append({"type": "image", "source": {"type": "url", "url": c["image_url"]}})
        return blocks
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
    items, notes = history(t)
    outputs: dict[str, tuple[int, int, dict]] = {}
    for entry, pos, item in items:
        cid = item.get("call_id")
        if item.get("type") in OUTPUT_TYPES and isinstance(cid, str):
            outputs.setdefault(cid, (entry, pos, item))
    msgs: list[ViewMessage] = []
    cur: ViewMessage | None = None
    pending: list[str] = []
    answered: set[str] = set()
    aborted = 0

    def close() -> None:
        nonlocal cur, pending, aborted
        if cur is None:
            return
        msgs.append(cur)
        blocks, refs, entries = [], [], []
        for cid in pending:
            found = outputs.get(cid)
            if found is None:
                aborted += 1
                blocks.append({"type": "tool_result", "tool_use_id": cid, "content": ABORTED})
                refs.append(None)
            else:
                entry, pos, out = found
                blocks.append({"type": "tool_result", "tool_use_id": cid, "content": _result_content(out)})
                # (the output's place in its line, for the stages that replace it: codex.outputs)
                refs.append(BlockRef(entry, 0) if pos == -1 and out.get("type") != "tool_search_output" else None)
                entries.append(entry)
            answered.add(cid)
        if blocks:
            msgs.append(ViewMessage("user", blocks, TOOL_RESULTS, refs, entries or list(cur.entries[-1:])))
        cur, pending = None, []

    def assistant(entry: int) -> ViewMessage:
        nonlocal cur
        if cur is None:
            cur = ViewMessage("assistant", [], ASSISTANT, [], [], uuid=position(here))
        if not cur.entries or cur.entries[-1] != entry:
            cur.entries.append(entry)
            stamp = t.entry(entry).get("timestamp")  # when the model answered: microcompact's cache gap
            cur.timestamp = stamp if isinstance(stamp, str) else cur.timestamp
        return cur

    here = 0
    for here, (entry, pos, item) in enumerate(items):
        typ = item.get("type")
        role = item.get("role")
        if typ in CALL_TYPES:
            cid = item.get("call_id") or item.get("id")
            if not isinstance(cid, str) or cid in answered or cid in pending:
                continue
            m = assistant(entry)
            m.content.append({"type": "tool_use", "id": cid, "name": _tool_name(item), "input": _input(item)})
            m.refs.append(BlockRef(entry, -1) if pos == -1 else None)
            pending.append(cid)
        elif typ in OUTPUT_TYPES:
            cid = item.get("call_id")
            if cid in pending:
                close()
            elif cid not in answered:
                notes.append(f"line {entry + 1}: a tool output answers no call ({cid}): left out, as Codex does")
        elif typ == "message" and role == "assistant":
            blocks, refs = _blocks(item, entry, pos)
            if pending:
                close()
            m = assistant(entry)
            m.content.extend(blocks)
            m.refs.extend(refs)
        elif typ in ("web_search_call", "image_generation_call"):
            action = item.get("action") if isinstance(item.get("action"), dict) else {}
            what = action.get("query") or action.get("url") or item.get("status") or ""
            m = assistant(entry)
            m.content.append({"type": "text", "text": f"[{typ}: {what}]"})
            m.refs.append(None)
        elif typ == "message":
            close()
            blocks, refs = _blocks(item, entry, pos)
            if role in ("developer", "system"):
                msgs.append(ViewMessage("system", blocks, SYSTEM, refs, [entry], uuid=position(here)))
            else:
                k = PROMPT if is_user_turn(item) else META
                if pos == -2 or text_of(item.get("content")).startswith(CTXKIT_SUMMARY_OPENING):
                    k = SUMMARY
                msgs.append(ViewMessage("user", blocks, k, refs, [entry], uuid=position(here)))
        elif typ in ("compaction", "compaction_summary"):
            close()
            msgs.append(ViewMessage("user", [{"type": "text", "text": "[Codex compaction: an encrypted summary of "
                                              "the history before it]"}], SUMMARY, [None], [entry],
                                    uuid=position(here)))
    close()
    if aborted:
        notes.append(f"{aborted} tool call(s) had no output: answered {ABORTED!r}, as Codex answers them")
    return View([m for m in msgs if m.content], notes)
