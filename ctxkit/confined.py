"""Reading a file a transcript names, without letting the transcript choose which file.

A transcript is data from elsewhere: a ``<persisted-output>`` block, an ``archive`` record or a
collapse summary line can name any path (``/etc/passwd``, ``/proc/self/environ``, a FIFO,
``/dev/zero``). ``ctxkit expand`` and the stages that replay records read only:

* blobs of the store, found by their content-addressed *name* (the directories a transcript
  wrote before the name are ignored: the store may have moved), and
* regular files directly inside the session's own ``tool-results/`` folder next to the
  transcript (Claude Code's persisted outputs).

``ctxkit compact`` and the ``attachments`` stage also re-read files the session worked on (a
Read/Write/Edit ``file_path``, a plan file, a ``CLAUDE.md`` on the way): :func:`read_in_folder`
reads those, and only those that resolve (``..`` and symbolic links followed) to a path inside the
session's working directory (or another folder the caller trusts), never under ``/proc``, ``/sys``
or ``/dev``, with the same checks as below and the caller's byte limit.

:func:`read_under` is the one primitive both use: it walks from a trusted folder one plain name
at a time, never following a symbolic link (``O_NOFOLLOW`` at each step), opens the file
non-blocking (a FIFO cannot hang the run), requires a regular file (``fstat``) and reads at most
:data:`MAX_READ_BYTES` (a huge file cannot exhaust memory). Whatever fails these checks raises
:class:`Refused`, so the caller can report it and leave the record as it is.
"""
from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Sequence
from pathlib import Path

#: The most bytes read from one restored file (a tool output or an archive); larger files are refused.
MAX_READ_BYTES = 256 * 1024 * 1024

#: A store blob's file name: the SHA-256 of its bytes and the suffix the store gives it.
BLOB_NAME = re.compile(r"[0-9a-f]{64}\.(?:txt|json)")
#: A name a transcript may give for a file or folder we look up: one plain path component.
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,254}")

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_WALK_BY_FD = bool(_NOFOLLOW and _DIRECTORY) and os.open in os.supports_dir_fd


#: Why a file was refused, for reports that count them (``Refused.kind``).
OUTSIDE, NOT_REGULAR, TOO_LARGE, BAD_NAME = "outside", "not-regular", "too-large", "bad-name"

#: Top-level folders whose "files" are the kernel's (``/proc/self/environ`` is a regular file of size 0).
_SYSTEM_FOLDERS = ("proc", "sys", "dev")


class Refused(Exception):
    """A file named in a transcript that ctxkit will not read; ``reason`` says why (for the user),
    ``kind`` which rule refused it (:data:`OUTSIDE`, :data:`NOT_REGULAR`, :data:`TOO_LARGE`, :data:`BAD_NAME`)."""

    def __init__(self, path: str, reason: str, kind: str = BAD_NAME):
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason
        self.kind = kind


def is_plain_name(name: str) -> bool:
    """One path component made of ordinary characters: no separator, not ``.``/``..``, no hidden file."""
    return bool(_PLAIN_NAME.fullmatch(name))


def read_under(root: Path, parts: Sequence[str], *, shown: str | None = None,
               limit: int | None = None) -> bytes | None:
    """The bytes of the regular file ``root/parts[0]/.../parts[-1]``, or None when it does not exist.

    ``root`` is trusted (the user chose it: the store, the transcript's folder); each of ``parts``
    must be a plain name (:func:`is_plain_name`) and none may be a symbolic link. Raises
    :class:`Refused` for a bad name, a link, anything but a regular file, or a file larger than
    ``limit`` (default :data:`MAX_READ_BYTES`). ``shown`` is the path named in the reports.
    """
    shown = shown or str(Path(root, *parts))
    for part in parts:
        if not is_plain_name(part):
            raise Refused(shown, f"{part!r} is not a plain file name")
    return _read_parts(root, parts, shown, MAX_READ_BYTES if limit is None else limit)


def check_under(root: Path, parts: Sequence[str], *, shown: str | None = None, folder: bool = False) -> bool:
    """Whether the regular file (with ``folder``: the folder) ``root/parts[0]/.../parts[-1]`` exists
    (False: it, or a folder on the way, does not exist yet); raises :class:`Refused` when one of
    ``parts`` is a symbolic link, a folder on the way is not a folder, or what is there is not a
    regular file (not a folder).

    The writing side of :func:`read_under`'s rule, for a folder ctxkit owns (the store): what a
    write goes through is what a read would accept, so a link planted in the folder (``ledger.json``
    pointing at another file, ``blobs/`` at another folder) cannot send a write elsewhere, and nothing
    is written that could not be read back. ``root`` itself is trusted, as for :func:`read_under`.
    ``parts`` are ctxkit's own names (``.lock`` included), not a transcript's."""
    path = Path(root)
    for k, part in enumerate(parts):
        if not part or part in (".", "..") or "/" in part or os.sep in part:
            raise Refused(shown or str(Path(root, *parts)), f"{part!r} is not a file name")
        path = path / part
        try:
            info = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            return False
        except PermissionError as exc:  # the folder it is in cannot be searched: name that folder
            raise Refused(str(path.parent), f"cannot be entered ({exc.strerror or exc})", NOT_REGULAR) from None
        except OSError as exc:
            raise Refused(str(path), f"cannot be examined ({exc.strerror or exc})", NOT_REGULAR) from None
        if stat.S_ISLNK(info.st_mode):
            raise Refused(str(path), "is a symbolic link (ctxkit neither reads nor writes its own files "
                          "through a link)", NOT_REGULAR)
        if k < len(parts) - 1 or folder:
            if not stat.S_ISDIR(info.st_mode):
                raise Refused(str(path), "is not a folder", NOT_REGULAR)
        elif not stat.S_ISREG(info.st_mode):
            raise Refused(str(path), "is not a regular file", NOT_REGULAR)
    return bool(parts)


_SKIPPED = {OUTSIDE: "outside the session's folder",
            NOT_REGULAR: "that {are} not {a}regular {files} (a device, FIFO, socket, link or system file)",
            TOO_LARGE: "over the size limit",
            BAD_NAME: "whose path cannot be resolved"}


def skipped_note(kind: str, paths: Sequence[str]) -> str:
    """One line of a report: ``skipped 1 file outside the session's folder: ~/.aws/credentials``."""
    n = len(paths)
    what = _SKIPPED.get(kind, kind).format(are="is" if n == 1 else "are", a="a " if n == 1 else "",
                                            files="file" if n == 1 else "files")
    return f"skipped {n} file{'' if n == 1 else 's'} {what}: {', '.join(paths)}"


def read_in_folder(roots: Path | Sequence[Path], path: str | Path, *, limit: int,
                   shown: str | None = None) -> bytes | None:
    """The bytes of ``path`` (relative paths are taken from the first root), or None when it does not exist.

    ``path`` comes from a transcript; ``roots`` are folders the user trusts (the session's working
    directory; the plan folder). ``..`` and symbolic links are resolved first, and the real path
    must lie inside one of the real roots, and not under ``/proc``, ``/sys`` or ``/dev``: a link in the
    project pointing at ``~/.aws/credentials`` is refused like the path itself. The resolved path is
    then opened as :func:`read_under` does (no link followed at any step, so a link swapped in after
    the check is refused too; non-blocking; regular files only; at most ``limit`` bytes).
    Raises :class:`Refused` (see ``kind``) otherwise.
    """
    roots = [roots] if isinstance(roots, (str, Path)) else list(roots)
    shown = shown or str(path)
    if not roots:
        raise Refused(shown, "no folder to read from", OUTSIDE)
    try:
        real = Path(os.path.realpath(Path(roots[0], path)))
        bases = [Path(os.path.realpath(r)) for r in roots]
    except (OSError, ValueError) as exc:  # a NUL byte, a link loop
        raise Refused(shown, f"cannot be resolved ({exc})", BAD_NAME) from None
    if len(real.parts) > 1 and real.parts[1] in _SYSTEM_FOLDERS:
        raise Refused(shown, "a system file (/proc, /sys, /dev)", NOT_REGULAR)
    for base in bases:
        if real != base and real.is_relative_to(base):
            return _read_parts(base, real.relative_to(base).parts, shown, limit)
    raise Refused(shown, "outside the session's folder", OUTSIDE)


def _read_parts(root: Path, parts: Sequence[str], shown: str, limit: int) -> bytes | None:
    """Open ``root/parts...`` without following links, check it is a regular file within ``limit``, read it."""
    if not parts:
        raise Refused(shown, "no file name")
    try:
        fd = _open_by_fd(root, parts, shown) if _WALK_BY_FD else _open_by_path(root, parts, shown)
    except FileNotFoundError:
        return None
    return read_open_file(fd, shown, limit)


def read_regular(path: str | Path, *, limit: int, shown: str | None = None) -> bytes:
    """The bytes of ``path``, a file the *user* named (symbolic links followed), read with the same
    bounds as a file a transcript names: opened non-blocking (a FIFO cannot hang the run), a regular
    file only (a device such as ``/dev/zero``, a FIFO, a socket or a folder raises :class:`Refused`,
    kind :data:`NOT_REGULAR`), at most ``limit`` bytes (more raises kind :data:`TOO_LARGE`, having
    read no more than ``limit + 1``). ``FileNotFoundError`` and other ``OSError`` from opening it
    propagate: the caller says what a missing file means."""
    shown = shown or str(path)
    fd = os.open(path, os.O_RDONLY | _NONBLOCK | _CLOEXEC | getattr(os, "O_BINARY", 0))
    return read_open_file(fd, shown, limit)


def read_open_file(fd: int, shown: str, limit: int) -> bytes:
    """Read the open file ``fd`` (and close it): a regular file of at most ``limit`` bytes, else
    :class:`Refused`. The size is checked before reading and again while reading (a file that grows,
    or a pseudo-file whose size says 0, stops at ``limit + 1`` bytes)."""
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise Refused(shown, "a folder, not a file", NOT_REGULAR)
        if not stat.S_ISREG(info.st_mode):
            raise Refused(shown, f"not a regular file ({file_kind(info.st_mode)})", NOT_REGULAR)
        if info.st_size > limit:
            raise Refused(shown, f"larger than {limit} bytes", TOO_LARGE)
        chunks, total = [], 0
        while total <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:  # it grew while we read
            raise Refused(shown, f"larger than {limit} bytes", TOO_LARGE)
        return b"".join(chunks)
    finally:
        os.close(fd)


def file_kind(mode: int) -> str:
    """What a file that is not a regular one is, in words."""
    for test, name in ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return name
    return "not a file"


def _open_by_fd(root: Path, parts: Sequence[str], shown: str) -> int:
    """Open the file one component at a time (``openat``), refusing a link at every step."""
    dfd = os.open(root, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    try:
        for part in parts[:-1]:
            try:
                nxt = os.open(part, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=dfd)
            except FileNotFoundError:
                raise
            except OSError as exc:
                raise Refused(shown, f"{part!r} {_why(exc, 'a folder')}", NOT_REGULAR) from None
            os.close(dfd)
            dfd = nxt
        try:
            return os.open(parts[-1], os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC, dir_fd=dfd)
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise Refused(shown, _why(exc, "a file"), NOT_REGULAR) from None
    finally:
        os.close(dfd)


def _why(exc: OSError, expected: str) -> str:
    """Why opening one component failed, in words (``O_NOFOLLOW`` on a link gives ELOOP, or
    ENOTDIR for a link where a folder was asked)."""
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        return f"is a symbolic link or not {expected}"
    return f"cannot be opened ({exc.strerror})"


def _open_by_path(root: Path, parts: Sequence[str], shown: str) -> int:  # pragma: no cover - no openat
    """Where ``openat`` is missing: refuse links found by ``lstat``, then check the resolved path."""
    path = Path(root)
    for part in parts:
        path = path / part
        if path.is_symlink():
            raise Refused(shown, "a symbolic link", NOT_REGULAR)
    if not path.exists():
        raise FileNotFoundError(str(path))
    if not path.resolve().is_relative_to(Path(root).resolve()):
        raise Refused(shown, "outside its folder", OUTSIDE)
    return os.open(path, os.O_RDONLY | _NONBLOCK | getattr(os, "O_BINARY", 0))
