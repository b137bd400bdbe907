"""A streamed answer split in two by a line written between its fragments, and the results Claude Code drops.

Claude Code writes each content block of an answer as its own line (one ``message.id``) as it streams, and
anything the session records meanwhile lands on the ``parentUuid`` chain between them: a slash command run
while the answer streams (``/rename``: its ``local_command`` system entries), a prompt, an attachment. A
call's result is written later, its ``parentUuid`` the fragment holding the call (``sourceToolAssistantUUID``).

What Claude Code 2.1.92 does with such a chain (its ``cli.js``), on resume and from the next turn on:

- the loader walks the chain from the leaf and puts back the results hanging off earlier fragments right
  after the answer's last fragment on the chain (``recoverOrphanedParallelToolResults``);
- ``normalizeMessagesForAPI`` turns a local command's entry into a user message and merges a fragment
  into an earlier assistant message of its id only across assistant and tool-result messages: the
  command's user message between the fragments keeps them two assistant messages;
- ``ensureToolResultPairing`` then answers each call of the first part, which the command's message
  follows, with an error result ``[Tool result missing due to internal error]`` and drops the real
  result after the second part, as it answers no call of that message (and logs the repair as an error).

The request sent within the turn itself is another: the query loop goes on from its own list, the
answer's fragments and all their results, without the command's lines; only from the next turn on (or
after a resume) is the split request sent. The view is the next request after the file's last line as
Claude Code builds it from the file, so it is the split one. The result left out is no bad line: Claude
Code wrote it and reads it; the view keeps it out of the orphans the reader refuses (``--on-bad-line``)
and ``doctor`` reports as broken, and lists it as ``View.unsent`` instead.
"""
from __future__ import annotations

from ..model import Transcript
from ..view import ViewMessage


def split_answer_results(t: Transcript, msgs: list[ViewMessage], orphans: list[tuple[int, str]],
                         notes: list[str]) -> list[tuple[int, str]]:
    """The results (entry, tool id) among ``orphans`` that answer a call of an answer the view holds in more
    than one assistant message (its fragments split by lines between them), taken out of ``orphans``."""
    parts: dict[str, int] = {}  # message id -> the assistant messages of the view holding its fragments
    caller: dict[str, int] = {}  # tool id -> index in msgs of the assistant message calling it
    for k, m in enumerate(msgs):
        if m.role == "assistant" and m.msg_id:
            parts[m.msg_id] = parts.get(m.msg_id, 0) + 1
            for b in m.tool_uses():
                caller.setdefault(b.get("id"), k)
    unsent = [(i, tid) for i, tid in orphans if tid in caller and parts[msgs[caller[tid]].msg_id] > 1]
    if not unsent:
        return []
    orphans[:] = [o for o in orphans if o not in unsent]
    for i, tid in unsent:
        k = caller[tid]
        between = next((e for m in msgs[k + 1:] for e in m.entries), None)
        where = f"line {t.line_no(between)}, written" if between is not None else "a line written"
        notes.append(f"line {t.line_no(i)}: the result of call {tid} is not sent: {where} between the streamed "
                     "fragments of its answer, splits the answer, and Claude Code answers the call as missing")
    return unsent
