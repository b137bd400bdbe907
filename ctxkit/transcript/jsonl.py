"""Streaming JSONL reading with line numbers, and atomic writing.

A transcript can be hundreds of megabytes, so it is never held as text: the
input is read once to index its lines (offset, length and a few routing
fields), and entries are parsed again on demand. Standard input is spooled to
a temporary file first so that it can be read twice, unless it is a file already
(``< session.jsonl``): that file is read in place.
"""
from __future__ import annotations

import codecs
import os
import select
import stat
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import orjson

from ..errors import InputError, TranscriptError, WriteError
from .document import Document, as_lines, copy_of_lines

BAD_LINE_POLICIES = ("fail", "skip")


@dataclass
class Source:
    """The input as a seekable binary file (the file itself, or a copy of what came through a pipe) and the
    name to use in messages."""

    name: str
    file: BinaryIO
    path: Path | None = None  # the file's path, when it was named (None for standard input)
    _owned: bool = True
    #: the file descriptor reads at an offset use (None: a stream without one, in memory)
    fd: int | None = field(default=None, init=False, repr=False)
    #: how the input was compressed (``zstd``: a Codex ``.jsonl.zst`` rollout), None when it was not;
    #: ``file`` then holds it decompressed, and the output is compressed the same way
    compressed: str | None = None
    #: how a JSON document input (a Cline task history, an OpenCode export) was laid out around its
    #: array (:mod:`ctxkit.transcript.document`); ``file`` then holds one element a line
    document: Document | None = None
    #: why the input cannot be written back in its own format (an OpenCode database), None when it can
    read_only: str | None = None
    #: how the input was encoded when it opened with a byte order mark (``utf-8-sig``; ``utf-16-le`` or
    #: ``utf-16-be``: what Windows PowerShell 5.1 redirects a program's output as), None when it did not;
    #: ``file`` then holds it as UTF-8 without the mark, and the output is encoded the same way
    encoding: str | None = None

    def __post_init__(self) -> None:
        try:
            self.fd = self.file.fileno()
        except (AttributeError, OSError, ValueError):
            self.fd = None

    def read_at(self, offset: int, length: int) -> bytes:
        if self.fd is None:
            self.file.seek(offset)
            return self.file.read(length)
        out = os.pread(self.fd, length, offset)  # one call, and the stream's own position stays as it was
        while len(out) < length:  # a short read (a pipe-backed or network file): read on
            more = os.pread(self.fd, length - len(out), offset + len(out))
            if not more:
                break
            out += more
        return out

    def close(self) -> None:
        if self._owned:
            self.file.close()


def open_source(path: str | os.PathLike | None, stdin: BinaryIO | None = None) -> Source:
    """Open a transcript file, or standard input (``-`` or None): the file it is redirected from, read in
    place, or else a copy of it in a temporary file. A zstd-compressed input (recognised by its content,
    not its name) is read from a decompressed copy."""
    source = _open_source(path, stdin)
    try:
        return _as_lines(_decoded(_decompressed(source)))
    except BaseException:
        source.close()
        raise


#: the first bytes of a zstd frame (RFC 8878)
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def _decompressed(source: Source) -> Source:
    """``source`` itself, or, when it is zstd-compressed, a source over a decompressed copy of it."""
    if source.read_at(0, 4) != ZSTD_MAGIC:
        return source
    import zstandard

    copy = tempfile.TemporaryFile(prefix="ctxkit-zstd-")
    try:
        source.file.seek(0)
        whole = _unzstd(zstandard, source.file, copy)
        copy.seek(0)
    except zstandard.ZstdError as exc:
        copy.close()
        raise TranscriptError(source.name, 0, f"not a readable zstd stream ({exc})") from None
    except OSError as exc:
        copy.close()
        raise WriteError(f"a decompressed copy of {source.name} ({copy.name})", exc) from None
    if not whole:
        copy.close()
        raise TranscriptError(source.name, 0, "a zstd stream cut short (its last frame does not end: the file is "
                                              "incomplete)")
    source.close()
    return Source(name=source.name, file=copy, path=source.path, compressed="zstd")


def _unzstd(zstandard, src: BinaryIO, dst: BinaryIO) -> bool:
    """Decompress every frame of ``src`` into ``dst``; False when the last frame is cut short (a
    decompressor reading a stream says nothing then: a truncated file read as an empty one)."""
    d = zstandard.ZstdDecompressor()
    frame, open_frame = d.decompressobj(), False
    while chunk := src.read(1 << 20):
        while chunk:
            dst.write(frame.decompress(chunk))
            open_frame = True
            if frame.eof:
                chunk, frame, open_frame = frame.unused_data, d.decompressobj(), False
            else:
                chunk = b""
    return not open_frame


#: the encodings an input may be in, each with the byte order mark a file in it opens with
BOMS = {"utf-8-sig": b"\xef\xbb\xbf", "utf-16-le": b"\xff\xfe", "utf-16-be": b"\xfe\xff"}


def _decoded(source: Source) -> Source:
    """``source`` itself, or, when it opens with a byte order mark, a source over a copy of it in UTF-8
    without the mark (the output is encoded back: :func:`encoding`, so the file comes back byte for byte)."""
    how = next((name for name, bom in BOMS.items() if source.read_at(0, 3).startswith(bom)), None)
    if how is None:
        return source
    source.file.seek(0)
    data = as_utf8(source.name, source.file.read(), how)  # (before the copy: an error leaves none open)
    copy = tempfile.TemporaryFile(prefix="ctxkit-decoded-")
    copy.write(data)
    copy.seek(0)
    source.close()
    return Source(name=source.name, file=copy, path=source.path, compressed=source.compressed, encoding=how)


def as_utf8(name: str, data: bytes, how: str) -> bytes:
    """``data`` (a file opening with ``how``'s byte order mark) in UTF-8 without the mark; UTF-16's lone surrogates
    carried over (that line's problem, as in any JSONL file). UTF-16 cut short: an error naming its line."""
    body = data[len(BOMS[how]):]
    if how == "utf-8-sig":
        return body
    try:
        return body.decode(how, "surrogatepass").encode("utf-8", "surrogatepass")
    except UnicodeDecodeError as exc:
        line = body[:exc.start].decode(how, "surrogatepass").count("\n") + 1
        raise TranscriptError(name, line, f"not readable as {how} (it opens with that byte order mark): "
                                          f"{exc.reason} at byte {exc.start + len(data) - len(body)}") from None


@contextmanager
def encoding(out: BinaryIO, how: str | None) -> Iterator[BinaryIO]:
    """A stream that writes UTF-8 bytes to ``out`` encoded ``how`` (after its byte order mark), or ``out``
    itself when None."""
    if how is None:
        yield out
        return
    bom = BOMS[how]
    out.write(bom)
    if how == "utf-8-sig":
        yield out
        return
    decoder = codecs.getincrementaldecoder("utf-8")(errors="surrogatepass")

    class _Encoding:
        def write(self, data: bytes) -> int:
            out.write(decoder.decode(bytes(data)).encode(how, "surrogatepass"))
            return len(data)

        def flush(self) -> None:
            pass

    yield _Encoding()
    out.write(decoder.decode(b"", final=True).encode(how, "surrogatepass"))


def _first_line(source: Source) -> bytes:
    """The input's first line (or all of it, when it has no newline)."""
    out, at = b"", 0
    while True:
        chunk = source.read_at(at, 1 << 16)
        cut = chunk.find(b"\n")
        if cut >= 0 or not chunk:
            return out + (chunk[:cut] if cut >= 0 else b"")
        out += chunk
        at += len(chunk)


def _as_lines(source: Source) -> Source:
    """``source`` itself, or, when it is one JSON document holding an array of entries, a source over a
    copy holding one element a line (:mod:`ctxkit.transcript.document`)."""
    first = _first_line(source).lstrip()
    if not first.startswith((b"[", b"{")):
        return source
    if first.startswith(b"{"):
        try:
            if isinstance(orjson.loads(first), dict):
                return source  # a whole object on the first line: JSONL
        except orjson.JSONDecodeError:
            pass
    source.file.seek(0)
    data = source.file.read()
    found = as_lines(data)
    if found is None:
        source.file.seek(0)
        return source
    doc, lines = found
    copy = copy_of_lines(lines)
    source.close()
    return Source(name=source.name, file=copy, path=source.path, compressed=source.compressed, document=doc,
                  encoding=source.encoding)


def document_source(name: str, path: Path | None, data: bytes, read_only: str | None = None) -> Source:
    """A source over ``data``, a JSON document holding an array of entries made elsewhere (an OpenCode
    session read from its database)."""
    found = as_lines(data)
    if found is None:
        raise TranscriptError(name, 0, "not a document of messages")
    doc, lines = found
    return Source(name=name, file=copy_of_lines(lines), path=path, document=doc, read_only=read_only)


def compressing(out: BinaryIO, how: str | None):
    """A context that writes to ``out`` compressed ``how`` (``zstd``), or ``out`` itself when None."""
    if how is None:
        return nullcontext(out)
    import zstandard

    return zstandard.ZstdCompressor(level=3).stream_writer(out, closefd=False)


def _open_source(path: str | os.PathLike | None, stdin: BinaryIO | None = None) -> Source:
    if path is None or str(path) == "-":
        if stdin is None and sys.stdin is None:  # (started with it closed: `ctxkit stats <&-`)
            raise TranscriptError("<stdin>", 0, "standard input is closed (name a transcript file instead)")
        stream = stdin if stdin is not None else sys.stdin.buffer
        redirected = _file_at_its_start(stream)
        if redirected is not None:
            return Source(name="<stdin>", file=redirected)
        return Source(name="<stdin>", file=_spooled(stream))
    p = Path(path)
    try:
        return Source(name=str(path), file=open(p, "rb"), path=p)
    except FileNotFoundError:
        raise InputError(str(path), 0, "no such file") from None
    except IsADirectoryError:
        raise InputError(str(path), 0, "is a directory, not a transcript") from None
    except PermissionError:
        raise InputError(str(path), 0, "permission denied") from None


def _file_at_its_start(stream: BinaryIO) -> BinaryIO | None:
    """Standard input redirected from a regular file not yet read from (``ctxkit compact < session.jsonl``),
    as a stream of its own over a second descriptor (``dup``: it shares the position, which ends where
    reading ended, as when standard input was copied): read in place like a file named on the command
    line, not copied first. What that gives: no copy of a long session before each run (a resumed run
    reads only the new bytes of it), and an output written onto that same file keeps what the agent
    appended meanwhile (:mod:`ctxkit.transcript.appended`). None for a pipe, a terminal, or a file read
    part way (its rest is the input: spooled)."""
    try:
        fd = stream.fileno()
        if not stat.S_ISREG(os.fstat(fd).st_mode) or os.lseek(fd, 0, os.SEEK_CUR) != 0 or _write_only(fd):
            return None  # (one open for writing only is refused when it is copied: the error names it)
        return os.fdopen(os.dup(fd), "rb")
    except (AttributeError, OSError, ValueError):
        return None


def _spooled(stream: BinaryIO) -> BinaryIO:
    """A temporary file holding all of ``stream`` (standard input), at its start. A read error is the
    input's (a descriptor open for writing only: ``0>>file``), a write error the copy's (a full disk);
    a non-blocking pipe with nothing in it yet is waited on, not taken for the end."""
    spool = tempfile.TemporaryFile(prefix="ctxkit-stdin-")
    try:
        while True:
            try:
                chunk = stream.read(1 << 20)
            except OSError as exc:
                raise TranscriptError("<stdin>", 0, f"cannot be read ({exc.strerror or exc})") from None
            if chunk is None:
                select.select([stream], [], [])
                continue
            if not chunk:
                break
            try:
                spool.write(chunk)
            except OSError as exc:
                raise WriteError(f"a temporary copy of standard input ({spool.name})", exc) from None
        spool.seek(0)
    except BaseException:
        spool.close()
        raise
    return spool


def _write_only(fd: int) -> bool:
    """Whether ``fd`` was opened for writing only (standard input given as ``0>>file``)."""
    try:
        import fcntl
    except ImportError:  # (not POSIX: the copy's read says so)
        return False
    return fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY


def iter_lines(source: Source, offset: int = 0, lines_before: int = 0) -> Iterator[tuple[int, int, bytes]]:
    """Yield ``(line_no, offset, raw_line)`` for every line from byte ``offset`` on (a line start;
    ``lines_before`` lines come before it); ``raw_line`` ends with its line ending (none on a last line
    without one): see :func:`parse_raw` and :func:`split_ending`."""
    # the file again, with a large buffer: read in 1 MiB pieces, not 8 KiB ones (read_at is unbuffered)
    stream = nullcontext(source.file) if source.fd is None else \
        open(source.fd, "rb", buffering=_READ_BUFFER, closefd=False)
    with stream as f:
        f.seek(offset)
        line_no = lines_before
        for raw in f:
            line_no += 1
            yield line_no, offset, raw
            offset += len(raw)


def split_ending(raw: bytes) -> tuple[bytes, bool]:
    """A line as :func:`iter_lines` yields it: its body (without ``\n`` or ``\r\n``), and whether it
    had a newline."""
    had_newline = raw.endswith(b"\n")
    body = raw[:-1] if had_newline else raw
    return (body[:-1] if body.endswith(b"\r") else body), had_newline


def parse_raw(source_name: str, line_no: int, raw: bytes) -> dict | None:
    """Parse a line as :func:`iter_lines` yields it; None for a blank line. The line ending is
    whitespace to JSON, so a good line is parsed as it is (no copy of it without its ending); a bad one
    gets :func:`parse_line`'s error."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        value = None
    if type(value) is dict:
        return value
    body, had_newline = split_ending(raw)
    if not body.strip():
        return None
    return parse_line(source_name, line_no, body, had_newline)


_READ_BUFFER = 1 << 20


@dataclass
class BadLines:
    """Lines that could not be read under ``--on-bad-line skip`` (kept in the output unchanged)."""

    count: int = 0
    first: list[str] = field(default_factory=list)

    def add(self, message: str) -> None:
        self.count += 1
        if len(self.first) < 5:
            self.first.append(message)


def parse_line(source_name: str, line_no: int, body: bytes, had_newline: bool) -> dict:
    """Parse one JSONL line into a dict, raising a TranscriptError that names the line."""
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        try:
            body.decode("utf-8")
        except UnicodeDecodeError as uexc:
            raise TranscriptError(source_name, line_no, f"invalid UTF-8 at byte {uexc.start}") from None
        if not had_newline:
            raise TranscriptError(
                source_name, line_no, "truncated last line (not valid JSON; the writer may have crashed mid-line)"
            ) from None
        raise TranscriptError(source_name, line_no, f"not valid JSON: {exc.msg}") from None
    if not isinstance(value, dict):
        raise TranscriptError(source_name, line_no, f"expected a JSON object, got {type(value).__name__}")
    return value


def dumps(value: object) -> bytes:
    """Serialize one entry compactly (non-ASCII kept as UTF-8, like the agents that write transcripts)."""
    return orjson.dumps(value)
