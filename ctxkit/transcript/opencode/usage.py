"""What the API reported an OpenCode request used: the tokens of an assistant message's last step.

``step-finish`` parts and the assistant ``info`` carry ``tokens``: ``input``, ``output``, ``reasoning``,
``cache.read``, ``cache.write`` (``packages/opencode/src/session/message-v2.ts``; ``input`` leaves
the cached tokens out). The request's size is their sum.
"""
from __future__ import annotations

from ..claude_code.session import RecordedSettings
from ..interface import RequestUsage, UsageWriter, reported
from ..lineindex import BAD
from ..model import Transcript
from .records import messages, newest_compaction

#: ``Transcript.memo`` key of :func:`_compacted_up_to`
COMPACTED = "opencode_compacted_up_to"


def _compacted_up_to(t: Transcript) -> int:
    """The entry of the newest completed compaction's summary (-1: none). The messages up to it, the kept
    tail's included, were answered before the compaction: their tokens counted the history it replaced,
    and the summary's counted the summarizer's request. Found once per transcript version."""
    found = t.memo.get(COMPACTED)
    if found is None:
        msgs = messages(t)
        latest = newest_compaction(msgs)
        found = t.memo[COMPACTED] = msgs[latest[1]][0] if latest is not None else -1
    return found


def _n(v) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else 0


def total(tokens) -> int | None:
    if not isinstance(tokens, dict):
        return None
    cache = tokens.get("cache") if isinstance(tokens.get("cache"), dict) else {}
    n = sum(_n(tokens.get(k)) for k in ("input", "output", "reasoning")) + _n(cache.get("read")) + _n(cache.get("write"))
    return n or None


def message_usage(t: Transcript, entries: list[int]) -> int | None:
    """The tokens of an assistant view message's last step (else of the message): the size of the request
    it answered; None for a message answered before the newest compaction (:func:`_compacted_up_to`)."""
    if entries and max(entries) <= _compacted_up_to(t):
        return None
    for i in reversed(entries):
        if i < 0:
            continue
        m = t.entry(i)
        steps = [p for p in m.get("parts") or [] if isinstance(p, dict) and p.get("type") == "step-finish"]
        for p in reversed(steps):
            n = total(p.get("tokens"))
            if n:
                return n
        info = m.get("info")
        n = total(info.get("tokens")) if isinstance(info, dict) else None
        if n:
            return n
    return None


def recorded_settings(t: Transcript) -> RecordedSettings:
    """The model the session ran with: the newest assistant message's ``modelID``."""
    for i in range(t.n_entries - 1, -1, -1):
        if i in t.removed or i < t.n_lines and t.lines.flags[i] & BAD:
            continue
        info = t.entry(i).get("info")
        if isinstance(info, dict) and info.get("role") == "assistant" and isinstance(info.get("modelID"), str) \
                and info["modelID"]:
            return RecordedSettings(model=info["modelID"], model_source="assistant message")
    return RecordedSettings()


def _billed(tokens, model: str | None) -> RequestUsage | None:
    if not isinstance(tokens, dict):
        return None
    cache = tokens.get("cache") if isinstance(tokens.get("cache"), dict) else {}
    usage = RequestUsage(input_tokens=reported(tokens.get("input")), cache_read_input_tokens=reported(cache.get("read")),
                         cache_creation_input_tokens=reported(cache.get("write")),
                         output_tokens=reported(tokens.get("output")) + reported(tokens.get("reasoning")), model=model)
    return usage if any(usage[:4]) else None


def request_usage(t: Transcript, entries: list[int]) -> RequestUsage | None:
    """The message's last ``step-finish`` part's ``tokens`` (else the message's own): ``input`` without the
    cache, ``cache.read``, ``cache.write``, ``output``, ``reasoning``; its ``info.modelID``."""
    for i in reversed(entries):
        m = t.entry(i)
        info = m.get("info") if isinstance(m.get("info"), dict) else {}
        model = info.get("modelID") if isinstance(info.get("modelID"), str) else None
        steps = [p for p in m.get("parts") or [] if isinstance(p, dict) and p.get("type") == "step-finish"]
        for tokens in [*(p.get("tokens") for p in reversed(steps)), info.get("tokens")]:
            usage = _billed(tokens, model)
            if usage is not None:
                return usage
    return None


def replace_usage(entry: dict, usage: RequestUsage) -> bool:
    """An assistant message's ``tokens`` (its ``info``'s and every ``step-finish`` part's) report ``usage``'s
    input (``input`` without the cache, ``cache.read``, ``cache.write``); output and reasoning kept."""
    info = entry.get("info")
    places = [p for p in entry.get("parts") or [] if isinstance(p, dict) and p.get("type") == "step-finish"
              and isinstance(p.get("tokens"), dict)]
    if isinstance(info, dict) and isinstance(info.get("tokens"), dict):
        places.append(info)
    if not isinstance(info, dict) or info.get("role") != "assistant" or not places:
        return False
    for place in places:
        tokens = place["tokens"]
        cache = tokens.get("cache") if isinstance(tokens.get("cache"), dict) else {}
        place["tokens"] = {**tokens, "input": usage.input_tokens,
                           "cache": {**cache, "read": usage.cache_read_input_tokens,
                                     "write": usage.cache_creation_input_tokens}}
    return True


USAGE_WRITER = UsageWriter(b'"tokens"', replace_usage)
