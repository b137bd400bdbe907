"""The ``autocompact`` stage and what only it uses.

``stage`` is the stage itself; ``compaction`` writes a compaction (boundary,
summary, kept tail); ``session_memory`` is the session-memory compact (notes
kept in a file replace an LLM summary); ``reinject`` puts recent files, the
plan, skills and deltas back after a compaction.

Must not import: the CLI, typer or rich; other stages except the attachment
types it re-injects (``ctxkit.stages.attachments``).
"""
