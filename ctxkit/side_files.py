"""Reading a file the user names beside the transcript (``--state``, ``--queued``, ``--system``...), bounded.

These files come from outside: a script fills them, a path is mistyped or completed by the shell
into ``/dev/zero``, a FIFO is left where a file was. Reading one must never hang the run or exhaust
memory, so every such file is read by :func:`read_side_file` through
:func:`ctxkit.confined.read_regular`: opened non-blocking, a regular file only, at most its bound
(:data:`BOUNDS`, documented in docs/security.md "Bounds"). Anything else is a usage error (exit 2)
naming the option and the path, raised before the file's content is used.
"""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from .confined import Refused, file_kind, read_regular
from .errors import UsageError
from .quoting import quote

MiB = 1 << 20

#: The largest file each option reads, in bytes: far above any real one (Claude Code's whole system
#: prompt is about 60 kB, its tool list with many MCP servers a few hundred), low enough that a
#: mistaken file is refused at once instead of being loaded.
BOUNDS = {
    "--queued": 4 * MiB,
    "--state": 16 * MiB,
    "--session-memory": 4 * MiB,
    "--system": 4 * MiB,
    "--tools": 16 * MiB,
    "--pricing": 4 * MiB,
}


#: Why a side file was refused (``SideFileError.kind``).
MISSING, UNREADABLE, NOT_REGULAR, TOO_LARGE, NOT_TEXT = "missing", "unreadable", "not-regular", "too-large", "not-text"


class SideFileError(UsageError):
    """A side file that is not a readable regular file within its bound (exit 2)."""

    def __init__(self, option: str, path: str | Path, reason: str, kind: str):
        self.option = option
        self.path = str(path)
        self.reason = reason
        #: :data:`MISSING`, :data:`UNREADABLE` (cannot be opened), :data:`NOT_REGULAR`, :data:`TOO_LARGE`, :data:`NOT_TEXT`
        self.kind = kind
        super().__init__(f"{option} {quote(str(path))}: {reason}")


def read_side_file(path: str | Path, option: str, *, missing_ok: bool = False) -> bytes | None:
    """The bytes of the file ``option`` names, at most ``BOUNDS[option]``.

    A missing file is None when ``missing_ok`` (the caller says what that means: no notes yet),
    else an error; a folder, device, FIFO or socket, a file over the bound or one that cannot be
    opened raises :class:`SideFileError`.
    """
    limit = BOUNDS[option]
    try:
        return read_regular(path, limit=limit)
    except FileNotFoundError:
        if missing_ok:
            return None
        raise SideFileError(option, path, "no such file", MISSING) from None
    except Refused as exc:
        if exc.kind == TOO_LARGE:
            raise _too_large(option, path, limit) from None
        raise SideFileError(option, path, f"{exc.reason}; {option} reads a regular file", NOT_REGULAR) from None
    except OSError as exc:
        raise SideFileError(option, path, f"cannot read it ({exc.strerror or exc})", UNREADABLE) from None


def check_side_file(path: str | Path | None, option: str) -> None:
    """Refuse at once (before the transcript is read) a side file that exists but could never be
    read: a folder, device, FIFO or socket, or a file over its bound. A missing file is left to the
    reader (for some options it means "nothing yet"). Only ``stat``: nothing is opened."""
    if path is None:
        return
    try:
        info = os.stat(path)
    except OSError:
        return
    if stat.S_ISDIR(info.st_mode):
        raise SideFileError(option, path, f"a folder, not a file; {option} reads a regular file", NOT_REGULAR)
    if not stat.S_ISREG(info.st_mode):
        raise SideFileError(option, path, f"not a regular file ({file_kind(info.st_mode)}); {option} reads a "
                                          "regular file", NOT_REGULAR)
    if info.st_size > BOUNDS[option]:
        raise _too_large(option, path, BOUNDS[option])


def _too_large(option: str, path: str | Path, limit: int) -> SideFileError:
    return SideFileError(option, path, f"more than {limit:,} bytes, the most {option} reads "
                                       "(docs/security.md, Bounds)", TOO_LARGE)


def read_side_text(path: str | Path, option: str, *, missing_ok: bool = False) -> str | None:
    """:func:`read_side_file` decoded as UTF-8 (bytes that are not are a :class:`SideFileError`)."""
    raw = read_side_file(path, option, missing_ok=missing_ok)
    if raw is None:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SideFileError(option, path, f"not UTF-8 text (byte {exc.start})", NOT_TEXT) from None


def parse_json(text: str | bytes | bytearray) -> Any:
    """``json.loads`` for JSON from outside (a side file, a column of another tool's database, an answer on
    the wire): a value nested deeper than the parser recurses raises :class:`ValueError`, as any other
    text that is not JSON does (``json.loads`` raises ``RecursionError`` there: an internal error)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply to read") from None
