"""``ContextManager``: the policy's pipeline kept across the calls of an agent's loop.

An agent calls :meth:`ContextManager.prepare` before each model call with its whole message list
(growing by the turns since the last call) and sends what comes back. Each call is a ``ctxkit compact``
run on the manager's own last output plus the messages that are new since the last call: exactly what
keeps decisions frozen across compact runs (a persisted tool result stays persisted with the same
preview, a cleared one stays cleared, a summary stays the summary), so the prefix of what is sent stays
byte-identical and the provider's prompt cache warm, until a threshold is crossed. The same store
(ledger, blobs, checkpoints of state) is behind it, so ``restore`` (and ``ctxkit expand``) gives every
original back, and a new manager on the same store continues where the last process stopped
(:mod:`ctxkit.live.state`).
"""
from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..policy.model import Policy
from ..store.disk import Store
from .messages import SOURCE_NAME, checked_list, detect_format, line_of, parse_lines
from .report import CallReport
from .state import LiveState, load_state, save_state, state_key
from .usage import usage_tokens


class ContextManager:
    """The messages to send next, managed by a policy, for an agent that holds its history in memory.

    ``policy``: a built-in name or a policy file (as ``--policy`` takes it, over the user's and the
    repository's layers, like :func:`ctxkit.load_policy`), or a :class:`~ctxkit.policy.Policy`.
    ``store``: the store folder (created on first use). ``model`` and ``context_window`` override the
    policy's. ``now``: a fixed clock (a datetime or an ISO-8601 string) for reproducible runs; None
    reads the clock at each call.
    """

    def __init__(self, policy: str | Path | Policy | None = "default", store: str | Path = ".ctxkit",
                 model: str | None = None, context_window: int | None = None, now: Any = None):
        from .. import load_policy
        from ..pipeline import compile_pipeline
        from ..policy.trust import require_trusted_estimator
        from ..run_context import checked_arguments

        if model is not None and not isinstance(model, str):
            raise UsageError(f"ContextManager: model must be a model name, got {type(model).__name__}")
        if isinstance(policy, Policy):
            self.policy = dataclasses.replace(policy, model=model) if model is not None else policy
        elif policy is None or isinstance(policy, (str, Path)):
            self.policy = load_policy(None if policy is None else str(policy),
                                      sets=[f"model={model}"] if model is not None else ())
        else:
            raise UsageError(f"ContextManager: policy must be a policy name, a file or a Policy, "
                             f"got {type(policy).__name__}")
        now, self._inputs = checked_arguments(self.policy, store, now, {"context_window": context_window})
        self._now = now
        require_trusted_estimator(self.policy)
        self.store_dir = Path(store)
        self._store = Store(self.store_dir)
        self._pipeline = compile_pipeline(self.policy)
        self._state: LiveState | None = None
        self._lock = threading.Lock()
        #: what the last call did (:class:`CallReport`); None before the first
        self.reports: CallReport | None = None

    # -- the API -----------------------------------------------------------------------------------
    def prepare(self, messages: Sequence[dict], *, system: Any = None, tools: Any = None) -> list[dict]:
        """The messages to send next, in the shape given (Anthropic Messages or OpenAI chat dicts).

        ``messages`` is the whole conversation so far; it is never changed. ``system`` and ``tools``
        (what the request will carry besides the messages) are counted as its overhead until a usage is
        recorded (:meth:`record_usage`)."""
        checked_list(messages, "prepare")
        with self._lock:
            return self._prepare(messages, system, tools)

    async def aprepare(self, messages: Sequence[dict], *, system: Any = None, tools: Any = None) -> list[dict]:
        """:meth:`prepare` for an asyncio loop: the run (and a summarizer call when the policy's
        autocompact fires) happens in a worker thread, so the loop goes on serving meanwhile."""
        checked_list(messages, "aprepare")
        return await asyncio.to_thread(self.prepare, messages, system=system, tools=tools)

    def record_usage(self, usage: Any) -> None:
        """The usage the API reported for the response to what :meth:`prepare` returned last (the
        response's ``usage``: an Anthropic or OpenAI usage object or dict). From then on the count of
        that request is what the API said, and what follows it is estimated, as for a transcript that
        carries usage."""
        input_side, _ = usage_tokens(usage)
        with self._lock:
            if self._state is None or self._state.sent_estimate is None:
                raise UsageError("record_usage: no prepare call yet (record the usage of the response to what "
                                 "prepare returned)")
            # the system prompt, the tool definitions and the estimator's error: what the API counted
            # beyond the estimate of the messages sent
            self._state.overhead = max(0, input_side - self._state.sent_estimate)
            save_state(self._store, self._state)

    def restore(self, messages: Sequence[dict]) -> list[dict]:
        """``messages`` with every original a stage replaced put back from the store (what ``ctxkit
        expand`` does to a file): persisted and cleared tool results, archived messages."""
        from ..stages.registry import undo_steps
        from ..store.expand import expand_all
        from ..transcript.reader import read_bytes

        checked_list(messages, "restore")
        if not messages:
            return []
        lines = [line_of(m, i, "restore") for i, m in enumerate(messages)]
        t = read_bytes(b"\n".join(lines) + b"\n", name=SOURCE_NAME, fmt=detect_format(messages), check_pairing=False)
        with self._lock:
            back, _ = expand_all(t, self._store, undo=undo_steps())
        return parse_lines(_written_lines(back))

    # -- one call ------------------------------------------------------------------------------------
    def _prepare(self, messages: Sequence[dict], system: Any, tools: Any) -> list[dict]:
        if not messages:
            self.reports = CallReport.nothing(0)
            return []
        fmt = detect_format(messages)
        given = [line_of(m, i, "prepare") for i, m in enumerate(messages)]
        state = self._continued(given, fmt)
        if state is not None and state.n_seen() == len(given):
            self.reports = CallReport.nothing(len(given))  # nothing new: the same messages as last time
            return parse_lines(state.out)
        if state is not None:
            working, new = state.out + given[state.n_seen():], len(given) - state.n_seen()
        else:
            working, new = given, len(given)
            state = LiveState(key=state_key(given[0]), fmt=fmt)
        out, result, sent_estimate = self._run(working, fmt, state, system, tools)
        state.seen, state.seen_digests, state.out, state.sent_estimate = given, None, out, sent_estimate
        self._state = state
        save_state(self._store, state)
        self.reports = CallReport.of(result, new_messages=new, given=len(given))
        return parse_lines(out)

    def _continued(self, given: list[bytes], fmt: str) -> LiveState | None:
        """The state this call continues: the one in memory, or the store's for this conversation, when
        the messages start with every message it has seen (or with what it last returned: a caller that
        keeps the managed list); else None (a new conversation, or one whose history was changed)."""
        candidates = [self._state] if self._state is not None else []
        if self._state is None or self._state.key != state_key(given[0]):
            stored = load_state(self._store, state_key(given[0]))
            if stored is not None:
                candidates.append(stored)
        for state in candidates:
            if state.fmt != fmt:
                continue
            if state.starts(given):
                return state
            if state.out and len(state.out) <= len(given) and given[:len(state.out)] == state.out:
                return dataclasses.replace(state, seen=state.out, seen_digests=None)
        return None

    def _run(self, working: list[bytes], fmt: str, state: LiveState, system: Any, tools: Any):
        from ..run_context import build_context, save_token_cache
        from ..tokens.view_count import count_view
        from ..transcript.reader import read_bytes

        t = read_bytes(b"\n".join(working) + b"\n", name=SOURCE_NAME, fmt=fmt)
        policy = self.policy
        overhead = state.overhead
        if overhead is None and (system is not None or tools is not None):
            overhead = _estimate_overhead(policy, system, tools)
        if overhead is not None:
            policy = dataclasses.replace(policy, overhead_tokens=overhead)
        ctx = build_context(policy, self._store, now=self._now, transcript=t, **self._inputs)
        result = self._pipeline.run(t, ctx)
        self._store.flush()
        save_token_cache(ctx)
        out = _written_lines(result.transcript)
        sent_estimate = count_view(result.transcript, ctx.tokens, 0, None).total
        return out, result, sent_estimate


def _written_lines(t) -> list[bytes]:
    import io

    buf = io.BytesIO()
    t.write(buf)
    return buf.getvalue().split(b"\n")[:-1]


def _estimate_overhead(policy: Policy, system: Any, tools: Any) -> int:
    """The estimator's count of the system prompt and the tool definitions a request carries."""
    import orjson

    from ..tokens import make_counter

    counter = make_counter(policy.estimator, model=policy.model)
    total = 0
    for part in (system, tools):
        if part is None:
            continue
        text = part if isinstance(part, str) else orjson.dumps(part, default=str).decode()
        total += counter.count_text(text)
    return total
