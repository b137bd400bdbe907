"""Claude Code's layout for a model that takes no system-role messages (Haiku 4.5, Sonnet 4.5/4.6, Opus 4.5-4.7).

Why its own module: such a model gets the texts of the system messages (the environment, the model,
the date, the tokens left, a hook's context, a task notification) inside user messages, as
``<system-reminder>`` text, and Claude Code 2.1.328 puts them where its recorded blobs show:

* on a message of tool results, at the end of the last tool result: its text with trailing white
  space stripped, then ``"\\n\\n"`` and each reminder (a result whose content is blocks gets them as
  text blocks; one of other blocks, a tool reference, leaves them as text blocks after the message's);
* on a prompt's message, first: before the reminders of the user-role attachments, the lines of a
  local command and the prompt (the opening message reads: environment, model, tool and agent
  listings, tokens left, date, attribution, prompt).

Two directions: :func:`fold` lays out messages that still hold system messages that way (the next
request built from the view), and :func:`unfolded_blocks` splits a recorded folded block back into
what the view holds (the tool result as written, each reminder), so that the blobs such a session
records are recognised as the view's messages and sent as recorded (:func:`folded_run`: the blob of
the messages written since the newest request).

After a change between a model that takes system messages and one that does not, Claude Code writes
the whole request again as blobs, but for the answers and tool results it sends as the conversation
holds them: :func:`with_answers` puts those among the blobs.
"""
from __future__ import annotations

import copy
import dataclasses
from typing import Any

from ..reminders import REMINDER_CLOSE, REMINDER_OPEN, reminder, unwrap
from ..transcript.claude_code.requests import as_blocks, canonical_json, without_cache_control
from ..transcript.model import Transcript
from ..transcript.view import ViewMessage

#: What goes before each reminder Claude Code appends to a tool result's text.
REMINDER_GAP = "\n\n"


def system_reminders(blocks: list) -> list[str]:
    """The texts of a system message's blocks (one per attachment: a view message's, not its joined
    ``api()`` text), each as the reminder a model without system messages reads."""
    return [b["text"] if b["text"].startswith(REMINDER_OPEN) else reminder(b["text"]) for b in blocks
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str) and b["text"].strip()]


def system_message(blocks: list) -> dict:
    """A system message of one text block per attachment (what :func:`fold` folds one reminder each)."""
    return {"role": "system", "content": [{"type": "text", "text": b["text"]} for b in blocks
                                          if isinstance(b, dict) and isinstance(b.get("text"), str)]}


def fold(messages: list[dict]) -> list[dict]:
    """``messages`` with each system message folded into the user message before it (else the next
    one; else a user message of its own at the end), as Claude Code does for a model that takes no
    system messages (see the module docstring). Messages without system messages come back as they are."""
    if not any(m.get("role") == "system" for m in messages):
        return messages
    out: list[dict] = []
    pending: list[str] = []  # the reminders of the system messages since the last other message
    folded = False  # whether out[-1] took reminders already (the next ones go to the next user message)
    for m in [*messages, None]:
        if m is not None and m.get("role") == "system":
            pending += system_reminders(as_blocks(m)["content"])
            continue
        if pending and out and out[-1].get("role") == "user" and not folded:
            out[-1], folded, pending = _into(out[-1], pending), True, []
        if m is None:
            break
        folded = False
        if pending and m.get("role") == "user":
            m, folded, pending = _into(m, pending), True, []
        out.append(m)
    if pending:
        out.append({"role": "user", "content": [{"type": "text", "text": x} for x in pending]})
    return out


def _into(message: dict, texts: list[str]) -> dict:
    """``message`` with the reminders ``texts`` where Claude Code puts them. Before a prompt, the
    reminders are one message of the turn's attachments that Claude Code merges with the prompt's: the
    last of them ends with a newline, as Claude Code ends each but the last of the messages it merges."""
    blocks = list(as_blocks(message)["content"])
    extra = [{"type": "text", "text": x} for x in texts]
    results = [k for k, b in enumerate(blocks) if isinstance(b, dict) and b.get("type") == "tool_result"]
    if not results:
        blocks = extra + blocks
        lead = next((k for k, b in enumerate(blocks) if not (isinstance(b, dict) and b.get("type") == "text"
                                                                and str(b.get("text", "")).startswith(REMINDER_OPEN))),
                    len(blocks))
        if 0 < lead < len(blocks):
            blocks[lead - 1] = _ended(blocks[lead - 1])
        return {**message, "content": blocks}
    last = blocks[results[-1]]
    content = last.get("content")
    if isinstance(content, str):
        blocks[results[-1]] = {**last, "content": content.rstrip() + "".join(REMINDER_GAP + x for x in texts)}
    elif isinstance(content, list) and all(isinstance(b, dict) and b.get("type") in ("text", "image") for b in content):
        items = [*content[:-1], _ended(content[-1])] if content else []
        blocks[results[-1]] = {**last, "content": [*items, *extra]}
    else:
        blocks += extra
    return {**message, "content": blocks}


def _ended(block: dict) -> dict:
    """A text block ending with a newline (any other block as it is)."""
    if block.get("type") == "text" and isinstance(block.get("text"), str) and not block["text"].endswith("\n"):
        return {**block, "text": block["text"] + "\n"}
    return block


def unfolded_blocks(block: Any) -> list[Any]:
    """A recorded block as the view holds it: a tool result with reminders appended (:func:`fold`) as the
    tool result without them (its text stripped of trailing white space) and each reminder as a text
    block; any other block as it is."""
    if not isinstance(block, dict) or block.get("type") != "tool_result":
        return [block]
    content = block.get("content")
    reminders: list[str] = []
    if isinstance(content, str):
        while content.endswith(REMINDER_CLOSE):
            k = content.rfind(REMINDER_GAP + REMINDER_OPEN)
            if k < 0:
                break
            reminders.insert(0, content[k + len(REMINDER_GAP):])
            content = content[:k]
        base = {**block, "content": content.rstrip()} if reminders else block
    elif isinstance(content, list):
        items = list(content)
        while items and isinstance(items[-1], dict) and items[-1].get("type") == "text" \
                and str(items[-1].get("text", "")).startswith(REMINDER_OPEN):
            reminders.insert(0, items.pop()["text"])
        base = {**block, "content": items} if reminders else block
    else:
        return [block]
    return [base, *({"type": "text", "text": x} for x in reminders)]


def normalized(block: Any) -> Any:
    """A block as a view's and a recorded folded one are compared: a tool result's texts stripped of
    trailing white space (Claude Code strips the text it appends reminders to, and ends a text it
    merges with a newline), a reminder's inside stripped (a text ending with a newline is wrapped as it
    is); any other block as it is."""
    if not isinstance(block, dict):
        return block
    if block.get("type") == "text" and isinstance(block.get("text"), str):
        inside = unwrap(block["text"])
        return {**block, "text": reminder(inside.strip()) if inside is not None else block["text"].strip()}
    if block.get("type") != "tool_result":
        return block
    content = block.get("content")
    if isinstance(content, str):
        return {**block, "content": content.rstrip()}
    if isinstance(content, list):
        return {**block, "content": [normalized(b) for b in content]}
    return block


def piece(block: Any) -> str:
    """What a block is compared by: a text stripped, any other block as canonical JSON."""
    if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
        return block["text"].strip()
    return canonical_json(without_cache_control(block)).decode()


def folded_run(new: list[ViewMessage], k: int, users: list[tuple[str, dict]]) -> tuple[int, list[dict] | None]:
    """The user messages of the view from ``new[k]`` on that Claude Code sent as recorded messages
    (consecutive blobs of ``users``: one, or a mentioned file's Read call and result each a message of
    its own before the prompt's) to a model that takes no system messages, and those messages: they hold
    the system messages of the run folded into them (their reminders; the tool result they were appended
    to). (1, None) when no run of consecutive blobs holds exactly the pieces of such a run."""
    if new[k].role != "user" or not users:
        return 1, None
    held = [sorted(piece(normalized(u)) for b in as_blocks(blob)["content"] for u in unfolded_blocks(b))
            for _, blob in users]
    pieces: list[str] = []
    for end in range(k, len(new)):
        if new[end].role == "assistant":
            break
        if new[end].role == "system":
            pieces += [piece(normalized({"type": "text", "text": x})) for x in system_reminders(new[end].content)]
        else:
            pieces += [piece(normalized(b)) for b in as_blocks(new[end].api())["content"]]
        found = consecutive_holding(held, sorted(pieces))
        if found is not None:
            return end - k + 1, [copy.deepcopy(blob) for _, blob in users[found]]
    return 1, None


def consecutive_holding(held: list[list[str]], want: list[str]) -> slice | None:
    """The first run of consecutive recorded messages (``held``: each one's pieces, sorted) that together
    hold exactly the pieces ``want`` (sorted), as a slice of them; None when none does."""
    for first in range(len(held)):
        together: list[str] = []
        for last in range(first, len(held)):
            together = sorted(together + held[last])
            if len(together) > len(want):
                break
            if together == want:
                return slice(first, last + 1)
    return None


def with_answers(blobs: list[dict], msgs: list[ViewMessage], written: int, fold: bool = False) -> list[dict]:
    """The blobs of a request Claude Code wrote again whole, with the view's messages they do not hold
    among them: it records again the messages it lays out otherwise for the new model, not the answers
    and the tool results sent as the conversation holds them. Such a message goes before the first blob
    that stands after it in the view (a blob stands where its last piece first is: the reminders Claude
    Code moves before a prompt stand with the prompt). ``written``: the entry index of the last blob (the
    view's messages after it follow the request). ``fold``: the blobs hold system messages folded (a model
    that takes none): each is read as what it holds unfolded."""
    if fold:
        held = [[piece(normalized(u)) for b in as_blocks(blob)["content"] for u in unfolded_blocks(b)]
                for blob in blobs]
        view = [{piece(normalized(b)) for b in as_blocks(m.api())["content"]}
                | {piece(normalized({"type": "text", "text": x})) for x in system_reminders(m.content)
                   if m.role == "system"} for m in msgs]
    else:
        held = [[piece(b) for b in as_blocks(blob)["content"]] for blob in blobs]
        view = [{piece(b) for b in [*as_blocks(m.api())["content"], *m.content]} for m in msgs]
    at: list[int] = []
    for pieces in held:
        first = [next((k for k, there in enumerate(view) if p in there), -1) for p in pieces]
        if not first or -1 in first:
            return blobs
        at.append(max(first))
    covered = {p for pieces in held for p in pieces}
    own = [i for i, m in enumerate(msgs) if m.role != "system" and not view[i] & covered and i > min(at)
           and min(m.entries, default=-1) < written]
    out: list[dict] = []
    for k, blob in enumerate(blobs):
        while own and own[0] < at[k]:
            out.append(msgs[own.pop(0)].api())
        out.append(blob)
    return out + [msgs[i].api() for i in own]


#: How Claude Code announces deferred tools (the text before their names, one a line).
DEFERRED_TOOLS_HEAD = ("The following deferred tools are now available via ToolSearch. Their schemas are NOT loaded "
                       "\u2014 calling them directly will fail with InputValidationError. Use ToolSearch with query "
                       "\"select:<name>[,<name>...]\" to load tool schemas before calling them:")
_SURFACED_HEAD = "The following tools just became available and are ready to use:\n"


def name_only_announcements(t: Transcript, msgs: list[ViewMessage]) -> list[ViewMessage]:
    """``msgs`` with each announcement of tools that became available (a ``deferred_tools_delta``
    attachment naming ``surfacedNames``) as Claude Code sends it to a model that takes no tool changes.
    The session renders ``The following tools just became available...`` for the surfaced tools and sends
    that with a ``tool_addition`` block to a model that takes them; to Haiku 4.5 (2.1.328, a tool denied
    by ``--disallowedTools`` in one run and allowed in the next) it sends every added name, in the order
    added, under the deferred tools' head. A system message is one text block per attachment."""
    out = []
    for m in msgs:
        if m.role != "system" or len(m.content) != len(m.entries):
            out.append(m)
            continue
        content = [_name_only(t.entry(i), b) for i, b in zip(m.entries, m.content, strict=True)]
        out.append(m if content == m.content else dataclasses.replace(m, content=content))
    return out


def _name_only(entry: dict, block: dict) -> dict:
    a = entry.get("attachment")
    text = block.get("text")
    if not isinstance(a, dict) or a.get("type") != "deferred_tools_delta" or not a.get("surfacedNames") \
            or not isinstance(text, str) or not text.startswith(_SURFACED_HEAD):
        return block
    names = a.get("addedLines") if isinstance(a.get("addedLines"), list) else a.get("addedNames")
    if not isinstance(names, list) or not all(isinstance(x, str) for x in names):
        return block
    return {**block, "text": "\n".join([DEFERRED_TOOLS_HEAD, *names])}
