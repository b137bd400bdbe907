"""Claude Code session transcripts (JSONL): reading, the projection into a view, the entries ctxkit writes."""
