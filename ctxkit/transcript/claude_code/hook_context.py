"""A hook's added context (``additionalContext``) in a Claude Code session, where Claude Code sends it.

Why a module of its own: the projection renders attachments from the ``rendered`` field Claude Code 2.1.3xx
writes, and 2.1.150 writes a hook's context as an attachment without one (``{"type":
"hook_additional_context", "content": [...], "hookName": "PostToolUse:Bash", "toolUseID": ...}``), so the
view would leave out text the model was sent. What Claude Code does with it, read from the bodies the
genuine CLIs sent (``bench/cc_turn_after_compaction.py VERSION stream none --post-tool-context``):

* it renders the attachment as a meta user text, ``<system-reminder>\\n{hookName} hook additional context:
  {content joined by newlines}\\n</system-reminder>``; after a tool result it joins that result's message
  as a text block of its own, within the turn the tool ran in;
* from the next turn on (a later prompt or task notification), 2.0.67 to 2.1.150 fold it into the tool
  result before it when that result's content is a string: the result's text and the context's, each
  stripped, joined by a blank line (an error result keeps only text; a result whose content is a list
  of blocks keeps the context as a block beside it). So the first request of the next turn differs from
  the last of the turn before from the first such result on, and the prompt cache is written again from
  there (the replay sees this: each request is the view at its point).

2.1.328 renders the context as a system-role message (``renderedRole: "system"``) and keeps it where it
was; 2.1.39 and earlier write no line holding it (only that the hook ran), so nothing can be shown.
"""
from __future__ import annotations

import dataclasses
import re

from ..view import PROMPT, TOOL_RESULTS, ViewMessage

KIND = "hook_additional_context"
#: How Claude Code renders a hook's context (its ``<system-reminder>`` wrapper included).
_RENDERED = re.compile(r"\A<system-reminder>\n\S+ hook additional context: .*\n</system-reminder>\Z", re.S)
_NOTIFICATION = "<task-notification>"


def unrendered_texts(attachment: object) -> tuple[str, ...]:
    """The text Claude Code sends for a ``hook_additional_context`` attachment written without ``rendered``
    (Claude Code 2.1.150); () for any other attachment, or one with no context."""
    if not isinstance(attachment, dict) or attachment.get("type") != KIND:
        return ()
    content = attachment.get("content")
    if isinstance(content, str):
        content = [content]
    if not isinstance(content, list) or not content or not all(isinstance(x, str) for x in content):
        return ()
    name = attachment.get("hookName") if isinstance(attachment.get("hookName"), str) else "Hook"
    joined = "\n".join(content)
    return (f"<system-reminder>\n{name} hook additional context: {joined}\n</system-reminder>",)


def _opens_turn(m: ViewMessage) -> bool:
    """A message that starts a turn: a typed prompt, or a background task's notification."""
    return m.role == "user" and (m.kind == PROMPT or any(
        b.get("type") == "text" and _NOTIFICATION in str(b.get("text", "")) for b in m.content))


def _is_context(block: dict) -> bool:
    return block.get("type") == "text" and isinstance(block.get("text"), str) and bool(_RENDERED.match(block["text"]))


def _folded(result: dict, texts: list[str]) -> dict | None:
    """``result`` with ``texts`` folded into its content as Claude Code 2.0.67-2.1.150 do; None when they
    stay beside it (a content that is a list of blocks)."""
    content = result.get("content")
    if content is not None and not isinstance(content, str):
        return None
    joined = "\n\n".join(x for x in [(content or "").strip(), *(t.strip() for t in texts)] if x)
    return {**result, "content": joined}


def _fold_message(m: ViewMessage) -> ViewMessage:
    """A tool-results message with each run of hook context after a result folded into that result; a new
    message (never changed in place: an earlier view, and the replay's digests, hold the old blocks)."""
    content, refs, changed = [], [], False
    k = 0
    while k < len(m.content):
        b = m.content[k]
        run = k + 1
        while run < len(m.content) and _is_context(m.content[run]):
            run += 1
        if b.get("type") == "tool_result" and run > k + 1:
            folded = _folded(b, [x["text"] for x in m.content[k + 1:run]])
            if folded is not None:
                content.append(folded)
                refs.append(m.refs[k])
                changed = True
                k = run
                continue
        content.append(b)
        refs.append(m.refs[k])
        k += 1
    return dataclasses.replace(m, content=content, refs=refs, entries=list(m.entries)) if changed else m


def fold_earlier_turns(msgs: list[ViewMessage], seen: int = 0, opened: int = -1) -> tuple[list[ViewMessage], int]:
    """The messages with the hook context of every turn before the last folded into its tool results, as
    Claude Code 2.0.67-2.1.150 send it; the last turn's stays a block of its own; and the index of the
    message that opens the last turn (-1: none). The context only reaches a tool-results message as an
    unrendered attachment (2.1.150's), so other versions' views pass as they are.

    ``seen``, ``opened``: the first ``seen`` messages are what this returned before (a grown view's earlier
    messages) and ``opened`` what it said opens the last turn among them; those before it are folded
    already (folding again changes nothing), and none after it opens a turn: only the turn it opened and
    the messages added are looked at, not the whole conversation again at every request."""
    last = next((k for k in range(len(msgs) - 1, seen - 1, -1) if _opens_turn(msgs[k])), opened)
    if last <= 0:
        return msgs, last
    out = list(msgs)
    for k in range(max(opened, 0), last):
        m = out[k]
        if m.kind == TOOL_RESULTS and any(_is_context(b) for b in m.content):
            out[k] = _fold_message(m)
    return out, last
