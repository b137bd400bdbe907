"""The ``anthropic`` estimator: the ``/v1/messages/count_tokens`` endpoint through the Anthropic SDK.

A counter that cannot reach it (no SDK, no key, an API error) falls back to ``rough`` and says so.
"""
from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import Any, Iterable, Iterator, Mapping

from .. import anthropic_client
from .counters import (
    _ROUGH_SUFFIX,
    MESSAGE_OVERHEAD,
    RoughCounter,
    TokenCounter,
    _dumps,
    message_key,
)

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

    def __init__(self, *, model: str | None = None, client: Any = None, cache_size: int = 100_000,
                 env: Mapping[str, str] | None = None):
        super().__init__(cache_size=cache_size)
        self.model = _api_model_id(model)
        self.requests = 0
        self._rough = RoughCounter(cache_size=cache_size)
        self._lists: OrderedDict[bytes, int] = OrderedDict()
        self._client = client
        if client is None:
            try:
                # the builder the summarizer uses too: key from ANTHROPIC_API_KEY only, ANTHROPIC_BASE_URL
                self._client = anthropic_client.build_client(env=env, timeout_seconds=_API_TIMEOUT_SECONDS)
            except anthropic_client.NoAPIKey:
                self._degrade(_NO_KEY)
                return
            except ImportError:
                self._degrade("anthropic: the anthropic package is not installed")
                return
            except Exception as exc:  # a malformed base URL, say: the error class only, never the key
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
