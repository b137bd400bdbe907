"""What the API reported a Codex request used: the ``token_count`` events of a rollout.

Codex writes an ``event_msg`` ``{"type": "token_count", "info": {"last_token_usage": {...},
"total_token_usage": {...}, "model_context_window": N}}`` once a response completes
(``codex-rs/protocol/src/protocol.rs``: ``TokenCountEvent``, ``TokenUsageInfo``, ``TokenUsage``).
``last_token_usage`` is that one request's: its ``input_tokens`` (the cached ones included, as the
Responses API counts them) plus its ``output_tokens`` (reasoning included) is everything the request
held and the reply, as Claude Code's usage sum is for a Claude Code session. The model is the newest
``turn_context``'s; the window the thresholds are taken from is the newest ``model_context_window``
(the one Codex itself counts against), else the model's.
"""
from __future__ import annotations

from typing import Any

from ..claude_code.session import RecordedSettings
from ..interface import RequestUsage, UsageWriter, reported
from ..lineindex import BAD
from ..model import Transcript
from .items import CALL_TYPES, event, kind, response_item

_RESPONSE_SIDE = (*CALL_TYPES, "reasoning", "web_search_call", "image_generation_call")


def usage_total(usage: Any) -> int | None:
    """A ``TokenUsage``'s input plus output tokens, or None when it reports neither."""
    if not isinstance(usage, dict):
        return None
    values = [usage.get("input_tokens"), usage.get("output_tokens")]
    ints = [v for v in values if isinstance(v, int) and not isinstance(v, bool) and v >= 0]
    return sum(ints) if ints else None


def _kind_of(t: Transcript, i: int) -> str | None:
    if i < t.n_lines and i not in t.overrides:
        return t.lines.type(i)
    return kind(t.entry(i))


def message_usage(t: Transcript, entries: list[int]) -> int | None:
    """The usage Codex recorded for the response an assistant view message was made of: the first
    ``token_count`` after its newest entry, before the next response's items."""
    if not entries:
        return None
    for i in range(max(entries) + 1, t.n_entries):
        if i in t.removed or (i < t.n_lines and t.lines.flags[i] & BAD):
            continue
        k = _kind_of(t, i)
        if k == "compacted":
            return None
        if k == "event_msg":
            ev = event(t.entry(i)) or {}
            if ev.get("type") == "token_count":
                info = ev.get("info")
                total = usage_total(info.get("last_token_usage")) if isinstance(info, dict) else None
                if total is not None:
                    return total
        elif k == "response_item":
            item = response_item(t.entry(i)) or {}
            if item.get("type") in _RESPONSE_SIDE or (item.get("type") == "message" and item.get("role") != "tool"):
                return None
    return None


def recorded_settings(t: Transcript) -> RecordedSettings:
    """The model the session ran with, the newest ``turn_context``'s ``model``, and the window Codex
    counts against, the newest ``token_count``'s ``model_context_window`` (rollouts of Codex 0.3x hold
    no ``turn_context``: the window is all they say)."""
    model = window = None
    for i in range(t.n_entries - 1, -1, -1):
        if model is not None and window is not None:
            break
        if i in t.removed or (i < t.n_lines and t.lines.flags[i] & BAD):
            continue
        k = _kind_of(t, i)
        if k == "turn_context" and model is None:
            payload = t.entry(i).get("payload")
            found = payload.get("model") if isinstance(payload, dict) else None
            model = found if isinstance(found, str) and found else None
        elif k == "event_msg" and window is None:
            ev = event(t.entry(i)) or {}
            info = ev.get("info") if ev.get("type") == "token_count" else None
            found = info.get("model_context_window") if isinstance(info, dict) else None
            window = found if isinstance(found, int) and not isinstance(found, bool) and found > 0 else None
    return RecordedSettings(model=model, model_source="turn context" if model else None, context_window=window)


_BILLED_RESPONSE_SIDE = ("function_call", "custom_tool_call", "local_shell_call", "reasoning", "web_search_call",
                         "image_generation_call")


def request_usage(t: Transcript, entries: list[int]) -> RequestUsage | None:
    """What the request an assistant view message answered was billed: the first ``token_count`` after the
    message's newest entry, before the next response's items (``last_token_usage``: ``input_tokens``, the
    cached ones included, ``cached_input_tokens``, ``output_tokens``, reasoning included)."""
    for i in range(max(entries) + 1, t.n_entries):
        if i in t.removed:
            continue
        d = t.entry(i)
        k = kind(d)
        if k == "compacted":
            break
        if k == "event_msg":
            ev = event(d) or {}
            info = ev.get("info")
            last = info.get("last_token_usage") if ev.get("type") == "token_count" and isinstance(info, dict) else None
            if isinstance(last, dict):
                cached = reported(last.get("cached_input_tokens"))
                return RequestUsage(input_tokens=max(reported(last.get("input_tokens")) - cached, 0),
                                    cache_read_input_tokens=cached, output_tokens=reported(last.get("output_tokens")))
        elif k == "response_item":
            item = response_item(d) or {}
            if item.get("type") in _BILLED_RESPONSE_SIDE or (item.get("type") == "message"
                                                             and item.get("role") == "assistant"):
                break
    return None


def replace_usage(entry: dict, usage: RequestUsage) -> bool:
    """A ``token_count`` event's ``last_token_usage`` reports ``usage``'s input (``input_tokens``, the cached
    ones included as the Responses API counts them, ``cached_input_tokens`` the cache reads); its output
    figures are kept. (``total_token_usage``, the session's running sum, is read by nothing here.)"""
    ev = event(entry)
    info = ev.get("info") if ev is not None and ev.get("type") == "token_count" else None
    last = info.get("last_token_usage") if isinstance(info, dict) else None
    if not isinstance(last, dict):
        return False
    held = usage.prompt_tokens
    info["last_token_usage"] = {**last, "input_tokens": held, "cached_input_tokens": usage.cache_read_input_tokens,
                                "total_tokens": held + reported(last.get("output_tokens"))}
    return True


USAGE_WRITER = UsageWriter(b'"token_count"', replace_usage)
