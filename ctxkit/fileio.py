"""The one place ctxkit writes files: a reader sees the old file or the new one, never a part of one.

Every file ctxkit writes goes through :func:`atomic_output` (or :func:`atomic_write`): the output of
``-o``, the store's blobs, ``ledger.json``, ``state.json``, the token cache, session notes. What it
guarantees (user documentation: docs/store.md):

* **Atomic and durable.** A regular file is written to a temporary file beside it, flushed and
  fsynced, then renamed over the target; the folder is fsynced after the rename (and after creating
  a folder), so once :func:`atomic_output` returns the new bytes survive a power cut.
* **The target keeps what it is.** An existing regular file keeps its permission bits (and, as
  root, its owner); one this user may not write (read-only for them, another user's) is not
  replaced, as a shell redirect would not write it; a new file gets ``0666`` less the umask, like a
  shell redirect. A symlink is
  followed: its target is replaced, the link stays. Anything that is not a regular file (a
  character device such as ``/dev/null``, a FIFO, a socket) is written in place, never replaced.
* **Nothing left behind.** Temporary files are named ``.NAME.ctxkit-PID-RANDOM.tmp``. They are
  removed when the write fails or is interrupted (SIGINT, and SIGTERM under :func:`terminate_cleanly`);
  those of a run killed outright (SIGKILL, a power cut) are removed by the next write into that
  folder, once no process with that PID is running.
* **Errors name the file.** A refused write (no space, file too large, permission denied,
  read-only file system...) raises :class:`ctxkit.errors.WriteError` naming the path.

Over 400 lines: writing, its temporary files and the signals that must not leave one behind are one
concern (a signal is remembered here so that a batch stops between two files, :func:`raise_interruption`).
"""
from __future__ import annotations

import errno
import os
import re
import signal
import stat
import sys
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterator

from .errors import WriteError

_TMP_MARK = ".ctxkit-"
_TMP_NAME = re.compile(r"^\..*\.ctxkit-(\d+)-[0-9a-f]{8}\.tmp$")
_NAME_ROOM = 200  # characters of the target's name kept in a temporary name (file names stop at 255 bytes)

_live_temps: set[str] = set()  # temporary files this process is writing now (removed on SIGTERM)
_swept: set[str] = set()  # folders already cleared of dead runs' temporary files by this process


def temp_path(target: Path) -> Path:
    """A temporary name beside ``target`` that says whose it is (the PID), for :func:`sweep_stale_temps`."""
    return target.with_name(f".{target.name[:_NAME_ROOM]}{_TMP_MARK}{os.getpid()}-{os.urandom(4).hex()}.tmp")


def _pid_running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # someone else's process: alive
    return True


def sweep_stale_temps(folder: Path) -> list[Path]:
    """Remove the temporary files that runs no longer running left in ``folder`` (killed mid-write).

    Once per folder per process. A file whose PID is alive is another run's write in progress and
    is left alone. Returns what was removed."""
    key = str(folder)
    if key in _swept:
        return []
    _swept.add(key)
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    for e in entries:
        m = _TMP_NAME.match(e.name)
        if m and not _pid_running(int(m.group(1))):
            try:
                os.unlink(e.path)
                removed.append(Path(e.path))
            except OSError:
                pass
    return removed


def fsync_dir(folder: Path) -> None:
    """Make a rename or a creation in ``folder`` durable (where the system allows opening folders)."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems refuse fsync on a folder; the rename itself is still atomic
    finally:
        os.close(fd)


def make_dirs(folder: Path, unsynced: set[Path] | None = None) -> None:
    """``mkdir -p`` whose new folders survive a crash (each parent fsynced after its child is made;
    with ``unsynced``, the parents are added to it instead, for the caller to fsync later)."""
    missing = []
    p = folder
    while not p.exists():
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    for d in reversed(missing):
        try:
            d.mkdir(exist_ok=True)
        except OSError as exc:
            raise WriteError(str(d), exc) from None
        if unsynced is None:
            fsync_dir(d.parent)
        else:
            unsynced.add(d.parent)


class _NamedStream:
    """The stream handed to the caller: a write the disk refuses raises a WriteError naming the file."""

    def __init__(self, f: BinaryIO, name: str):
        self._f = f
        self._name = name

    def write(self, data: bytes) -> int:
        try:
            return self._f.write(data)
        except BrokenPipeError:
            raise  # the reader went away (`| head`): not a disk error (the CLI exits quietly)
        except OSError as exc:
            raise WriteError(self._name, exc) from None

    def copy_from(self, src: BinaryIO, offset: int, length: int) -> None:
        """Write ``length`` bytes of the file ``src`` from byte ``offset``: copied by the kernel where it
        can (``os.copy_file_range``, else ``os.sendfile``), through a buffer otherwise (a stream with no
        file descriptor, a system without either call, a kernel that refuses them for these files)."""
        self.flush()
        try:
            src_fd, dst_fd = src.fileno(), self._f.fileno()
        except (AttributeError, OSError, ValueError):
            src_fd = dst_fd = -1
        if src_fd >= 0:
            try:
                done = _kernel_copy(src_fd, dst_fd, offset, length)
            except OSError as exc:
                raise WriteError(self._name, exc) from None
            offset, length = offset + done, length - done
        while length > 0:
            src.seek(offset)
            chunk = src.read(min(length, 1 << 20))
            if not chunk:
                raise WriteError(self._name, OSError(errno.EIO, "the input shrank while it was copied"))
            self.write(chunk)
            offset, length = offset + len(chunk), length - len(chunk)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        try:
            self._f.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise WriteError(self._name, exc) from None

    def __getattr__(self, name: str):
        return getattr(self._f, name)


#: what a kernel copy call says when it cannot copy between these two files (another call, or a buffer, can)
_CANNOT_COPY = {errno.EXDEV, errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.EBADF, errno.ESPIPE,
                getattr(errno, "ENOTSUP", errno.EOPNOTSUPP)}


def _kernel_copy(src_fd: int, dst_fd: int, offset: int, length: int) -> int:
    """Copy up to ``length`` bytes from ``src_fd`` at ``offset`` to ``dst_fd`` at its position, in the
    kernel; returns how many were copied (fewer when neither call works here: the caller copies the
    rest). A refused write (no space...) raises OSError."""
    done = 0
    for call in ("copy_file_range", "sendfile"):
        if not hasattr(os, call):
            continue
        try:
            while done < length:
                if call == "copy_file_range":
                    n = os.copy_file_range(src_fd, dst_fd, length - done, offset_src=offset + done)
                else:
                    n = os.sendfile(dst_fd, src_fd, offset + done, length - done)
                if n == 0:
                    return done  # end of the input: the caller's buffered copy says so
                done += n
            return done
        except OSError as exc:
            if exc.errno not in _CANNOT_COPY:
                raise
    return done


def check_output(path: str | os.PathLike | None) -> None:
    """Raise :class:`WriteError` now when ``-o`` cannot be written at all (a symlink loop, a folder, a
    path through a file), so a command fails before doing any work and before anything resolves it."""
    if path is None or str(path) == "-":
        return
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return  # a new file (make_dirs names a folder that cannot be made)
    except OSError as exc:
        raise WriteError(str(path), exc) from None
    if stat.S_ISDIR(st.st_mode):
        raise WriteError(str(path), IsADirectoryError(21, "Is a directory"))
    _refuse_unwritable(str(path), path, st)


def _refuse_unwritable(name: str, path: str | os.PathLike, st: os.stat_result) -> None:
    """Raise :class:`WriteError` when the existing regular file ``path`` is not writable by this user
    (read-only for them, or another user's): a rename would replace it all the same (the folder allows
    it), but ``> file`` would not, and a read-only mode is the user's word that it must not change."""
    if not stat.S_ISREG(st.st_mode):
        return
    effective = os.access in os.supports_effective_ids
    if not os.access(path, os.W_OK, effective_ids=effective):
        raise WriteError(name, PermissionError(errno.EACCES, "Permission denied (the file is not writable by you; "
                                                             "ctxkit does not replace it)"))


@contextmanager
def atomic_output(path: str | os.PathLike | None, stdout: BinaryIO | None = None, *,
                  unsynced: set[Path] | None = None,
                  last: Callable[[BinaryIO], Any] | None = None,
                  verify: Callable[[], None] | None = None) -> Iterator[BinaryIO]:
    """Yield a binary stream for ``path`` (``None`` or ``-``: standard output); see the module docstring.

    A regular file is replaced only when the block finishes without error; a device or FIFO is
    written as the block goes. ``unsynced``: the folders whose fsync would make the new name durable
    are added to it instead of being fsynced here (the store's blobs: fsynced once per folder before
    anything that names them is written, :meth:`ctxkit.store.disk.Store.sync_folders`); the file's
    own bytes are always fsynced before its rename, so a name that is there has all its bytes.
    ``last(stream)`` writes what must be written as close to the replacement as can be: after the block's
    bytes are on disk, just before the rename (what an agent appended to the file being replaced);
    ``verify()``, last thing before the rename, may raise to leave the target as it is."""
    if path is None or str(path) == "-":
        stream = _NamedStream(stdout if stdout is not None else sys.stdout.buffer, "standard output")
        yield stream
        stream.flush()
        return
    name = str(path)
    target = Path(os.path.realpath(path))  # through symlinks: the link's target is written, the link kept
    try:
        st: os.stat_result | None = os.stat(target)
    except (FileNotFoundError, NotADirectoryError):
        st = None  # a new file (make_dirs names the folder that cannot be made)
    except OSError as exc:
        raise WriteError(name, exc) from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise WriteError(name, IsADirectoryError(21, "Is a directory"))
    if st is not None and not stat.S_ISREG(st.st_mode):
        yield from _write_in_place(target, name)
        return
    if st is not None:
        _refuse_unwritable(name, target, st)
    folder = target.parent
    make_dirs(folder, unsynced)
    sweep_stale_temps(folder)
    tmp = temp_path(target)
    # a new file: 0666 less the umask (the kernel applies it); replacing one: private until given its mode
    mode = 0o666 if st is None else 0o600
    # registered before it exists: SIGTERM right after os.open returns (before the next statement) must
    # still find it to remove; removing a name that was never created is harmless
    _live_temps.add(str(tmp))
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), mode)
    except OSError as exc:
        _live_temps.discard(str(tmp))
        raise WriteError(name, exc) from None
    f = os.fdopen(fd, "wb")
    try:
        if st is not None:
            _keep_mode_and_owner(f.fileno(), st)
        try:
            yield _NamedStream(f, name)
        except BaseException:
            _close_quietly(f)  # a failed write's buffer would fail again on close and hide the first error
            raise
        try:
            f.flush()
            os.fsync(f.fileno())
            if last is not None and last(f):  # (it says whether it wrote anything)
                f.flush()
                os.fsync(f.fileno())
            f.close()
        except OSError as exc:
            _close_quietly(f)
            raise WriteError(name, exc) from None
        if verify is not None:
            verify()
        try:
            os.replace(tmp, target)
        except OSError as exc:
            raise WriteError(name, exc) from None
        _live_temps.discard(str(tmp))
        if unsynced is None:
            fsync_dir(folder)
        else:
            unsynced.add(folder)
    except BaseException:
        _close_quietly(f)
        _remove_temp(tmp)
        raise


def names_open_file(path: str | os.PathLike | None, fd: int | None) -> bool:
    """Whether ``path`` (through symlinks) names the file open as ``fd``: an output written onto its input."""
    if path is None or str(path) == "-" or fd is None:
        return False
    try:
        named, open_ = os.stat(os.path.realpath(path)), os.fstat(fd)
    except OSError:
        return False
    return (named.st_dev, named.st_ino) == (open_.st_dev, open_.st_ino)


def release_cached_pages(path: str | os.PathLike | None) -> None:
    """Tell the kernel that the cached pages of ``path``, a regular file about to be replaced by a new
    output, are of no further use (``posix_fadvise(DONTNEED)``): writing the new file reuses them instead
    of taking more memory. Not for an output onto its own input (:func:`names_open_file`): the unchanged
    bytes are copied from it. Advice only: the file is untouched, errors are ignored. Why: on a virtual
    machine whose host takes freed memory back (Firecracker, free-page reporting) each page taken anew
    faults in the host: 190 MB of new page cache cost 0.5-0.9 s of system time on the benchmark
    machine, 0.1 s when the replaced output's pages were given back first."""
    advise = getattr(os, "posix_fadvise", None)
    if advise is None or path is None or str(path) == "-":
        return
    target = os.path.realpath(path)
    try:
        if not stat.S_ISREG(os.stat(target).st_mode):
            return  # a FIFO, a device: never opened here (opening a FIFO to read waits for its writer)
        # non-blocking all the same: it may have been replaced by a FIFO since
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return
        advise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_in_place(target: Path, name: str) -> Iterator[BinaryIO]:
    """A device, FIFO or socket: written directly, like a shell redirect (replacing it would destroy it)."""
    try:
        f = open(target, "wb")
    except OSError as exc:
        raise WriteError(name, exc) from None
    try:
        yield _NamedStream(f, name)
    except BaseException:
        _close_quietly(f)
        raise
    try:
        f.close()
    except OSError as exc:
        _close_quietly(f)
        raise WriteError(name, exc) from None


def _close_quietly(f: BinaryIO) -> None:
    """Close after a failure: the error already raised is the one to report."""
    try:
        f.close()
    except OSError:
        pass


def _keep_mode_and_owner(fd: int, st: os.stat_result) -> None:
    """Give the new file the replaced one's permission bits and, where allowed, its owner and group."""
    os.fchmod(fd, stat.S_IMODE(st.st_mode))
    if hasattr(os, "fchown") and (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
        try:
            os.fchown(fd, st.st_uid, st.st_gid)
        except OSError:
            pass  # not ours to give away (not root): the file keeps its mode, owned by whoever writes it
        else:
            os.fchmod(fd, stat.S_IMODE(st.st_mode))  # chown clears setuid/setgid bits: set them again


def _remove_temp(tmp: Path) -> None:
    try:  # removed, then forgotten: a signal between the two leaves it known, to be removed again
        os.unlink(tmp)
    except OSError:
        pass
    _live_temps.discard(str(tmp))


def atomic_write(path: str | os.PathLike, data: bytes, *, unsynced: set[Path] | None = None) -> None:
    """Write ``data`` to ``path`` atomically and durably (see :func:`atomic_output`)."""
    with atomic_output(path, unsynced=unsynced) as f:
        f.write(data)


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived: unwinds like Ctrl-C, so that every write in progress removes its temporary file."""

    def __init__(self, signum: int):
        super().__init__(f"terminated by signal {signum}")
        self.signum = signum


_signalled: list[int] = []  # SIGINT / SIGTERM received under the outermost terminate_cleanly() block
_depth = [0]


def raise_interruption() -> None:
    """Raise the interruption a signal received under :func:`terminate_cleanly` asked for, if one came.

    The exception a signal handler raises is lost when it lands while Python runs a finalizer (a
    generator closed by the cycle collector: "Exception ignored", printed to a stream a batch captures
    for one file); a batch calls this between files, so a Ctrl-C always stops it (about one Ctrl-C in
    two hundred was lost that way)."""
    if _signalled:
        signum = _signalled[-1]
        raise Terminated(signum) if signum == signal.SIGTERM else KeyboardInterrupt()


@contextmanager
def terminate_cleanly() -> Iterator[None]:
    """While the block runs, SIGTERM raises :class:`Terminated` (a KeyboardInterrupt) instead of killing
    the process on the spot, so temporary files are removed as for Ctrl-C; both it and Ctrl-C are
    remembered (:func:`raise_interruption`). For the CLI's commands; a library embedding ctxkit keeps its own
    signal handling. Only in the main thread (Python's rule)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_term(signum, frame):
        _signalled.append(signum)
        raise Terminated(signum)

    def on_int(signum, frame):
        _signalled.append(signum)
        raise KeyboardInterrupt

    if _depth[0] == 0:
        _signalled.clear()  # a new command (a test runs many in one process)
    previous = signal.signal(signal.SIGTERM, on_term)
    # Ctrl-C as Python handles it, remembered; an ignored SIGINT (a shell's background job) stays ignored
    previous_int = signal.getsignal(signal.SIGINT)
    if previous_int is signal.default_int_handler:
        signal.signal(signal.SIGINT, on_int)
    outer = set(_live_temps)  # writes still open around this block (a batch's report file) are not its own
    _depth[0] += 1
    try:
        yield
    finally:
        _depth[0] -= 1
        late = _finish(outer, previous, previous_int)
    if late is not None:  # the block had finished: the signal that came during the cleanup stops the caller
        raise late


def _finish(outer: set[str], previous: Any, previous_int: Any) -> KeyboardInterrupt | None:
    """Remove the temporary files a signal left (it landed between two statements of a cleanup), then
    give the signals back to their previous handlers; returns the interruption a further signal raised
    meanwhile. In that order: a batch's worker stopped with SIGTERM twice (its process group's, then
    the batch's own) exits on the spot under its previous handler, so the files must be gone by then."""
    late = None
    while True:
        try:
            for tmp in list(_live_temps - outer):
                _remove_temp(Path(tmp))
            signal.signal(signal.SIGTERM, previous)
            if previous_int is signal.default_int_handler:
                signal.signal(signal.SIGINT, previous_int)
            return late
        except KeyboardInterrupt as exc:  # a second signal during the cleanup: finish it first
            late = exc


def forget_inherited_temps() -> None:
    """In a process forked from a writer: the temporary files it is writing are its own, not this
    process's to remove (a batch's worker processes, :mod:`ctxkit.batch.engine`)."""
    _live_temps.clear()
