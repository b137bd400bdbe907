"""What one :meth:`ContextManager.prepare` call did: the counts and each stage's report, as ``compact --report json``."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..stages.base import Report


@dataclass
class CallReport:
    """``ran``: whether the pipeline ran (False when the messages were the same as last time: the last
    answer was given again). ``tokens_before``/``tokens_after``: the count of what the stages were
    given (the last output plus the new messages) and of what was returned. ``new_messages``: how many
    of the given messages the call had not seen; ``messages``: how many it was given."""

    ran: bool
    messages: int
    new_messages: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    stages: list[Report] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: whether the stages ran on the tail of the conversation only (no threshold crossed: ctxkit.live.incremental)
    incremental: bool = False

    @classmethod
    def nothing(cls, messages: int) -> CallReport:
        return cls(ran=False, messages=messages)

    @classmethod
    def of(cls, result: Any, *, new_messages: int, given: int, incremental: bool = False) -> CallReport:
        return cls(ran=True, messages=given, new_messages=new_messages, tokens_before=result.tokens_before,
                   tokens_after=result.tokens_after, stages=list(result.reports), warnings=list(result.warnings),
                   incremental=incremental)

    def applied(self) -> list[str]:
        """The ids of the stages that changed something in this call."""
        return [r.stage_id for r in self.stages if r.action == "applied"]

    def to_json(self) -> dict[str, Any]:
        return {"ran": self.ran, "messages": self.messages, "new_messages": self.new_messages,
                "tokens_before": self.tokens_before, "tokens_after": self.tokens_after,
                "stages": [r.to_json() for r in self.stages], "warnings": self.warnings,
                "incremental": self.incremental}
