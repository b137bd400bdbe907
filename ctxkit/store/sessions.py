"""Which session a transcript belongs to: the key of its state in the store.

The store keeps per-session state (session-memory notes, the circuit breaker,
token counts) under this key, and the decision ledger falls back to it for
plain message lists (``offload.decision_scope``).
"""
from __future__ import annotations

from ..transcript.claude_code import entries as claude_code_entries
from ..transcript.model import Transcript
from ..transcript.plain import messages as plain


def session_key(t: Transcript) -> str:
    """The key of this session's state in the store: Claude Code's session id, else a hash of the first line."""
    if t.format == "claude-code":
        sid = claude_code_entries.session_id(t)
        if sid:
            return sid
    first = next(iter(t.live_indexes()), None)
    if first is None:
        return "default"
    return f"{t.format}:{plain.message_uuid(t, first)[:16]}"
