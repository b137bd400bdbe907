"""Writing a transcript in its own format, or its view converted to another (``--to``)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, BinaryIO

import orjson

from ..errors import UsageError
from ..quoting import quote
from .document import documenting
from .jsonl import compressing, dumps, encoding, split_ending
from .model import RawLine, Transcript
from .plain.messages import to_openai
from .view import answer_cut_off_calls


def write_transcript(t: Transcript, out: BinaryIO, to: str | None = None,
                     originals: Callable[[bytes], bytes | None] | None = None) -> None:
    """Write ``t``: in its own format (lossless), or, with ``to``, as the view's messages in that format
    (also when ``to`` is the transcript's own format: then unreadable lines are left out).
    ``originals``: see :meth:`Transcript.write`."""
    if to is None:
        if t.source.read_only:
            raise UsageError(f"{t.source.name}: {t.source.read_only}")
        # a .jsonl.zst rollout stays one, a file that opened with a byte order mark is encoded as it was; a JSON
        # document (a Cline task history) is put back together
        with compressing(out, t.source.compressed) as packed, encoding(packed, t.source.encoding) as stream, \
                documenting(stream, t.source.document) as lines:
            if ends_unterminated(t, originals):
                lines = _WithoutLastByte(lines)
            t.write(lines, originals)
            if isinstance(lines, _WithoutLastByte):
                lines.drop_newline()
        return
    if to == "claude-code":
        raise UsageError(f"cannot convert a {t.format} transcript to claude-code; write it as anthropic or openai")
    write_messages(view_messages(t, to), out)


def view_messages(t: Transcript, to: str) -> list[dict[str, Any]]:
    """The view as a list of API messages in format ``to`` (``anthropic`` or ``openai``), ready to send: a
    call cut off by another assistant message is answered with an error result
    (:func:`ctxkit.transcript.view.answer_cut_off_calls`), as both APIs refuse a call with no result."""
    return sendable(t.view().api_messages(), to)


def sendable(msgs: list[dict[str, Any]], to: str) -> list[dict[str, Any]]:
    """A view's API messages in format ``to``, with each cut-off call answered (see :func:`view_messages`)."""
    msgs = answer_cut_off_calls(msgs)
    if to == "openai":
        return to_openai(msgs)
    if to == "anthropic":
        return msgs
    raise UsageError(f"unknown output format {quote(to)}; choose anthropic or openai")


def write_messages(msgs: list[dict[str, Any]], out: BinaryIO) -> None:
    for m in msgs:
        out.write(dumps(m))
        out.write(b"\n")


def ends_unterminated(t: Transcript, originals: Callable[[bytes], bytes | None] | None) -> bool:
    """Whether ``t`` written with ``originals`` (``ctxkit expand``) ends with an input line that ended the
    file compact read without a newline: the writer ends every line with one (a line may follow), and
    the store keeps that line's bytes (:func:`ctxkit.store.original_lines.keep_original_lines`), so
    expand gives the file back without it, byte for byte."""
    if originals is None or t.source.document is not None:
        return False
    n = t.n_lines
    last = next((i for i in range(t.n_entries - 1, -1, -1) if i not in t.removed and not (i < n and t.lines.bad(i))),
                None)
    edit = None if last is None else t.appended[last - n] if last >= n else t.overrides.get(last)
    if last is None or isinstance(edit, RawLine):
        return False
    if edit is None:  # an input line as it is
        body, _ = split_ending(t.source.read_at(*t.lines.span(last)))
        try:
            serialized = dumps(orjson.loads(body))
        except orjson.JSONDecodeError:
            return False
    else:  # an edit, or an entry appended (a line put back by expand)
        body, serialized = None, dumps(edit)
    original = originals(serialized)
    return original is not None and not original.endswith(b"\n") and (body is None or original == body)


class _WithoutLastByte:
    """A stream that holds back the last byte written, so that the newline ending the output can be
    left out (:func:`ends_unterminated`)."""

    def __init__(self, out: BinaryIO):
        self.out, self.held = out, b""

    def write(self, data: bytes) -> int:
        if data:
            self.out.write(self.held + data[:-1] if self.held else data[:-1])
            self.held = data[-1:]
        return len(data)

    def drop_newline(self) -> None:
        if self.held != b"\n":
            self.out.write(self.held)
        self.held = b""
