"""The view of a Gemini CLI session: the history Gemini CLI sends when it resumes it, as messages.

As ``convertSessionToClientHistory`` (``packages/core/src/utils/sessionUtils.ts``) builds it from the
loaded conversation: ``info``, ``error`` and ``warning`` messages are left out, and so are user
messages that are commands (``/...``, ``?...``) or harness context (``<session_context>``,
``<hook_context>``); a ``gemini`` message's text, then each of its ``toolCalls`` as a ``tool_use``
(its ``id``), and the calls' results in the user message after it. A call without a recorded result
(cancelled, or cut off) is answered with its status, so the view stays a valid request. Thoughts are
left out (they are the model's own, and not sent back by other models).

Gemini CLI 0.61 also records each batch of function responses as a ``user`` message of its own, after
the ``gemini`` message whose calls they answer. ``convertSessionToClientHistory`` does not skip it (its
text, ``partListUnionToString``, is ``[Function Response: <name>]``, no ignored opening) and sends its
parts as they are, so on resume every such output reaches the model twice: in the calls' results and
again in this record, the two merged into one ``user`` content (checked against the genuine CLI:
tests/test_gemini_resume.py). The view carries what is sent: the record's responses follow the calls'
``tool_result`` blocks as text (each response's output), since a second ``tool_result`` for a call is
not a valid Anthropic request.
"""
from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from .. import carried
from ..lineindex import LineIndex
from ..model import Transcript
from ..view import ASSISTANT, META, PROMPT, SUMMARY, TOOL_RESULTS, BlockRef, View, ViewMessage
from .records import Conversation, kind, text_of

IGNORED_USER_OPENINGS = ("/", "?", "<session_context>", "<hook_context>")
#: the opening of every summary ctxkit writes (``ctxkit.summarize.prompt.CONTINUATION_PREFIX``)
CTXKIT_SUMMARY_OPENING = "This session is being continued from a previous conversation"


def index_line(lines: LineIndex, i: int, d: dict) -> None:
    lines.set_type(i, kind(d))


def _parts(content: Any) -> list:
    if isinstance(content, (str, dict)):
        return [content]
    return content if isinstance(content, list) else []


def _blocks(content: Any, entry: int) -> tuple[list[dict], list[BlockRef | None]]:
    blocks, refs = [], []
    for k, p in enumerate(_parts(content)):
        if isinstance(p, str):
            if not p:
                continue  # (an empty text is no part the API takes)
            blocks.append({"type": "text", "text": p})
        elif isinstance(p, dict) and isinstance(p.get("text"), str) and p["text"] and not p.get("thought"):
            blocks.append({"type": "text", "text": p["text"]})
        elif isinstance(p, dict) and isinstance(p.get("inlineData"), dict):
            data = p["inlineData"]
            blocks.append({"type": "image", "source": {"type": "base64", "media_type": data.get("mimeType", ""),
                                                       "data": data.get("data", "")}})
        else:
            continue
        refs.append(BlockRef(entry, k) if entry >= 0 else None)
    return blocks, refs


def result_text(result: Any) -> str:
    """A tool call's recorded result as the text the model read: each ``functionResponse``'s
    ``response.output`` (or the whole response), and any text part."""
    if isinstance(result, str):
        return result
    out = []
    for p in _parts(result):
        if isinstance(p, str):
            out.append(p)
        elif isinstance(p, dict) and isinstance(p.get("functionResponse"), dict):
            response = p["functionResponse"].get("response")
            if isinstance(response, dict) and isinstance(response.get("output"), str) and len(response) == 1:
                out.append(response["output"])
            else:
                out.append(json.dumps(response, ensure_ascii=False))
        elif isinstance(p, dict) and isinstance(p.get("text"), str):
            out.append(p["text"])
    return "\n".join(out)


def _function_responses(content: Any) -> bool:
    return any(isinstance(p, dict) and isinstance(p.get("functionResponse"), dict) for p in _parts(content))


def _responses(content: Any, ref_entry: int, entry: int) -> ViewMessage | None:
    """A recorded function-response message, as the text Gemini CLI sends again after the calls' results
    (:meth:`_Projection.view` puts it in the results' message, as it is sent)."""
    blocks, refs = [], []
    for k, p in enumerate(_parts(content)):
        text = result_text([p])
        if text:
            blocks.append({"type": "text", "text": text})
            refs.append(BlockRef(ref_entry, k) if ref_entry >= 0 else None)
    return ViewMessage("user", blocks, META, refs, [entry]) if blocks else None


def project(t: Transcript) -> View:
    """The view of ``t``; when ``t`` grew by lines from a transcript projected before (a replay's next
    request: :mod:`ctxkit.transcript.carried`), only the messages the new lines put are projected."""
    return carried.project(t, _Projection)


class _Projection(carried.Fold):
    """The conversation loaded so far, and the view messages each of its records makes (a record is
    projected on its own: one put again, by its id, is projected again)."""

    def __init__(self) -> None:
        self.conversation = Conversation()
        self.made: dict[str, tuple[list[ViewMessage], int]] = {}  # id -> (its messages, its calls unanswered)

    def grow(self, t: Transcript) -> bool:
        """Load and project ``t``'s entries after the ones done already (all, for a new state); False,
        nothing done, when a new entry rewinds or replaces the conversation."""
        put = self.conversation.feed(t, self.n, only_upserts=bool(self.n))
        if put is None:
            return False
        messages = self.conversation.messages
        for mid in dict.fromkeys(put):
            if mid in messages:  # (not rewound since)
                self.made[mid] = _record(t, *messages[mid])
        self.n = t.n_entries
        return True

    def view(self) -> View:
        msgs: list[ViewMessage] = []
        unanswered = 0
        made = self.made
        for mid in self.conversation.messages:
            some, n = made[mid]
            unanswered += n
            if some and some[0].kind == META and msgs and msgs[-1].kind == TOOL_RESULTS:
                # a function-response record: sent merged with the results before it (copies: the
                # records' own messages are kept for the next view)
                last, copy = msgs[-1], some[0]
                msgs[-1] = replace(last, content=last.content + copy.content, refs=last.refs + copy.refs,
                                   entries=last.entries + copy.entries)
                msgs.extend(some[1:])
            else:
                msgs.extend(some)
        notes = self.conversation.notes()
        if unanswered:
            notes.append(f"{unanswered} tool call(s) had no recorded result: answered with their status")
        return View(msgs, notes)


def _record(t: Transcript, entry: int, m: dict) -> tuple[list[ViewMessage], int]:
    """The view messages of one record of the conversation, and how many of its calls had no result."""
    msgs: list[ViewMessage] = []
    unanswered = 0
    typ = m.get("type")
    ref_entry = entry if entry >= 0 and m is t.entry(entry) else -1
    if typ == "user" and _function_responses(m.get("content")):
        made = _responses(m.get("content"), ref_entry, entry)
        return ([made] if made else []), 0
    if typ == "user":
        text = text_of(m.get("content")).strip()
        if not text or text.startswith(IGNORED_USER_OPENINGS):
            return msgs, 0
        blocks, refs = _blocks(m.get("content"), ref_entry)
        k = SUMMARY if text.startswith(CTXKIT_SUMMARY_OPENING) else PROMPT
        if blocks:
            msgs.append(ViewMessage("user", blocks, k, refs, [entry], uuid=m.get("id"), timestamp=m.get("timestamp")))
    elif typ == "gemini":
        blocks, refs = _blocks(m.get("content"), ref_entry)
        calls = [c for c in m.get("toolCalls") or [] if isinstance(c, dict)]
        if not calls:  # calls recorded as the content's own functionCall parts
            calls = [{**p["functionCall"], "status": "cut off"} for p in _parts(m.get("content"))
                     if isinstance(p, dict) and isinstance(p.get("functionCall"), dict)]
        results, result_refs, slot = [], [], 0
        for n, c in enumerate(calls):
            cid = c.get("id") if isinstance(c.get("id"), str) else f"{m.get('id')}#{n}"
            args = c.get("args")
            blocks.append({"type": "tool_use", "id": cid, "name": str(c.get("name", "")),
                           "input": args if isinstance(args, dict) else {}})
            refs.append(BlockRef(ref_entry, -1) if ref_entry >= 0 else None)
            if c.get("result") is None:
                unanswered += 1
                text = f"[no result recorded: the call was {c.get('status') or 'cut off'}]"
            else:
                text = result_text(c.get("result"))
            results.append({"type": "tool_result", "tool_use_id": cid, "content": text})
            # (a recorded result's place among the record's, for the stages that replace it: gemini.outputs)
            # (doctor takes a result with no line behind it for one the projection made up: a recorded
            # result inside a $set's messages points at that line, at no place a stage can write)
            recorded = c.get("result") is not None
            if recorded and ref_entry >= 0:
                result_refs.append(BlockRef(ref_entry, slot))
                slot += 1
            else:
                result_refs.append(BlockRef(entry, -1) if recorded and entry >= 0 else None)
        if not blocks:
            return msgs, unanswered
        msgs.append(ViewMessage("assistant", blocks, ASSISTANT, refs, [entry], uuid=m.get("id"),
                                timestamp=m.get("timestamp"), msg_id=m.get("id")))
        if results:
            msgs.append(ViewMessage("user", results, TOOL_RESULTS, result_refs, [entry]))
    return msgs, unanswered
