"""What the other agents' sessions were billed: their requests, read from the usage each agent records.

Claude Code's requests are read by :mod:`ctxkit.reports.usage`. For every other format, a request is
an assistant message of the view (:meth:`ctxkit.transcript.interface.Format.project`): it was sent just
before the first entry the message was made of, and its usage is the agent's own record of it, turned
into the Anthropic shape the cost model prices (``input_tokens`` without the cached ones). Each format
declares how it reads that (:attr:`ctxkit.transcript.interface.Format.request_usage`, in the format's
``usage`` module), so a new agent is its own folder and registry entry, nothing here:

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

from ..transcript.interface import handler
from ..transcript.model import Transcript
from .pricing import Usage
from .usage import RecordedRequest, instant


def _when(d: dict) -> datetime | None:
    """The entry's time: an ISO ``timestamp``, or epoch milliseconds (Cline's ``ts``, OpenCode's ``time.created``)."""
    if "timestamp" in d:
        return instant(d.get("timestamp"))
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
    read = handler(t.format).request_usage
    default = session_model(t)
    out = []
    for k, m in enumerate(handler(t.format).project(t).messages):
        entries = [i for i in m.entries if 0 <= i < t.n_entries]
        if m.role != "assistant" or not entries:
            continue
        got = read(t, entries) if read is not None else None
        usage = Usage(input_tokens=got.input_tokens, cache_read_input_tokens=got.cache_read_input_tokens,
                      cache_creation_input_tokens=got.cache_creation_input_tokens,
                      output_tokens=got.output_tokens) if got is not None else Usage()
        first = min(entries)
        out.append(RecordedRequest(f"{t.format}-{k}", first, _when(t.entry(first)),
                                   (got.model if got is not None else None) or default, usage, False))
    return out
