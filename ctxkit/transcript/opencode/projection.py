"""The view of an OpenCode session: the messages OpenCode sends next, as ``toModelMessages``
(``packages/opencode/src/session/message-v2.ts``) builds them from the history :func:`.records.history` keeps.

A user message's text parts (not ``ignored``), its files as a line naming them, a ``compaction`` part
as "What did we do so far?", a ``subtask`` part as "The following tool was executed by the user". An
assistant message that ended in an error is left out, unless it was aborted after writing something;
each of its steps (``step-start``) becomes one assistant message — its text, then its tool parts as
``tool_use`` blocks (the ``callID``) — and the user message after it holds their results: the output
(``[Old tool result content cleared]`` once OpenCode pruned it: ``state.time.compacted``), the error,
or, for a call still ``pending`` or ``running``, ``[Tool execution was interrupted]``. Reasoning is left
out (it is the model's own, and not sent to other models).
"""
from __future__ import annotations

from datetime import datetime, timezone

from ..lineindex import LineIndex
from ..model import Transcript
from ..view import ASSISTANT, PROMPT, SUMMARY, TOOL_RESULTS, BlockRef, View, ViewMessage, normalize
from .records import history, messages, unknown_parts

COMPACTION_PROMPT = "What did we do so far?"
SUBTASK_PROMPT = "The following tool was executed by the user"
PRUNED = "[Old tool result content cleared]"
INTERRUPTED = "[Tool execution was interrupted]"
CTXKIT_SUMMARY_OPENING = "This session is being continued from a previous conversation"


def index_line(lines: LineIndex, i: int, d: dict) -> None:
    info = d.get("info")
    lines.set_type(i, info.get("role") if isinstance(info, dict) else None)


def _instant(time: object) -> str | None:
    """When an assistant message was completed (else created), as an ISO instant: microcompact's cache gap."""
    ms = (time.get("completed") or time.get("created")) if isinstance(time, dict) else None
    if not isinstance(ms, (int, float)) or isinstance(ms, bool) or not 0 < ms < 1e14:
        return None
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat().replace("+00:00", "Z")


def writable_output(state: dict) -> str | None:
    """A completed call's output a replacement may be written over (None: pruned, failed, running)."""
    time = state.get("time")
    if state.get("status") != "completed" or isinstance(time, dict) and time.get("compacted"):
        return None
    out = state.get("output")
    return out if isinstance(out, str) else None


def _result(state: dict) -> tuple[str, bool]:
    status = state.get("status")
    if status == "completed":
        time = state.get("time")
        if isinstance(time, dict) and time.get("compacted"):
            return PRUNED, False
        out = state.get("output")
        return out if isinstance(out, str) else "", False
    if status == "error":
        meta = state.get("metadata")
        if isinstance(meta, dict) and meta.get("interrupted") is True and isinstance(meta.get("output"), str):
            return meta["output"], False
        return str(state.get("error", "")), True
    return INTERRUPTED, True


def _user(i: int, m: dict) -> ViewMessage | None:
    blocks = []
    for p in m["parts"]:
        if not isinstance(p, dict):
            continue
        typ = p.get("type")
        if typ == "text" and not p.get("ignored") and isinstance(p.get("text"), str) and p["text"]:
            blocks.append({"type": "text", "text": p["text"]})
        elif typ == "file":
            blocks.append({"type": "text", "text": f"[file: {p.get('filename') or p.get('url') or ''} "
                                                   f"({p.get('mime', '')})]"})
        elif typ == "compaction":
            blocks.append({"type": "text", "text": COMPACTION_PROMPT})
        elif typ == "subtask":
            blocks.append({"type": "text", "text": SUBTASK_PROMPT})
    if not blocks:
        return None
    first = blocks[0]["text"]
    kind = SUMMARY if first.startswith(CTXKIT_SUMMARY_OPENING) else PROMPT
    return ViewMessage("user", blocks, kind, [None] * len(blocks), [i], uuid=m["info"].get("id"))


def _assistant(i: int, m: dict) -> tuple[list[ViewMessage], int]:
    info = m["info"]
    parts = [p for p in m["parts"] if isinstance(p, dict)]
    error = info.get("error")
    if error and not (isinstance(error, dict) and error.get("name") == "MessageAbortedError"
                      and any(p.get("type") not in ("step-start", "reasoning") for p in parts)):
        return [], 0
    steps: list[list[dict]] = [[]]
    for p in parts:
        if p.get("type") == "step-start" and steps[-1]:
            steps.append([])
        steps[-1].append(p)
    out: list[ViewMessage] = []
    interrupted = slot = 0
    for step in steps:
        blocks, results, result_refs = [], [], []
        for p in step:
            if p.get("type") == "text" and not p.get("ignored") and isinstance(p.get("text"), str) and p["text"]:
                blocks.append({"type": "text", "text": p["text"]})
            elif p.get("type") == "tool" and isinstance(p.get("state"), dict):
                state = p["state"]
                cid = str(p.get("callID") or p.get("id"))
                args = state.get("input")
                blocks.append({"type": "tool_use", "id": cid, "name": str(p.get("tool", "")),
                               "input": args if isinstance(args, dict) else {}})
                text, is_error = _result(state)
                interrupted += text == INTERRUPTED
                result = {"type": "tool_result", "tool_use_id": cid, "content": text}
                if is_error:
                    result["is_error"] = True
                results.append(result)
                # (an output's place among the message's, for the stages that replace it: opencode.outputs)
                writable = writable_output(state) is not None
                result_refs.append(BlockRef(i, slot) if writable else None)
                slot += writable
        if blocks:
            kind = SUMMARY if info.get("summary") else ASSISTANT
            out.append(ViewMessage("assistant", blocks, kind, [None] * len(blocks), [i], uuid=info.get("id"),
                                   msg_id=info.get("id"), timestamp=_instant(info.get("time"))))
        if results:
            out.append(ViewMessage("user", results, TOOL_RESULTS, result_refs, [i]))
    return out, interrupted


def project(t: Transcript) -> View:
    every = messages(t)
    kept = history(every)
    msgs: list[ViewMessage] = []
    interrupted = 0
    for i, m in kept:
        if m["info"].get("role") == "user":
            um = _user(i, m)
            if um is not None:
                msgs.append(um)
        else:
            more, n = _assistant(i, m)
            msgs += more
            interrupted += n
    notes: list[str] = []
    if len(kept) < len(every):
        notes.append(f"{len(every) - len(kept)} message(s) before the newest compaction: left out, as OpenCode does")
    if interrupted:
        notes.append(f"{interrupted} tool call(s) were still running: answered {INTERRUPTED!r}, as OpenCode does")
    for typ, n in sorted(unknown_parts(kept).items()):
        notes.append(f"warning: {n} part(s) of a type this ctxkit does not know ({typ}): kept as they are, "
                     "left out of the view")
    orphans: list[tuple[int, str]] = []
    return View(normalize(msgs, notes, orphans), notes, orphans)
