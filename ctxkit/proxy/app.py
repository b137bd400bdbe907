"""The ASGI app: which requests are managed, how each is relayed, and the record of what it cost.

``POST …/v1/messages`` (any query, e.g. ``?beta=true``), ``POST …/v1/messages/count_tokens`` and
``POST …/chat/completions`` go through :func:`.rewrite.prepare_body`; every other method and path is relayed
as it came, its body streamed. Responses are relayed as the upstream sent them — status, headers (less the
hop-by-hop ones), and body bytes, streamed as they arrive — while :class:`.usage_tap.UsageTap` reads the usage
from a copy. One header is managed: ``accept-encoding`` is narrowed to the encodings the tap can read
(gzip, deflate), so that usage is never lost to a compression only the client could undo.

Failures the proxy did not make reach the client as made: an upstream status and body are relayed whatever
they are; an upstream that cannot be reached or times out before answering is a 502 or 504 in the API's
error shape; one that breaks off mid-answer breaks the client's connection off too. A client that goes
away cancels the upstream request (the disconnect is watched while the answer streams).
"""
from __future__ import annotations

import contextlib
import socket
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import anyio
import httpx2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount

from .conversations import Conversations
from .rewrite import Api, Outcome, prepare_body
from .usage_tap import UsageTap

HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
                        "transfer-encoding", "upgrade", "host", "content-length"})
READABLE_ENCODINGS = ("gzip", "deflate", "identity")
NO_DELAY = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]


@dataclass
class ProxySettings:
    """How the proxy runs: where it forwards, the store, how a conversation's manager is made."""

    upstream: str
    make_manager: Callable[[Path, str | None], Any]
    store: Path = Path(".ctxkit")
    dry_run: bool = False
    on_request: Callable[[RequestRecord], None] | None = None
    timeout: float = 600.0  # seconds the upstream may stay silent (before answering, or between chunks)


@dataclass
class RequestRecord:
    """One request, as the log line and ``--report json`` show it. Never a header, never a body."""

    method: str
    path: str
    status: int = 0
    conversation: str | None = None
    tokens_in: int | None = None
    tokens_sent: int | None = None
    usage: dict[str, int] = field(default_factory=dict)
    managed: bool = False  # the managed messages were sent
    dry_run: bool = False
    saved_usd: float = 0.0  # what sending the managed body saved over the expected remaining turns
    would_save_usd: float | None = None  # --dry-run: what it would have saved
    would_send: int | None = None  # --dry-run: the tokens it would have sent
    warning: str | None = None
    error: str | None = None  # the upstream failed: how
    ms: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        # shallow (dataclasses.asdict deep-copies, a measurable part of a request's CPU time): only usage is a container
        return {**vars(self), "usage": dict(self.usage)}


def _route(method: str, path: str) -> tuple[Api, bool] | None:
    """Which API a request speaks and whether it is a token count; None: relayed unmanaged."""
    if method != "POST":
        return None
    if path.endswith("/v1/messages"):
        return "anthropic", False
    if path.endswith("/v1/messages/count_tokens"):
        return "anthropic", True
    if path.endswith("/chat/completions"):
        return "openai", False
    return None


def _accept_encoding(value: str | None) -> str:
    offered = [p.strip() for p in (value or "").split(",") if p.strip()]
    kept = [p for p in offered if p.split(";")[0].strip().lower() in READABLE_ENCODINGS]
    return ", ".join(kept) or "identity"


def _error(status: int, kind: str, message: str) -> Response:
    return JSONResponse({"type": "error", "error": {"type": kind, "message": message}}, status_code=status)


class _Decoder:
    """Undoes the response's content-encoding for the usage tap's copy (the client gets the raw bytes)."""

    def __init__(self, encoding: str):
        enc = encoding.strip().lower()
        self._z = zlib.decompressobj(16 + zlib.MAX_WBITS) if enc == "gzip" else \
            zlib.decompressobj() if enc == "deflate" else None
        self.readable = enc in ("", "identity", "gzip", "deflate")

    def __call__(self, chunk: bytes) -> bytes:
        if self._z is None:
            return chunk if self.readable else b""
        try:
            return self._z.decompress(chunk)
        except zlib.error:
            self._z, self.readable = None, False
            return b""


class _Relay:
    """An ASGI response that streams the upstream's answer and, at the same time, watches for the client
    leaving: whichever ends first ends the other, and the upstream response is always closed."""

    def __init__(self, upstream: httpx2.Response, headers: list[tuple[bytes, bytes]], tap: UsageTap,
                 decode: _Decoder, done: Callable[[str | None], None]):
        self.upstream, self.headers, self.tap, self.decode, self.done = upstream, headers, tap, decode, done

    async def __call__(self, scope, receive, send) -> None:
        error: str | None = None
        finished = False
        try:
            async with anyio.create_task_group() as tg:
                async def watch() -> None:
                    while (await receive())["type"] != "http.disconnect":
                        pass
                    nonlocal error
                    if not finished:
                        error = error or "the client went away"
                    tg.cancel_scope.cancel()

                tg.start_soon(watch)
                try:
                    await send({"type": "http.response.start", "status": self.upstream.status_code,
                                "headers": self.headers})
                    async for chunk in self.upstream.aiter_raw():
                        self.tap.feed(self.decode(chunk))
                        await send({"type": "http.response.body", "body": chunk, "more_body": True})
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                    finished = True
                except httpx2.HTTPError as exc:
                    # returning without finishing the response: the server breaks the client's connection off
                    error = f"the upstream broke off: {type(exc).__name__}"
                except OSError:
                    error = error or "the client went away"
                tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await self.upstream.aclose()
                self.done(error)


def build_app(settings: ProxySettings) -> Starlette:
    """The Starlette app serving ``settings`` (run it with :func:`.server.serve`, or any ASGI server)."""
    conversations = Conversations(settings.make_manager, settings.store)
    base = settings.upstream.rstrip("/")
    state: dict[str, httpx2.AsyncClient] = {}

    def client() -> httpx2.AsyncClient:
        if "client" not in state:
            limits = httpx2.Limits(max_connections=None, max_keepalive_connections=100)
            # Nagle's algorithm off on the upstream connections, whatever the event loop does by default: a
            # body written after its headers must not wait for the upstream's delayed ACK (~40 ms)
            transport = httpx2.AsyncHTTPTransport(limits=limits, socket_options=NO_DELAY)
            state["client"] = httpx2.AsyncClient(timeout=httpx2.Timeout(settings.timeout, connect=30.0),
                                                 transport=transport, follow_redirects=False)
        return state["client"]

    async def handle(request: Request) -> Response | _Relay:
        started = time.perf_counter()
        path = request.url.path
        record = RequestRecord(request.method, path, dry_run=settings.dry_run)
        route = _route(request.method, path)
        outcome: Outcome | None = None
        if route is not None:
            api, count_only = route
            outcome = await prepare_body(await request.body(), api, conversations, dry_run=settings.dry_run,
                                         count_only=count_only)
            record.conversation = outcome.conversation.name if outcome.conversation else None
            record.tokens_in, record.tokens_sent = outcome.tokens_in, outcome.tokens_sent
            record.managed, record.warning = outcome.sent_managed, outcome.warning
            if outcome.verdict is not None:
                if outcome.sent_managed:
                    record.saved_usd = outcome.verdict.saved
                elif settings.dry_run and outcome.verdict.send_managed:
                    record.would_save_usd = outcome.verdict.cost_original - outcome.verdict.cost_managed
                    record.would_send = outcome.verdict.tokens_managed
            content: Any = outcome.body
        else:
            content = request.stream()

        def finish(error: str | None) -> None:
            record.error = record.error or error
            record.ms = (time.perf_counter() - started) * 1000
            if outcome is not None and outcome.usage_fits and record.usage and route and not route[1] \
                    and record.status == 200:
                try:
                    outcome.conversation.manager.record_usage(dict(record.usage))
                except Exception as exc:  # a count the manager cannot take costs it accuracy, not the request
                    record.warning = f"the response's usage was not recorded ({type(exc).__name__}: {exc})"
            if outcome is not None and outcome.messages is not None and route and not route[1] \
                    and record.status == 200 and outcome.conversation.log is not None:
                try:
                    outcome.conversation.log.append(model=outcome.model or "", messages=outcome.messages,
                                                    usage=dict(record.usage), tokens_in=record.tokens_in,
                                                    tokens_sent=record.tokens_sent, managed=record.managed,
                                                    api=outcome.api or "anthropic")
                except OSError as exc:  # a full disk costs the log a line, not the client its answer
                    record.warning = f"the request was not logged in the store ({exc})"
            if settings.on_request is not None:
                settings.on_request(record)

        try:
            upstream_request = _upstream_request(request, path, content)
        except Exception as exc:  # noqa: BLE001 - a request the client could send but httpx2 cannot: said, not a 500
            record.status = 502
            finish(f"the request could not be relayed: {type(exc).__name__}")
            return _error(502, "api_error", f"ctxkit proxy: the request could not be relayed ({type(exc).__name__})")
        return await relay(upstream_request, record, finish, route is not None)

    def _upstream_request(request: Request, path: str, content: Any) -> httpx2.Request:
        headers = [(k, v) for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP]
        headers = [(k, v) for k, v in headers if k.lower() != "accept-encoding"]
        headers.append(("accept-encoding", _accept_encoding(request.headers.get("accept-encoding"))))
        raw_path = request.scope.get("raw_path") or path.encode()
        url = httpx2.URL(base + raw_path.decode("latin-1"), query=request.scope.get("query_string", b""))
        return client().build_request(request.method, url, headers=headers, content=content)

    async def relay(upstream_request: httpx2.Request, record: RequestRecord, finish: Callable[[str | None], None],
                    managed_route: bool) -> Response | _Relay:
        try:
            upstream = await client().send(upstream_request, stream=True)
        except httpx2.TimeoutException:
            record.status = 504
            finish("the upstream did not answer in time")
            return _error(504, "timeout_error", "ctxkit proxy: the upstream did not answer in time")
        except httpx2.HTTPError as exc:
            record.status = 502
            finish(f"the upstream could not be reached: {type(exc).__name__}")
            return _error(502, "api_error", f"ctxkit proxy: the upstream could not be reached ({type(exc).__name__})")
        record.status = upstream.status_code
        tap = UsageTap(upstream.headers.get("content-type", ""), enabled=managed_route)
        out_headers = [(k, v) for k, v in upstream.headers.raw if k.decode("latin-1").lower() not in
                       HOP_BY_HOP - {"content-length"}]

        def done(error: str | None) -> None:
            record.usage = tap.close()
            finish(error)

        return _Relay(upstream, out_headers, tap, _Decoder(upstream.headers.get("content-encoding", "")), done)

    async def endpoint(scope, receive, send) -> None:
        response = await handle(Request(scope, receive))
        await response(scope, receive, send)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette):
        yield
        if "client" in state:
            await state["client"].aclose()

    return Starlette(routes=[Mount("", app=endpoint)], lifespan=lifespan)
