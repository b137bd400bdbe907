"""``ctxkit proxy``: the policies on the wire, for any agent that speaks the Anthropic Messages or the OpenAI
Chat Completions API through a configurable base URL (docs/proxy.md).

An established stack (uvicorn serving a plain ASGI app, aiohttp's client forwarding with streaming and a
connection pool) — no HTTP is written by hand here. The parts, one concern each:

- :mod:`.conversations` — which conversation a request belongs to, and one ``ContextManager`` each;
- :mod:`.gate` — the cost model: a managed body is sent only when it costs less than the original would,
  counting the prompt-cache re-write an edit causes over the turns expected to remain;
- :mod:`.rewrite` — the one function that turns a request body into the body to send (and what it saved);
- :mod:`.usage_tap` — the response's usage, read on the side from a JSON body or an SSE stream;
- :mod:`.request_log` — what each request cost, kept for ``simulate`` and ``report``;
- :mod:`.app` — the routes; :mod:`.server` — running it under uvicorn.

The proxy parses only the request bodies of the routes it manages and rewrites only their ``messages``;
every other byte, path, header and response passes through as it came.
"""
from __future__ import annotations

from typing import Any

__all__ = ["ProxySettings", "build_app"]


def __getattr__(name: str) -> Any:
    # the server stack (uvicorn, aiohttp: the ``proxy`` extra) loads with the app, not with the package, so
    # that simulate and report can read a proxy's store (:mod:`.request_log`) without it
    if name in __all__:
        from . import app
        return getattr(app, name)
    raise AttributeError(name)
