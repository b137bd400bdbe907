"""The model table: context window and maximum output per model id, and the aliases people type."""
from __future__ import annotations

from typing import NamedTuple

from ..quoting import quote

# --------------------------------------------------------------------------------------
# Models and budgets
# --------------------------------------------------------------------------------------


class ModelInfo(NamedTuple):
    context_window: int
    max_output_tokens: int


DEFAULT_CONTEXT_WINDOW = 200_000
ONE_MILLION = 1_000_000

#: Context window and maximum output per model id prefix; the longest matching prefix wins,
#: so dated ids (``claude-sonnet-4-5-20250929``) and provider-prefixed ids
#: (``us.anthropic.claude-…``) resolve. A ``[1m]`` suffix (Claude Code's 1M-context marker)
#: sets the window to 1,000,000. Claude 5 values follow what Claude Code 2.1.328 did in
#: ``corpus/`` (Opus 5.5: max_tokens 128,000, compaction first triggered near 990,000).
KNOWN_MODELS: dict[str, ModelInfo] = {
    # Claude 3.x
    "claude-3-opus": ModelInfo(200_000, 4_096),
    "claude-3-haiku": ModelInfo(200_000, 4_096),
    "claude-3-5-haiku": ModelInfo(200_000, 8_192),
    "claude-3-5-sonnet": ModelInfo(200_000, 8_192),
    "claude-3-7-sonnet": ModelInfo(200_000, 64_000),
    # Claude 4.x
    "claude-opus-4": ModelInfo(200_000, 32_000),
    "claude-opus-4-1": ModelInfo(200_000, 32_000),
    "claude-opus-4-5": ModelInfo(200_000, 64_000),
    "claude-opus-4-6": ModelInfo(200_000, 128_000),
    "claude-sonnet-4": ModelInfo(200_000, 64_000),
    "claude-sonnet-4-5": ModelInfo(200_000, 64_000),
    "claude-sonnet-4-6": ModelInfo(200_000, 64_000),
    "claude-haiku-4-5": ModelInfo(200_000, 64_000),
    # Claude 5.x
    "claude-opus-5": ModelInfo(ONE_MILLION, 128_000),
    "claude-sonnet-5": ModelInfo(200_000, 64_000),
    # Claude Code 2.1.328's own table: a 1,000,000-token window, 128,000 output (sent as max_tokens on a
    # run resumed with ``--model sonnet``, bench/cc_scenarios/commands.json)
    "claude-sonnet-5-5": ModelInfo(ONE_MILLION, 128_000),
    "claude-haiku-5": ModelInfo(200_000, 64_000),
    "claude-fable-5": ModelInfo(200_000, 128_000),
    "claude-mythos-5": ModelInfo(200_000, 128_000),
    # OpenAI
    "gpt-4o": ModelInfo(128_000, 16_384),
    "gpt-4.1": ModelInfo(1_047_576, 32_768),
    "gpt-5": ModelInfo(400_000, 128_000),  # gpt-5, 5.1, 5.2, 5.3 and their -codex lines
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

#: Claude Code's short model aliases (``--model sonnet``), matched exactly.
MODEL_ALIASES: dict[str, str] = {
    "sonnet": "claude-sonnet-4-5",
    "opus": "claude-opus-4-5",
    "haiku": "claude-haiku-4-5",
    "fable": "claude-fable-5",
}


def model_info(model: str | None) -> ModelInfo | None:
    """What :data:`KNOWN_MODELS` says about ``model`` (longest prefix match), or ``None``."""
    if not model:
        return None
    name = model.strip().lower()
    one_m = name.endswith("[1m]")
    if one_m:
        name = name[:-4]
    name = MODEL_ALIASES.get(name, name)
    candidates = [name]
    if "claude-" in name and not name.startswith("claude-"):  # bedrock / vertex spellings
        candidates.append(name[name.index("claude-"):])
    for candidate in candidates:
        matches = [k for k in KNOWN_MODELS if candidate.startswith(k)]
        if matches:
            info = KNOWN_MODELS[max(matches, key=len)]
            return ModelInfo(ONE_MILLION, info.max_output_tokens) if one_m else info
    return ModelInfo(ONE_MILLION, 32_000) if one_m else None


def unknown_model_notice(model: str) -> str:
    """What a run assumes for a model the table does not know, with a guess at the one meant."""
    from ..policy.hints import did_you_mean

    guess = did_you_mean(model.strip().lower(), [*KNOWN_MODELS, *MODEL_ALIASES])
    return (f"unknown model {quote(model)}: assuming a {DEFAULT_CONTEXT_WINDOW:,} token context window "
            f"(set context_window in the policy{'; ' + guess if guess else ''})")
