"""The Messages API's rules and limits, and what an agent's resume trips on: one table (``api_rules.json``).

``ctxkit doctor`` (:mod:`ctxkit.reports.doctor`) reads every row: a rule names a problem the code finds
(an unanswered tool_use, an empty text block...); a limit names a quantity the code measures
(:data:`MEASURES`) and its bound, so a new limit on a known quantity is a row of the table, not code.
The API's own error texts are kept with each row (docs/doctor.md cites where each was seen).
"""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: What a limit row's ``measure`` may name, and what it counts; the doctor report measures each.
MEASURES = {
    "base64_bytes": "length of a block's base64 data, in bytes",
    "max_side": "an image's larger side in pixels (read from its PNG, JPEG, GIF or WebP header)",
    "pdf_pages": "a PDF document's number of pages",
    "images_in_request": "the images in the whole request (the view)",
    "signature_chars": "length of a thinking block's signature",
}


@dataclass(frozen=True)
class Rule:
    """One row: a problem (``severity`` error: the next request or the resume fails; note: reported only)."""

    id: str
    severity: str
    problem: str
    api_error: str
    fix: str
    source: str
    block: str | None = None  # limits: the block type measured
    measure: str | None = None
    max: int | None = None
    min: int | None = None
    when: dict | None = None  # limits: applies only when another measure is over a bound
    once: bool = False  # limits on a whole-request measure: one finding, not one per block

    def render(self, field: str, **values: Any) -> str:
        """``problem``, ``api_error`` or ``fix`` with its placeholders filled in (unknown ones left as written)."""
        text = getattr(self, field)
        return text.format_map(_Leave({"max": self.max, "min": self.min, **values}))

    def exceeded(self, value: int) -> bool:
        return (self.max is not None and value > self.max) or (self.min is not None and value < self.min)


class _Leave(dict):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


@functools.lru_cache(maxsize=1)
def _table() -> dict[str, Any]:
    with (Path(__file__).parent / "api_rules.json").open("rb") as f:
        return json.load(f)


def _rule(row: dict[str, Any]) -> Rule:
    return Rule(**{k: v for k, v in row.items() if k in Rule.__dataclass_fields__})


@functools.lru_cache(maxsize=1)
def rules() -> dict[str, Rule]:
    """Every rule row, by id."""
    return {row["id"]: _rule(row) for row in _table()["rules"]}


@functools.lru_cache(maxsize=1)
def limits() -> tuple[Rule, ...]:
    """Every limit row, in table order. A row whose measure ctxkit does not know is a bug in the table
    (tests/test_doctor.py checks every row)."""
    return tuple(_rule(row) for row in _table()["limits"])


def rule(rule_id: str) -> Rule:
    """The row ``rule_id``, a rule or a limit."""
    found = rules().get(rule_id)
    return found if found is not None else next(lim for lim in limits() if lim.id == rule_id)
