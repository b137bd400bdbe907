"""What every adapter does the same way: turning the managed dicts back into the framework's objects,
and a response's usage into the API's.

A framework message carries more than its dict says (ids, metadata, provider details). What the
ContextManager left unchanged is therefore given back as the original object, not as a copy
rebuilt from the dict: only what a stage changed or added (a persisted output's preview, a
summary) is converted. Matching is by content, in order, so two equal messages map to their
originals one by one.
"""
from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import orjson

T = TypeVar("T")


def _key(d: dict) -> bytes:
    return orjson.dumps(d, option=orjson.OPT_SORT_KEYS, default=str)


def back_to_framework(originals: Sequence[tuple[dict, Sequence[T]]], managed: Sequence[dict],
                      convert: Callable[[dict], Sequence[T]]) -> list[T]:
    """The framework's objects for ``managed``: for a dict equal to one of ``originals`` (each a dict
    and the objects it was made from), those objects; for any other, ``convert(d)``."""
    unused: dict[bytes, deque[Sequence[T]]] = defaultdict(deque)
    for d, objects in originals:
        unused[_key(d)].append(objects)
    out: list[T] = []
    for d in managed:
        same = unused.get(_key(d))
        out.extend(same.popleft() if same else convert(d))
    return out


def text_of(content: Any) -> str:
    """The text of a message's content: a string, or the text blocks of a list joined."""
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or () if isinstance(b, dict) and "text" in b)


def api_usage(input_tokens: int, output_tokens: int, cache_read: int = 0, cache_write: int = 0) -> dict:
    """The Anthropic Messages API's usage of a response, from the counts frameworks report: their
    input count includes the cached tokens, the API's ``input_tokens`` does not."""
    return {"input_tokens": max(0, input_tokens - cache_read - cache_write), "output_tokens": output_tokens,
            "cache_read_input_tokens": cache_read, "cache_creation_input_tokens": cache_write}
