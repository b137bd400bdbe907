"""Building what a command needs from its options: policy, transcript, store, clock, Context."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..clock import Clock, parse_instant
from ..errors import UsageError
from ..policy import load_policy
from ..policy.model import Policy
from ..stages.base import Context, RunInputs
from ..store import Store, default_store_dir
from ..tokens import make_counter
from ..transcript import read_transcript
from ..transcript.model import Transcript


@dataclass
class Run:
    policy: Policy
    transcript: Transcript
    ctx: Context

    def save(self) -> None:
        """Once the output is safely written: save the store's decisions and the token counts."""
        self.ctx.store.flush()
        counter = self.ctx.tokens
        if counter.name != "rough" and not counter.degraded:
            self.ctx.store.save_document(_token_cache_name(self.policy), counter.export_cache())


def _token_cache_name(policy: Policy) -> str:
    """Exact counts depend on the tokenizer: per estimator, and per model for the API's counts."""
    model = re.sub(r"[^A-Za-z0-9._-]", "-", policy.model) if policy.estimator == "anthropic" else ""
    return f"tokens-{policy.estimator}{'-' + model if model else ''}.json"


def parse_now(now: str | None) -> Any:
    if now is None:
        return None
    try:
        return parse_instant(now)
    except ValueError:
        raise UsageError(f"--now must be an ISO-8601 instant like 2026-11-29T23:06:25Z, got {now!r}") from None


def _has_offset(text: str) -> bool:
    """Whether an ISO instant names its offset (Z or +HH:MM): then it, not TZ, decides the local date."""
    return bool(re.search(r"(Z|[+-]\d\d:?\d\d)$", text.strip()))


def make_policy(policy: str | None, sets: list[str] | None, context_window: int | None = None) -> Policy:
    return load_policy(policy, list(sets or []), cwd=Path.cwd())


def open_run(source: str, *, policy: str | None, sets: list[str] | None, fmt: str, on_bad_line: str,
             store: Path | None, now: str | None, context_window: int | None, dry_run: bool = False,
             summarizes: Callable[[Policy], bool] | None = None, **inputs: Any) -> Run:
    """Load the policy first (a bad policy is a usage error even with a bad transcript), then the rest.

    ``summarizes(policy)`` says whether the run may call the summarizer: then a repository policy must be
    trusted for the summarizer settings it sets, or the run stops here (exit 2) before anything is done.
    """
    from .trust_cmd import guard_policy

    pol = make_policy(policy, sets)
    guard_policy(pol, summarizes=summarizes is not None and summarizes(pol))
    instant = parse_now(now)
    t = read_transcript(source, fmt=fmt, on_bad_line=on_bad_line)
    store_dir = store or default_store_dir(source)
    ctx = Context(
        policy=pol,
        tokens=make_counter(pol.estimator, model=pol.model),
        clock=Clock(instant),
        store=Store(store_dir, dry_run=dry_run),
        inputs=RunInputs(now=instant, context_window=context_window, cwd=Path.cwd(),
                         extra={"now_offset": now is not None and _has_offset(now)}, **inputs),
    )
    if ctx.tokens.name != "rough":
        ctx.tokens.import_cache(ctx.store.load_document(_token_cache_name(pol)))
    for problem in ctx.store.check():  # a damaged ledger or state (a dry run only ignores it)
        ctx.warn(problem)
    if t.info.bad_lines.count:
        ctx.warn(f"skipped {t.info.bad_lines.count} unreadable line(s); first: {t.info.bad_lines.first[0]}")
    if ctx.tokens.notice:
        ctx.warn(ctx.tokens.notice)
    return Run(pol, t, ctx)
