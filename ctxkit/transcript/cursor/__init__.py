"""Cursor agent transcripts: one ``{role, message: {content}}`` a line (:mod:`.projection`).

They have no room for ctxkit's records: a compaction saves the lines it summarizes to the store and
puts the summary in their place, and ``expand`` puts them back, byte for byte.
"""
from __future__ import annotations

from ..interface import Format
from .projection import NAME, check, index_line, looks_like, project

_NO_RESULTS = ("a Cursor transcript records no tool result (its tool calls have neither an id nor an output): "
               "there is nothing to replace")
FORMAT = Format(NAME, looks_like, index_line, project, ("message", "content"), True, check=check,
                stages=frozenset({"autocompact"}),
                skip_reasons={"tool-result-budget": _NO_RESULTS, "microcompact": _NO_RESULTS,
                              "snip": "a Cursor transcript has no room for a record of a snip: the turns could "
                                      "only be deleted, and ctxkit expand could not put them back"})

__all__ = ["FORMAT", "NAME"]
