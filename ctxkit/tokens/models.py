"""The model table: context window, maximum output and the max_tokens Claude Code sends, per model id,
and the aliases people type.

The Claude rows are Claude Code 2.1.328's own model catalog (the one baked into its ``claude`` binary:
``context.window``, ``max_output_tokens.upper`` and ``max_output_tokens.default``), so that a budget,
a threshold or a rebuilt request for a session uses what Claude Code itself used for that model
(docs/tokens.md has the table and how each value was checked).
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import NamedTuple

from ..quoting import quote

# --------------------------------------------------------------------------------------
# Models and budgets
# --------------------------------------------------------------------------------------


class ModelInfo(NamedTuple):
    context_window: int
    #: the most the model can write in one answer (a larger ``max_tokens`` is refused by the API)
    max_output_tokens: int
    #: the ``max_tokens`` Claude Code sends to this model when nothing overrides it; ``None`` for models
    #: Claude Code does not drive (the agents that run them ask for up to the maximum)
    default_max_tokens: int | None = None
    #: how Claude Code asks this model to think: ``"adaptive"`` (``{"type": "adaptive"}``), ``"budget"``
    #: (``{"type": "enabled", "budget_tokens": ...}``) or ``None`` (it sends no ``thinking``)
    thinking: str | None = None
    #: the ``output_config.effort`` Claude Code sends this model by default; ``None``: no ``output_config``
    effort: str | None = None
    #: whether the model takes ``output_config`` on a message too (per-turn effort): Claude Code puts the
    #: effort on a system message of the turn whose effort changed
    per_turn_effort: bool = False

    @property
    def sent_max_tokens(self) -> int:
        """The ``max_tokens`` an agent asks this model for by default: Claude Code's default where the
        table has one, else the model's maximum."""
        return self.max_output_tokens if self.default_max_tokens is None else self.default_max_tokens


DEFAULT_CONTEXT_WINDOW = 200_000
ONE_MILLION = 1_000_000
#: What Claude Code 2.1.328 assumes for a model its catalog does not know: max_tokens 32,000 sent, at
#: most 128,000 (its window for such a model is 1,000,000; ctxkit keeps 200,000, docs/tokens.md), and
#: adaptive thinking at effort "high" (``claude-opus-9-9`` on the first-party API).
ASSUMED_DEFAULT_MAX_TOKENS = 32_000
ASSUMED_MAX_OUTPUT_TOKENS = 128_000
ASSUMED_CLAUDE = ("adaptive", "high")

ADAPTIVE, BUDGET = "adaptive", "budget"
#: The last three fields of a Claude row: how Claude Code 2.1.328 asks it to think and at which effort
#: (its catalog's ``adaptive_thinking``, ``effort``, ``default_effort`` and ``per_turn_effort``, with the
#: binary's own exceptions; each checked in the request of a ``--model`` run, docs/formats.md). No
#: default effort in the catalog is "high".
_BUDGET = (BUDGET, None)  # Claude 4 before 4.6: enabled with a budget, no effort
_HIGH = (ADAPTIVE, "high")
_PER_TURN = (ADAPTIVE, "medium", True)

#: Per model id prefix: window, maximum output, and the max_tokens Claude Code sends. The longest row
#: that matches wins, and a row matches only up to a boundary (the end of the id, ``-``, ``@`` or
#: ``[``) that does not start another version: ``claude-opus-4-1-20250805`` is Opus 4.1, the dated
#: ``claude-opus-4-20250514`` and the vertex ``claude-sonnet-4@20250514`` are Opus 4 and Sonnet 4,
#: while ``claude-sonnet-4-50`` and ``claude-opus-4-9`` are no row's (Claude Code knows neither).
KNOWN_MODELS: dict[str, ModelInfo] = {
    # Claude 3.x (Claude Code 2.1.328 has no window for these in its catalog: it uses 200,000; Claude 3
    # Opus and Haiku, not in its catalog, are hard-coded to 4,096 output; it sends none of them thinking)
    "claude-3-opus": ModelInfo(200_000, 4_096, 4_096),
    "claude-3-sonnet": ModelInfo(200_000, 8_192, 8_192),
    "claude-3-haiku": ModelInfo(200_000, 4_096, 4_096),
    "claude-3-5-haiku": ModelInfo(200_000, 8_192, 8_192),
    "claude-3-5-sonnet": ModelInfo(200_000, 8_192, 8_192),
    "claude-3-7-sonnet": ModelInfo(200_000, 64_000, 32_000),
    # Claude 4.x: 200,000 unless the session asked for 1M ([1m]); Opus 4.7 and 4.8 are 1M natively
    "claude-opus-4": ModelInfo(200_000, 32_000, 32_000, *_BUDGET),
    "claude-opus-4-1": ModelInfo(200_000, 32_000, 32_000, *_BUDGET),
    "claude-opus-4-5": ModelInfo(200_000, 64_000, 32_000, BUDGET, "high"),
    "claude-opus-4-6": ModelInfo(200_000, 128_000, 64_000, *_HIGH),
    "claude-opus-4-7": ModelInfo(ONE_MILLION, 128_000, 64_000, ADAPTIVE, "xhigh"),
    "claude-opus-4-8": ModelInfo(ONE_MILLION, 128_000, 64_000, *_HIGH),
    "claude-sonnet-4": ModelInfo(200_000, 64_000, 32_000, *_BUDGET),
    "claude-sonnet-4-5": ModelInfo(200_000, 64_000, 32_000, *_BUDGET),
    "claude-sonnet-4-6": ModelInfo(200_000, 128_000, 32_000, *_HIGH),
    "claude-haiku-4-5": ModelInfo(200_000, 64_000, 32_000, *_BUDGET),
    # Claude 5.x: all 1M natively (Opus 5.5 compacted near 990,000 in corpus/claude-code-2.1.328)
    "claude-opus-5": ModelInfo(ONE_MILLION, 128_000, 64_000, *_HIGH),
    "claude-opus-5-5": ModelInfo(ONE_MILLION, 128_000, 128_000, *_PER_TURN),
    "claude-sonnet-5": ModelInfo(ONE_MILLION, 128_000, 64_000, *_HIGH),
    "claude-sonnet-5-5": ModelInfo(ONE_MILLION, 128_000, 128_000, *_PER_TURN),
    "claude-haiku-5-5": ModelInfo(ONE_MILLION, 128_000, 128_000, *_PER_TURN),
    "claude-fable-5": ModelInfo(ONE_MILLION, 128_000, 64_000, *_HIGH),
    "claude-fable-5-1": ModelInfo(ONE_MILLION, 128_000, 64_000, ADAPTIVE, "high", True),
    "claude-fable-5-2": ModelInfo(ONE_MILLION, 128_000, 128_000, *_PER_TURN),
    "claude-mythos-5": ModelInfo(ONE_MILLION, 128_000, 64_000, *_HIGH),
    "claude-mythos-5-1": ModelInfo(ONE_MILLION, 128_000, 64_000, *_HIGH),
    "claude-mythos-5-2": ModelInfo(ONE_MILLION, 128_000, 128_000, *_PER_TURN),
    # OpenAI
    "gpt-4o": ModelInfo(128_000, 16_384),
    "gpt-4.1": ModelInfo(1_047_576, 32_768),
    "gpt-5": ModelInfo(400_000, 128_000),  # gpt-5 and its -mini, -nano, -codex lines
    "gpt-5.1": ModelInfo(400_000, 128_000),
    "gpt-5.2": ModelInfo(400_000, 128_000),
    "gpt-5.3": ModelInfo(400_000, 128_000),
    "gpt-5.4": ModelInfo(1_050_000, 128_000),
    "gpt-5.5": ModelInfo(1_050_000, 128_000),
    "gpt-5.4-mini": ModelInfo(400_000, 128_000),
    "gpt-5.4-nano": ModelInfo(400_000, 128_000),
    # Google
    "gemini-2.5": ModelInfo(1_048_576, 65_536),
    "gemini-3": ModelInfo(1_048_576, 65_536),
    "o3": ModelInfo(200_000, 100_000),
    "o4-mini": ModelInfo(200_000, 100_000),
}

#: Claude Code's short model aliases (``--model sonnet``), matched exactly: what they name on the
#: Anthropic API in Claude Code 2.1.328 (on Bedrock, Vertex and the other providers they name older
#: models; a session records the model it ran, which is what ctxkit reads).
MODEL_ALIASES: dict[str, str] = {
    "sonnet": "claude-sonnet-5-5",
    "opus": "claude-opus-5-5",
    "haiku": "claude-haiku-5-5",
    "fable": "claude-fable-5-2",
    "best": "claude-opus-5-5",  # the catalog's "best" is the opus alias
}

#: After a row's id: another version of it (``-9`` after ``claude-opus-4``), not a date or a suffix.
_ANOTHER_VERSION = re.compile(r"-\d{1,2}(?!\d)")
#: ``claude-opus-4.5`` is spelled ``claude-opus-4-5`` on the API (Claude Code rewrites it the same way).
_DOTTED_VERSION = re.compile(r"(claude-(?:[a-z]+-)?\d{1,2})\.(?=\d)")


def model_row(name: str, keys: Iterable[str] = KNOWN_MODELS) -> str | None:
    """The longest of ``keys`` (model ids; :data:`KNOWN_MODELS`' by default) that ``name`` starts with up to a
    boundary: a suffix (``-latest``, ``-thinking``, a relay's ``-fast``, OpenRouter's ``:thinking``), a date
    or ``[1m]`` after it, never another version (``claude-opus-4`` is not ``claude-opus-4-6``)."""
    best = None
    for key in keys:
        if not name.startswith(key) or (best is not None and len(key) <= len(best)):
            continue
        rest = name[len(key):]
        if rest and rest[0] not in "-@[:":
            continue
        if key[-1].isdigit() and _ANOTHER_VERSION.match(rest):
            continue
        best = key
    return best


#: The 1M-context variant's mark at the end of an id: Claude Code's ``[1m]``, a gateway's ``-1m``
#: (``claude-opus-4.6-1m``, as a relay named the model in its answers)
_ONE_MILLION_MARK = re.compile(r"(\[1m\]|(?<=\d)-1m)$")


def spelled_as_the_api(model: str) -> tuple[str, bool]:
    """``model`` lower-cased, spelled as the API spells it (``claude-opus-4.5`` is ``claude-opus-4-5``), its
    1M-context mark taken off, and whether it had one: what the model table and the pricing table look up."""
    name = model.strip().lower()
    mark = _ONE_MILLION_MARK.search(name)
    if mark:
        name = name[:mark.start()]
    return _DOTTED_VERSION.sub(r"\1-", name), mark is not None


def model_info(model: str | None) -> ModelInfo | None:
    """What :data:`KNOWN_MODELS` says about ``model`` (an id, a dated or provider-prefixed id, an alias,
    with or without ``[1m]``), or ``None`` for a model it does not know."""
    if not model:
        return None
    name, one_m = spelled_as_the_api(model)
    name = MODEL_ALIASES.get(name, name)
    candidates = [name]
    if "claude-" in name and not name.startswith("claude-"):  # bedrock / vertex / gateway spellings
        candidates.append(name[name.index("claude-"):])
    elif "/" in name:  # openai/gpt-4.1, google/gemini-2.5-pro (OpenRouter, LiteLLM), models/gemini-2.5-pro
        candidates.append(name.rsplit("/", 1)[1])
    for candidate in candidates:
        key = model_row(candidate)
        if key is not None:
            info = KNOWN_MODELS[key]
            return info._replace(context_window=ONE_MILLION) if one_m else info
    return ModelInfo(ONE_MILLION, ASSUMED_MAX_OUTPUT_TOKENS, ASSUMED_DEFAULT_MAX_TOKENS, *ASSUMED_CLAUDE) \
        if one_m else None


def unknown_model_notice(model: str) -> str:
    """What a run assumes for a model the table does not know, with a guess at the one meant."""
    from ..policy.hints import did_you_mean

    guess = did_you_mean(model.strip().lower(), [*KNOWN_MODELS, *MODEL_ALIASES])
    return (f"unknown model {quote(model)}: assuming a {DEFAULT_CONTEXT_WINDOW:,} token context window "
            f"(set context_window in the policy{'; ' + guess if guess else ''})")
