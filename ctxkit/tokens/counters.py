"""What every token estimator shares, and the ``rough`` one.

A message is walked into pieces (text, JSON, fixed-cost blocks such as images) that every
estimator counts the same way; :class:`TokenCounter` caches per-message counts under a hash of
the message's canonical JSON. :class:`RoughCounter` is Claude Code's characters / 4 (JSON / 2).
"""
from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from typing import Any, Iterable, Iterator, Literal

import orjson

#: Tokens charged for one image or document block, wherever it appears (also inside a
#: tool_result). Claude Code uses the same constant: an image costs ~1,600 tokens at
#: most sizes, and overestimating is the safe side of a threshold.
IMAGE_TOKENS = 2_000

#: Tokens charged per message on top of its content, for the role marker and turn
#: delimiters every provider wraps around a message (OpenAI documents 3-4 for its chat
#: format; Anthropic's framing is similar). Small, but it keeps a transcript of many
#: short tool calls from being undercounted.
MESSAGE_OVERHEAD = 4

#: Characters per token for prose and code (Claude Code's ``roughTokenCountEstimation``).
CHARS_PER_TOKEN_TEXT = 4
#: Characters per token for JSON: quotes, braces and short keys tokenize about twice as densely.
CHARS_PER_TOKEN_JSON = 2

ESTIMATORS = ("rough", "tiktoken", "anthropic")

_ROUGH_SUFFIX = "using the rough estimator (characters/4)"


# --------------------------------------------------------------------------------------
# Walking a message: the pieces every estimator counts
# --------------------------------------------------------------------------------------

PieceKind = Literal["text", "json", "fixed"]


def looks_like_json(text: str) -> bool:
    """Whether ``text`` should be counted at the JSON rate: its first non-blank character
    is ``{`` or ``[`` and its last is the matching kind of closer (``}`` or ``]``).

    Cheap on purpose (two character checks, no parse): it runs on every tool result of
    every turn, and a wrong guess only moves an estimate, never a decision's validity.
    """
    stripped = text.strip()
    return len(stripped) >= 2 and stripped[0] in "{[" and stripped[-1] in "}]"


def _dumps(value: Any) -> str:
    """Compact JSON as ``JSON.stringify`` writes it (key order kept), never raising."""
    try:
        return orjson.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:  # e.g. integers beyond 64 bits
        return json.dumps(value, default=str, separators=(",", ":"), ensure_ascii=False)


def _text_piece(text: Any) -> tuple[PieceKind, Any]:
    if not isinstance(text, str):
        return ("json", _dumps(text))
    return ("json" if looks_like_json(text) else "text", text)


def iter_pieces(content: Any) -> Iterator[tuple[PieceKind, Any]]:
    """Yield what an estimator counts in a message's ``content``: ``("text", str)``,
    ``("json", str)`` or ``("fixed", tokens)``.

    The rules, shared by ``rough`` and ``tiktoken`` so both measure the same thing:

    - text blocks and string content: the text (JSON-looking text is ``json``);
    - ``thinking``: its ``thinking`` text; ``redacted_thinking``: its ``data``;
    - ``tool_use`` (and the server/MCP variants): the tool name as text plus its
      ``input`` serialized as compact JSON;
    - ``tool_result``: its content, recursively (a string, or text/image/document blocks);
    - ``image`` and ``document``: :data:`IMAGE_TOKENS` each;
    - any other block: its whole JSON.
    """
    if content is None:
        return
    if isinstance(content, str):
        yield _text_piece(content)
        return
    if isinstance(content, dict):  # a lone block where a list was expected
        content = [content]
    if not isinstance(content, (list, tuple)):
        yield ("json", _dumps(content))
        return
    for block in content:
        if isinstance(block, str):
            yield _text_piece(block)
            continue
        if not isinstance(block, dict):
            yield ("json", _dumps(block))
            continue
        kind = block.get("type")
        if kind == "text":
            yield _text_piece(block.get("text") or "")
        elif kind == "thinking":
            yield ("text", str(block.get("thinking") or ""))
        elif kind == "redacted_thinking":
            yield ("text", str(block.get("data") or ""))
        elif kind in ("tool_use", "server_tool_use", "mcp_tool_use"):
            yield ("text", str(block.get("name") or ""))
            yield ("json", _dumps(block.get("input") if block.get("input") is not None else {}))
        elif kind == "tool_result":
            yield from iter_pieces(block.get("content"))
        elif kind in ("image", "document"):
            yield ("fixed", IMAGE_TOKENS)
        else:
            yield ("json", _dumps(block))


def iter_message_pieces(msg: dict[str, Any]) -> Iterator[tuple[PieceKind, Any]]:
    """The pieces of a whole message: its content, plus OpenAI-style ``tool_calls`` (function
    name as text, arguments as JSON) so that plain OpenAI chat lists count sensibly too."""
    yield from iter_pieces(msg.get("content"))
    for call in msg.get("tool_calls") or ():
        fn = (call.get("function") if isinstance(call, dict) else None) or {}
        yield ("text", str(fn.get("name") or ""))
        args = fn.get("arguments")
        yield ("json", args if isinstance(args, str) else _dumps(args or {}))


def message_key(msg: Any) -> bytes:
    """The cache key of a message: a 128-bit BLAKE2b digest of its canonical JSON (sorted
    keys), so that equal messages share a count however their dicts were built."""
    try:
        canonical = orjson.dumps(msg, default=str, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    except TypeError:
        canonical = json.dumps(msg, default=str, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.blake2b(canonical, digest_size=16).digest()


# --------------------------------------------------------------------------------------
# Counters
# --------------------------------------------------------------------------------------


class TokenCounter:
    """Counts tokens of text, messages and message lists; caches per-message counts.

    Subclasses implement :meth:`count_text` and :meth:`_count_message_uncached`.
    ``notice`` is ``None`` while the counter does what its name says and a sentence for
    the user once it has fallen back to the rough estimator.
    """

    name: str = "base"

    def __init__(self, *, cache_size: int = 100_000):
        self.notice: str | None = None
        self.cache_size = cache_size
        self.cache_hits = 0
        self.cache_misses = 0
        self._cache: OrderedDict[bytes, int] = OrderedDict()
        self._by_object: dict[int, tuple[Any, int]] = {}  # id -> (a view's message, its count): see count_view_messages

    @property
    def degraded(self) -> bool:
        """True once the counter has fallen back to the rough estimator."""
        return self.notice is not None

    def count_text(self, text: str) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def _count_message_uncached(self, msg: dict[str, Any]) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def count_message(self, msg: dict[str, Any]) -> int:
        """Tokens of one message (content plus :data:`MESSAGE_OVERHEAD`), from the cache when
        an identical message was counted before."""
        key = message_key(msg)
        hit = self._cache_get(key)
        if hit is not None:
            return hit
        count = self._count_message_uncached(msg)
        self._cache_put(key, count)
        return count

    def count_messages(self, msgs: Iterable[dict[str, Any]]) -> int:
        """Tokens of a message list: the sum of its (cached) per-message counts."""
        return sum(self.count_message(m) for m in msgs)

    @property
    def additive(self) -> bool:
        """Whether a list counts as the sum of its messages (False: a counter that asks about whole lists)."""
        return type(self).count_messages is TokenCounter.count_messages

    def count_view_messages(self, messages: Iterable[Any]) -> int:
        """Tokens of a view's messages (:class:`ctxkit.transcript.view.ViewMessage`, read-only once built).

        A stage's edit shares every message it did not change with the view it was edited from, and
        a run counts each version's view: each message object's count is remembered (the object held
        with it, so its id is not reused), and the next version counts only its new messages. A counter
        that counts a list as a whole (one API request) is asked about the list as before."""
        if not self.additive:
            return self.count_messages(m.api() for m in messages)
        memo = self._by_object
        total = 0
        for m in messages:
            hit = memo.get(id(m))
            if hit is None or hit[0] is not m:
                hit = memo[id(m)] = (m, self.count_message(m.api()))
            total += hit[1]
        return total

    def clear_cache(self) -> None:
        self._cache.clear()
        self._by_object.clear()

    def forget_views(self) -> None:
        """Let go of the view messages remembered by identity (:meth:`count_view_messages`): a run's views
        are done with once it has ended. A counter that outlives runs (a ContextManager's, across calls)
        would otherwise keep every view it counted; the counts by content stay."""
        self._by_object.clear()

    def export_cache(self) -> dict[str, int]:
        """The per-message counts (most recently used last), to keep between runs."""
        return {key.hex(): value for key, value in self._cache.items()}

    def import_cache(self, counts: dict[str, int]) -> None:
        """Counts saved by :meth:`export_cache` in an earlier run: a transcript grown by one turn is then
        counted by asking only about the new messages (what makes the ``anthropic`` estimator affordable)."""
        for key, value in counts.items():
            try:
                self._cache_put(bytes.fromhex(key), int(value))
            except (ValueError, TypeError):
                continue

    def _cache_get(self, key: bytes) -> int | None:
        value = self._cache.get(key)
        if value is None:
            self.cache_misses += 1
            return None
        self.cache_hits += 1
        self._cache.move_to_end(key)
        return value

    def _cache_put(self, key: bytes, value: int) -> None:
        self._cache[key] = value
        self._cache.move_to_end(key)
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)

    def __repr__(self) -> str:
        extra = f" notice={self.notice!r}" if self.notice else ""
        return f"<{type(self).__name__} name={self.name!r}{extra}>"


def _rough_piece(kind: PieceKind, value: Any) -> int:
    """Round half up, like JavaScript's ``Math.round`` in Claude Code (not Python's banker's rounding)."""
    if kind == "fixed":
        return int(value)
    per = CHARS_PER_TOKEN_JSON if kind == "json" else CHARS_PER_TOKEN_TEXT
    return (len(value) + per // 2) // per


class RoughCounter(TokenCounter):
    """Claude Code's local estimate: ``round(len(text) / 4)`` per piece, ``/ 2`` for JSON,
    :data:`IMAGE_TOKENS` per image or document, plus :data:`MESSAGE_OVERHEAD` per message.
    See :func:`iter_pieces` for what the pieces of a message are."""

    name = "rough"

    def count_text(self, text: str) -> int:
        return _rough_piece(*_text_piece(text))

    def _count_message_uncached(self, msg: dict[str, Any]) -> int:
        return MESSAGE_OVERHEAD + sum(_rough_piece(k, v) for k, v in iter_message_pieces(msg))

    def count_message(self, msg: dict[str, Any]) -> int:
        """Counted directly, never cached: a few length checks cost less than the cache key (the message
        serialized and hashed), a third of the time on a large view."""
        return self._count_message_uncached(msg)
