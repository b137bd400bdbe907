"""The usage of a response, read on the side while its bytes stream to the client unchanged.

The tap sees a copy of each chunk; it never holds a response back. A JSON answer is kept up to
:data:`MAX_JSON_BYTES` and parsed when it ends; an SSE stream is read line by line (a line longer than
:data:`MAX_LINE_BYTES` is skipped: usage lines are short). What it finds is given in the Messages API's
shape (``input_tokens``, ``cache_creation_input_tokens``, ``cache_read_input_tokens``, ``output_tokens``),
whichever API answered: OpenAI's ``prompt_tokens`` include their ``cached_tokens``, which become cache reads.
"""
from __future__ import annotations

from typing import Any

from ..side_files import parse_json

MAX_JSON_BYTES = 16 * 1024 * 1024
MAX_LINE_BYTES = 1024 * 1024
USAGE_KEYS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def as_messages_usage(usage: Any) -> dict[str, int]:
    """An Anthropic or OpenAI usage object in the Messages API's shape (only the figures it has)."""
    if not isinstance(usage, dict):
        return {}
    if "prompt_tokens" in usage:  # OpenAI Chat Completions
        prompt = _int(usage.get("prompt_tokens")) or 0
        details = usage.get("prompt_tokens_details")
        cached = (_int(details.get("cached_tokens")) if isinstance(details, dict) else None) or 0
        out = {"input_tokens": max(prompt - cached, 0), "cache_read_input_tokens": cached,
               "cache_creation_input_tokens": 0}
        if _int(usage.get("completion_tokens")) is not None:
            out["output_tokens"] = usage["completion_tokens"]
        return out
    return {k: usage[k] for k in USAGE_KEYS if _int(usage.get(k)) is not None}


class UsageTap:
    """Feed it the response's chunks; :attr:`usage` is what they said (empty when they said nothing)."""

    def __init__(self, content_type: str, *, enabled: bool = True):
        self.sse = content_type.split(";")[0].strip().lower() == "text/event-stream"
        self.usage: dict[str, int] = {}
        self._buf = bytearray()
        self.enabled = enabled
        self._overflow = not enabled  # a disabled tap keeps nothing (the answers of paths it does not manage)

    def feed(self, chunk: bytes) -> None:
        if self._overflow:
            if not (self.sse and b"\n" in chunk and self.enabled):
                return
            # resynchronise at the next line: the lines after it in this chunk are read as any others
            self._overflow, self._buf = False, bytearray()
            chunk = chunk[chunk.index(b"\n") + 1:]
        self._buf += chunk
        if not self.sse:
            if len(self._buf) > MAX_JSON_BYTES:
                self._overflow, self._buf = True, bytearray()
            return
        if b"\n" in chunk:
            cut = self._buf.rindex(b"\n")
            complete = self._buf[:cut]
            del self._buf[:cut + 1]
            # only the lines of the events that carry usage are parsed (two of an answer's many): the
            # others, each text delta of a long answer among them, cost a search of the bytes, in C
            if b"usage" in complete:
                for line in bytes(complete).split(b"\n"):
                    self._line(line)
        if len(self._buf) > MAX_LINE_BYTES:
            self._overflow, self._buf = True, bytearray()

    def close(self) -> dict[str, int]:
        if not self._overflow and self._buf:
            if self.sse:
                self._line(bytes(self._buf))
            else:
                try:
                    doc = parse_json(self._buf)
                except ValueError:
                    doc = None
                if isinstance(doc, dict):
                    self.usage.update(as_messages_usage(doc.get("usage")))
        self._buf = bytearray()
        return self.usage

    def _line(self, line: bytes) -> None:
        line = line.rstrip(b"\r")
        if not line.startswith(b"data:") or b"usage" not in line:
            return
        try:
            doc = parse_json(line[5:])
        except ValueError:
            return
        if not isinstance(doc, dict):
            return
        message = doc.get("message")
        if isinstance(message, dict):  # message_start
            self.usage.update(as_messages_usage(message.get("usage")))
        self.usage.update(as_messages_usage(doc.get("usage")))  # message_delta, OpenAI's last chunk
