"""User data inside messages: quoted, escaped and bounded.

Every message that echoes something a user (or a transcript, or a policy)
wrote goes through :func:`quote`, so that a 1 MB field gives a short error
line, a control character or a terminal escape sequence is shown escaped
instead of acting on the terminal, and every message quotes values the same way.
"""
from __future__ import annotations

import re
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


#: A transcript's string that a message may show as it is: a short word of letters (``"robot"``,
#: ``"tool_reslt"``, ``"USER"``): nothing a secret is made of (no digit, no mix of cases, no symbol).
_PLAIN_WORD = re.compile(r"[A-Za-z][a-z_ -]{0,31}|[A-Z][A-Z_ -]{0,31}")
#: An id a message may show (a tool call's, an entry's): the shapes agents write, or a short name.
_PLAIN_ID = re.compile(r"(?:toolu|srvtoolu|mcptoolu|tooluse|call|fc)_[A-Za-z0-9]{4,64}"
                       r"|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[A-Za-z][A-Za-z_-]{0,11}[0-9]{0,3}")


def describe_content(value: Any) -> str:
    """A value read from a transcript, for a message about it (exit 3, a skipped-line warning, a CI
    annotation): the value itself only when it cannot hold a secret (``null``, ``42``, ``"robot"``), else
    what it is (``a string of 48 characters``, ``an object with 2 keys``). Messages go to terminals and
    CI logs, where a bad line's value (an ``.env`` a tool read, a pasted token) must not be copied.

    >>> describe_content("robot"), describe_content("sk-ant-api03-xyz"), describe_content([1, 2])
    ('"robot"', 'a string of 16 characters', 'a list of 2 items')
    """
    if value is None or isinstance(value, (bool, int, float)):
        return quote_json(value)
    if isinstance(value, str):
        if value == "" or _PLAIN_WORD.fullmatch(value):
            return quote_json(value)
        return f"a string of {_count(len(value), 'character')}"
    if isinstance(value, (list, tuple)):
        return "an empty list" if not value else f"a list of {_count(len(value), 'item')}"
    if isinstance(value, dict):
        return "an empty object" if not value else f"an object with {_count(len(value), 'key')}"
    return f"a {type(value).__name__}"


def quote_id(value: Any, *, as_json: bool = False) -> str:
    """An id read from a transcript (a tool call's, an entry's), quoted (by :func:`quote`, or
    :func:`quote_json`) when it has the shape of one (``'toolu_01Ab...'``, a UUID, ``'t1'``), else
    described like :func:`describe_content`: a field that should hold an id may hold anything."""
    if isinstance(value, str) and _PLAIN_ID.fullmatch(value):
        return quote_json(value) if as_json else quote(value)
    return describe_content(value)


#: The ids :func:`bare_id` shows: :data:`_PLAIN_ID`'s, and agent-prefixed ones with ``_`` and ``-`` after
#: the prefix (``toolu_s-1_0002``, as tools that rewrite ids write them).
_BARE_ID = re.compile(_PLAIN_ID.pattern + r"|(?:toolu|srvtoolu|mcptoolu|tooluse|call|fc)_[A-Za-z0-9][A-Za-z0-9_-]{3,63}")


def bare_id(value: Any) -> str:
    """An id as :func:`quote_id` judges it, shown bare when it has the shape of one (``toolu_01Ab...``, as
    the API's own error text shows it), else described (``a string of 45 characters``): doctor's findings."""
    if isinstance(value, str) and _BARE_ID.fullmatch(value):
        return value
    return describe_content(value)


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"
