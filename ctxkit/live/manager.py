"""``ContextManager``: the policy's pipeline kept across the calls of an agent's loop.

An agent calls :meth:`ContextManager.prepare` before each model call with its whole message list
(grown by the turns since the last call) and sends what comes back. Each call is a ``ctxkit compact``
run on the manager's own last answer plus the messages that are new since the last call: exactly what
keeps decisions frozen across compact runs (a persisted tool result stays persisted with the same
preview, a summary stays the summary), so the prefix of what is sent stays byte-identical, and the
provider's prompt cache warm, until a threshold is crossed. The store behind it is compact's (ledger,
blobs), so ``restore`` (and ``ctxkit expand``) gives every original back; the manager's own state is
kept there too (:mod:`ctxkit.live.state`), so a new manager on the same store goes on where the last
process stopped. A call that crosses no threshold runs the stages on the tail of the conversation only
(:mod:`ctxkit.live.incremental`): it costs what its new messages cost.
"""
from __future__ import annotations

import asyncio
import dataclasses
import threading
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from ..errors import TranscriptError, UsageError
from ..policy.model import Policy
from ..store.disk import Store
from . import state as journal
from .incremental import LiveContext, autocompact_threshold, can_run_incrementally, tail_run, written_lines
from .messages import DETECT_WINDOW, SOURCE_NAME, checked_list, detect_format, line_of
from .report import CallReport
from .state import LiveState, digest, state_key, state_keys
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
        from ..run_context import build_context, checked_arguments

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
        try:
            now, inputs = checked_arguments(self.policy, store, now, {"context_window": context_window})
        except UsageError as exc:  # named as the caller wrote it
            raise UsageError(str(exc).replace("make_context: store_dir", "ContextManager: store", 1)
                             .replace("make_context:", "ContextManager:", 1)) from None
        require_trusted_estimator(self.policy)
        self.store_dir = Path(store).absolute()  # where it is now: the agent may change its working folder later
        self._store = Store(self.store_dir)
        self._pipeline = compile_pipeline(self.policy)
        # what every call's Context starts from: the counter (and its cache), the clock, the warnings
        self._base = build_context(self.policy, self._store, now=now, **inputs)
        self._threshold = autocompact_threshold(self._base.policy, context_window)
        self._incremental = can_run_incrementally(self.policy, self._base.tokens)
        self._state: LiveState | None = None
        self._lock = threading.Lock()
        self._closer = weakref.finalize(self, self._store.flush)
        #: what the last call did (:class:`~ctxkit.live.CallReport`); None before the first
        self.reports: CallReport | None = None

    # -- the API -----------------------------------------------------------------------------------
    def prepare(self, messages: Sequence[dict], *, system: Any = None, tools: Any = None) -> list[dict]:
        """The messages to send next, in the shape given (Anthropic Messages or OpenAI chat dicts).

        ``messages`` is the whole conversation so far; it is never changed. What comes back shares
        dicts with earlier answers: read them, copy one before changing it. ``system`` and ``tools``
        (what the request carries besides the messages) are counted as its overhead until a usage is
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
        response's ``usage``: an Anthropic or OpenAI usage object or dict). From then on the request's
        count is what the API said, and what follows it is estimated, as for a transcript that carries
        usage: the difference between what the API counted and the estimate of the messages sent
        (the system prompt, the tool definitions, the estimator's error) is counted with every later
        request."""
        input_side, _ = usage_tokens(usage)
        with self._lock:
            state = self._state
            if state is None or not state.out:
                raise UsageError("record_usage: no prepare call yet (record the usage of the response to what "
                                 "prepare returned)")
            state.overhead = max(0, input_side - state.sent_estimate)
            journal.append(self._store, state, [], len(state.out), [])

    def restore(self, messages: Sequence[dict]) -> list[dict]:
        """``messages`` with every original a stage replaced put back from the store (what ``ctxkit
        expand`` does to a file): persisted and cleared tool results, compacted history."""
        from ..stages.registry import undo_steps
        from ..store.expand import expand_all

        checked_list(messages, "restore")
        if not messages:
            return []
        lines = [line_of(m, i, "restore") for i, m in enumerate(messages)]
        with self._lock:
            t = self._read(lines, detect_format(messages, "restore"), check_pairing=False)
            back, _ = expand_all(t, self._store, undo=undo_steps())
        return [orjson.loads(line) for line in written_lines(back)]

    def close(self) -> None:
        """Write what the store still holds in memory (the decisions of calls that changed nothing).
        Also done when the manager is garbage-collected or the interpreter exits; ``with
        ContextManager(...) as cm:`` closes it at the end of the block."""
        with self._lock:
            self._store.flush()

    def __enter__(self) -> ContextManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- one call ------------------------------------------------------------------------------------
    def _prepare(self, messages: Sequence[dict], system: Any, tools: Any) -> list[dict]:
        if not messages:
            self.reports = CallReport.nothing(0)
            return []
        state = self._continued(messages)
        # the format as the first messages show it: known already when the manager has seen them all
        fmt = state.fmt if state is not None and len(state.seen) >= DETECT_WINDOW else detect_format(messages)
        if state is not None and state.fmt != fmt:
            state = None
        if state is not None and len(state.seen) == len(messages):
            self.reports = CallReport.nothing(len(messages))  # the same messages as last time: the same answer
            state.refs = list(messages)
            self._state = state
            return list(state.out_msgs)
        start = len(state.seen) if state is not None else 0
        new = [line_of(messages[i], i, "prepare") for i in range(start, len(messages))]
        if state is None:
            state = LiveState(key=state_key(new[:2]), fmt=fmt)
        ctx = self._context(state, system, tools)
        done = None
        if self._incremental and state.out:
            done = tail_run(self._pipeline, self._threshold, lambda lines: self._read(lines, fmt), ctx,
                            state.out, state.out_msgs, new, state.sent_estimate)
        if done is not None:
            added, result, estimate = done
            keep = len(state.out)
            state.out.extend(added)
            state.out_msgs.extend(orjson.loads(line) for line in added)
        else:
            ctx = self._context(state, system, tools)  # afresh: nothing of the tail run's counts
            try:
                t = self._read(state.out + new, fmt)
            except TranscriptError as exc:
                raise _named(exc, len(state.out), start) from None
            result = self._pipeline.run(t, ctx)
            keep, added = 0, written_lines(result.transcript)
            state.out, state.out_msgs = added, [orjson.loads(line) for line in added]
            estimate = ctx.view_tokens(result.transcript).estimated
        if done is None or any(r.action == "applied" for r in result.reports):
            self._store.flush()  # what the answer names (a persisted output's blob and record) is durable first
        # else the call only froze what it sent in full ("seen" records): they are kept with the next flush
        # (at the latest when the manager is closed or the interpreter exits); lost in a crash, the same
        # decisions are made again from the same messages
        # what a run keeps by identity (the views it counted, the fingerprints it took) is this run's only
        self._base.tokens.forget_views()
        self._store.digests.clear()
        new_seen = [digest(line) for line in new]
        state.seen.extend(new_seen)
        state.refs = list(messages)
        state.sent_estimate = estimate
        self._state = state
        if keep and not state.rewrite:
            journal.append(self._store, state, new_seen, keep, added)
        else:
            journal.rewrite(self._store, state)
            state.rewrite = False
        self.reports = CallReport.of(result, new_messages=len(new), given=len(messages),
                                     incremental=done is not None)
        return list(state.out_msgs)

    def _continued(self, messages: Sequence[dict]) -> LiveState | None:
        """The state this call goes on from: the one in memory, or the store's for this conversation,
        when the messages start with every message it has seen (or with what it last answered: a caller
        that keeps the managed list); else None (a new conversation, or one whose history changed)."""
        state = self._state
        if state is not None:
            if state.starts(messages):
                return state
            n = len(state.out_msgs)
            if n <= len(messages) and messages[:n] == state.out_msgs:
                return dataclasses.replace(state, refs=list(messages[:n]), seen=[digest(x) for x in state.out],
                                           out=list(state.out), out_msgs=list(state.out_msgs), rewrite=True)
        first = [line_of(m, i, "prepare") for i, m in enumerate(messages[:2])]
        for key in state_keys(first):
            stored = journal.load(self._store, key)
            if stored is not None and stored.starts(messages):
                return stored
        return None

    def _context(self, state: LiveState, system: Any, tools: Any) -> LiveContext:
        """A fresh Context for one call (the counter, its cache and the store are shared)."""
        from ..clock import Clock

        base = self._base
        policy = base.policy
        overhead = state.overhead
        if overhead is None and (system is not None or tools is not None):
            overhead = _estimate_overhead(base.tokens, system, tools)
        if overhead is not None:
            policy = dataclasses.replace(policy, overhead_tokens=overhead)
        return LiveContext(policy=policy, tokens=base.tokens, clock=Clock(base.inputs.now), store=self._store,
                           inputs=base.inputs, warnings=list(base.warnings))

    def _read(self, lines: list[bytes], fmt: str, *, check_pairing: bool = True):
        from ..transcript.reader import read_bytes

        return read_bytes(b"\n".join(lines) + b"\n", name=SOURCE_NAME, fmt=fmt, check_pairing=check_pairing)


def _named(exc: TranscriptError, ours: int, start: int) -> TranscriptError:
    """A bad line of a call's transcript, named by the caller's message number (1-based)."""
    line = exc.line - ours + start if exc.line > ours else exc.line
    text = str(exc).split(": ", 1)[-1].split(" (use --on-bad-line")[0]
    return TranscriptError(SOURCE_NAME, line, text)


def _estimate_overhead(counter, system: Any, tools: Any) -> int:
    """The estimator's count of the system prompt and the tool definitions a request carries."""
    total = 0
    for part in (system, tools):
        if part is not None:
            total += counter.count_text(part if isinstance(part, str) else orjson.dumps(part, default=str).decode())
    return total
