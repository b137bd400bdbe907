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

And two checks, each stopping the run with the file left as it is rather than undoing someone else's
work: the file must not be shorter than what was read (rewritten in place), and, last thing before
the rename, the name must still be that of the file that was read (:func:`check_still_named`:
another program, or another ctxkit run writing onto the same session, may have put a new file there).
That last check is made for an output in another format too (``--to``), which copies nothing appended.
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


def _failed(t: Transcript, session: str | os.PathLike, what: str) -> TranscriptError:
    """The error that stops a run writing onto its input before the rename: it names the session (its path
    when it came on standard input) and says that the file was not replaced."""
    name = t.source.name if t.source.path is not None else str(session)
    return TranscriptError(name, 0, f"{what} while ctxkit ran; it was left as it is (the output was not written)")


def copy_appended_since_read(t: Transcript, out: BinaryIO, session: str | os.PathLike) -> int:
    """Copy to ``out`` the bytes of ``t``'s input file from the end of what was read to its end now, as they
    are: what an agent appended while ctxkit ran, for an output that replaces that file (named
    ``session``), written just before the new file takes its name. They start at :func:`partial_last_line`
    when there is one (the output leaves it out): a line finished meanwhile is copied whole, not as a
    second broken line. A last line still unfinished then gets a newline: the rest of it goes to the
    file its writer holds open, the one being replaced, and the agent's next line must not be glued
    onto it. Their number (0: nothing was added).

    Raises :class:`TranscriptError` when the file is now shorter than what was read (rewritten), or
    cannot be read again."""
    source = t.source
    try:
        size = os.fstat(source.fd).st_size
    except OSError as exc:
        raise _failed(t, session, f"cannot be read again ({exc.strerror})") from None
    if size < t.lines.end:
        raise _failed(t, session, "shrank (another program rewrote it)")

    def read(at: int) -> bytes:  # (a write error is the output's, raised as it is)
        try:
            return source.read_at(at, 1 << 20)
        except OSError as exc:
            raise _failed(t, session, f"cannot be read again ({exc.strerror})") from None

    partial = partial_last_line(t)
    offset = start = t.lines.end if partial is None else t.lines.starts[partial]
    last = b"\n"
    while chunk := read(offset):
        out.write(chunk)
        offset, last = offset + len(chunk), chunk[-1:]
    if last != b"\n":
        out.write(b"\n")
    return offset - start


def check_still_named(t: Transcript, session: str | os.PathLike) -> None:
    """Raise :class:`TranscriptError` unless ``session`` still names the file ``t`` was read from: another
    program, or a second ctxkit run writing onto the same session (a hook fired twice), put a new file
    in its place or removed it, and replacing that file would lose what it holds. Run last thing before
    the output takes the name (a rename in the instant after it is not seen)."""
    if not names_open_file(session, t.source.fd):
        raise _failed(t, session, "is no longer the file ctxkit read (another program, or another ctxkit run, "
                      "put a new file in its place or removed it)")


def onto_its_input(original: Transcript, output: str | os.PathLike | None, onto_input: bool) -> bool:
    """Whether ``output`` replaces ``original``'s file: ``onto_input`` (it named that file when it was read),
    or it is a file by the same path (see :func:`write_over`)."""
    path = original.source.path
    to_file = output is not None and str(output) != "-"
    return to_file and (onto_input or (path is not None and os.path.realpath(output) == os.path.realpath(path)))


def write_over(original: Transcript, new: Transcript, output: str | os.PathLike | None,
               write: Callable[[Transcript, BinaryIO], None], *, onto_input: bool,
               keep_appended: bool = True) -> None:
    """Write ``new``, a version of ``original``, to ``output`` (a file replaced atomically, or ``-``) with
    ``write(new, stream)``.

    ``onto_input``: ``output`` named ``original``'s file when it was read (the caller checks it right
    then, :func:`ctxkit.fileio.names_open_file`: it may name another file by now, and standard input
    has no path to compare). An output by the same path as a named input's is onto the input too (a
    file put there during the read is refused below). Onto the input, the output replaces the file only if it is still the one that was
    read (:func:`check_still_named`), and with ``keep_appended`` (not when it is written in another
    format) what the agent appended while this run read and worked is copied after it, from the start
    of a line it was still writing when this run read it (left out of ``new``). Otherwise the cached
    pages of the file replaced are let go (:func:`ctxkit.fileio.release_cached_pages`; onto the input,
    its bytes are still to be copied)."""
    onto_input = onto_its_input(original, output, onto_input)
    if onto_input and original.source.compressed:
        raise TranscriptError(original.source.name, 0, f"a {original.source.compressed}-compressed input is not "
                              "written over (what the agent appends meanwhile could not be kept): write to another "
                              "file with -o")
    if onto_input and original.source.encoding is not None:
        raise TranscriptError(original.source.name, 0, f"a file encoded {original.source.encoding} (it opens with a "
                              "byte order mark) is not written over (what the agent appends meanwhile could not be "
                              "kept): write to another file with -o")
    if onto_input and original.source.document is not None:
        raise TranscriptError(original.source.name, 0, "a JSON document (the agent rewrites it whole, so what it "
                              "writes meanwhile could not be kept) is not written over: write to another file "
                              "with -o, and put it in place while the agent is not running")
    if not onto_input:
        release_cached_pages(output)
    last = verify = None
    if onto_input:
        verify = functools.partial(check_still_named, original, output)
    if onto_input and keep_appended:
        partial = partial_last_line(original)
        if partial is not None:
            new = new.with_edits(remove=[partial])
        last = functools.partial(copy_appended_since_read, original, session=output)
    with atomic_output(output, last=last, verify=verify) as out:
        write(new, out)
