"""What the other agents' sessions were billed: their requests, read from the usage each agent records.

Claude Code's requests are read by :mod:`ctxkit.reports.usage`. For every other format, a request is
an assistant message of the view (:meth:`ctxkit.transcript.interface.Format.project`): it was sent just
before the first entry the message was made of, and its usage is the agent's own record of it, turned
into the Anthropic shape the cost model prices (``input_tokens`` without the cached ones):

* Codex — the ``token_count`` event after the response (``last_token_usage``: ``input_tokens``, the
  cached ones included, ``cached_input_tokens``, ``output_tokens``, reasoning included);
* Gemini CLI — the ``gemini`` record's ``tokens`` (``input``, cached included, ``cached``, ``output``,
  ``thoughts``);
* OpenCode — the message's last ``step-finish`` part's ``tokens`` (else the message's own): ``input``
  without the cache, ``cache.read``, ``cache.write``, ``output``, ``reasoning``;
* Cline — the message's ``metrics.tokens`` (``prompt``, cached included, ``cached``, ``completion``);
* Cursor and aider record none: their requests are there, with zero usage (simulate says so).

The model is the one the record names where it names one, else the session's
(:attr:`ctxkit.transcript.interface.Format.settings`).
"""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from ..transcript.codex.items import event, kind, response_item
from ..transcript.interface import handler
from ..transcript.model import Transcript
from .pricing import Usage
from .usage import MAX_REPORTED_TOKENS, RecordedRequest, _instant

_CODEX_RESPONSE_SIDE = ("function_call", "custom_tool_call", "local_shell_call", "reasoning", "web_search_call",
                        "image_generation_call")


def _n(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 < v <= MAX_REPORTED_TOKENS else 0


def _codex(t: Transcript, entries: list[int]) -> tuple[Usage | None, str | None]:
    """The first ``token_count`` after the message's newest entry, before the next response's items."""
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
                cached = _n(last.get("cached_input_tokens"))
                return Usage(input_tokens=max(_n(last.get("input_tokens")) - cached, 0),
                             cache_read_input_tokens=cached, output_tokens=_n(last.get("output_tokens"))), None
        elif k == "response_item":
            item = response_item(d) or {}
            if item.get("type") in _CODEX_RESPONSE_SIDE or (item.get("type") == "message"
                                                             and item.get("role") == "assistant"):
                break
    return None, None


def _gemini(t: Transcript, entries: list[int]) -> tuple[Usage | None, str | None]:
    for i in reversed(entries):
        d = t.entry(i)
        tokens = d.get("tokens")
        if isinstance(tokens, dict):
            cached = _n(tokens.get("cached"))
            model = d.get("model") if isinstance(d.get("model"), str) else None
            return Usage(input_tokens=max(_n(tokens.get("input")) - cached, 0), cache_read_input_tokens=cached,
                         output_tokens=_n(tokens.get("output")) + _n(tokens.get("thoughts"))), model
    return None, None


def _opencode_tokens(tokens: Any) -> Usage | None:
    if not isinstance(tokens, dict):
        return None
    cache = tokens.get("cache") if isinstance(tokens.get("cache"), dict) else {}
    usage = Usage(input_tokens=_n(tokens.get("input")), cache_read_input_tokens=_n(cache.get("read")),
                  cache_creation_input_tokens=_n(cache.get("write")),
                  output_tokens=_n(tokens.get("output")) + _n(tokens.get("reasoning")))
    return usage if usage.prompt_tokens or usage.output_tokens else None


def _opencode(t: Transcript, entries: list[int]) -> tuple[Usage | None, str | None]:
    for i in reversed(entries):
        m = t.entry(i)
        info = m.get("info") if isinstance(m.get("info"), dict) else {}
        model = info.get("modelID") if isinstance(info.get("modelID"), str) else None
        steps = [p for p in m.get("parts") or [] if isinstance(p, dict) and p.get("type") == "step-finish"]
        for usage in [*(_opencode_tokens(p.get("tokens")) for p in reversed(steps)), _opencode_tokens(info.get("tokens"))]:
            if usage is not None:
                return usage, model
    return None, None


def _cline(t: Transcript, entries: list[int]) -> tuple[Usage | None, str | None]:
    for i in reversed(entries):
        d = t.entry(i)
        metrics = d.get("metrics")
        tokens = metrics.get("tokens") if isinstance(metrics, dict) else None
        if isinstance(tokens, dict):
            cached = _n(tokens.get("cached"))
            info = d.get("modelInfo") if isinstance(d.get("modelInfo"), dict) else {}
            model = info.get("modelId") if isinstance(info.get("modelId"), str) else None
            return Usage(input_tokens=max(_n(tokens.get("prompt")) - cached, 0), cache_read_input_tokens=cached,
                         output_tokens=_n(tokens.get("completion"))), model
    return None, None


READERS = {"codex": _codex, "gemini": _gemini, "opencode": _opencode, "cline": _cline}


def _when(d: dict) -> datetime | None:
    """The entry's time: an ISO ``timestamp``, or epoch milliseconds (Cline's ``ts``, OpenCode's ``time.created``)."""
    if "timestamp" in d:
        return _instant(d.get("timestamp"))
    info = d.get("info")
    created = (info.get("time") or {}).get("created") if isinstance(info, dict) and isinstance(info.get("time"), dict) \
        else d.get("ts")
    if isinstance(created, (int, float)) and not isinstance(created, bool) and created > 0:
        return datetime.fromtimestamp(created / 1000, tz=timezone.utc)
    return None


def session_model(t: Transcript) -> str:
    """The model the session ran with, as its format records it ("" when it records none)."""
    settings = handler(t.format).settings
    return str(getattr(settings(t), "model", None) or "") if settings is not None else ""


def agent_requests(t: Transcript) -> list[RecordedRequest]:
    """Every model request of a session in a format other than Claude Code's, in order."""
    read = READERS.get(t.format)
    default = session_model(t)
    out = []
    for k, m in enumerate(handler(t.format).project(t).messages):
        entries = [i for i in m.entries if 0 <= i < t.n_entries]
        if m.role != "assistant" or not entries:
            continue
        usage, model = read(t, entries) if read is not None else (None, None)
        first = min(entries)
        out.append(RecordedRequest(f"{t.format}-{k}", first, _when(t.entry(first)), model or default,
                                   usage or Usage(), False))
    return out
