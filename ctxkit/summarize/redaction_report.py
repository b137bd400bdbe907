"""What a run redacted, as its report says it: apart from the redactor, so that a run that sent
nothing to a summarizer reports it without loading the secret rules (:mod:`ctxkit.summarize.redact`)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def redaction_summary(ctx: Any) -> dict[str, Any]:
    """What the run redacted, for its report (no redactor yet: nothing went to a summarizer)."""
    redactor = getattr(ctx, "redactor", None)
    if redactor is not None:
        return redactor.summary()
    return {"enabled": bool(ctx.policy.redact.enabled), "secrets": 0, "kinds": {}}


def describe(summary: Mapping[str, Any]) -> str | None:
    """One line for the text report, or None when nothing was redacted:
    ``redacted 3 secrets (aws-access-key 1, github-token 2) from what went to the summarizer and the summary``."""
    n = int(summary.get("secrets") or 0)
    if not n:
        return None
    kinds = ", ".join(f"{kind} {count}" for kind, count in (summary.get("kinds") or {}).items())
    return (f"redacted {n} secret{'s' if n != 1 else ''} ({kinds}) from what went to the summarizer and the "
            "summaries written")
