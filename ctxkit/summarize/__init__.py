"""Summarizers: turning a stretch of conversation into a summary.

Owns the summarizer protocol, the one factory that picks a summarizer for a
run (``summarizer_for_run``), the Anthropic HTTP client with its retries and
error parsing, the command and extractive summarizers, the summary prompt,
the rendering of messages as plain text for a summarizer, secret redaction
and the deadline of a whole call.

Must not import: stages, pipeline, reports, cli (the stages call into this
package, never the other way round).
"""
