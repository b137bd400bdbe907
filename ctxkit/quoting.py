"""User data inside messages: quoted, escaped and bounded.

Every message that echoes something a user (or a transcript, or a policy)
wrote goes through :func:`quote`, so that a 1 MB field gives a short error
line, a control character or a terminal escape sequence is shown escaped
instead of acting on the terminal, and every message quotes values the same way.
"""
from __future__ import annotations

import reprlib
from typing import Any

#: How many characters of a value a message shows.
QUOTE_LIMIT = 200

_REPR = reprlib.Repr()
_REPR.maxlevel = 2
_REPR.maxdict = _REPR.maxlist = _REPR.maxtuple = _REPR.maxset = 6
_REPR.maxstring = _REPR.maxother = QUOTE_LIMIT


def quote(value: Any, limit: int = QUOTE_LIMIT) -> str:
    """``value`` as a message shows it: a string in quotes with its control characters escaped
    (Python's ``repr``), cut to about ``limit`` characters with the full length said; other values by
    their (shortened) ``repr``.

    >>> quote("abc")
    "'abc'"
    >>> quote("x" * 1000, limit=45)
    "'xxxxx'... (1,000 characters)"
    """
    if isinstance(value, str):
        if len(value) <= limit:
            return repr(value)
        # the cut leaves room for the length, so the whole quote stays within about ``limit``
        return f"{value[:max(1, limit - 40)]!r}... ({len(value):,} characters)"
    text = _REPR.repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def clip(text: str, limit: int = 2 * QUOTE_LIMIT) -> str:
    """A message that may hold user data (an exception's text) cut after ``limit`` characters."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


def quote_json(value: Any, limit: int = QUOTE_LIMIT) -> str:
    """``value`` as JSON (``null``, ``true``, ``"text"``), bounded like :func:`quote`: for messages
    about a transcript's fields, which users read as the JSON they wrote.

    >>> quote_json(None)
    'null'
    """
    import orjson

    try:
        text = orjson.dumps(value).decode()
    except TypeError:
        text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:max(1, limit - 40)]}... ({len(text):,} characters)"
