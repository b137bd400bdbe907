"""What the three delta types share: replay what was announced, diff with now, say only the change.

A delta type keeps a large, changing listing (deferred tools, agent types, MCP
server instructions) out of the cached prefix. The model learns it from delta
attachments; what it was already told is rebuilt by replaying the earlier
deltas in the view, in order (added names join, removed names leave). The
current state comes from the ``--state`` file. Only the difference is
appended. A compaction removes the earlier deltas from the view, so the replay
starts empty after a compact boundary and the full current state is announced
again.

Added lines that do not fit the type's ``max_chars`` are left for the next run:
only what was rendered is recorded as added, so the replay stays true.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from ...reminders import reminder
from ...transcript.edits import NewMessage
from .types import AttachmentType

if TYPE_CHECKING:
    from ...transcript.model import Transcript
    from ...transcript.view import View
    from ..base import Context
    from .state import AttachmentState


class DeltaType(AttachmentType):
    cc_role: ClassVar[str] = "system"
    compare_content: ClassVar[bool] = False  # re-announce a name whose line/block changed (MCP instructions)
    added_key: ClassVar[str] = "addedNames"  # where the attachment record lists the added names

    # -- what subclasses provide -----------------------------------------------------------------
    @classmethod
    def current(cls, env: Mapping[str, Any]) -> dict[str, str] | None:
        """name -> the line (or block) announcing it, from the ``--state`` document; None = unknown."""
        raise NotImplementedError

    @classmethod
    def replay_one(cls, data: Mapping[str, Any]) -> tuple[dict[str, str | None], list[str]]:
        """(added name -> line or None, removed names) of one earlier delta attachment."""
        raise NotImplementedError

    @classmethod
    def build(cls, added: list[str], lines: list[str], removed: list[str], *, initial: bool, readded: list[str],
              options: Mapping[str, Any]) -> tuple[dict, str]:
        """(the Claude Code attachment record, the reminder text inside ``<system-reminder>``)."""
        raise NotImplementedError

    # -- shared ----------------------------------------------------------------------------------
    @classmethod
    def replay(cls, state: AttachmentState) -> tuple[dict[str, str | None], set[str]]:
        """What the model was told so far (name -> line), and every name a delta ever removed."""
        announced: dict[str, str | None] = {}
        removed_ever: set[str] = set()
        for ev in state.attachments(*cls.replays):
            added, removed = cls.replay_one(ev.data)
            for n in removed:
                announced.pop(n, None)
                removed_ever.add(n)
            announced.update(added)
        return announced, removed_ever

    @classmethod
    def render(cls, added: list[str], removed: list[str], current: Mapping[str, str], *, role: str,
               initial: bool, options: Mapping[str, Any], readded: list[str] | None = None) -> NewMessage | None:
        budget = int(options.get("max_chars") or 0)
        names: list[str] = []
        lines: list[str] = []
        used = 0
        for n in added:
            line = current.get(n, n)
            if budget and names and used + len(line) + 1 > budget:
                break  # the rest waits for the next run
            names.append(n)
            lines.append(line)
            used += len(line) + 1
        if not names and not removed:
            return None
        readded = [n for n in (readded or []) if n in names]
        record, text = cls.build(names, lines, list(removed), initial=initial, readded=readded, options=options)
        return NewMessage([reminder(text)], role, attachment=record)

    def compute(self, view: View, transcript: Transcript, ctx: Context, options: Mapping[str, Any],
                state: AttachmentState) -> list[NewMessage]:
        if state.env is None:
            return []
        current = self.current(state.env)
        if current is None:
            return []
        announced, removed_ever = self.replay(state)
        added = sorted((n for n in current if n not in announced
                        or (self.compare_content and announced[n] is not None and announced[n] != current[n])),
                       key=locale_order)
        removed = sorted(n for n in announced if n not in current)  # Claude Code: plain code-unit order
        if not added and not removed:
            return []
        msg = self.render(added, removed, current, role=self.role(options, state), initial=not announced,
                          options=options, readded=sorted(n for n in added if n in removed_ever))
        shown = len(msg.attachment.get(self.added_key) or []) if msg else 0
        if shown < len(added):
            state.deferred.append(f"{self.name}: {len(added) - shown} more added (max_chars)")
        return [msg] if msg else []


def locale_order(name: str) -> tuple[str, str]:
    """Claude Code sorts added names with ``localeCompare``: case-insensitive, lower case first on a tie
    (``claude, Explore, general-purpose, Plan``)."""
    return name.casefold(), name.swapcase()


def names_of(items: Any, *keys: str) -> list[tuple[str, dict]]:
    """(name, item) pairs from a state-file list of strings or objects (``name`` under one of ``keys``)."""
    out = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, str) and item:
            out.append((item, {}))
        elif isinstance(item, dict):
            name = next((item[k] for k in keys if isinstance(item.get(k), str) and item[k]), None)
            if name:
                out.append((name, item))
    return out


def section(text: str, header: str) -> list[str] | None:
    """The lines after the line starting with ``header``, up to the next blank line (None: no such line)."""
    for part in text.split("\n\n"):
        first, _, rest = part.partition("\n")
        if first.startswith(header):
            return [x for x in rest.split("\n") if x.strip()]
    return None
