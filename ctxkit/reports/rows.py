"""The rows of ``ctxkit simulate`` and ``ctxkit report``: one policy (or baseline) over one session, request
by request, and the JSON every row prints (the same keys for ``recorded``, ``replayed``, ``none`` and
each policy)."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .pricing import Usage
from .replay import Step

ROW_KEYS = ("policy", "requests", "peak_context", "compactions", "input_tokens", "cache_creation_input_tokens",
            "cache_read_input_tokens", "output_tokens", "cost_usd", "retention", "failures")


@dataclass
class Request:
    """One request of a row: when, by which model, its prompt size, usage and cost."""

    timestamp: datetime | None
    model: str
    context: int
    usage: Usage
    cost: float
    kind: str = "main"  # "main" | "summarizer" | "subagent"
    failed: bool = False
    unrecorded: bool = False  # a request the model adds that the session's files hold no usage for


@dataclass
class Row:
    """A policy (or baseline) over one session: its requests, compactions and, for policies, the last step."""

    policy: str
    window: int | None = None
    thresholds: dict[str, int] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    compactions: list[dict[str, Any]] = field(default_factory=list)  # {"request", "tokens_before", "tokens_after"}
    retention: list[Any] = field(default_factory=list)
    final: Step | None = None
    breakdown: dict[str, Any] = field(default_factory=dict)  # the last view's tokens by_tool and by_kind
    removed: list[dict[str, Any]] = field(default_factory=list)  # what the stages took out (ctxkit.reports.removed)
    #: ``replayed``: the cache events its conversations met (ctxkit.reports.cache_events), by kind
    cache_events: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        u = [r.usage for r in self.requests]
        return {
            "policy": self.policy,
            "requests": len(self.requests),
            "peak_context": max((r.context for r in self.requests), default=0),
            "compactions": len(self.compactions),
            "input_tokens": sum(x.input_tokens for x in u),
            "cache_creation_input_tokens": sum(x.cache_creation_input_tokens for x in u),
            "cache_read_input_tokens": sum(x.cache_read_input_tokens for x in u),
            "output_tokens": sum(x.output_tokens for x in u),
            "cost_usd": round(sum(r.cost for r in self.requests), 6),
            "retention": list(self.retention),
            "failures": sum(1 for r in self.requests if r.failed),
        }


def sum_rows(name: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Rows of several sessions added up (the peak is the highest; retention lists are joined)."""
    out: dict[str, Any] = {"policy": name}
    for key in ROW_KEYS[1:]:
        if key == "peak_context":
            out[key] = max((r[key] for r in rows), default=0)
        elif key == "retention":
            out[key] = [x for r in rows for x in r[key]]
        elif key == "cost_usd":
            out[key] = round(sum(r[key] for r in rows), 6)
        else:
            out[key] = sum(r[key] for r in rows)
    return out
