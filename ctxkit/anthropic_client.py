"""The one place that builds an Anthropic SDK client from the environment.

Both the summarizer (``ctxkit.summarize``) and the ``anthropic`` token estimator
(``ctxkit.tokens``) talk to the API; they sit side by side in the services layer and
must not import each other, so the rules they share live here, below both:

- the key comes from ``ANTHROPIC_API_KEY`` in the environment only (never a policy
  file), and is redacted from any text shown to a person (:func:`redact_key`);
- the base URL is the policy's, else ``ANTHROPIC_BASE_URL``, else the public API; it is
  passed explicitly, so the SDK never consults ``os.environ`` behind an injected ``env``;
- the SDK's own retries are off: callers that retry count their retries themselves;
- an answer is read to :data:`MAX_RESPONSE_BYTES` at most (decoded): a server that answers gigabytes
  (a misconfigured ``base_url``, a hostile one) fails the request with :class:`ResponseTooLarge`
  instead of being held whole in memory;
- an answer is parsed by ``orjson`` (nesting deeper than 1,024 levels is malformed JSON, never a
  ``RecursionError``), and one of more than :data:`MAX_CONTENT_BLOCKS` content blocks is refused
  (:class:`AnswerTooComplex`) before the SDK builds an object for each;
- redirects are not followed: a 3xx is an error (the conversation goes to the address configured, never
  to one a server names).
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

#: Where requests go when neither the policy nor ``ANTHROPIC_BASE_URL`` says otherwise.
DEFAULT_BASE_URL = "https://api.anthropic.com"
KEY_VARIABLE = "ANTHROPIC_API_KEY"
BASE_URL_VARIABLE = "ANTHROPIC_BASE_URL"


#: The most bytes of one answer read (after decompression). A Messages API answer is its text and a
#: few hundred bytes around it: a summary of 32,000 tokens is about 150 kB of JSON.
MAX_RESPONSE_BYTES = 16 << 20


#: The most content blocks one answer may hold. A summary is one text block (a thinking block before it at
#: most); 16 MiB of empty blocks would be 640,000 SDK objects, over half a gigabyte.
MAX_CONTENT_BLOCKS = 1024


class AnswerTooComplex(ValueError):
    """An answer of more than :data:`MAX_CONTENT_BLOCKS` content blocks; refused before the SDK builds them."""

    def __init__(self, blocks: int, limit: int = MAX_CONTENT_BLOCKS):
        self.blocks = blocks
        self.limit = limit
        super().__init__(f"{blocks:,} content blocks, more than the {limit:,} ctxkit reads")


class ResponseTooLarge(Exception):
    """An answer longer than :data:`MAX_RESPONSE_BYTES`; it was not read further (the SDK reports it as
    a connection error whose cause this is)."""

    def __init__(self, limit: int, announced: int | None = None):
        self.limit = limit
        self.announced = announced
        said = f" (it announced {announced:,} bytes)" if announced is not None else ""
        super().__init__(f"an answer longer than {limit:,} bytes, the most ctxkit reads{said}")


class NoAPIKey(Exception):
    """``ANTHROPIC_API_KEY`` is unset or blank; each caller says what it needed the key for."""


def api_key(env: Mapping[str, str] | None = None) -> str | None:
    """The API key from the environment (``None`` when unset or blank)."""
    env = os.environ if env is None else env
    return (env.get(KEY_VARIABLE) or "").strip() or None


def base_url(configured: str | None = None, env: Mapping[str, str] | None = None) -> str:
    """The API's address: the policy's ``configured`` one, else ``ANTHROPIC_BASE_URL``, else the public API."""
    env = os.environ if env is None else env
    return configured or env.get(BASE_URL_VARIABLE) or DEFAULT_BASE_URL


def build_client(*, env: Mapping[str, str] | None = None, configured_base_url: str | None = None,
                 timeout_seconds: float) -> Any:
    """An ``anthropic.Anthropic`` client from the environment, with the SDK's retries off.

    Raises :class:`NoAPIKey` without a key, ``ImportError`` without the SDK. The SDK is imported
    here, not at module level: it is slow to import and most runs never call a model.
    """
    key = api_key(env)
    if key is None:
        raise NoAPIKey(f"no API key (set {KEY_VARIABLE})")
    import anthropic

    http_client = anthropic.DefaultHttpxClient(event_hooks={"response": [bound_response]}, follow_redirects=False)
    return anthropic.Anthropic(api_key=key, base_url=base_url(configured_base_url, env),
                               timeout=timeout_seconds, max_retries=0, http_client=http_client)


def bound_response(response: Any, limit: int = MAX_RESPONSE_BYTES) -> None:
    """An httpx response hook (called with the headers, before the body is read): refuse an answer that
    announces more than ``limit`` bytes, and make reading the body raise :class:`ResponseTooLarge`
    as soon as more than ``limit`` decoded bytes came (so a compressed answer is bounded too)."""
    length = response.headers.get("content-length")
    if length and length.strip().isdigit() and int(length) > limit:
        response.close()
        raise ResponseTooLarge(limit, int(length))
    decoded = response.iter_bytes

    def iter_bytes(chunk_size: int | None = None):
        total = 0
        for chunk in decoded(chunk_size):
            total += len(chunk)
            if total > limit:  # the response is closed as the generators under this one unwind
                raise ResponseTooLarge(limit)
            yield chunk

    response.iter_bytes = iter_bytes  # what read() and every iteration of the body go through

    def json(**kwargs: Any) -> Any:  # what the SDK parses an answer with
        import orjson

        data = orjson.loads(response.read())  # too deep: orjson.JSONDecodeError, a ValueError
        content = data.get("content") if isinstance(data, dict) else None
        if isinstance(content, list) and len(content) > MAX_CONTENT_BLOCKS:
            raise AnswerTooComplex(len(content))
        return data

    response.json = json


def redact_key(text: str, secret: str | None) -> str:
    """``text`` with the API key replaced: a key must never reach a log, a report or stderr."""
    if secret and len(secret) >= 4:
        text = text.replace(secret, "[redacted]")
    return text
