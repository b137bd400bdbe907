r"""queued_commands: what the user typed while a turn ran, delivered as user messages.

Two sources: the `--queued` file, and, in Claude Code transcripts, the `queue-operation` entries:
items enqueued during the current turn (after the last human prompt) that no
`dequeue`/`remove`/`popAll` took off the queue. Each is appended once, as Claude Code renders a
`queued_command` attachment:

```
<system-reminder>
The user sent a new message while you were working:
Also update the README

IMPORTANT: After completing your current task, you MUST address the user's message above. Do not ignore it.
</system-reminder>
```

(`task-notification` items read `A background agent completed a task:`.) An item already delivered
in this turn, by an earlier run or by Claude Code, is not delivered again. Queued input is the
user's: no budget ever drops it.

The `--queued` file is a JSON list of strings or of `{"prompt": ..., "mode": "prompt" |
"task-notification", "origin": {...}}` objects (for messages of several lines), or plain text: one
message per non-empty line. It stands for the queue of the current turn: give it once (after the
next human prompt the same file would be delivered again).
"""
from __future__ import annotations

import re
from collections import Counter

from ...reminders import reminder
from ...transcript.claude_code.queued import wrap_command_text
from ...transcript.edits import NewMessage
from ...transcript.view import content_text
from .state import parse_time
from .types import AttachmentType, options_schema, register

_USER_RE = re.compile(r"^The user sent a new message while you were working:\n(.*)\n\nIMPORTANT: After completing "
                      r"your current task, you MUST address the user's message above\. Do not ignore it\.$", re.S)
_TASK_RE = re.compile(r"^A background agent completed a task:\n(.*)$", re.S)
_COORD_RE = re.compile(r"^The coordinator sent a message while you were working:\n(.*)\n\nAddress this before "
                       r"completing your current task\.$", re.S)


@register
class QueuedCommands(AttachmentType):
    name = "queued_commands"
    summary = "Inputs queued while a turn ran, delivered as user messages."
    replays = ("queued_command",)
    cc_role = "user"
    options_schema = options_schema({
        "from_transcript": {"type": "boolean", "default": True,
                            "description": "Also deliver items the transcript's queue-operation entries left queued."},
    }, role=False)  # queued input is the user's: always a user message

    @classmethod
    def parse_rendered(cls, text: str) -> dict | None:
        for rx, kind in ((_USER_RE, "prompt"), (_TASK_RE, "task-notification"), (_COORD_RE, "coordinator")):
            m = rx.match(text)
            if m:
                return {"type": "queued_command", "prompt": m.group(1), "commandMode": kind}
        return None

    def compute(self, view, transcript, ctx, options, state):
        last_prompt = None
        delivered: Counter[str] = Counter()
        for ev in state.events:
            if ev.kind == "prompt":
                last_prompt, delivered = ev, Counter()
            elif ev.kind == "attachment" and ev.name == "queued_command":
                delivered[content_text(ev.data.get("prompt"))] += 1
        pending: list[dict] = []
        if options["from_transcript"]:
            pending.extend(self.left_in_queue(state, last_prompt.timestamp if last_prompt else None))
        pending.extend(state.queued or [])
        out = []
        for item in pending:
            raw = content_text(item.get("prompt"))
            if not raw.strip():
                continue
            if delivered[raw] > 0:
                delivered[raw] -= 1
                continue
            origin = item.get("origin") if isinstance(item.get("origin"), dict) else None
            kind = (origin or {}).get("kind") or item.get("mode")
            record = {"type": "queued_command", "prompt": raw, "commandMode": item.get("mode") or "prompt"}
            if origin:
                record["origin"] = origin
            if item.get("timestamp"):
                record["queuedAt"] = item["timestamp"]
            out.append(NewMessage([reminder(wrap_command_text(raw, kind))], "user", attachment=record))
        return out

    @staticmethod
    def left_in_queue(state, since) -> list[dict]:
        """Items the transcript's queue operations left queued, enqueued during the current turn."""
        queue: list[dict] = []
        for op in state.session.get("queue_ops", []):
            kind = op.get("operation")
            if kind == "enqueue" and isinstance(op.get("content"), str):
                queue.append({"prompt": op["content"], "timestamp": op.get("timestamp")})
            elif kind in ("dequeue", "remove") and queue:
                content = op.get("content")
                hit = next((k for k, q in enumerate(queue) if isinstance(content, str) and q["prompt"] == content), 0)
                queue.pop(hit)
            elif kind == "popAll":
                queue.clear()
        if since is None:
            return queue
        return [q for q in queue if (parse_time(q.get("timestamp")) or since) >= since]
