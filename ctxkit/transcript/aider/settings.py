"""The model an aider chat ran with: the announcement aider writes into the history when it starts.

aider prints its announcements as tool output (``> `` lines) at the start of every run
(``Coder.get_announcements`` in ``aider/coders/base_coder.py``): ``Main model: <name> with <edit format>
edit format`` (``Model: ...`` when the weak model is the main one; ``using`` in older versions). The
newest one names the model (its context window and prices, for ``stats`` and ``simulate``); a provider
path before the name (``openrouter/anthropic/claude-sonnet-4-5``) is dropped, as the model table names
models without one.
"""
from __future__ import annotations

import re

from ..claude_code.session import RecordedSettings
from ..model import Transcript

_ANNOUNCED = re.compile(r"^(?:Main model|Model): (\S+) (?:with|using) ", re.MULTILINE)


def recorded_settings(t: Transcript) -> RecordedSettings:
    for i in reversed(list(t.live_indexes())):
        d = t.entry(i)
        if d.get("aider") != "tool" or not isinstance(d.get("content"), str):
            continue
        found = _ANNOUNCED.findall(d["content"])
        if found:
            return RecordedSettings(model=found[-1].rsplit("/", 1)[-1], model_source="aider announcement")
    return RecordedSettings()
