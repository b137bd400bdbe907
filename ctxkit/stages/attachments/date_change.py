r"""date_change: the local date moved on since the transcript last announced it.

The date the model knows is the last one announced in the view: Claude Code's `date` attachment
(`Today's date is 2026-11-29.`) or an earlier `date_change`. When today's local date differs, one
system message is appended (the cached prefix keeps the old date; rewriting it would turn the
whole conversation into cache writes):

```
The date has changed. Today's date is now 2026-11-30. DO NOT mention this to the user explicitly because they are already aware.
```

Nothing is appended when the view announces no date at all (the system prompt, which is not in
the transcript, carries it).

**Time zone.** The dates in a transcript are local dates written by the agent's machine. With
`timezone: local` (the default), "today" is taken in the offset `--now` was written with
(`--now 2026-11-30T00:30:00+09:00` is the 30th, `--now 2026-11-29T23:30:00Z` the 29th); otherwise
(no `--now`, or one without an offset, which ctxkit reads as UTC) in the local time zone of the
machine running ctxkit (`TZ`). Set `timezone` (`Europe/Paris`, `UTC`, `+09:00`) when that machine
is not where the agent ran.
"""
from __future__ import annotations

import re

from ...reminders import reminder
from ...transcript.edits import NewMessage
from .state import local_today
from .types import AttachmentType, options_schema, register

_ANNOUNCED = re.compile(r"Today's date is (?:now )?(\d{4}-\d{2}-\d{2})")


def announced_date(state) -> str | None:
    """The last date the view told the model, or None."""
    last = None
    for ev in state.attachments("date", "date_change"):
        value = ev.data.get("newDate") if ev.name == "date_change" else ev.data.get("date")
        if isinstance(value, str) and value:
            last = value
    return last


@register
class DateChange(AttachmentType):
    name = "date_change"
    summary = "Tell the model the date changed since it was last announced."
    replays = ("date", "date_change")
    cc_role = "system"
    options_schema = options_schema({
        "timezone": {"type": "string", "default": "local",
                     "description": "Where 'today' is: local (--now's offset, else the machine's TZ), UTC, an IANA "
                                    "name or an offset like +09:00."},
    })

    @classmethod
    def parse_rendered(cls, text: str) -> dict | None:
        m = _ANNOUNCED.search(text)
        if not m or not (text.startswith("Today's date is") or text.startswith("The date has changed")):
            return None
        return {"type": "date_change", "newDate": m.group(1)}

    def compute(self, view, transcript, ctx, options, state):
        last = announced_date(state)
        if last is None:
            return []
        today = local_today(ctx, options.get("timezone", "local")).isoformat()
        if today == last:
            return []
        text = (f"The date has changed. Today's date is now {today}. DO NOT mention this to the user explicitly "
                "because they are already aware.")
        return [NewMessage([reminder(text)], self.role(options, state),
                           attachment={"type": "date_change", "newDate": today})]
