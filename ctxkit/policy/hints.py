"""Did-you-mean hints: the one place that guesses what a mistyped name meant."""
from __future__ import annotations

import difflib
from typing import Iterable


def did_you_mean(word: object, choices: Iterable[str]) -> str | None:
    """``"did you mean 'x'?"`` for the closest choice, or None when nothing is close."""
    if not isinstance(word, str):
        return None
    matches = difflib.get_close_matches(word, sorted(set(choices)), n=1, cutoff=0.6)
    return f"did you mean '{matches[0]}'?" if matches else None

