"""Short message ids: how a model (or a person) names a user turn to snip.

Each real user message (view kind ``prompt``) gets a six-character id derived
from its uuid exactly as Claude Code derives it: the first 10 hex digits of the
uuid, read as a number, written in base 36, first 6 characters. The id is never
stored: the same message always gives the same id, and an id is resolved by
computing the ids of the view's messages again. Plain formats have no uuids;
their messages' stable line hashes stand in (:func:`ctxkit.transcript.plain.messages.message_uuid`).

:func:`tag_view` shows the ids to the model by appending ``\\n[id:k8f3z1]`` to the
last text of each such message. It decorates a *view* (what ``ctxkit view`` prints
and what ``anthropic-request`` sends), never the transcript: tags written into
the transcript would change the user's own messages on disk (and what Claude
Code shows on resume), count as growth in every token measurement, and would
have to be re-derived anyway after every edit. A record handler is not needed
either, since the decoration is a pure function of the view. Tool-result
messages (their text is folded into the results) and harness messages
(reminders, attachments, summaries) get no id.
"""
from __future__ import annotations

import re
from dataclasses import replace

from .view import PROMPT, View, ViewMessage

_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"
_HEX = set("0123456789abcdef")
ID_LENGTH = 6
_ID_TOKEN = re.compile(r"(?:\[?id:)?([0-9a-z]{1,6})\]?", re.IGNORECASE)


def short_id(uuid: str) -> str:
    """The short id of a message uuid: first 10 hex digits -> base 36 -> first 6 characters."""
    digits = "".join(c for c in uuid.lower() if c in _HEX)[:10]
    n = int(digits or "0", 16)
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = _BASE36[r] + out
        if n == 0:
            break
    return out[:ID_LENGTH]


def is_taggable(m: ViewMessage) -> bool:
    """A real user message with top-level text: the start of a user turn, which an id names."""
    return (m.role == "user" and m.kind == PROMPT and bool(m.uuid)
            and not any(b.get("type") == "tool_result" for b in m.content)
            and any(b.get("type") == "text" for b in m.content))


def message_ids(view: View) -> dict[str, list[int]]:
    """short id -> indexes of the view messages carrying it (more than one only on a collision)."""
    out: dict[str, list[int]] = {}
    for i, m in enumerate(view.messages):
        if is_taggable(m):
            out.setdefault(short_id(m.uuid or ""), []).append(i)
    return out


def tag(m: ViewMessage) -> ViewMessage:
    """A copy of ``m`` with ``\\n[id:xxxxxx]`` appended to its last text block."""
    last = max(k for k, b in enumerate(m.content) if b.get("type") == "text")
    content = list(m.content)
    content[last] = {**content[last], "text": f"{content[last].get('text', '')}\n[id:{short_id(m.uuid or '')}]"}
    return replace(m, content=content, refs=list(m.refs), entries=list(m.entries))


def tag_view(view: View) -> View:
    """The view with every real user message tagged with its id (the input view is not changed)."""
    return View([tag(m) if is_taggable(m) else m for m in view.messages], list(view.notes), list(view.orphans),
                list(view.unsent))


def parse_ids(values: str | list | tuple) -> list[str]:
    """Ids as a model or a person writes them: ``abc123``, ``[id:abc123]``, comma- or space-separated."""
    items = [values] if isinstance(values, str) else list(values)
    out: list[str] = []
    for item in items:
        for token in re.split(r"[\s,]+", str(item)):
            if not token:
                continue
            m = _ID_TOKEN.fullmatch(token)
            out.append(m.group(1).lower() if m else token)
    return list(dict.fromkeys(out))
