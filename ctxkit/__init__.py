"""ctxkit: declarative, policy-driven context management for LLM agent sessions.

Embedding it in an agent framework::

    from ctxkit import load_policy, compile_pipeline, read_transcript, make_context

    policy = load_policy("no-llm")
    transcript = read_transcript("session.jsonl")
    result = compile_pipeline(policy).run(transcript, make_context(policy, store_dir=".ctxkit"))
    with open("compacted.jsonl", "wb") as out:
        result.transcript.write(out)

The tree reads as the architecture (docs/architecture.md), lowest layer first:
the shared utilities at this level (``errors``, ``clock``, ``fileio``,
``confined``, ``quoting``, ``filenames``, ``resources``: no ctxkit imports
beyond each other); ``transcript/``; ``policy/``, ``tokens/``, ``store/``,
``summarize/``; ``stages/``; ``pipeline``; ``reports/``; ``cli/`` on top. The
import-linter contracts in pyproject.toml keep it so.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from . import policy as _policy
from .pipeline import compile_pipeline
from .stages.registry import REGISTRY as _STAGES
from .transcript import read_transcript

__version__ = "0.1.0"


def load_policy(policy: str | None = None, sets: Sequence[str] = (), cwd: Path | None = None,
                user_config: Path | None = None) -> _policy.Policy:
    """The policy for a run, checked against ctxkit's stages (see :func:`ctxkit.policy.load_policy`)."""
    return _policy.load_policy(policy, sets, cwd, user_config, stages=_STAGES)


def validate_policy_file(path: str | Path) -> list[_policy.Problem]:
    """Every problem of one policy file on its own; empty when it is valid."""
    return _policy.validate_file(path, stages=_STAGES)


def policy_schema() -> dict[str, Any]:
    """The policy schema with ctxkit's stages and their options (what ``ctxkit policy schema`` prints)."""
    return _policy.effective_schema(_STAGES)


def make_context(policy, *, store_dir: str | Path = ".ctxkit", now: Any = None, **inputs: Any):
    """A stage Context with the policy's token estimator (and the counts saved in the store), a clock
    (fixed at ``now`` if given), the store, and the warnings a run starts with (``ctx.warnings``);
    the builder the CLI uses too (:func:`ctxkit.run_context.build_context`)."""
    from .run_context import build_context
    from .store.disk import Store

    return build_context(policy, Store(Path(store_dir)), now=now, **inputs)


__all__ = ["compile_pipeline", "load_policy", "make_context", "policy_schema", "read_transcript", "validate_policy_file",
           "__version__"]
