"""Building the Context of a run: the one builder the library (``ctxkit.make_context``) and the CLI share.

A Context holds the policy's token counter (with the exact counts an earlier
run saved in the store), the clock, the store and the run's inputs, and
starts with the warnings a user should see before anything runs: an unknown
model, a damaged store, unreadable transcript lines, a token counter that
fell back to the rough estimate.
"""
from __future__ import annotations

import dataclasses
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .clock import Clock, names_offset, parse_instant
from .errors import UsageError
from .filenames import file_name_part
from .policy.model import Policy
from .quoting import quote
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


#: the RunInputs a library caller may give, by kind (the CLI's options are checked by its parser)
_PATH_INPUTS = ("session_memory", "state_file", "queued_file", "plan_file", "cwd")
_FLAG_INPUTS = ("force", "plan_mode")
_TEXT_INPUTS = ("instructions", "transcript_path")


def checked_arguments(policy: Any, store_dir: Any, now: Any, inputs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """``ctxkit.make_context``'s arguments made what the stages expect, or a :class:`UsageError` naming the
    argument: a library caller is not behind the CLI's option parser, and a wrong type found only deep
    inside a stage is a traceback that names neither the argument nor what it should be.

    ``now``: a datetime, or an ISO-8601 string as ``--now`` takes it (``2026-11-30T12:00:00Z``); without an
    offset it is UTC and, as for ``--now``, the local time zone decides the local date. Returns ``now``
    as an aware datetime and the inputs (paths as :class:`~pathlib.Path`, ``snip_ids`` a tuple)."""
    if not isinstance(policy, Policy):
        raise UsageError(f"make_context: policy must be a Policy (from ctxkit.load_policy), got {type(policy).__name__}")
    if not isinstance(store_dir, (str, os.PathLike)):
        raise UsageError(f"make_context: store_dir must be a path, got {type(store_dir).__name__}")
    known = {f.name for f in dataclasses.fields(RunInputs)} - {"now"}
    unknown = sorted(set(inputs) - known)
    if unknown:
        raise UsageError(f"make_context: unknown input {quote(unknown[0])} (known: {', '.join(sorted(known))})")
    checked = dict(inputs)
    if isinstance(now, str):
        try:
            instant = parse_instant(now)
        except ValueError:
            raise UsageError(f"make_context: now must be an ISO-8601 instant like 2026-11-29T23:06:25Z, "
                             f"got {quote(now)}") from None
        checked.setdefault("now_has_offset", names_offset(now))
        now = instant
    elif isinstance(now, datetime):
        if now.tzinfo is None:  # as a string without an offset: UTC, and the local date is TZ's
            now = now.replace(tzinfo=timezone.utc)
            checked.setdefault("now_has_offset", False)
    elif now is not None:
        raise UsageError(f"make_context: now must be a datetime or an ISO-8601 string, got {type(now).__name__}")
    for name, value in inputs.items():
        if name in _PATH_INPUTS and value is not None:
            if not isinstance(value, (str, os.PathLike)):
                raise UsageError(f"make_context: {name} must be a path, got {type(value).__name__}")
            checked[name] = Path(value)
        elif name in _FLAG_INPUTS and value is not None and not isinstance(value, bool):
            raise UsageError(f"make_context: {name} must be True or False, got {type(value).__name__}")
        elif name in _TEXT_INPUTS and value is not None and not isinstance(value, str):
            raise UsageError(f"make_context: {name} must be a string, got {type(value).__name__}")
        elif name == "context_window" and value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise UsageError(f"make_context: context_window must be a positive number of tokens, got {value!r}")
        elif name == "snip_ids":
            if isinstance(value, str) or not all(isinstance(i, str) for i in value or ()):
                raise UsageError("make_context: snip_ids must be a sequence of message ids (strings), "
                                 f"got {value!r}")
            checked[name] = tuple(value or ())
    return now, checked


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
