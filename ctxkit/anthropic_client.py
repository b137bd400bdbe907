"""The one place that builds an Anthropic SDK client from the environment.

Both the summarizer (``ctxkit.summarize``) and the ``anthropic`` token estimator
(``ctxkit.tokens``) talk to the API; they sit side by side in the services layer and
must not import each other, so the rules they share live here, below both:

- the key comes from ``ANTHROPIC_API_KEY`` in the environment only (never a policy
  file), and is redacted from any text shown to a person (:func:`redact_key`);
- the base URL is the policy's, else ``ANTHROPIC_BASE_URL``, else the public API; it is
  passed explicitly, so the SDK never consults ``os.environ`` behind an injected ``env``;
- the SDK's own retries are off: callers that retry count their retries themselves.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

#: Where requests go when neither the policy nor ``ANTHROPIC_BASE_URL`` says otherwise.
DEFAULT_BASE_URL = "https://api.anthropic.com"
KEY_VARIABLE = "ANTHROPIC_API_KEY"
BASE_URL_VARIABLE = "ANTHROPIC_BASE_URL"


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

    return anthropic.Anthropic(api_key=key, base_url=base_url(configured_base_url, env),
                               timeout=timeout_seconds, max_retries=0)


def redact_key(text: str, secret: str | None) -> str:
    """``text`` with the API key replaced: a key must never reach a log, a report or stderr."""
    if secret and len(secret) >= 4:
        text = text.replace(secret, "[redacted]")
    return text
