"""An output written onto its own input (``-o`` onto the session): what the agent appended meanwhile.

One way to run ctxkit after every turn writes its output over the session file the agent goes on
appending to (``compact``, ``snip``, ``expand`` and ``batch --in-place``). The output replaces that file
by a rename (:func:`ctxkit.fileio.atomic_output`), and whatever the agent appended after ctxkit read the
file would go with the replaced one. :func:`write_over` writes every new version of a transcript, and
when its output is its input, two steps keep that (docs/store.md, "Checkpoints"):

* :func:`partial_last_line`: an unreadable last line without its newline (kept under ``--on-bad-line
  skip``) is most likely one the agent was still writing: it is left out of the output;
* :func:`copy_appended_since_read`: the bytes from that line (or from the end of what was read) to the
  file's end now are copied after the output, the last thing before the rename.

And two checks before the copy, each stopping the run with nothing written rather than undoing
someone else's work: the name must still be that of the file that was read (another program, or
another ctxkit run writing onto the same session, may have put a new file there), and the file must
not be shorter than what was read (rewritten in place).
"""
from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, BinaryIO

from ..errors import TranscriptError
from ..fileio import atomic_output, names_open_file, release_cached_pages

if TYPE_CHECKING:
    from .model import Transcript


def partial_last_line(t: Transcript) -> int | None:
    """The index of ``t``'s unreadable last line without its newline (kept under ``--on-bad-line skip``):
    most likely one the agent was writing when ctxkit read it. None when there is none."""
    n = t.n_lines
    return n - 1 if n and t.lines.bad(n - 1) and not t.ends_with_newline() else None


def copy_appended_since_read(t: Transcript, out: BinaryIO, still_named: str | os.PathLike) -> int:
    """Copy to ``out`` the bytes of ``t``'s input file from the end of what was read to its end now, as they
    are: what an agent appended while ctxkit ran, for an output that replaces its own input, named
    ``still_named`` (which leaves out :func:`partial_last_line`); written just before the new file takes
    that name. They start at that line, when there is one: a line finished meanwhile is copied whole,
    not as a second broken line. A last line still unfinished then gets a newline: the rest of it goes to
    the file its writer holds open, the one being replaced, and the agent's next line must not be glued
    onto it. Their number (0: nothing was added).

    Raises :class:`TranscriptError` when ``still_named`` no longer names the file that was read (replaced
    or removed meanwhile), when the file is now shorter than what was read (rewritten), or when it
    cannot be read again."""
    source = t.source

    def failed(what: str, name: str = source.name) -> TranscriptError:
        return TranscriptError(name, 0, f"{what} while ctxkit ran; nothing was written")

    try:
        size = os.fstat(source.fd).st_size
    except (OSError, TypeError) as exc:
        raise failed(f"cannot be read again ({getattr(exc, 'strerror', None) or exc})") from None
    if not names_open_file(still_named, source.fd):
        raise failed("is no longer the file ctxkit read (another program, or another ctxkit run, put a new "
                     "file in its place or removed it)", source.name if source.path is not None else str(still_named))
    if size < t.lines.end:
        raise failed("shrank (another program rewrote it)")

    def read(at: int) -> bytes:  # (a write error is the output's, raised as it is)
        try:
            return source.read_at(at, 1 << 20)
        except OSError as exc:
            raise failed(f"cannot be read again ({exc.strerror})") from None

    partial = partial_last_line(t)
    offset = start = t.lines.end if partial is None else t.lines.starts[partial]
    last = b"\n"
    while chunk := read(offset):
        out.write(chunk)
        offset, last = offset + len(chunk), chunk[-1:]
    if last != b"\n":
        out.write(b"\n")
    return offset - start


def write_over(read: Transcript, new: Transcript, output: str | os.PathLike | None,
               write: Callable[[Transcript, BinaryIO], None], *, keep_appended: bool = True) -> None:
    """Write ``new``, a version of ``read``, to ``output`` (a file replaced atomically, or ``-``) with
    ``write(new, stream)``.

    When ``output`` is ``read``'s own file and ``keep_appended`` (not when it is written in another format):
    what the agent appended while this run read and worked is copied after the output, last thing before
    it replaces the file, from the start of a line it was still writing when this run read it, which is
    left out of ``new``. Otherwise the cached pages of the file replaced are let go
    (:func:`ctxkit.fileio.release_cached_pages`; onto the input, its bytes are still to be copied)."""
    path = read.source.path
    onto_input = names_open_file(output, read.source.fd) or (
        path is not None and output is not None and str(output) != "-"
        and os.path.realpath(output) == os.path.realpath(path))  # (a file put in its place: refused on the copy)
    if not onto_input:
        release_cached_pages(output)
    last = None
    if onto_input and keep_appended:
        partial = partial_last_line(read)
        if partial is not None:
            new = new.with_edits(remove=[partial])
        last = functools.partial(copy_appended_since_read, read, still_named=output)
    with atomic_output(output, last=last) as out:
        write(new, out)
