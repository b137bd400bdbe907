"""The only place that reads the time, so that tests and ``--now`` can fix it."""
from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import NamedTuple


class Clock(NamedTuple):
    """A clock that is either the system clock or fixed at one instant (``--now``)."""

    fixed: datetime | None = None

    def now(self) -> datetime:
        if self.fixed is not None:
            return self.fixed
        return datetime.now(timezone.utc)


def parse_instant(text: str) -> datetime:
    """Parse an ISO-8601 timestamp as written in transcripts ("2026-11-29T23:06:25.561Z")."""
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value


def names_offset(text: str) -> bool:
    """Whether an ISO instant names its offset (Z or +HH:MM): then it, not TZ, decides the local date."""
    return bool(re.search(r"(Z|[+-]\d\d:?\d\d)$", text.strip()))
