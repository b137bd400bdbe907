"""Carrying a projection over to a transcript that grew by whole lines, for the formats whose view is a
fold over their lines in order (Codex rollouts, Gemini CLI recordings).

``ctxkit simulate`` reads a session again before each of its requests: the previous read plus the
lines written since (a policy's step: the previous step's output plus those lines). Projecting the
whole prefix again at each request made the replay's time grow with the square of the session. A
format whose projection folds its lines one after the other keeps the fold's state with the view
(:func:`keep`); a read resumed from that transcript (:class:`ctxkit.transcript.reader.Resume`) hands
the state on (:func:`carry`), and the projection of the longer transcript feeds only the new lines to
it (:func:`take`). The format decides which new lines it can fold on (an appended item, an answer)
and which it cannot (one that rewrites the history so far: a compaction, a rollback, a rewind): then
it projects the whole transcript, as without a carried state. Either way the view is the one a fresh
projection gives (``tests/test_carried_view.py`` checks it at every request).

The state is handed on, not copied: the longer transcript's projection takes it over and goes on
changing it, so a state serves one growth only (:class:`Fold` refuses a second).
"""
from __future__ import annotations

from typing import Any

from .model import Transcript
from .view import View

#: ``Transcript.memo`` key: the :class:`Fold` state the projection of this transcript ended with
FOLD = "projection-fold"
#: ``Transcript.memo`` key: (the entries of the transcript this one grew from, that one's :class:`Fold`)
GROWN_PREFIX = "grown-prefix"


class Fold:
    """A projection's state after folding the first ``n`` entries of a transcript (a format subclasses it
    with what its fold needs). ``taken``: handed on to a longer transcript's projection already."""

    n: int = 0
    taken: bool = False

    def grow(self, t: Transcript) -> bool:
        """Fold ``t``'s entries after the first ``n`` (all of them, for a new state); False, nothing folded,
        when the new entries do more than this fold can go on with."""
        raise NotImplementedError

    def view(self) -> View:
        """The view of the entries folded."""
        raise NotImplementedError


def project(t: Transcript, kind: type[Fold]) -> View:
    """The view of ``t`` by a format's fold: going on from the state of the transcript ``t`` grew from
    when there is one and the new entries allow it, else folding every entry afresh."""
    fold = take(t, kind)
    if fold is None or not fold.grow(t):
        fold = kind()
        fold.grow(t)
    keep(t, fold)
    return fold.view()


def carry(t: Transcript, earlier: Transcript) -> None:
    """Tell ``t``'s projection that its first entries are ``earlier``'s, as read from the same bytes (a file
    that grew by whole lines, or a run's output with lines added): it may go on from ``earlier``'s fold.
    Nothing is kept of ``earlier`` but that state."""
    fold = earlier.memo.get(FOLD)
    if (fold is None or fold.taken or fold.n != earlier.n_entries or t.format != earlier.format
            or earlier.removed or t.overrides or t.appended or t.removed or t.n_entries < earlier.n_entries):
        return
    t.memo[GROWN_PREFIX] = fold


def take(t: Transcript, kind: type[Fold]) -> Any:
    """The fold state ``t`` may go on from (of the format's ``kind``, handed over: never given again), or
    None when ``t`` did not grow from a projected transcript."""
    fold = t.memo.pop(GROWN_PREFIX, None)
    if not isinstance(fold, kind) or fold.taken:
        return None
    fold.taken = True
    return fold


def keep(t: Transcript, fold: Fold) -> None:
    """Keep the state ``t``'s projection ended with, for a longer transcript to go on from."""
    fold.taken = False
    t.memo[FOLD] = fold
