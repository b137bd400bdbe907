"""Budgets: a policy and the model table turned into the token thresholds Claude Code computes."""
from __future__ import annotations

from typing import Any, Literal, NamedTuple

from ..errors import UsageError
from ..policy.model import SESSION_ORIGIN, Policy, Thresholds
from .models import (
    DEFAULT_CONTEXT_WINDOW,
    model_info,
    unknown_model_notice,
)

Level = Literal["ok", "warning", "autocompact", "blocking"]


class Budget(NamedTuple):
    """The token thresholds of one context window, as Claude Code computes them:

    - ``effective_window`` = window − min(max output, summary reserve): room must stay for
      the summary a compaction asks the model to write;
    - ``autocompact_threshold`` = effective − autocompact buffer (estimates run low; a
      compaction must not start at 99%);
    - ``warning_threshold`` = autocompact threshold − warning buffer;
    - ``blocking_limit`` = effective − blocking buffer: past it a request is refused.
    """

    context_window: int
    max_output: int
    effective_window: int
    autocompact_threshold: int
    warning_threshold: int
    blocking_limit: int
    model: str | None = None
    source: str = "model table"  # which setting gave the window: --context-window | policy | session | model table | default
    notice: str | None = None

    @classmethod
    def from_window(
        cls,
        context_window: int,
        max_output: int,
        thresholds: Thresholds | None = None,
        *,
        model: str | None = None,
        source: str = "model table",
        notice: str | None = None,
    ) -> Budget:
        if thresholds is None:
            from ..policy.model import Thresholds as _Thresholds

            thresholds = _Thresholds()
        if context_window <= 0:
            raise ValueError(f"context window must be positive, got {context_window}")
        effective = context_window - min(max_output, thresholds.summary_reserve)
        autocompact = effective - thresholds.autocompact_buffer
        return cls(
            context_window=context_window,
            max_output=max_output,
            effective_window=effective,
            autocompact_threshold=autocompact,
            warning_threshold=autocompact - thresholds.warning_buffer,
            blocking_limit=effective - thresholds.blocking_buffer,
            model=model,
            source=source,
            notice=notice,
        )

    def level(self, tokens: int) -> Level:
        """Where ``tokens`` stands: the highest threshold it has reached (``>=``)."""
        if tokens >= self.blocking_limit:
            return "blocking"
        if tokens >= self.autocompact_threshold:
            return "autocompact"
        if tokens >= self.warning_threshold:
            return "warning"
        return "ok"

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "context_window": self.context_window,
            "context_window_source": self.source,
            "max_output": self.max_output,
            "effective_window": self.effective_window,
            "autocompact_threshold": self.autocompact_threshold,
            "warning_threshold": self.warning_threshold,
            "blocking_limit": self.blocking_limit,
            "notice": self.notice,
        }


def budget_for(policy: Policy, context_window_override: int | None = None) -> Budget:
    """The budget a policy implies. The window comes from ``--context-window``
    (``context_window_override``), else the policy's ``context_window``, else the model
    table, else 200,000 with a notice. The max output is the policy's
    ``max_output_tokens``, capped by the model's own maximum when the table knows it
    (a model cannot reserve more output than it can write)."""
    info = model_info(policy.model)
    notice = None
    if context_window_override is not None:
        window, source = int(context_window_override), "--context-window"
    elif policy.context_window is not None:
        window = int(policy.context_window)
        source = "session" if policy.origins.get("context_window", "").startswith(SESSION_ORIGIN) else "policy"
    elif info is not None:
        window, source = info.context_window, "model table"
    else:
        window, source = DEFAULT_CONTEXT_WINDOW, "default"
        notice = unknown_model_notice(policy.model)
    max_output = policy.max_output_tokens
    if info is not None:
        max_output = min(max_output, info.max_output_tokens)
    return Budget.from_window(window, max_output, policy.thresholds, model=policy.model, source=source,
                              notice=notice)


def require_autocompact_room(budget: Budget, policy: Policy) -> None:
    """Refuse a window so small that the autocompact threshold is not positive: every view would be
    "over the threshold" and compaction would run on every call, forever."""
    if budget.autocompact_threshold > 0:
        return
    window = budget.context_window
    raise UsageError(
        f"the context window ({window:,} tokens, from {budget.source}) is too small: after reserving "
        f"{window - budget.effective_window:,} for output the effective window is {budget.effective_window:,}, "
        f"and the autocompact threshold (effective window - {policy.thresholds.autocompact_buffer:,}) would be "
        f"{budget.autocompact_threshold:,}; use a window above {window - budget.autocompact_threshold:,} or lower "
        "thresholds.summary_reserve / thresholds.autocompact_buffer / max_output_tokens")
