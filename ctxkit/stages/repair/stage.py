r"""repair: mend what would make the agent's next request fail, keeping what the model had seen.

A session an agent can no longer resume is most often broken in one place: a turn cut by a crash left
a `tool_use` with no `tool_result`, a line was lost, a pasted screenshot is over the API's limits, the
model was switched under thinking blocks. Every later request is answered 400 and users edit the JSONL
by hand. `repair` finds these problems the way `ctxkit doctor` reports them (the rules and limits of
the Messages API, `ctxkit/api_rules.json`, cited in docs/doctor.md) and makes the smallest edit that
makes the next request valid:

| problem | repair |
| --- | --- |
| a `tool_use` with no `tool_result` (a turn cut by a crash, a lost parallel result) | the next user message gets a `tool_result` saying the call was interrupted and its outcome is unknown, as Claude Code answers it |
| a `tool_result` answering no `tool_use` (its call's line was lost) | the output the model read is kept, as text, in its place (Claude Code drops it) |
| a `tool_result` after other content | the results go first in their message |
| a `tool_use` id used twice | the later call and its result get a new id |
| a `tool_use` followed by another assistant message (its result's line lost) | the call is kept as text saying its outcome is unknown |
| an empty or whitespace-only text block | left out of its message |
| a final assistant text ending with whitespace | the whitespace is stripped |
| a thinking block without a signature, with one cut short, written by another model, or in a user message | left out (the API ignores earlier turns' thinking; a signature that does not verify fails the request) |
| an image or PDF over the API's size, pixel, page or count limits | replaced by a text placeholder that says what it was |
| a `parentUuid` naming no line, or looping | linked to the conversation line before it in the file |
| a later `!` command or local slash command Claude Code 1.0 chained onto the session's first caveat line | linked to the conversation line before it in the file, as the live session had it |

A line the agent cannot read (half a line a crash left, a stray byte, the wrong shape) is moved to the
store and an `unreadable-line` record takes its place, so the agent reads on past it; what the line held
is not guessed at (a line cut short has lost what a repair would need to mend it). A view too long to
compact is reported by `ctxkit doctor` and not mended here (`ctxkit compact --force`'s work).

## Nothing is lost

Every entry the stage rewrites is archived in the store first, behind an `archive` record, and every
line it moves is a blob of the store named by its `unreadable-line` record: `ctxkit expand` puts each
back, and gives the broken input back byte for byte. Claude Code transcripts only
(plain message lists have nowhere to keep the record): on other formats the stage does nothing and
says so.

## Before and after

A session whose turn was cut while `ls` ran, and where the user then typed on:

```
before                                       after
assistant  tool_use Bash(ls)                 assistant  tool_use Bash(ls)
user       "Where were we?"                  user       tool_result (is_error) "[Tool call interrupted: ...]" | "Where were we?"
```
"""
from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any, ClassVar

from ...confined import Refused
from ...transcript.claude_code.entries import record_entry
from ...transcript.claude_code.records import records
from ...transcript.edits import archive_entries
from ...transcript.model import RawLine, Transcript
from ...transcript.view import BlockRef
from ..base import Context, Stage, StageResult
from .problems import Problem, find_problems

#: what the repaired session's next request says of a call whose result was never written
INTERRUPTED = ("[Tool call interrupted: the session ended before its result was recorded, so its outcome is "
               "unknown. Check its effects before relying on them.]")


class _Edits:
    """The entries a repair rewrites, each a copy of the original; block edits are made at the end, so that
    several repairs of one entry all name its blocks as they were read."""

    def __init__(self, t: Transcript):
        self.t = t
        self.originals: dict[int, dict] = {}
        #: entry -> (block, inner block or None) -> the blocks that replace it (none: left out)
        self.blocks: dict[int, dict[tuple[int, int | None], list[dict]]] = {}
        self.whole: dict[int, list[Callable[[dict], None]]] = {}

    def _touch(self, i: int) -> None:
        if i not in self.originals:
            self.originals[i] = self.t.entry(i)

    def replace_block(self, ref: BlockRef | None, inner: int | None, blocks: list[dict]) -> bool:
        if ref is None or ref.entry >= self.t.n_lines:
            return False
        self._touch(ref.entry)
        self.blocks.setdefault(ref.entry, {}).setdefault((ref.block, inner), blocks)
        return True

    def change(self, i: int | None, fn: Callable[[dict], None]) -> bool:
        if i is None or i >= self.t.n_lines:
            return False
        self._touch(i)
        self.whole.setdefault(i, []).append(fn)
        return True

    def block(self, ref: BlockRef, inner: int | None = None) -> dict:
        content = _content(self.t.entry(ref.entry))
        b = content[ref.block] if ref.block >= 0 else content[0]
        return b["content"][inner] if inner is not None else b

    def edited(self) -> dict[int, dict]:
        out = {}
        for i in self.originals:
            entry = copy.deepcopy(self.t.entry(i))
            msg = entry.get("message")
            if isinstance(msg, dict):
                content = _content(entry)
                for (k, inner), blocks in sorted(self.blocks.get(i, {}).items(), key=lambda kv: (kv[0][0], kv[0][1] or -1),
                                                 reverse=True):
                    k = max(k, 0)
                    if inner is None:
                        content[k:k + 1] = blocks
                    else:
                        content[k]["content"][inner:inner + 1] = blocks
                msg["content"] = content
            for fn in self.whole.get(i, []):
                fn(entry)
            out[i] = entry
        return out


def _content(entry: dict) -> list[dict]:
    """An entry's message content as a list of blocks (a plain string as one text block)."""
    msg = entry.get("message") or {}
    content = msg.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


# -- the repairs, by problem ------------------------------------------------------------------------
def _answer_interrupted(e: _Edits, p: Problem, opts: dict) -> bool:
    tid = p.target["tool_id"]

    def add(entry: dict) -> None:
        content = _content(entry)
        lead = sum(1 for b in content if b.get("type") == "tool_result")
        content.insert(lead, {"type": "tool_result", "tool_use_id": tid, "is_error": True,
                              "content": opts["interrupted_text"]})
        entry["message"]["content"] = content
    return e.change(p.target.get("next"), add)


def _keep_output_as_text(e: _Edits, p: Problem, opts: dict) -> bool:
    i, tid = p.target["entry"], p.target["tool_id"]
    content = _content(e.t.entry(i))
    done = False
    for k, b in enumerate(content):
        if b.get("type") == "tool_result" and b.get("tool_use_id") == tid:
            out = b.get("content")
            kept = [{"type": "text", "text": out}] if isinstance(out, str) and out else \
                [x for x in out if isinstance(x, dict)] if isinstance(out, list) else []
            head = {"type": "text", "text": f"[The output of tool call {tid}, whose call is not in this session:]"}
            done = e.replace_block(BlockRef(i, k), None, [head, *kept]) or done
    return done


def _results_first(e: _Edits, p: Problem, opts: dict) -> bool:
    def move(entry: dict) -> None:
        content = _content(entry)
        entry["message"]["content"] = [b for b in content if b.get("type") == "tool_result"] + \
            [b for b in content if b.get("type") != "tool_result"]
    return e.change(p.target["entry"], move)


def _new_id(e: _Edits, p: Problem, opts: dict) -> bool:
    use, result, tid = p.target["use"], p.target["result"], p.target["tool_id"]
    new = f"{tid}_2"
    if use is None or not e.replace_block(use, None, [{**e.block(use), "id": new}]):
        return False
    if result is not None:
        e.replace_block(result, None, [{**e.block(result), "tool_use_id": new}])
    return True


def _leave_out(e: _Edits, p: Problem, opts: dict) -> bool:
    ref, inner = p.target.get("ref"), p.target.get("inner")
    if ref is not None and ref.block < 0:  # a whole message that is an empty string
        return e.change(ref.entry, lambda entry: entry["message"].__setitem__("content", "(empty message)"))
    return e.replace_block(ref, inner, [])


def _strip_trailing(e: _Edits, p: Problem, opts: dict) -> bool:
    ref = p.target["ref"]
    if ref is None:
        return False
    b = e.block(ref)
    return e.replace_block(ref, None, [{**b, "text": b["text"].rstrip()}])


def _placeholder(e: _Edits, p: Problem, opts: dict) -> bool:
    targets = p.target.get("refs") or [p.target]
    done = False
    for target in targets:
        ref, inner = target.get("ref"), target.get("inner")
        if ref is None:
            continue
        b = e.block(ref, inner)
        values = target.get("measured") or {}
        what = b.get("type", "block")
        size = f"{values['width']}x{values['height']} px, " if "width" in values else ""
        pages = f"{values['pdf_pages']} pages, " if "pdf_pages" in values else ""
        text = (f"[{what} ({size}{pages}{len((b.get('source') or {}).get('data') or '')} bytes of base64) left out: "
                f"over the Messages API's limits ({p.rule}); `ctxkit expand` puts it back]")
        done = e.replace_block(ref, inner, [{"type": "text", "text": text}]) or done
    return done


def _call_as_text(e: _Edits, p: Problem, opts: dict) -> bool:
    done = False
    for ref in p.target.get("refs") or []:
        if ref is None:
            continue
        b = e.block(ref)
        text = (f"[Called {b.get('name')} ({b.get('id')}) with {json.dumps(b.get('input'), ensure_ascii=False)}; "
                "its result is not in this session, so its outcome is unknown.]")
        done = e.replace_block(ref, None, [{"type": "text", "text": text}]) or done
    return done


def _relink(e: _Edits, p: Problem, opts: dict) -> bool:
    parent = p.target.get("relink")
    return e.change(p.target["entry"], lambda entry: entry.__setitem__("parentUuid", parent))


def relinked(t: Transcript, problems: list[Problem]) -> Transcript | None:
    """``t`` with the broken ``parentUuid`` links of ``problems`` repaired as ``--fix`` repairs them (in
    memory, nothing archived): what the agent resumes once the chain is whole, so a report can name what a
    relink brings to light (a lost result's call) before the fix. None: no link to repair."""
    e = _Edits(t)
    done = [p for p in problems if p.rule in ("parent-missing", "parent-cycle") and _relink(e, p, {})]
    return t.with_edits(replace=e.edited()) if done else None


REPAIRS: dict[str, Callable[[_Edits, Problem, dict], bool]] = {
    "orphan-tool-use": _answer_interrupted,
    "orphan-tool-result": _keep_output_as_text,
    "misplaced-tool-result": _results_first,
    "duplicate-tool-use-id": _new_id,
    "empty-text": _leave_out,
    "whitespace-text": _leave_out,
    "assistant-empty-text": _leave_out,
    "assistant-whitespace-text": _leave_out,
    "final-trailing-whitespace": _strip_trailing,
    "thinking-signature-missing": _leave_out,
    "thinking-signature-truncated": _leave_out,
    "thinking-model-changed": _leave_out,
    "thinking-out-of-place": _leave_out,
    "image-too-large": _placeholder,
    "image-too-many-pixels": _placeholder,
    "image-too-many-pixels-among-many": _placeholder,
    "too-many-images": _placeholder,
    "pdf-too-many-pages": _placeholder,
    "pdf-too-large": _placeholder,
    "consecutive-assistant": _call_as_text,
    "parent-missing": _relink,
    "parent-cycle": _relink,
    "local-command-parent": _relink,
}


#: the record that stands in the place of a line the agent cannot read, naming the blob that holds its bytes
UNREADABLE_RECORD = "unreadable-line"


def _move_unreadable(t: Transcript, ctx: Context) -> tuple[Transcript, list[Problem]]:
    """``t`` with each line the agent cannot read moved to the store, a record in its place."""
    found = [p for p in find_problems(t) if p.rule == "unparseable-line"]
    edits = {}
    for p in found:
        i = p.target["entry"]
        blob = ctx.store.put_blob(t.source.read_at(*t.lines.span(i)), ".txt")  # its line ending included
        edits[i] = record_entry(t, UNREADABLE_RECORD, ctx.timestamp(), blob=str(blob), line=p.line,
                                reason="repair: a line the agent cannot read, moved to the store")
    return (t.with_edits(replace=edits) if edits else t), found


#: repairs made in a row at most: one may bring the next to light (a relinked line's unanswered call)
_PASSES = 3


class Repair(Stage):
    name = "repair"
    summary = "Mend what would make the next request fail (ctxkit doctor --fix); originals archived for expand."
    options_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "interrupted_text": {"type": "string", "minLength": 1, "default": INTERRUPTED,
                                 "description": "The content of the tool_result that answers a call whose result "
                                 "was never written."},
        },
        "additionalProperties": False,
    }

    @staticmethod
    def undo(t: Transcript, store: Any, left: list) -> Transcript:
        """For ``ctxkit expand``: each line moved to the store back in its record's place, byte for byte."""
        if t.format != "claude-code":
            return t
        back = {}
        for r, rec in records(t, UNREADABLE_RECORD):
            blob, why = rec.get("blob"), None
            try:
                data = store.fetch_blob(blob) if isinstance(blob, str) else None
            except Refused as exc:
                data, why = None, exc.reason
            if data is None:
                left.append((UNREADABLE_RECORD, str(blob), why))
            else:
                back[r] = RawLine(data)
        return t.with_edits(replace=back) if back else t

    def run(self, transcript: Transcript, ctx: Context) -> StageResult:
        if transcript.format != "claude-code":
            return StageResult(transcript, self.report(action="skipped", reason="repairs need a Claude Code "
                                                       "transcript (a plain message list has nowhere to keep what "
                                                       "expand needs)"))
        new, repaired = _move_unreadable(transcript, ctx)
        for _ in range(_PASSES):  # a repair may bring the next problem to light (a relinked line's own calls)
            problems = [p for p in find_problems(new) if p.rule in REPAIRS]
            edits = _Edits(new)
            done = [p for p in problems if REPAIRS[p.rule](edits, p, self.options)]
            if not done:
                break
            new = new.with_edits(replace=edits.edited())
            new, _ = archive_entries(new, ctx.store, edits.originals, ctx.timestamp(), "repair: entries rewritten to "
                                     "make the next request valid")
            repaired += done
        if not repaired:
            return StageResult(transcript, self.report(action="nothing-to-do"))
        kinds = sorted({p.rule for p in repaired})
        return StageResult(new, self.report(
            action="applied", reason=f"repaired {len(repaired)} problem(s): {', '.join(kinds)}",
            details={"repaired": [{"line": p.line, "rule": p.rule} for p in repaired]}))
