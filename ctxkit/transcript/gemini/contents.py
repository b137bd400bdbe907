"""Gemini CLI's ``/chat save`` checkpoints: the chat history as the Gemini API takes it, a list of
``Content`` (``{role: "user" | "model", parts}``), read as ``gemini-checkpoint``.

Defined by Gemini CLI's own source (google-gemini/gemini-cli): ``Logger.saveCheckpoint`` in
``packages/core/src/core/logger.ts`` writes ``{"history": [Content, ...], "authType": ...}`` with
``JSON.stringify(checkpoint, null, 2)`` to ``checkpoint-<tag>.json``, and ``loadCheckpoint`` reads that
or the older layout, the bare array of ``Content``; ``/chat resume <tag>``
(``packages/cli/src/ui/commands/chatCommand.ts``) makes that list the chat's history, as it is. A part
is ``{text}`` (``thought: true`` for the model's thoughts), ``{functionCall: {id?, name, args}}``,
``{functionResponse: {id?, name, response}}``, ``{inlineData: {mimeType, data}}``, ...

The file is one JSON document; it is read a ``Content`` a line (:mod:`ctxkit.transcript.document`).

**The view** is the history as sent: a ``model`` content's text, then its function calls as
``tool_use`` blocks; the ``functionResponse`` parts of the ``user`` content after it as their
``tool_result`` blocks (``response.output``, or the whole response as JSON). A call takes its id from
the part, else from the response that answers it (Gemini CLI gives the response the id it made up
for the call), else one made of its place; a call the history never answered is answered
``[no result recorded]`` so that the view stays a valid request. Thoughts are left out.
"""
from __future__ import annotations

import json
from typing import Any

from ..interface import ToolOutputs
from ..lineindex import BAD, LineIndex
from ..model import Transcript
from ..shapes import Bad
from ..view import ASSISTANT, PROMPT, SUMMARY, TOOL_RESULTS, BlockRef, View, ViewMessage, normalize

NAME = "gemini-checkpoint"
UNANSWERED = "[no result recorded]"
#: the opening of every summary ctxkit writes (``ctxkit.summarize.prompt.CONTINUATION_PREFIX``)
CTXKIT_SUMMARY_OPENING = "This session is being continued from a previous conversation"
#: what Gemini CLI's own compression has the model answer its summary with (``chatCompressionService.ts``)
ACKNOWLEDGEMENT = "Got it. Thanks for the additional context!"


def looks_like(d: dict) -> bool:
    """A ``Content``: a ``role`` of ``user`` or ``model`` and a list of ``parts`` (no ``content``: that is
    an Anthropic or OpenAI message)."""
    return d.get("role") in ("user", "model") and isinstance(d.get("parts"), list) and "content" not in d


def check(d: dict) -> None:
    for key, ok, expected in (("role", d.get("role") in ("user", "model"), "user or model"),
                              ("parts", isinstance(d.get("parts"), list), "a list")):
        if not ok:
            exc = Bad(expected, d.get(key))
            exc.path.append(key)
            raise exc


def index_line(lines: LineIndex, i: int, d: dict) -> None:
    lines.set_type(i, d.get("role") if isinstance(d.get("role"), str) else None)


def _part(p: Any, key: str) -> dict | None:
    return p[key] if isinstance(p, dict) and isinstance(p.get(key), dict) else None


def response_text(response: Any) -> str:
    """A ``functionResponse``'s ``response`` as the text the model read: its ``output`` alone, else JSON."""
    if isinstance(response, dict) and len(response) == 1 and isinstance(response.get("output"), str):
        return response["output"]
    return json.dumps(response, ensure_ascii=False)


def _calls(j: int, parts: list, answers: list[dict]) -> list[tuple[str, str]]:
    """``(id, name)`` of each function call of the ``model`` content on line ``j + 1``: the part's id, else
    that of the response at its place in ``answers`` (the next content's) when it names the same tool, else
    ``call-<line>-<part>``."""
    out: list[tuple[str, str]] = []
    for k, p in enumerate(parts):
        call = _part(p, "functionCall")
        if call is None:
            continue
        n = len(out)
        cid = call.get("id") if isinstance(call.get("id"), str) else \
            answers[n]["id"] if n < len(answers) and isinstance(answers[n].get("id"), str) \
            and answers[n].get("name") == call.get("name") else f"call-{j + 1}-{k}"
        out.append((cid, str(call.get("name", ""))))
    return out


def _answered(pending: list[tuple[str, str]], response: dict) -> tuple[str, str]:
    """The call a function response answers, taken out of ``pending``: by id, else the first of its name,
    else the first."""
    n = next((x for x, (cid, _) in enumerate(pending) if cid == response.get("id")), None)
    if n is None:
        n = next((x for x, (_, name) in enumerate(pending) if name == response.get("name")), 0)
    return pending.pop(n)


def _responses(parts: Any) -> list[dict]:
    return [r for p in parts or [] if (r := _part(p, "functionResponse")) is not None]


def slots(t: Transcript, i: int, d: dict) -> list[tuple[str, tuple, Any]]:
    """The function responses of a ``user`` content, each with the id of the call it answers (the model
    content before it says which, when the response has no id of its own); a replacement is written as
    ``response: {"output": <text>}``, what Gemini CLI records for a tool's output."""
    if d.get("role") != "user" or not isinstance(d.get("parts"), list):
        return []
    j = i - 1
    while j >= 0 and (j in t.removed or j < t.n_lines and t.lines.flags[j] & BAD):
        j -= 1
    before = t.entry(j) if j >= 0 else {}
    pending = _calls(j, before.get("parts") or [], _responses(d["parts"])) if before.get("role") == "model" else []
    out = []
    for k, p in enumerate(d["parts"]):
        response = _part(p, "functionResponse")
        if response is None:
            continue
        cid = _answered(pending, response)[0] if pending else response.get("id")
        if isinstance(cid, str) and "response" in response:
            out.append((cid, ("parts", k, "functionResponse", "response"), response["response"]))
    return out


OUTPUTS = ToolOutputs(slots, response_text, lambda response, text: {"output": text})


def project(t: Transcript) -> View:
    msgs: list[ViewMessage] = []
    notes: list[str] = []
    pending: list[tuple[str, str]] = []  # (id, name) of the calls not answered yet
    unanswered = 0
    live = list(t.live_indexes())
    for pos, i in enumerate(live):
        d = t.entry(i)
        parts = d.get("parts") if isinstance(d.get("parts"), list) else []
        blocks: list[dict] = []
        refs: list[BlockRef | None] = []
        if d.get("role") == "model":
            if pending:
                unanswered += len(pending)
                msgs.append(_unanswered(pending, i))
            later = t.entry(live[pos + 1]).get("parts") if pos + 1 < len(live) else None
            pending = _calls(i, parts, _responses(later))
            calls = iter(pending)
            for k, p in enumerate(parts):
                call = _part(p, "functionCall")
                if call is not None:
                    args = call.get("args")
                    cid, name = next(calls)
                    blocks.append({"type": "tool_use", "id": cid, "name": name,
                                   "input": args if isinstance(args, dict) else {}})
                elif isinstance(p, dict) and isinstance(p.get("text"), str) and p["text"] and not p.get("thought"):
                    blocks.append({"type": "text", "text": p["text"]})
                else:
                    continue
                refs.append(BlockRef(i, k))
            if blocks:
                msgs.append(ViewMessage("assistant", blocks, ASSISTANT, refs, [i]))
            continue
        writable = {(path[1], cid): n for n, (cid, path, _) in enumerate(slots(t, i, d))}
        for k, p in enumerate(parts):
            response = _part(p, "functionResponse")
            if response is not None and pending:
                cid, _ = _answered(pending, response)
                blocks.append({"type": "tool_result", "tool_use_id": cid,
                               "content": response_text(response.get("response"))})
                slot = writable.get((k, cid))
                refs.append(BlockRef(i, slot) if slot is not None else None)
            elif response is not None:
                notes.append(f"line {i + 1}: a function response answers no call ({response.get('name')}): left out")
            elif isinstance(p, dict) and isinstance(p.get("text"), str) and p["text"]:
                blocks.append({"type": "text", "text": p["text"]})
                refs.append(None)
            elif (data := _part(p, "inlineData")) is not None:
                blocks.append({"type": "image", "source": {"type": "base64", "media_type": data.get("mimeType", ""),
                                                           "data": data.get("data", "")}})
                refs.append(None)
        if pending and blocks:
            unanswered += len(pending)
            msgs.append(_unanswered(pending, i))
            pending = []
        if blocks:
            texts = [b["text"] for b in blocks if b["type"] == "text"]
            kind = TOOL_RESULTS if blocks[0]["type"] == "tool_result" else \
                SUMMARY if texts and texts[0].startswith(CTXKIT_SUMMARY_OPENING) else PROMPT
            msgs.append(ViewMessage("user", blocks, kind, refs, [i]))
    if pending:
        unanswered += len(pending)
        msgs.append(_unanswered(pending, live[-1]))
    if unanswered:
        notes.append(f"{unanswered} function call(s) had no response: answered {UNANSWERED!r}")
    return View(normalize(msgs, notes, []), notes)


def _unanswered(pending: list[tuple[str, str]], entry: int) -> ViewMessage:
    blocks = [{"type": "tool_result", "tool_use_id": cid, "content": UNANSWERED} for cid, _ in pending]
    return ViewMessage("user", blocks, TOOL_RESULTS, [None] * len(blocks), [entry])


def summary_lines(text: str) -> list[dict]:
    """What a compaction puts in place of the history it summarizes: the summary as a ``user`` content and
    the answer Gemini CLI's own compression gives it, so that the roles still alternate."""
    return [{"role": "user", "parts": [{"text": text}]}, {"role": "model", "parts": [{"text": ACKNOWLEDGEMENT}]}]
