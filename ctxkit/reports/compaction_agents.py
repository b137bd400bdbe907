"""The compaction agents' files beside a session: whose compaction each records, and which of its requests
are its own.

Claude Code writes the request that summarizes a conversation into an ``agent-acompact-*`` file under the
session's ``subagents/`` folder. Up to 2.1.4x that file held the summary request alone. Later versions
(held-out ``6ec78367``, 2.1.81) run the compaction as a forked agent that starts from the conversation it
compacts, and its file holds that conversation first, every assistant line with the id and the usage of
the response it copies, then the summary request: 164 of the 165 responses of one such file are the main
chain's, 14 of the 15 of another a subagent's (that subagent compacted too). Counted as the compaction
agent's own, each was billed twice in the ``recorded`` row (the session 43.9% over the replay on cache
reads), and the first copy stood for the summary request. A response is billed once, whichever files
hold it: a file's own requests are those no other file holds (a compaction agent's, the summary), and
the conversation whose responses a compaction agent copies is the one it compacted (the main chain when
it copies none, as the older files do). Other forked agents copy the main chain too, and the same rule
bills their copies once: held-out ``7ef4b236``'s side question (``agent-aside_question-*``, 2.1.9x) holds
22 of the main chain's responses before its own one, and three ``agent-aprompt_suggestion-*`` files hold 4
responses, 3 of them copies.

Which of a conversation's compactions a request made is read from the times: the summary is asked for
before the boundary is written (its answer ends 0.3 to 55 seconds before it, in the four sessions that
have both), and not every compaction has a file (a session begun before Claude Code wrote them; a
compaction from the session memory, which asks for no summary), so by their order alone one compaction's
figures went to another.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..transcript.model import Transcript
from .usage import RecordedRequest, instant

#: The name a compaction agent's file starts with
COMPACTION_AGENT = "agent-acompact"


@dataclass
class SubagentFile:
    """One file beside a session: its name, transcript, and the requests that are its own."""

    name: str
    transcript: Transcript
    points: list[RecordedRequest]
    #: a compaction agent's file: the conversation it compacted ("" the main chain, else a subagent file's
    #: name); None for any other subagent's
    compacts: str | None = None


def with_compactions_attributed(main: list[RecordedRequest], files: list[SubagentFile]) -> list[SubagentFile]:
    """``files`` with each one's requests cut to its own (the responses no earlier file holds: the main
    chain's, then the other subagents', then the compaction agents'), and each compaction agent's file
    naming the conversation it compacted (see the module docstring). ``main``: every request of the
    session's own file."""
    owner = {p.message_id: "" for p in main}
    own: dict[str, SubagentFile] = {}
    for f in sorted(files, key=lambda f: f.name.startswith(COMPACTION_AGENT)):  # (the agents last: they copy)
        copied = Counter(owner[p.message_id] for p in f.points if p.message_id in owner)
        compacts = (copied.most_common(1)[0][0] if copied else "") if f.name.startswith(COMPACTION_AGENT) else None
        own[f.name] = SubagentFile(f.name, f.transcript, [p for p in f.points if p.message_id not in owner], compacts)
        owner.update((p.message_id, f.name) for p in own[f.name].points)
    return [own[f.name] for f in files]


def made_for(t: Transcript, boundaries: list[int], made: list[RecordedRequest]) -> list[RecordedRequest | None]:
    """For each of ``boundaries`` (entry indexes of ``t``, in order), the compaction agent's request that made
    it (None: no file holds one): of ``made`` (the requests of the agents that compacted ``t``'s conversation,
    in the order they were made), the last one sent after the boundary before was written and before this
    one was (see the module docstring). Where a time is missing, paired in order."""
    stamps = [instant(t.peek(b).get("timestamp")) for b in boundaries]
    sent = [p.sent_at for p in made]
    if None in stamps or None in sent:
        return [made[k] if k < len(made) else None for k in range(len(boundaries))]
    out: list[RecordedRequest | None] = []
    for k, stamp in enumerate(stamps):
        window = [j for j, at in enumerate(sent) if at <= stamp and (k == 0 or at > stamps[k - 1])]
        out.append(made[window[-1]] if window else None)
    return out
