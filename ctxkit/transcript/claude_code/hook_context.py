"""A hook's added context (``additionalContext``) in a Claude Code session, where Claude Code sends it.

Why a module of its own: the projection renders attachments from the ``rendered`` field Claude Code 2.1.3xx
writes, and 2.1.150 writes a hook's context as an attachment without one (``{"type":
"hook_additional_context", "content": [...], "hookName": "PostToolUse:Bash", "toolUseID": ...}``), so the
view would leave out text the model was sent. What Claude Code does with it, read from the bodies the
genuine CLIs sent (``bench/cc_turn_after_compaction.py VERSION stream none --post-tool-context``):

* it renders the attachment as a meta user text, ``<system-reminder>\\n{hookName} hook additional context:
  {content joined by newlines}\\n</system-reminder>``; after a tool result it joins that result's message
  as a text block of its own, within the turn the tool ran in;
* from the next turn on (a later prompt, slash command or task notification), 2.0.67 to 2.1.150 fold it
  into the tool result before it when that result's content is a string: the result's text and the context's, each
  stripped, joined by a blank line (an error result keeps only text; a result whose content is a list
  of blocks keeps the context as a block beside it). So the first request of the next turn differs from
  the last of the turn before from the first such result on, and the prompt cache is written again from
  there (the replay sees this: each request is the view at its point);
* parallel calls (2.1.150, ``bench/cc_turn_after_compaction.py``'s recording with two Bash calls in one
  answer): within the turn every context follows all the results, in the order the hooks wrote them;
  from the next turn on each is folded into the result of the call its hook ran for, not into the last
  result: 2.1.150 merges the lines of the message in file order, and folds a context into the block
  merged last when that is a result with a string content (a hook's lines follow its call's result).
  Those lines hang off that result's line, which may be a dead end of the chain (the chain's stitching
  brings them back by the attachment's ``toolUseID``, :mod:`.chain`). Within the turn, each context
  that another follows ends with a newline (2.1.150 merges two texts of consecutive user messages so);
  from the next turn on, one that stays a text of its own (a result with a list content before it, such
  as an image a Read returned: it and every context after it in the message) does not.

2.1.328 renders the context as a system-role message (``renderedRole: "system"``) and keeps it where it
was; 2.1.39 and earlier write no line holding it (only that the hook ran), so nothing can be shown.
"""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable

from ..view import PROMPT, TOOL_RESULTS, ViewMessage

KIND = "hook_additional_context"
#: How Claude Code renders a hook's context (its ``<system-reminder>`` wrapper included).
_RENDERED = re.compile(r"\A<system-reminder>\n\S+ hook additional context: .*\n</system-reminder>\n?\Z", re.S)
_NOTIFICATION = "<task-notification>"
_COMMAND = "<command-name>"
#: for an entry of a view message (its index), how many hook contexts it added to the message
Contexts = Callable[[int], int]


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
    """A message that starts a turn: a typed prompt, a slash command the user typed (``/review``: the view
    calls its lines meta, but it starts a turn as a prompt does; 2.1.150 folds the turn before's contexts
    then; not one the model ran, whose lines join its results), or a background task's notification."""
    if m.role != "user":
        return False
    texts = [str(b.get("text", "")) for b in m.content if b.get("type") == "text"]
    typed = m.kind != TOOL_RESULTS and not any(b.get("type") == "tool_result" for b in m.content)
    return m.kind == PROMPT or any(_NOTIFICATION in x or typed and _COMMAND in x for x in texts)


def is_context_text(text: object) -> bool:
    """Whether ``text`` is a hook's context as Claude Code renders it."""
    return isinstance(text, str) and bool(_RENDERED.match(text))


def _is_context(block: dict) -> bool:
    return block.get("type") == "text" and is_context_text(block.get("text"))


def folded_into(shown: object, written: object) -> bool:
    """Whether a result's content ``shown`` is its content as written, ``written``, with hook contexts
    folded into it (:func:`_folded`): what the view shows is then not the result itself."""
    if not (isinstance(shown, str) and isinstance(written, str)) or shown == written:
        return False
    head = written.strip()
    if not shown.startswith(head + "\n\n" if head else ""):
        return False
    return is_context_text(shown[len(head) + 2 if head else 0:])


def _folded(result: dict, texts: list[str]) -> dict:
    """``result`` with ``texts`` folded into its content as Claude Code 2.0.67-2.1.150 do (each stripped,
    joined by a blank line)."""
    joined = "\n\n".join(x for x in [result["content"].strip(), *(t.strip() for t in texts)] if x)
    return {**result, "content": joined}


def _targets(m: ViewMessage, contexts: Contexts) -> dict[int, int] | None:
    """For each hook context of ``m`` (by position), the position of the result it folds into, as 2.1.150
    merges the lines of a tool-results message in file order: a context joins the block last merged when
    that is a result whose content is a string, and stays a text of its own otherwise (after which no
    later context folds: the results merged after it go before it, so a text stays last). The lines a
    hook writes follow the result of its call, so with parallel calls each context folds into its own
    call's result although in the message all the contexts follow all the results. None when the entries
    do not account for the contexts."""
    where = [k for k, b in enumerate(m.content) if _is_context(b)]
    if sum(contexts(e) for e in m.entries) != len(where):
        return None
    pending = iter(where)
    out: dict[int, int] = {}
    last, texts_after = None, False
    for e in m.entries:
        added = contexts(e)
        for _ in range(added):
            k = next(pending)
            if last is not None and not texts_after:
                out[k] = last
            else:
                texts_after = True
        if added:
            continue
        mine = [k for k, ref in enumerate(m.refs) if ref is not None and ref.entry == e]
        for k in mine:
            if m.content[k].get("type") == "tool_result":
                last = k if isinstance(m.content[k].get("content"), str) else None
            else:
                texts_after = True
        texts_after = texts_after or not mine  # (an attachment's other texts: no block of theirs names it)
    return out


def _run_targets(m: ViewMessage) -> dict[int, int]:
    """For each hook context of ``m``, the result a run of contexts follows (when the entries do not say
    where each came from)."""
    out: dict[int, int] = {}
    before = None
    for k, b in enumerate(m.content):
        if b.get("type") == "tool_result":
            before = k if isinstance(b.get("content"), str) else None
        elif _is_context(b):
            if before is not None:
                out[k] = before
        else:
            before = None
    return out


def _fold_message(m: ViewMessage, contexts: Contexts) -> ViewMessage:
    """A tool-results message with its hook contexts folded into their results, and those that stay
    texts of their own as the attachment renders them (without the newline their turn's merge added); a
    new message (never changed in place: an earlier view, and the replay's digests, hold the old blocks)."""
    targets = _targets(m, contexts)
    if targets is None:
        targets = _run_targets(m)
    into: dict[int, list[str]] = {}
    for k, target in targets.items():
        into.setdefault(target, []).append(m.content[k]["text"])
    keep = [k for k in range(len(m.content)) if k not in targets]
    content = [_folded(m.content[k], into[k]) if k in into else _as_rendered(m.content[k]) for k in keep]
    if all(a is b for a, b in zip(content, m.content, strict=False)) and len(content) == len(m.content):
        return m
    return dataclasses.replace(m, content=content, refs=[m.refs[k] for k in keep], entries=list(m.entries))


def _as_rendered(block: dict) -> dict:
    """A hook context block without the newline the merge of its turn ended it with; any other as it is."""
    if _is_context(block) and block["text"].endswith("\n"):
        return {**block, "text": block["text"][:-1]}
    return block


def fold_earlier_turns(msgs: list[ViewMessage], contexts: Contexts, seen: int = 0,
                       opened: int = -1) -> tuple[list[ViewMessage], int]:
    """The messages with the hook context of every turn before the last folded into its tool results, as
    Claude Code 2.0.67-2.1.150 send it; the last turn's stays a block of its own; and the index of the
    message that opens the last turn (-1: none). The context only reaches a tool-results message as an
    unrendered attachment (2.1.150's), so other versions' views pass as they are. ``contexts``: how many
    hook contexts an entry of a message added to it (where the entries do not account for a message's
    contexts, each run of them folds into the result it follows).

    ``seen``, ``opened``: the first ``seen`` messages are what this returned before (a grown view's earlier
    messages) and ``opened`` what it said opens the last turn among them; those before it are folded
    already (each message is folded once), and none after it opens a turn: only the turn it opened and
    the messages added are looked at, not the whole conversation again at every request."""
    last = next((k for k in range(len(msgs) - 1, seen - 1, -1) if _opens_turn(msgs[k])), opened)
    if last <= 0:
        return msgs, last
    out = list(msgs)
    for k in range(max(opened, 0), last):
        m = out[k]
        if m.kind == TOOL_RESULTS and any(_is_context(b) for b in m.content):
            out[k] = _fold_message(m, contexts)
    return out, last
