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
away cancels the upstream request (its disconnect is watched from the moment its request is read, through
the wait for the upstream's answer and while the answer streams).

Why a plain ASGI callable, not a framework's routes, Request and Response, and aiohttp's client rather than
httpx2: a proxied request's CPU is the proxy's added latency, and the proxy has one shape of route. The
framework's layers and httpx2's pure-Python HTTP stack were ~40% of a request's CPU (docs/benchmarks.md);
uvicorn still parses the HTTP, aiohttp (its C parser, its connection pool) speaks to the upstream.
"""
from __future__ import annotations

import asyncio
import json
import os
import ssl
import time
import urllib.parse
import urllib.request
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator, Callable

import aiohttp
from yarl import URL

from .conversations import Conversations
from .log_writer import LogWriter
from .request_log import logged_at
from .rewrite import Api, Outcome, prepare_body
from .usage_tap import UsageTap

HOP_BY_HOP = frozenset({b"connection", b"keep-alive", b"proxy-authenticate", b"proxy-authorization", b"te",
                        b"trailer", b"transfer-encoding", b"upgrade", b"host", b"content-length",
                        b"expect"})  # uvicorn answered the client's 100-continue; the body is on its way
RESPONSE_DROPPED = HOP_BY_HOP - {b"content-length"}
READABLE_ENCODINGS = ("gzip", "deflate", "identity")
#: headers aiohttp would add of its own accord: the upstream gets the client's, or none
NOT_ADDED = ("User-Agent", "Accept", "Accept-Encoding", "Content-Type")


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


def tls_context() -> ssl.SSLContext:
    """The certificates the proxy trusts for an https upstream: those ``SSL_CERT_FILE`` or ``SSL_CERT_DIR``
    name when set; else certifi's bundle, as httpx (and so the Anthropic and OpenAI SDKs the agents use)
    trusts; else the system's."""
    if os.environ.get("SSL_CERT_FILE") or os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context()  # OpenSSL reads the two variables
    try:
        import certifi
    except ImportError:
        return ssl.create_default_context()
    return ssl.create_default_context(cafile=certifi.where())


def env_proxy(url: str) -> str | None:
    """The HTTP proxy ``HTTPS_PROXY`` / ``HTTP_PROXY`` (or ``ALL_PROXY``) names for ``url``, unless ``NO_PROXY``
    exempts its host: the way out the agent's SDK would have taken without ctxkit in between."""
    parts = urllib.parse.urlsplit(url)
    if urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    proxies = urllib.request.getproxies()
    return proxies.get(parts.scheme) or proxies.get("all")


class _ClientGone(Exception):
    """The client disconnected (while its request was read, or the proxy waited or relayed)."""


async def _read_body(receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise _ClientGone
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


async def _error(send, status: int, kind: str, message: str) -> None:
    body = json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


class ProxyApp:
    """The ASGI app serving ``settings`` (run it with :func:`.server.serve`, or any ASGI server)."""

    def __init__(self, settings: ProxySettings):
        self.settings = settings
        self.conversations = Conversations(settings.make_manager, settings.store)
        self.base = settings.upstream.rstrip("/")
        self.via = env_proxy(self.base)
        self._session: aiohttp.ClientSession | None = None
        self.log_writer = LogWriter()

    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            # no connection limit, no cookie kept between clients, the environment's proxy (:func:`env_proxy`) and
            # nothing else of it (aiohttp's trust_env would add ~/.netrc credentials), the body as sent
            # (decompressed only for the tap's copy); response header lines as long as a server may send
            connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=75, ssl=tls_context())
            timeout = aiohttp.ClientTimeout(total=None, connect=30.0, sock_read=self.settings.timeout)
            self._session = aiohttp.ClientSession(connector=connector, timeout=timeout, auto_decompress=False,
                                                  cookie_jar=aiohttp.DummyCookieJar(), skip_auto_headers=NOT_ADDED,
                                                  trust_env=False, max_line_size=65536, max_field_size=65536)
        return self._session

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            await self._http(scope, receive, send)
        # websockets: not served (uvicorn refuses the handshake when the app returns without accepting)

    async def _lifespan(self, receive, send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self.session()  # the certificates loaded now, not in the first request's time (~25 ms)
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self._session is not None:
                    await self._session.close()
                await asyncio.to_thread(self.log_writer.close)  # every request's log line written first
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _http(self, scope, receive, send) -> None:
        started = time.perf_counter()
        method, path = scope["method"], scope["path"]
        record = RequestRecord(method, path, dry_run=self.settings.dry_run)
        route = _route(method, path)
        outcome: Outcome | None = None
        body_done = asyncio.Event()
        try:
            if route is not None:
                api, count_only = route
                outcome = await prepare_body(await _read_body(receive), api, self.conversations,
                                             dry_run=self.settings.dry_run, count_only=count_only)
                self._note(record, outcome)
                content: Any = outcome.body
                body_done.set()
            else:
                content = self._body_stream(scope, receive, body_done)
        except _ClientGone:
            return  # nothing was sent upstream: nothing to cancel, nothing to log
        error = await self._exchange(scope, receive, send, record, content, body_done, route)
        self._finish(record, outcome, route, error, started)

    def _note(self, record: RequestRecord, outcome: Outcome) -> None:
        record.conversation = outcome.conversation.name if outcome.conversation else None
        record.tokens_in, record.tokens_sent = outcome.tokens_in, outcome.tokens_sent
        record.managed, record.warning = outcome.sent_managed, outcome.warning
        verdict = outcome.verdict
        if verdict is not None:
            if outcome.sent_managed:
                record.saved_usd = verdict.saved
            elif self.settings.dry_run and verdict.send_managed:
                record.would_save_usd = verdict.cost_original - verdict.cost_managed
                record.would_send = verdict.tokens_managed

    @staticmethod
    def _body_stream(scope, receive, done: asyncio.Event) -> AsyncIterator[bytes] | None:
        """An unmanaged request's body, streamed upstream as it arrives (None: the request has none)."""
        has_body = any(k in (b"content-length", b"transfer-encoding") for k, _ in scope["headers"])
        if not has_body:
            done.set()
            return None

        async def chunks() -> AsyncIterator[bytes]:
            try:
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        raise _ClientGone
                    if message.get("body"):
                        yield message["body"]
                    if not message.get("more_body"):
                        return
            finally:
                done.set()
        return chunks()

    def _request_headers(self, scope, content: Any) -> list[tuple[str, str]]:
        headers = []
        accept = None
        for k, v in scope["headers"]:
            if k == b"accept-encoding":
                accept = v.decode("latin-1")
            elif k == b"content-length" and content is not None and not isinstance(content, bytes):
                headers.append(("content-length", v.decode("latin-1")))  # a streamed body keeps its length
            elif k not in HOP_BY_HOP:
                headers.append((k.decode("latin-1"), v.decode("latin-1")))
        headers.append(("accept-encoding", _accept_encoding(accept)))
        return headers

    async def _exchange(self, scope, receive, send, record: RequestRecord, content: Any, body_done: asyncio.Event,
                        route) -> str | None:
        """Send the request upstream and relay its answer, while a watcher waits for the client leaving:
        then this task is cancelled, and with it the upstream request (its connection closed). The error to
        log, or None."""
        complete = asyncio.Event()  # the answer's last byte was handed to the server
        task = asyncio.current_task()
        gone = False

        async def watch() -> None:
            nonlocal gone
            await body_done.wait()  # an unmanaged body is read by the relay until then
            while (await receive())["type"] != "http.disconnect":
                pass
            if not complete.is_set():
                gone = True
                task.cancel()

        watcher = asyncio.ensure_future(watch())
        try:
            return await self._relay(scope, send, record, content, route is not None, complete)
        except asyncio.CancelledError:
            if not gone:
                raise  # the server's own cancellation
            task.uncancel()
            return "the client went away"
        except _ClientGone:
            return "the client went away"
        finally:
            watcher.cancel()

    async def _relay(self, scope, send, record: RequestRecord, content: Any, managed_route: bool,
                     complete: asyncio.Event) -> str | None:
        raw_path = scope.get("raw_path") or scope["path"].encode()
        query = scope.get("query_string", b"")
        target = self.base + raw_path.decode("latin-1") + ("?" + query.decode("latin-1") if query else "")
        try:
            upstream = await self.session().request(scope["method"], URL(target, encoded=True), data=content,
                                                    headers=self._request_headers(scope, content),
                                                    allow_redirects=False, proxy=self.via)
        except (asyncio.TimeoutError, aiohttp.ServerTimeoutError):
            record.status = 504
            await _error(send, 504, "timeout_error", "ctxkit proxy: the upstream did not answer in time")
            return "the upstream did not answer in time"
        except aiohttp.ClientError as exc:
            record.status = 502
            await _error(send, 502, "api_error", f"ctxkit proxy: the upstream could not be reached "
                         f"({type(exc).__name__})")
            return f"the upstream could not be reached: {type(exc).__name__}"
        except (ValueError, TypeError) as exc:  # a request the client could send but aiohttp cannot: said, not a 500
            record.status = 502
            await _error(send, 502, "api_error", f"ctxkit proxy: the request could not be relayed "
                         f"({type(exc).__name__})")
            return f"the request could not be relayed: {type(exc).__name__}"
        record.status = upstream.status
        tap = UsageTap(upstream.headers.get("content-type", ""), enabled=managed_route)
        decode = _Decoder(upstream.headers.get("content-encoding", ""))
        error: str | None = None
        try:
            await send({"type": "http.response.start", "status": upstream.status,
                        "headers": [(k, v) for k, v in upstream.raw_headers if k.lower() not in RESPONSE_DROPPED]})
            async for chunk in upstream.content.iter_any():
                tap.feed(decode(chunk))
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            complete.set()
        except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
            # returning without finishing the response: the server breaks the client's connection off
            error = f"the upstream broke off: {type(exc).__name__}"
        except OSError:
            error = "the client went away"
        finally:
            record.usage = tap.close()
            if complete.is_set():
                upstream.release()  # read to its end: the connection goes back to the pool
            else:
                upstream.close()  # cut short (or cancelled): the connection is closed, the upstream stops
        return error

    def _finish(self, record: RequestRecord, outcome: Outcome | None, route, error: str | None,
                started: float) -> None:
        """After the last byte went to the client: the usage fed back, the request logged, the record given."""
        record.error = record.error or error
        record.ms = (time.perf_counter() - started) * 1000
        answered = outcome is not None and route is not None and not route[1] and record.status == 200
        if answered and outcome.usage_fits and record.usage:
            try:
                outcome.conversation.manager.record_usage(dict(record.usage))
            except Exception as exc:  # a count the manager cannot take costs it accuracy, not the request
                record.warning = f"the response's usage was not recorded ({type(exc).__name__}: {exc})"
        if answered and outcome.messages is not None and outcome.conversation.log is not None:
            # written by the log's thread, off this request's path and every other's (:mod:`.log_writer`)
            self.log_writer.submit(outcome.conversation.log.append, model=outcome.model or "",
                                   messages=outcome.messages, usage=dict(record.usage), tokens_in=record.tokens_in,
                                   tokens_sent=record.tokens_sent, managed=record.managed,
                                   api=outcome.api or "anthropic", at=logged_at())
        if self.settings.on_request is not None:
            self.settings.on_request(record)


def build_app(settings: ProxySettings) -> ProxyApp:
    """The ASGI app serving ``settings``."""
    return ProxyApp(settings)
