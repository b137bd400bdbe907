"""Building the Context of a run: the one builder the library (``ctxkit.make_context``) and the CLI share.

A Context holds the policy's token counter (with the exact counts an earlier
run saved in the store), the clock, the store and the run's inputs, and
starts with the warnings a user should see before anything runs: an unknown
model, a damaged store, unreadable transcript lines, a token counter that
fell back to the rough estimate.
"""
from __future__ import annotations

from typing import Any

from .clock import Clock
from .filenames import file_name_part
from .policy.model import Policy
from .stages.base import Context, RunInputs
from .store.disk import Store
from .tokens import budget_for, make_counter
from .tokens.session import session_policy
from .transcript.model import Transcript


def token_cache_name(policy: Policy) -> str:
    """Exact counts depend on the tokenizer: per estimator, and per model for the API's counts."""
    model = file_name_part(policy.model) if policy.estimator == "anthropic" else ""
    return f"tokens-{policy.estimator}{'-' + model if model else ''}.json"


def model_warnings(policy: Policy, context_window: int | None = None) -> list[str]:
    """The warning for a model the table does not know (the window is then assumed), if any."""
    notice = budget_for(policy, context_window).notice
    return [notice] if notice else []


def build_context(policy: Policy, store: Store, *, now: Any = None, transcript: Transcript | None = None,
                  **inputs: Any) -> Context:
    """The Context of a run of ``policy`` over ``transcript`` (its unreadable lines are warned about)
    with ``store``; ``inputs`` are :class:`~ctxkit.stages.base.RunInputs` fields. The Context's policy
    is ``policy`` as it applies to the transcript's session: its own model, output limit and cache
    lifetime where the policy names none (:func:`ctxkit.tokens.session.session_policy`)."""
    policy = session_policy(policy, transcript)
    ctx = Context(policy=policy, tokens=make_counter(policy.estimator, model=policy.model), clock=Clock(now),
                  store=store, inputs=RunInputs(now=now, **inputs))
    if ctx.tokens.name != "rough":
        ctx.tokens.import_cache(store.load_document(token_cache_name(policy)))
    for warning in model_warnings(policy, ctx.inputs.context_window):
        ctx.warn(warning)
    for problem in store.check():  # a damaged ledger or state (a dry run only ignores it)
        ctx.warn(problem)
    if transcript is not None and transcript.info.bad_lines.count:
        bad = transcript.info.bad_lines
        ctx.warn(f"skipped {bad.count} unreadable line(s); first: {bad.first[0]}")
    if ctx.tokens.notice:
        ctx.warn(ctx.tokens.notice)
    return ctx


def save_token_cache(ctx: Context) -> None:
    """Keep the exact counts of this run in the store for the next one (not the rough ones)."""
    counter = ctx.tokens
    if counter.name != "rough" and not counter.degraded:
        ctx.store.save_document(token_cache_name(ctx.policy), counter.export_cache())
