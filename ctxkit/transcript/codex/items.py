"""What one line of a Codex CLI rollout is, read from the line alone (the bottom of the package).

Defined by Codex's own source (openai/codex): ``codex-rs/protocol/src/protocol.rs`` (``RolloutItem``,
``RolloutLine``: ``{timestamp, type, payload}``, ``CompactedItem``, ``EventMsg``), and
``codex-rs/protocol/src/models.rs`` (``ResponseItem``: ``message``, ``reasoning``, ``function_call``,
``function_call_output``, ``custom_tool_call(_output)``, ``local_shell_call``, ``web_search_call``,
``tool_search_call``/``_output``, ``compaction``, ``ghost_snapshot``). Rollouts of Codex 0.3x hold
the response items bare, one per line, after a first line with the session's ``id``,
``timestamp`` and ``instructions``, and ``{"record_type": "state"}`` lines.
"""
from __future__ import annotations

from typing import Any

from ..shapes import Bad

NAME = "codex"

#: ``RolloutItem`` variants (serde ``tag = "type", content = "payload"``); tuples, not sets: a line's
#: ``type`` may be any JSON value, a list too, and is looked up in them as it is
ROLLOUT_TYPES = ("session_meta", "response_item", "compacted", "turn_context", "event_msg",
                 "world_state", "inter_agent_communication", "inter_agent_communication_metadata",
                 "rollout_reference", "token_usage_record")
#: ``ResponseItem`` variants (serde ``tag = "type"``): a bare line of a 0.3x rollout is one
RESPONSE_TYPES = ("message", "reasoning", "local_shell_call", "function_call", "function_call_output",
                  "custom_tool_call", "custom_tool_call_output", "web_search_call", "tool_search_call",
                  "tool_search_output", "image_generation_call", "ghost_snapshot", "compaction",
                  "compaction_summary", "other")
CALL_TYPES = ("function_call", "custom_tool_call", "local_shell_call", "tool_search_call")
OUTPUT_TYPES = ("function_call_output", "custom_tool_call_output", "tool_search_output")
#: the opening of every summary ctxkit writes (``ctxkit.summarize.prompt.CONTINUATION_PREFIX``): what
#: tells ctxkit's ``compacted`` lines and summary messages from Codex's own
CTXKIT_SUMMARY_OPENING = "This session is being continued from a previous conversation"
#: the ``message`` of a ``compacted`` line ctxkit writes for a snip (a history without some turns, no summary)
CTXKIT_SNIP_OPENING = "[ctxkit snip]"
#: what Codex records for a call that never got a result (codex-rs/core/src/context_manager/normalize.rs,
#: ``ensure_call_outputs_present``)
ABORTED = "aborted"


def looks_like(d: dict) -> bool:
    """A Codex rollout line: a ``RolloutItem`` with its payload, or a line only a 0.3x rollout has (its
    first line, a ``record_type`` line, a bare response item of a type no other format uses)."""
    typ = d.get("type")
    if typ in ROLLOUT_TYPES and isinstance(d.get("payload"), dict):
        return True
    if "record_type" in d and "type" not in d and "role" not in d:
        return True
    if typ is None and "role" not in d and isinstance(d.get("id"), str) and "instructions" in d and "timestamp" in d:
        return True
    if typ in ("function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output",
               "local_shell_call", "reasoning") and ("call_id" in d or typ == "reasoning"):
        return True
    return typ == "message" and "role" in d and isinstance(d.get("content"), list)


def kind(d: dict) -> str:
    """The line's kind as the line index keeps it: the rollout type, or for a bare 0.3x line
    ``response_item``, ``state`` or ``session_meta``."""
    typ = d.get("type")
    if typ in ROLLOUT_TYPES or (isinstance(typ, str) and "payload" in d):
        return typ
    if typ in RESPONSE_TYPES:
        return "response_item"
    if "record_type" in d:
        return "state"
    if typ is None and "instructions" in d:
        return "session_meta"
    return typ if isinstance(typ, str) else "unknown"


def response_item(d: dict) -> dict | None:
    """The ``ResponseItem`` a line records (None for other lines)."""
    if d.get("type") == "response_item":
        p = d.get("payload")
        return p if isinstance(p, dict) else None
    if d.get("type") in RESPONSE_TYPES and "payload" not in d:
        return d
    return None


def event(d: dict) -> dict | None:
    """The ``EventMsg`` payload of an ``event_msg`` line (None for other lines)."""
    if d.get("type") == "event_msg":
        p = d.get("payload")
        return p if isinstance(p, dict) else None
    return None


def check(d: dict) -> None:
    """The fields the projection relies on have their types (a line of another shape: bad line)."""
    if d.get("type") in ROLLOUT_TYPES and "payload" in d and not isinstance(d["payload"], dict):
        exc = Bad("an object", d["payload"])
        exc.path.append("payload")
        raise exc
    item = response_item(d)
    if item is None:
        return
    for key in ("call_id", "name", "role"):
        if item.get(key) is not None and not isinstance(item[key], str):
            exc = Bad("a string", item[key])
            exc.path.append(key)
            if item is not d:
                exc.path.append("payload")
            raise exc
    content = item.get("content")
    if item.get("type") == "message" and content is not None and not isinstance(content, (list, str)):
        exc = Bad("a list", content)
        exc.path.append("content")
        if item is not d:
            exc.path.append("payload")
        raise exc


def text_of(content: Any) -> str:
    """The text of a message's content items (``input_text``/``output_text``), joined."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(c["text"] for c in content if isinstance(c, dict) and isinstance(c.get("text"), str))
