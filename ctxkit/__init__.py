"""ctxkit: declarative, policy-driven context management for LLM agent sessions.

Embedding it in an agent framework::

    from ctxkit import load_policy, compile_pipeline, read_transcript, make_context

    policy = load_policy("no-llm")
    transcript = read_transcript("session.jsonl")
    ctx = make_context(policy, store_dir=".ctxkit")
    result = compile_pipeline(policy).run(transcript, ctx)
    ctx.store.flush()  # the store's decisions and blobs, durably, before the output names them
    with open("compacted.jsonl", "wb") as out:
        result.transcript.write(out)

In an agent's loop, on the message list it holds (docs/context-manager.md)::

    from ctxkit import ContextManager

    cm = ContextManager(policy="default", store=".ctxkit")
    response = client.messages.create(model=..., messages=cm.prepare(messages), ...)
    cm.record_usage(response.usage)

The tree reads as the architecture (docs/architecture.md), lowest layer first:
the shared utilities at this level (``errors``, ``clock``, ``fileio``,
``confined``, ``quoting``, ``filenames``, ``resources``: no ctxkit imports
beyond each other); ``transcript/``; ``policy/``, ``tokens/``, ``store/``,
``summarize/``; ``stages/``; ``pipeline``; ``reports/``; ``live/``; ``batch/``; ``cli/`` on top. The
import-linter contracts in pyproject.toml keep it so.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:
    from .live import ContextManager
    from .pipeline import compile_pipeline
    from .policy import Labels, Policy, Problem
    from .transcript import read_transcript

__version__ = "0.1.0"

#: the public names, imported on first use (PEP 562): ``import ctxkit.cli.main`` must not pay for the
#: whole pipeline before the CLI has installed its SIGTERM handler (ctxkit.cli.main)
_LAZY = {"compile_pipeline": ".pipeline", "read_transcript": ".transcript", "ContextManager": ".live"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'ctxkit' has no attribute {name!r}")


def load_policy(policy: str | None = None, sets: Sequence[str] = (), cwd: Path | None = None,
                user_config: Path | None = None, *, labels: Labels | None = None) -> Policy:
    """The policy for a run, checked against ctxkit's stages (see :func:`ctxkit.policy.load_policy`).

    Problems name ``policy`` and ``sets`` as arguments (``policy argument:1:1: error: no built-in policy
    named ...``); ``labels`` renames them (the CLI names its options, ``--policy`` and ``--set``)."""
    from . import policy as _policy
    from .stages.registry import REGISTRY

    return _policy.load_policy(policy, sets, cwd, user_config, stages=REGISTRY,
                               labels=_policy.LIBRARY_LABELS if labels is None else labels)


def validate_policy_file(path: str | Path) -> list[Problem]:
    """Every problem of one policy file on its own; empty when it is valid."""
    from . import policy as _policy
    from .stages.registry import REGISTRY

    return _policy.validate_file(path, stages=REGISTRY)


def policy_schema() -> dict[str, Any]:
    """The policy schema with ctxkit's stages and their options (what ``ctxkit policy schema`` prints)."""
    from . import policy as _policy
    from .stages.registry import REGISTRY

    return _policy.effective_schema(REGISTRY)


def make_context(policy, *, store_dir: str | Path = ".ctxkit", now: Any = None, **inputs: Any):
    """A stage Context with the policy's token estimator (and the counts saved in the store), a clock
    (fixed at ``now`` if given), the store, and the warnings a run starts with (``ctx.warnings``);
    the builder the CLI uses too (:func:`ctxkit.run_context.build_context`).

    ``now`` is a datetime or an ISO-8601 string (``"2026-11-30T12:00:00Z"``, as ``--now`` takes it).
    Raises :class:`UsageError` naming an argument of the wrong kind (before anything runs), and
    :class:`PolicyError` when the estimator would send the transcript on the word of an untrusted
    repository policy (``estimator: anthropic``, see ctxkit.policy.trust)."""
    from .policy.trust import require_trusted_estimator
    from .run_context import build_context, checked_arguments
    from .store.disk import Store

    now, inputs = checked_arguments(policy, store_dir, now, inputs)
    require_trusted_estimator(policy)
    return build_context(policy, Store(Path(store_dir)), now=now, **inputs)


__all__ = ["ContextManager", "compile_pipeline", "load_policy", "make_context", "policy_schema", "read_transcript", "validate_policy_file",
           "__version__"]
