"""The API's usage of a response, Anthropic's or OpenAI's, as (input side, output) token counts."""
from __future__ import annotations

from typing import Any

from ..errors import UsageError

#: Anthropic: everything the request held is input plus what was written to and read from the cache
_ANTHROPIC_INPUT = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def _field(usage: Any, name: str) -> Any:
    return usage.get(name) if isinstance(usage, dict) else getattr(usage, name, None)


def _count(usage: Any, name: str) -> int:
    value = _field(usage, name)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageError(f"record_usage: {name} must be a number of tokens, got {value!r}")
    return value


def usage_tokens(usage: Any) -> tuple[int, int]:
    """(tokens the request held, tokens of the response) from an Anthropic ``usage`` (``input_tokens``,
    the cache fields, ``output_tokens``) or an OpenAI one (``prompt_tokens``, ``completion_tokens``;
    the Responses API's ``input_tokens``/``output_tokens``), as a dict or the SDK's object."""
    if usage is None:
        raise UsageError("record_usage: usage is None (pass the response's usage)")
    if _field(usage, "prompt_tokens") is not None:
        return _count(usage, "prompt_tokens"), _count(usage, "completion_tokens")
    if _field(usage, "input_tokens") is not None:
        return sum(_count(usage, k) for k in _ANTHROPIC_INPUT), _count(usage, "output_tokens")
    raise UsageError(f"record_usage: not an API usage (no input_tokens or prompt_tokens): {usage!r}"[:300])
