"""A compaction OpenCode reads back: a user message with a ``compaction`` part, then its summary.

As OpenCode records its own (``packages/opencode/src/session/compaction.ts``): a ``user`` message whose
part is ``{"type": "compaction", "auto": false, "tail_start_id": <the kept tail's first message>}``,
and an ``assistant`` message with ``summary: true``, ``finish: "stop"`` and that user message as its
``parentID``, its text the summary. OpenCode then sends the two, then the kept tail, then what follows. Their ids sort
after every id of the session (OpenCode orders a session's messages by id). No earlier byte changes:
the user message's ``info`` carries ``"ctxkit": {"compaction": 1}`` (a key OpenCode does not read), and
``ctxkit expand`` takes the two messages out again, giving back the export byte for byte.
"""
from __future__ import annotations

from ..model import Transcript
from ..view import View
from .records import messages

MARK = "ctxkit"


def _millis(timestamp: str) -> int:
    from datetime import datetime

    return int(datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp() * 1000)


def write_compacted(t: Transcript, view: View, keep_from: int, summary: str, timestamp: str) -> Transcript:
    msgs = messages(t)
    if not msgs:
        raise ValueError("the session holds no message to compact")
    kept = {m.uuid for m in view.messages[keep_from:] if m.uuid}
    tail = next((m["info"].get("id") for _, m in msgs if m["info"].get("id") in kept), None)
    last = max(str(m["info"].get("id", "")) for _, m in msgs)
    session = next((m["info"].get("sessionID") for _, m in reversed(msgs) if m["info"].get("sessionID")), None)
    ref = next((m["info"] for _, m in reversed(msgs) if m["info"].get("role") == "user"), {})
    now = _millis(timestamp)
    user_id, summary_id = f"{last}ctxkit1", f"{last}ctxkit2"
    part = {"type": "compaction", "auto": False}
    if tail is not None:
        part["tail_start_id"] = tail
    user = {"info": {"id": user_id, "sessionID": session, "role": "user", "time": {"created": now},
                     **{k: ref[k] for k in ("agent", "model") if k in ref}, MARK: {"compaction": 1}},
            "parts": [{"id": f"prt_{user_id[4:]}", "sessionID": session, "messageID": user_id, **part}]}
    model = ref.get("model") if isinstance(ref.get("model"), dict) else {}
    answer = {"info": {"id": summary_id, "sessionID": session, "role": "assistant", "parentID": user_id,
                       "time": {"created": now, "completed": now}, "summary": True, "finish": "stop",
                       "mode": "compaction", "agent": "compaction", "modelID": model.get("modelID", ""),
                       "providerID": model.get("providerID", ""), "cost": 0,
                       "tokens": {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}}},
              "parts": [{"id": f"prt_{summary_id[4:]}", "sessionID": session, "messageID": summary_id,
                         "type": "text", "text": summary}]}
    return t.with_edits(append=[user, answer])


def uncompact(t: Transcript) -> Transcript:
    """``t`` without the messages ctxkit's compactions wrote (for ``ctxkit expand``)."""
    live = list(t.live_indexes())
    drop: list[int] = []
    for pos, i in enumerate(live):
        info = t.entry(i).get("info")
        mark = info.get(MARK) if isinstance(info, dict) else None
        n = mark.get("compaction") if isinstance(mark, dict) else None
        if isinstance(n, int) and not isinstance(n, bool) and n >= 0:
            drop += live[pos:pos + 1 + n]
    return t.with_edits(remove=drop) if drop else t
