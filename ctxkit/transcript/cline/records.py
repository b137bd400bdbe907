"""What a Cline or Roo Code task history is: the ``api_conversation_history.json`` of a task folder.

Defined by their source: Cline (cline/cline) saves the task's messages — Anthropic Messages API
``MessageParam``s — as one JSON array (``src/core/storage/disk.ts``: ``saveApiConversationHistory``,
``GlobalFileNames.apiConversationHistory``), beside ``ui_messages.json`` and ``task_metadata.json``;
Roo Code (RooCodeInc/Roo-Code) the same file of ``ApiMessage``s (``src/core/task-persistence/
apiMessages.ts``): a message plus ``ts``, and the markers of its non-destructive condensing and
sliding-window truncation (``isSummary``/``condenseId``, ``condenseParent``; ``isTruncationMarker``/
``truncationId``, ``truncationParent``). Tools called in XML (Cline's original protocol) come back as
user text (``[read_file for 'a.py'] Result:``), native ones as ``tool_use``/``tool_result`` blocks.
"""
from __future__ import annotations

import re

NAME = "cline"
#: a tool's result as Cline sends it back in user text (``formatResponse.toolResult``): ``[read_file for 'a.py'] Result:``
_XML_RESULT = re.compile(r"\[[a-z_]+(?: for '[^']*')?\] Result:")

#: the keys Cline and Roo Code add to a message (``ts``, Roo's markers, Cline's per-message model and metrics)
AGENT_KEYS = ("ts", "isSummary", "condenseId", "condenseParent", "isTruncationMarker", "truncationId",
              "truncationParent", "modelInfo", "metrics")
#: what their first user message (the task) and every prompt's context open with
OPENINGS = ("<task>", "<environment_details>", "<feedback>", "<answer>", "<user_message>")


def _texts(content) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)]
    return []


def looks_like(d: dict) -> bool:
    """A message of a Cline or Roo Code history: an Anthropic message with one of their keys, or a user
    message whose text is their task or environment details."""
    if d.get("role") not in ("user", "assistant") or "content" not in d:
        return False
    if any(k in d for k in AGENT_KEYS):
        return True
    return d["role"] == "user" and any(x.lstrip().startswith(OPENINGS) or _XML_RESULT.match(x)
                                       for x in _texts(d["content"]))


def hidden(entries: list[tuple[int, dict]]) -> set[int]:
    """The entries Roo Code leaves out of the request (``getEffectiveApiHistory``,
    ``src/core/condense/index.ts``): those whose ``condenseParent`` names a summary still in the history,
    or whose ``truncationParent`` names a truncation marker still in it."""
    summaries = {d["condenseId"] for _, d in entries if d.get("isSummary") and isinstance(d.get("condenseId"), str)}
    markers = {d["truncationId"] for _, d in entries
               if d.get("isTruncationMarker") and isinstance(d.get("truncationId"), str)}
    return {i for i, d in entries if d.get("condenseParent") in summaries and d.get("condenseParent") is not None
            or d.get("truncationParent") in markers and d.get("truncationParent") is not None}
