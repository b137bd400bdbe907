"""The proxy's request log written off the request's path: one thread writes what the requests hand it.

Logging a request (:meth:`.request_log.RequestLog.append`) is file I/O and the serialization of the messages
the conversation added — blocking work that, done in ``_finish`` on the event loop, held every other
request in flight while it ran. The app hands each log write to one :class:`LogWriter` instead: a queue
drained in order by one thread, so the writes of a conversation keep their order and two writes never
touch a conversation's files at once.

Nothing queued is lost when the proxy stops: ``close`` (the ASGI lifespan's shutdown, which uvicorn runs on
SIGTERM or SIGINT once the requests in flight are done, and again at the interpreter's exit) waits for
every write handed over before it. A write that fails (a full disk) costs the log its line: the proxy says
so on stderr, and the client has had its answer already.
"""
from __future__ import annotations

import atexit
import queue
import sys
import threading
from typing import Any, Callable


def _say(message: str) -> None:
    sys.stderr.write(f"ctxkit proxy: warning: {message}\n")
    sys.stderr.flush()


class LogWriter:
    """Runs the jobs handed to :meth:`submit` one after the other on a thread of its own (started with the
    first), until :meth:`close`; a job handed over after ``close`` runs at once, in the caller's thread."""

    def __init__(self, on_error: Callable[[str], None] = _say):
        self.on_error = on_error
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False

    def submit(self, job: Callable[..., Any], /, **kwargs: Any) -> None:
        with self._lock:
            if not self._closed:
                if self._thread is None:
                    # a daemon, so that a proxy never closed cannot hang the interpreter's exit; the exit
                    # handler below runs first and waits for what is queued
                    self._thread = threading.Thread(target=self._drain, name="ctxkit-request-log", daemon=True)
                    self._thread.start()
                    atexit.register(self.close)
                self._jobs.put((job, kwargs))
                return
        self._run(job, kwargs)

    def _drain(self) -> None:
        while (item := self._jobs.get()) is not None:
            self._run(*item)

    def _run(self, job: Callable[..., Any], kwargs: dict) -> None:
        try:
            job(**kwargs)
        except Exception as exc:  # a full disk (or a bug) costs the log a line, never the writer its thread
            self.on_error(f"a request was not logged in the store ({type(exc).__name__}: {exc})")

    def close(self) -> None:
        """Write everything handed over so far, then stop the thread (later jobs run in the caller's)."""
        with self._lock:
            self._closed, thread = True, self._thread
            self._thread = None
        if thread is not None:
            self._jobs.put(None)
            thread.join()
            atexit.unregister(self.close)
