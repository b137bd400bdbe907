"""Talking to a summarizer command through its pipes without letting it hold the run or its memory.

``subprocess.communicate`` keeps everything a command prints (one that floods stdout grows ctxkit
by about 1 GB/s until it is killed for memory) and waits for the pipes to close, not for the
command: a command that leaves a child behind holding its stdout (``echo summary; sleep 600 &``)
makes it wait for the child. :func:`exchange` instead

* writes the prompt and reads both pipes as they are ready (a command that does not read its
  stdin, or prints before reading, cannot deadlock it),
* keeps at most ``out_limit`` bytes of stdout (more ends the exchange: :data:`FLOODED`) and only
  the last :data:`ERR_TAIL_BYTES` of stderr (what an error message quotes),
* once the command itself has exited, reads what is in the pipes at that moment (what it printed)
  and stops: a child left behind holding the pipe, printing or not, does not hold the run and what it
  prints afterwards is not part of the answer,
* never past ``timeout`` (:data:`TIMED_OUT`),

and the caller kills the command's process group whatever the outcome, so nothing it started
outlives the exchange.
"""
from __future__ import annotations

import os
import selectors
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Callable

#: how the exchange ended
EXITED, TIMED_OUT, FLOODED = "exited", "timed-out", "flooded"
#: the most stderr kept: its end, which is what an error message quotes (and where "prompt is too long" is)
ERR_TAIL_BYTES = 64 * 1024
_CHUNK = 64 * 1024


@dataclass
class Exchange:
    """What came back: stdout (at most the limit), the end of stderr, how it ended, and the exit status
    (None unless the command exited). ``left_behind``: the pipes were still open when the command had
    exited (a child it started held them)."""

    out: bytes
    err_tail: bytes
    ending: str
    returncode: int | None
    left_behind: bool = False


def exchange(proc: subprocess.Popen, prompt: bytes, *, timeout: float, out_limit: int,
             clock: Callable[[], float] = time.monotonic) -> Exchange:
    """Send ``prompt`` to ``proc``'s stdin and read its stdout and stderr within the bounds above.

    ``proc`` has all three pipes. Its pipes are closed on return; the process itself is not killed
    (the caller kills its group)."""
    end = clock() + max(0.0, timeout)
    out, err = bytearray(), bytearray()
    sel = selectors.DefaultSelector()
    pending = memoryview(prompt)
    if pending:
        os.set_blocking(proc.stdin.fileno(), False)
        sel.register(proc.stdin, selectors.EVENT_WRITE)
    else:
        _close(proc.stdin)
    for pipe in (proc.stdout, proc.stderr):
        os.set_blocking(pipe.fileno(), False)
        sel.register(pipe, selectors.EVENT_READ)
    ending = TIMED_OUT
    try:
        while True:
            now = clock()
            readers = [k for k in sel.get_map().values() if k.fileobj is not proc.stdin]
            if proc.poll() is not None:
                # the command itself has exited: what it printed is in the pipes now; what a child left
                # behind prints afterwards is not its answer (the caller kills the group)
                for key in readers:
                    data = _read_available(key.fd)
                    if data is None:
                        sel.unregister(key.fileobj)
                    elif key.fileobj is proc.stdout:
                        out += data
                    else:
                        err += data
                if len(out) > out_limit:
                    del out[out_limit:]
                    return Exchange(bytes(out), bytes(err[-ERR_TAIL_BYTES:]), FLOODED, None)
                readers = [k for k in sel.get_map().values() if k.fileobj is not proc.stdin]
                ending = EXITED
                break
            if now >= end:
                break
            for key, _ in sel.select(max(0.0, min(end - now, 0.05))):
                if key.fileobj is proc.stdin:
                    pending = _write_some(proc.stdin, pending, sel)
                    continue
                try:
                    data = os.read(key.fd, _CHUNK)
                except BlockingIOError:
                    continue
                if not data:
                    sel.unregister(key.fileobj)
                    continue
                if key.fileobj is proc.stdout:
                    out += data
                    if len(out) > out_limit:
                        ending = FLOODED
                        del out[out_limit:]
                        return Exchange(bytes(out), bytes(err), ending, None)
                else:
                    err += data
                    if len(err) > 2 * ERR_TAIL_BYTES:
                        del err[:-ERR_TAIL_BYTES]
    finally:
        sel.close()
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            _close(pipe)
    left_behind = ending == EXITED and bool(readers)
    return Exchange(bytes(out), bytes(err[-ERR_TAIL_BYTES:]), ending,
                    proc.returncode if ending == EXITED else None, left_behind)


def _read_available(fd: int) -> bytes | None:
    """What is in the pipe ``fd`` now (``FIONREAD``), without waiting for more; ``None`` at its end."""
    try:
        import fcntl
        import termios

        available = int.from_bytes(fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"), sys.byteorder)
    except (ImportError, OSError):  # pragma: no cover - no FIONREAD: one read of what is there
        available = _CHUNK
    data = bytearray()
    while True:
        try:
            chunk = os.read(fd, max(1, min(_CHUNK, available - len(data))))
        except BlockingIOError:
            return bytes(data)
        if not chunk:
            return bytes(data) or None
        data += chunk
        if len(data) >= available:
            return bytes(data)


def _write_some(stdin, pending: memoryview, sel: selectors.BaseSelector) -> memoryview:
    """Write what the pipe takes now; close stdin when all is written or the command closed its end."""
    try:
        n = os.write(stdin.fileno(), pending[:_CHUNK])
    except BlockingIOError:
        return pending
    except (BrokenPipeError, OSError):  # it stopped reading: what it prints still counts
        n = len(pending)
    pending = pending[n:]
    if not pending:
        sel.unregister(stdin)
        _close(stdin)
    return pending


def _close(pipe) -> None:
    try:
        pipe.close()
    except OSError:  # a write that did not get through before the command exited
        pass
