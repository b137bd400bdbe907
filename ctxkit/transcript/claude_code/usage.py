"""Where a Claude Code transcript records what a request used: a main-chain assistant entry's ``message.usage``.

``ctxkit simulate`` puts a simulated request's figures there (:class:`ctxkit.transcript.interface.UsageWriter`):
the usage reader (:mod:`ctxkit.tokens.view_count`) then counts the context the policy sent.
"""
from __future__ import annotations

from ..interface import RequestUsage, UsageWriter


def replace_usage(entry: dict, usage: RequestUsage) -> bool:
    """A main-chain answer's ``usage`` reports ``usage``'s input figures (its output and ``cache_creation``
    split kept); a subagent's answer (``isSidechain``) is left as it is: it counted its own context."""
    msg = entry.get("message")
    if entry.get("type") != "assistant" or entry.get("isSidechain") or not isinstance(msg, dict) \
            or not isinstance(msg.get("usage"), dict):
        return False
    msg["usage"] = {**msg["usage"], "input_tokens": usage.input_tokens,
                    "cache_creation_input_tokens": usage.cache_creation_input_tokens,
                    "cache_read_input_tokens": usage.cache_read_input_tokens}
    return True


USAGE_WRITER = UsageWriter(b'"usage"', replace_usage)
