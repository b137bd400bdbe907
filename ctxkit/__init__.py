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
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .pipeline import compile_pipeline
    from .policy import load_policy
    from .transcript import read_transcript

__version__ = "0.1.0"

#: the public names, imported on first use (PEP 562): ``import ctxkit.cli.main`` must not pay for the
#: whole pipeline before the CLI has installed its SIGTERM handler (ctxkit.cli.main)
_LAZY = {"compile_pipeline": ".pipeline", "load_policy": ".policy", "read_transcript": ".transcript"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'ctxkit' has no attribute {name!r}")


def make_context(policy, *, store_dir: str | Path = ".ctxkit", now: Any = None, **inputs: Any):
    """A stage Context with the policy's token estimator, a clock (fixed at ``now`` if given) and a store.

    Raises :class:`PolicyError` when the estimator would send the transcript on the word of an untrusted
    repository policy (``estimator: anthropic``, see ctxkit.policy.trust)."""
    from .clock import Clock
    from .policy.trust import require_trusted_estimator
    from .stages.base import Context, RunInputs
    from .store import Store
    from .tokens import make_counter

    require_trusted_estimator(policy)
    return Context(policy=policy, tokens=make_counter(policy.estimator, model=policy.model), clock=Clock(now),
                   store=Store(Path(store_dir)), inputs=RunInputs(now=now, **inputs))


__all__ = ["compile_pipeline", "load_policy", "make_context", "read_transcript", "__version__"]
