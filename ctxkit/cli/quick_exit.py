"""Ending the ``ctxkit`` process without taking its memory apart first.

A compaction of a large transcript holds millions of small objects (the parsed entries) until it
ends. Freeing them one by one when the command's locals go, then tearing down every module, is work
the operating system does at once when the process exits: ~0.05–0.1 s of a 50 MB compaction
(docs/benchmarks.md). So the console script (:func:`ctxkit.cli.main.run`) turns this on: the large
objects of a run are kept (:func:`keep_until_exit`) and the process ends with :func:`os._exit` once
every output is complete, the standard streams are flushed and the ``atexit`` handlers have run.

Only there: a test or a program calling ctxkit's commands in its own process (``CliRunner``, the
batch engine) goes on as usual, and when other threads still run the process ends the usual way
(their work would be cut short otherwise).
"""
from __future__ import annotations

import atexit
import gc
import os
import sys
import threading
from typing import Any, NoReturn

_kept: dict[str, Any] = {}  # what a run keeps, by kind: a batch's next file replaces its predecessor's
_enabled = False


def enable() -> None:
    """Let this process end with :func:`exit_now` (the console script's choice), and keep Python's cycle
    collector off in it. A command runs with it off anyway (:func:`ctxkit.cli.app.cycle_collector`);
    turning it back on when the command returns made the next allocation scan every object the command
    allocated (the parsed entries, which hold no cycles): ~50 ms of a 50 MB compaction, just before the
    process ends. A batch still turns it on around its engine."""
    global _enabled
    _enabled = True
    gc.disable()


def keep_until_exit(kind: str, obj: Any) -> None:
    """Keep ``obj`` alive to the end of the process (when enabled): the exit frees it with the rest.

    One object of each ``kind`` (the last): a batch runs its files' commands in this process one
    after the other, and must not keep every file's transcript and open input until it ends."""
    if _enabled:
        _kept[kind] = obj


def exit_now(code: Any) -> NoReturn:
    """End the process with ``code`` (as :class:`SystemExit` takes it: None, a number, or a message)."""
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:
        sys.stderr.write(f"{code}\n")
        status = 1
    if not _enabled or threading.active_count() > 1:
        raise SystemExit(status)
    atexit._run_exitfuncs()  # what a normal exit runs first (logging, multiprocessing, tempfile)
    for stream in (sys.stdout, sys.stderr):
        if stream is None:
            continue  # started with that descriptor closed: nothing to flush
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            if stream is sys.stdout and status == 0:
                status = 120  # what Python exits with when its own final flush fails
    os._exit(status)
