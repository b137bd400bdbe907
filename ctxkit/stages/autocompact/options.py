"""The autocompact stage's options: its JSON Schema, with Claude Code's numbers as defaults."""
from __future__ import annotations

from typing import Any

#: Tools whose ``file_path`` (or ``notebook_path``) names a file the model has in mind.
DEFAULT_FILE_TOOLS = ("Read", "Edit", "MultiEdit", "Write", "NotebookEdit")

#: what is re-injected after a compaction (:mod:`.reinject`)
REINJECT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "description": "What is re-injected after a compaction, with its token budgets.",
    "properties": {
        "files": {"type": "boolean", "default": True, "description": "Re-read the most recent files from disk."},
        "max_files": {"type": "integer", "minimum": 0, "default": 5, "description": "At most this many files."},
        "file_max_tokens": {"type": "integer", "minimum": 0, "default": 5_000,
                            "description": "A file larger than this is not re-injected (dropped)."},
        "files_max_tokens": {"type": "integer", "minimum": 0, "default": 50_000,
                             "description": "All re-read files together."},
        "file_tools": {"type": "array", "items": {"type": "string"}, "uniqueItems": True,
                       "default": list(DEFAULT_FILE_TOOLS),
                       "description": "Tools whose file_path names a file the model worked with."},
        "plan": {"type": "boolean", "default": True, "description": "Re-inject the plan file."},
        "plan_mode": {"type": "boolean", "default": True, "description": "Remind the model that plan mode is on."},
        "skills": {"type": "boolean", "default": True, "description": "Re-inject the invoked skills."},
        "skill_max_tokens": {"type": "integer", "minimum": 0, "default": 5_000,
                             "description": "Each skill body is cut to this."},
        "skills_max_tokens": {"type": "integer", "minimum": 0, "default": 25_000,
                              "description": "All skills together."},
        "deltas": {"type": "boolean", "default": True,
                   "description": "Announce the current deferred tools, agent types and MCP instructions again."},
    },
}

#: see :mod:`.min_retention`
MIN_RETENTION_SCHEMA: dict[str, Any] = {
    "type": ["number", "null"], "minimum": 0, "maximum": 1, "default": None,
    "description": "Reject a summary by a model or command that keeps less than this share of the replaced "
                   "history's user prompts, or of its file paths; the extractive summary is used instead, and the "
                   "rejection counts as a failure for the circuit breaker. null: accept any summary."}


def _tail_schema(min_tokens: int, min_text: int, max_tokens: int, what: str, **extra: dict) -> dict[str, Any]:
    return {
        "type": "object",
        "additionalProperties": False,
        "description": what,
        "properties": {
            **extra,
            "min_tokens": {"type": "integer", "minimum": 0, "default": min_tokens,
                           "description": "Grow the kept tail backwards until it holds this many tokens..."},
            "min_text_messages": {"type": "integer", "minimum": 0, "default": min_text,
                                  "description": "...and this many messages with text (prompts, replies)."},
            "max_tokens": {"type": "integer", "minimum": 0, "default": max_tokens,
                           "description": "Never grow the kept tail past this many tokens."},
        },
    }


OPTIONS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "max_consecutive_failures": {
            "type": "integer", "minimum": 1, "default": 3,
            "description": "After this many failed compactions in a row, autocompact stops trying "
                           "(circuit breaker) until one succeeds or --force."},
        "ptl_max_retries": {
            "type": "integer", "minimum": 0, "default": 3,
            "description": "Retries of a summarizing request that is too long, each on fewer, newer rounds."},
        "ptl_drop_fraction": {
            "type": "number", "exclusiveMinimum": 0, "maximum": 1, "default": 0.2,
            "description": "Share of the oldest rounds dropped per retry when the error does not say "
                           "by how much the prompt is too long."},
        "keep_tail": _tail_schema(
            0, 0, 20_000, "The recent messages kept verbatim after a summary (by default the last API round, "
            "as Claude Code keeps it).",
            min_rounds={"type": "integer", "minimum": 0, "default": 1,
                        "description": "Keep at least this many of the last API rounds (an assistant message "
                                       "with its tool results, or a lone message)."}),
        "session_memory": _tail_schema(
            10_000, 5, 40_000, "Session-memory compact (with --session-memory): the notes replace the history "
            "they cover; the messages after them are kept, and more before them up to these minimums.",
            enabled={"type": "boolean", "default": True,
                     "description": "Try the session-memory notes before summarizing."}),
        "reinject": REINJECT_SCHEMA,
        "min_retention": MIN_RETENTION_SCHEMA,
    },
}
