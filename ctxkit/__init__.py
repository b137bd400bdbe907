"""ctxkit: declarative, policy-driven context management for LLM agent sessions.

Embedding it in an agent framework::

    from ctxkit import load_policy, compile_pipeline, read_transcript, make_context

    policy = load_policy("no-llm")
    transcript = read_transcript("session.jsonl")
    result = compile_pipeline(policy).run(transcript, make_context(policy, store_dir=".ctxkit"))
    with open("compacted.jsonl", "wb") as out:
        result.transcript.write(out)
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from .pipeline import compile_pipeline
from .policy import load_policy
from .transcript import read_transcript

__version__ = "0.1.0"


def make_context(policy, *, store_dir: str | Path = ".ctxkit", now: Any = None, **inputs: Any):
    """A stage Context with the policy's token estimator, a clock (fixed at ``now`` if given) and a store."""
    from .clock import Clock
    from .stages.base import Context, RunInputs
    from .store.disk import Store
    from .tokens import make_counter

    return Context(policy=policy, tokens=make_counter(policy.estimator, model=policy.model), clock=Clock(now),
                   store=Store(Path(store_dir)), inputs=RunInputs(now=now, **inputs))


__all__ = ["compile_pipeline", "load_policy", "make_context", "read_transcript", "__version__"]
