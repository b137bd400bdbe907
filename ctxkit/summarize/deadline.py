"""A time limit for a whole piece of work made of several attempts.

A summarizer retries: with a per-request timeout of 600 s and four retries, a
server that accepts connections and never answers could hold a run for fifty
minutes. A :class:`Deadline` bounds all of it: it starts with the first
request, every attempt's timeout is cut down to what is left, and a wait
between attempts that would end after it is not started at all.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


class Deadline:
    """``total`` seconds from the first :meth:`start` (or the first question asked of it).

    ``total`` None means no limit. ``clock`` is a monotonic clock (tests pass a fake one).
    """

    def __init__(self, total: float | None, *, clock: Callable[[], float] = time.monotonic):
        self.total = None if total is None else float(total)
        self._clock = clock
        self._started: float | None = None

    def start(self) -> None:
        """Start counting, if not started yet (the first request starts it; later calls do nothing)."""
        if self._started is None:
            self._started = self._clock()

    def remaining(self) -> float | None:
        """Seconds left (0 when past), or None without a limit."""
        if self.total is None:
            return None
        self.start()
        return max(0.0, self.total - (self._clock() - self._started))

    def expired(self) -> bool:
        left = self.remaining()
        return left is not None and left <= 0

    def bound(self, seconds: float) -> float:
        """``seconds``, cut down to what is left."""
        left = self.remaining()
        return seconds if left is None else min(seconds, left)

    def allows_wait(self, seconds: float) -> bool:
        """Whether waiting ``seconds`` still leaves time for another attempt."""
        left = self.remaining()
        return left is None or seconds < left


class OutOfTime(Exception):
    """:func:`call_within` stopped waiting: the call did not return in the time given."""


def call_within(seconds: float | None, call: Callable[[], T]) -> T:
    """``call()``'s result (or exception), but stop waiting after ``seconds`` (None: wait as long as it takes).

    Why a thread: an HTTP client's timeouts bound each read, not the whole response, so a server that
    sends one byte every half second holds a call forever. The call runs in a daemon thread (a
    ``concurrent.futures`` pool would be joined at exit, holding the process just the same); on
    :class:`OutOfTime` the caller should close what the call reads from so that the thread ends too.
    """
    if seconds is None:
        return call()
    outcome: list[tuple[bool, Any]] = []
    done = threading.Event()

    def run() -> None:
        try:
            outcome.append((True, call()))
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller's thread as it is
            outcome.append((False, exc))
        finally:
            done.set()

    threading.Thread(target=run, name="ctxkit-deadline-call", daemon=True).start()
    if not done.wait(max(0.0, seconds)):
        raise OutOfTime()
    ok, value = outcome[0]
    if ok:
        return value
    raise value
