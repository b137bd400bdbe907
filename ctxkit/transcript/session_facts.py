"""What a transcript says about the session it records: the model, its output limit, the betas and
the prompt-cache lifetime of each request — read in one place, so every command uses the same facts.

Claude Code writes them in several entries, and the newest one wins:

* ``api-request`` (Claude Code 2.1.3xx): the exact ``params`` of each request (``model``, ``betas``,
  ``max_tokens``, ``thinking``, ...);
* an ``assistant`` message: the ``model`` that answered and its ``usage``, whose ``cache_creation``
  split (``ephemeral_5m_input_tokens`` / ``ephemeral_1h_input_tokens``) says which cache lifetime the
  request asked for (``<synthetic>`` messages are Claude Code's own placeholders: no model);
* before any answer, the ``model`` attachment (``identity.modelId``) names the session's model.

Sidechain (subagent) entries are not the session's: a subagent may run another model (a subagent's
own file, all sidechain, has its own facts). Other formats
(message lists) record none of this: their facts are empty, and the policy decides.

Computed once per transcript version (``t.memo``); a request is read only when it is the newest.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .claude_code_chain import entry_type
from .model import Transcript

#: The entry types that carry session facts (the others are never parsed here).
FACT_TYPES = ("api-request", "assistant", "attachment")


@dataclass(frozen=True)
class SessionFacts:
    """The session's own settings, as recorded; ``None`` (or empty) where the transcript says nothing."""

    model: str | None = None
    model_source: str | None = None  # "api-request" | "assistant message" | "model attachment"
    max_tokens: int | None = None  # the newest recorded request's max_tokens
    betas: tuple[str, ...] = ()
    thinking: dict | None = None
    #: the cache lifetime each answered request asked for ("5m" | "1h"), by message id, oldest first;
    #: a request whose usage wrote nothing to the cache says nothing (absent)
    cache_ttls: dict[str, str] = field(default_factory=dict)

    @property
    def cache_ttl(self) -> str | None:
        """The newest request's cache lifetime, if its usage says."""
        return next(reversed(self.cache_ttls.values()), None) if self.cache_ttls else None


def session_facts(t: Transcript) -> SessionFacts:
    """The facts of ``t`` (see the module docstring); empty for formats other than Claude Code's."""
    if t.format != "claude-code":
        return SessionFacts()
    known = t.memo.get("session_facts")
    if known is None:
        known = _read(t, sidechain=False)
        if known.model is None:  # a subagent's own file: every entry is on its sidechain
            known = _read(t, sidechain=True)
        t.memo["session_facts"] = known
    return known


def _read(t: Transcript, *, sidechain: bool) -> SessionFacts:
    model = source = None
    request: dict | None = None
    attachment_model: str | None = None
    ttls: dict[str, str] = {}
    for i in t.live_indexes():
        kind = entry_type(t, i)
        if kind not in FACT_TYPES:
            continue
        entry = t.entry(i)
        if bool(entry.get("isSidechain")) != sidechain:
            continue
        if kind == "api-request":
            params = entry.get("params")
            if isinstance(params, dict):
                request = params
                if isinstance(params.get("model"), str) and params["model"]:
                    model, source = params["model"], "api-request"
        elif kind == "assistant":
            msg = entry.get("message")
            if not isinstance(msg, dict) or entry.get("isApiErrorMessage"):
                continue
            name = msg.get("model")
            if isinstance(name, str) and name and name != "<synthetic>":
                model, source = name, "assistant message"
            ttl = _cache_ttl(msg.get("usage"))
            if ttl is not None and isinstance(msg.get("id"), str):
                ttls[msg["id"]] = ttl
        elif model is None:  # an attachment: the model named before any answer
            att = entry.get("attachment")
            if isinstance(att, dict) and att.get("type") == "model":
                identity = att.get("identity")
                name = identity.get("modelId") if isinstance(identity, dict) else None
                if isinstance(name, str) and name:
                    attachment_model = name
    if model is None and attachment_model is not None:
        model, source = attachment_model, "model attachment"
    request = request or {}
    max_tokens = request.get("max_tokens")
    betas = request.get("betas")
    thinking = request.get("thinking")
    return SessionFacts(
        model=model, model_source=source,
        max_tokens=max_tokens if isinstance(max_tokens, int) and not isinstance(max_tokens, bool) and max_tokens > 0
        else None,
        betas=tuple(b for b in betas if isinstance(b, str)) if isinstance(betas, list) else (),
        thinking=thinking if isinstance(thinking, dict) else None,
        cache_ttls=ttls)


def _cache_ttl(usage: Any) -> str | None:
    """Which lifetime a request's cache writes had: the ``cache_creation`` split names it (1 h wins
    when both were written: the agent asked for it at some breakpoint)."""
    split = usage.get("cache_creation") if isinstance(usage, dict) else None
    if not isinstance(split, dict):
        return None
    if _positive(split.get("ephemeral_1h_input_tokens")):
        return "1h"
    if _positive(split.get("ephemeral_5m_input_tokens")):
        return "5m"
    return None


def _positive(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
