"""Writing a transcript in its own format, or its view converted to another (``--to``)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, BinaryIO

from ..errors import UsageError
from ..quoting import quote
from .document import documenting
from .jsonl import compressing, dumps
from .model import Transcript
from .plain.messages import to_openai


def write_transcript(t: Transcript, out: BinaryIO, to: str | None = None,
                     originals: Callable[[bytes], bytes | None] | None = None) -> None:
    """Write ``t``: in its own format (lossless), or, with ``to``, as the view's messages in that format
    (also when ``to`` is the transcript's own format: then unreadable lines are left out).
    ``originals``: see :meth:`Transcript.write`."""
    if to is None:
        if t.source.read_only:
            raise UsageError(f"{t.source.name}: {t.source.read_only}")
        # a .jsonl.zst rollout stays one; a JSON document (a Cline task history) is put back together
        with compressing(out, t.source.compressed) as stream, documenting(stream, t.source.document) as lines:
            t.write(lines, originals)
        return
    if to == "claude-code":
        raise UsageError(f"cannot convert a {t.format} transcript to claude-code; write it as anthropic or openai")
    write_messages(view_messages(t, to), out)


def view_messages(t: Transcript, to: str) -> list[dict[str, Any]]:
    """The view as a list of API messages in format ``to`` (``anthropic`` or ``openai``)."""
    msgs = t.view().api_messages()
    if to == "openai":
        return to_openai(msgs)
    if to == "anthropic":
        return msgs
    raise UsageError(f"unknown output format {quote(to)}; choose anthropic or openai")


def write_messages(msgs: list[dict[str, Any]], out: BinaryIO) -> None:
    for m in msgs:
        out.write(dumps(m))
        out.write(b"\n")
