"""A local HTTP server that speaks enough of the Anthropic Messages API for tests.

Tests drive the real ``anthropic`` SDK against it (``base_url=api.base_url``,
any dummy key), so retries, timeouts and error classification are exercised
through the same code paths as in production, without a network or a key::

    with MockMessagesAPI() as api:
        api.reply_rate_limited(retry_after=3)
        api.reply_text("<summary>1. Primary Request and Intent: ...</summary>")
        summarizer = AnthropicSummarizer("claude-x", base_url=api.base_url, env={"ANTHROPIC_API_KEY": "k"})
        ...
        assert len(api.requests) == 2

Replies are scripted as a FIFO queue consumed by ``POST /v1/messages``; when
the queue is empty the server answers :attr:`always` when set (a fault that
lasts: ``api.always = Reply(raw=b'{"id": "msg')``), else ``default_text`` (or a
500 when that is ``None``, for tests that want every request accounted for).
Faulty servers: :meth:`reply_raw` sends bytes as they are (a 200 whose JSON is
cut short), :meth:`reply_hang` never answers until the server stops, :meth:`reply_trickle`
sends a byte at a time, :meth:`reply_huge` streams gigabytes (with or without announcing
them), :meth:`reply_sse` answers an event stream where JSON was asked, :meth:`reply_cut`
closes the connection mid-answer, :meth:`reply_deep` nests JSON 200,000 deep, :meth:`reply_many_blocks`
answers hundreds of thousands of content blocks, :meth:`reply_redirect` redirects elsewhere.
``POST /v1/messages/count_tokens`` answers ``{"input_tokens": N}`` with N the
characters of the body's messages (and system) divided by four, or
``token_count`` when set. Every request is recorded in :attr:`requests`
before any scripted delay, so a request the client gave up on still counts.

``strict=True``: a request breaking the Messages API's rules (:mod:`strict_messages`, written apart from
ctxkit) is answered 400 ``invalid_request_error`` with the API's text.

Cache edits (cached microcompact, the shape the seeds describe): a request
whose ``cache_reference`` / ``cache_edits`` fields break the rules of
:func:`cache_edit_problem` is answered 400 ``invalid_request_error``, as the
API refuses a malformed request; a valid one is answered with
``usage.cache_deleted_input_tokens``: the tokens (characters / 4) of the tool
results its edits delete. :func:`cache_deletions` lists what a request deletes.
"""
from __future__ import annotations

import itertools
import json
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

DEFAULT_SUMMARY = "<analysis>mock analysis</analysis>\n<summary>\n1. Primary Request and Intent:\n   mock summary\n</summary>"


@dataclass
class RecordedRequest:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: Any  # the decoded JSON body (None when there was none or it was not JSON)


@dataclass
class Reply:
    """One scripted answer: a status, a JSON body, extra headers, and a delay before answering."""

    status: int = 200
    body: Any = None  # dict for JSON; for 200 replies to /v1/messages, None means "build a message from text"
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    text: str | None = None
    content: list[dict] | None = None
    stop_reason: str = "end_turn"
    usage: dict[str, int] | None = None
    raw: bytes | None = None  # sent as the body as it is (not JSON-encoded), e.g. truncated JSON
    trickle: float = 0.0  # when set: the headers at once, then the body one byte every ``trickle`` seconds
    content_type: str = "application/json"
    length: int | None = None  # the content-length announced: None the body's own, -1 none (the body ends at close)
    filler: int = 0  # after ``raw``: this many more bytes of ``x``, streamed (a huge answer without holding it)
    tail: bytes = b""  # after the filler


#: A reply that never comes: the handler waits until the server stops (a day is "never" for a test).
HANG = Reply(delay=86_400.0)


def error_body(error_type: str, message: str, request_id: str = "req_mock") -> dict[str, Any]:
    """An error body in the shape the Anthropic API returns."""
    return {"type": "error", "error": {"type": error_type, "message": message}, "request_id": request_id}


def _content_blocks(message: Any) -> list[Any]:
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, list) else []


def cache_deletions(body: Any) -> list[tuple[int, str]]:
    """(message index, cache_reference) of every ``delete`` edit of the request's ``cache_edits`` blocks."""
    messages = body.get("messages") if isinstance(body, dict) else None
    return [(i, e.get("cache_reference")) for i, m in enumerate(messages or []) for b in _content_blocks(m)
            if isinstance(b, dict) and b.get("type") == "cache_edits" for e in b.get("edits") or []
            if isinstance(e, dict)]


def cache_edit_problem(body: Any) -> str | None:
    """What is wrong with the request's cache edits, or None: a ``cache_reference`` only on a tool_result
    before the last ``cache_control`` breakpoint; ``cache_edits`` only in user messages, each edit a
    ``delete`` of a reference made earlier in the request, none deleted twice."""
    messages = (body.get("messages") if isinstance(body, dict) else None) or []
    last_breakpoint = max((i for i, m in enumerate(messages) for b in _content_blocks(m)
                           if isinstance(b, dict) and "cache_control" in b), default=-1)
    refs: set[str] = set()
    deleted: set[str] = set()
    for i, m in enumerate(messages):
        for b in _content_blocks(m):
            if not isinstance(b, dict):
                continue
            if "cache_reference" in b:
                if b.get("type") != "tool_result":
                    return f"messages.{i}: cache_reference is only allowed on tool_result blocks"
                if i >= last_breakpoint:
                    return f"messages.{i}: cache_reference must come before the last cache_control breakpoint"
                refs.add(b["cache_reference"])
            if b.get("type") == "cache_edits":
                if m.get("role") != "user":
                    return f"messages.{i}: cache_edits is only allowed in user messages"
                for e in b.get("edits") or []:
                    ref = e.get("cache_reference") if isinstance(e, dict) else None
                    if not isinstance(e, dict) or e.get("type") != "delete":
                        return f"messages.{i}: unknown cache edit {e!r}"
                    if ref not in refs:
                        return f"messages.{i}: cache_edits deletes {ref!r}, which no earlier tool_result references"
                    if ref in deleted:
                        return f"messages.{i}: {ref!r} is deleted twice"
                    deleted.add(ref)
    return None


def _deleted_tokens(body: Any) -> int:
    refs = {ref for _, ref in cache_deletions(body)}
    return sum(len(json.dumps(b.get("content"), ensure_ascii=False)) // 4
               for m in (body.get("messages") or []) for b in _content_blocks(m)
               if isinstance(b, dict) and b.get("type") == "tool_result" and b.get("cache_reference") in refs)


class MockMessagesAPI:
    """A ``ThreadingHTTPServer`` on 127.0.0.1 (a free port) with a queue of scripted replies.

    Use as a context manager (or call :meth:`start` / :meth:`stop`). ``api_key``,
    when given, makes the server answer 401 unless the request carries that key
    (as ``x-api-key`` or ``Authorization: Bearer``), like the real API.
    """

    def __init__(self, *, default_text: str | None = DEFAULT_SUMMARY, api_key: str | None = None,
                 strict: bool = False):
        self.default_text = default_text
        #: refuse, as the API does (400 invalid_request_error, its text), a request whose messages break its rules
        #: (:func:`strict_messages.problem`: pairing, empty text, images and PDFs over the limits...)
        self.strict = strict
        self.api_key = api_key
        self.token_count: int | None = None
        self.always: Reply | None = None  # the answer when the queue is empty (before default_text)
        self.requests: list[RecordedRequest] = []
        self._queue: deque[Reply | Callable[[RecordedRequest], Reply]] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._ids = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("the mock server is not running")
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> MockMessagesAPI:
        handler = type("Handler", (_Handler,), {"api": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},  # so that stop() returns promptly
            name="mock-messages-api",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; requests still sleeping on a scripted delay are released at once."""
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> MockMessagesAPI:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- scripting ------------------------------------------------------------------------

    def enqueue(self, reply: Reply | Callable[[RecordedRequest], Reply]) -> None:
        """Queue a reply (or a function of the request returning one) for the next ``/v1/messages`` call."""
        with self._lock:
            self._queue.append(reply)

    def reply_text(self, text: str, *, stop_reason: str = "end_turn", delay: float = 0.0,
                   usage: dict[str, int] | None = None) -> None:
        """A successful message whose content is one text block."""
        self.enqueue(Reply(text=text, stop_reason=stop_reason, delay=delay, usage=usage))

    def reply_content(self, content: list[dict], *, stop_reason: str = "end_turn", delay: float = 0.0) -> None:
        """A successful message with exactly these content blocks."""
        self.enqueue(Reply(content=content, stop_reason=stop_reason, delay=delay))

    def reply_malformed(self) -> None:
        """A successful message with no text block at all (an empty content list)."""
        self.reply_content([], stop_reason="end_turn")

    def reply_error(self, status: int, error_type: str, message: str, *, retry_after: float | str | None = None,
                    headers: dict[str, str] | None = None, delay: float = 0.0) -> None:
        """An HTTP error with an Anthropic-shaped body and, optionally, a ``retry-after`` header."""
        all_headers = dict(headers or {})
        if retry_after is not None:
            all_headers["retry-after"] = str(retry_after)
        self.enqueue(Reply(status=status, body=error_body(error_type, message), headers=all_headers, delay=delay))

    def reply_rate_limited(self, *, retry_after: float | str | None = None) -> None:
        self.reply_error(429, "rate_limit_error", "Number of request tokens has exceeded your rate limit.",
                         retry_after=retry_after)

    def reply_overloaded(self, *, retry_after: float | str | None = None) -> None:
        self.reply_error(529, "overloaded_error", "Overloaded", retry_after=retry_after)

    def reply_server_error(self, status: int = 500) -> None:
        self.reply_error(status, "api_error", "Internal server error")

    def reply_prompt_too_long(self, tokens: int | None = None, maximum: int | None = None) -> None:
        """A 400 ``invalid_request_error`` "prompt is too long", with the token figures when given."""
        message = "prompt is too long"
        if tokens is not None and maximum is not None:
            message = f"prompt is too long: {tokens} tokens > {maximum} maximum"
        self.reply_error(400, "invalid_request_error", message)

    def reply_raw(self, data: bytes, *, status: int = 200) -> None:
        """These bytes as the body, with ``content-type: application/json`` (e.g. JSON cut short)."""
        self.enqueue(Reply(status=status, raw=data))

    def reply_huge(self, size: int, *, announced: bool = True) -> None:
        """A 200 that starts like a message and goes on for ``size`` bytes of one text block's ``x``s,
        streamed as it is sent (``announced``: with its content-length; else none, ending at close)."""
        head = b'{"id": "msg_huge", "type": "message", "role": "assistant", "content": [{"type": "text", "text": "'
        tail = b'"}], "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1}}'
        self.enqueue(Reply(raw=head, filler=size, tail=tail, length=len(head) + size + len(tail) if announced else -1))

    def reply_sse(self, text: str = DEFAULT_SUMMARY) -> None:
        """A 200 answered as a server-sent event stream (``content-type: text/event-stream``) where JSON was asked."""
        message = json.dumps({"type": "message_start", "message": {"id": "msg_sse", "type": "message", "role": "assistant",
                                                                  "content": [], "usage": {"input_tokens": 1}}})
        delta = json.dumps({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}})
        data = (f"event: message_start\ndata: {message}\n\nevent: content_block_delta\ndata: {delta}\n\n"
                "event: message_stop\ndata: {\"type\": \"message_stop\"}\n\n").encode()
        self.enqueue(Reply(raw=data, content_type="text/event-stream"))

    def reply_cut(self, data: bytes, announced: int) -> None:
        """A 200 that announces ``announced`` bytes, sends ``data`` (fewer) and closes: a connection lost mid-answer."""
        self.enqueue(Reply(raw=data, length=announced))

    def reply_deep(self, depth: int = 200_000, *, in_message: bool = False) -> None:
        """A 200 of JSON nested ``depth`` deep: ``[[[...]]]`` alone, or (``in_message``) a normal message
        with an extra key ``"x": [[[...]]]`` (a parser that recurses runs out of stack on either)."""
        nested = b"[" * depth + b"]" * depth
        if not in_message:
            self.reply_raw(nested)
            return
        message = json.dumps({"id": "msg_deep", "type": "message", "role": "assistant", "model": "mock-model",
                              "content": [{"type": "text", "text": DEFAULT_SUMMARY}], "stop_reason": "end_turn",
                              "usage": {"input_tokens": 1, "output_tokens": 1}}).encode()
        self.reply_raw(message[:-1] + b', "x": ' + nested + b"}")

    def reply_many_blocks(self, blocks: int, text: str = DEFAULT_SUMMARY) -> None:
        """A 200 message of ``text`` followed by ``blocks`` empty text blocks (16 MB at 640,000)."""
        message = {"id": "msg_many", "type": "message", "role": "assistant", "model": "mock-model",
                   "content": [{"type": "text", "text": text}] + [{"type": "text", "text": ""}] * blocks,
                   "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1}}
        self.reply_raw(json.dumps(message, separators=(",", ":")).encode())

    def reply_redirect(self, location: str, status: int = 307) -> None:
        """A redirect (``307`` by default: the client would re-send the same body) to ``location``."""
        self.enqueue(Reply(status=status, raw=b"", headers={"location": location}))

    def reply_hang(self) -> None:
        """Accept the request and never answer (until the server stops): a hung server or gateway."""
        self.enqueue(HANG)

    def reply_trickle(self, interval: float, text: str = DEFAULT_SUMMARY) -> None:
        """A 200 whose headers come at once and whose body follows one byte every ``interval`` seconds: a
        slow server that never lets a per-read timeout fire."""
        self.enqueue(Reply(text=text, trickle=interval))

    def reply_delayed(self, seconds: float, text: str = DEFAULT_SUMMARY) -> None:
        """A success that arrives only after ``seconds`` (to provoke client timeouts)."""
        self.reply_text(text, delay=seconds)

    @property
    def pending(self) -> int:
        """Scripted replies not yet consumed."""
        with self._lock:
            return len(self._queue)

    @property
    def message_requests(self) -> list[RecordedRequest]:
        """The ``POST /v1/messages`` requests received, in order."""
        with self._lock:
            return [r for r in self.requests if r.path == "/v1/messages"]

    # -- answering (called from handler threads) ------------------------------------------

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _next_reply(self, request: RecordedRequest) -> Reply:
        with self._lock:
            scripted = self._queue.popleft() if self._queue else None
        if callable(scripted):
            return scripted(request)
        if scripted is not None:
            return scripted
        if self.always is not None:
            return self.always
        if self.default_text is None:
            return Reply(status=500, body=error_body("api_error", "mock server: no scripted reply left"))
        return Reply(text=self.default_text)

    def _message_body(self, reply: Reply, request: RecordedRequest) -> dict[str, Any]:
        body = request.body if isinstance(request.body, dict) else {}
        if reply.content is not None:
            content = reply.content
        else:
            content = [{"type": "text", "text": reply.text or ""}]
        usage = reply.usage or {
            "input_tokens": self._estimate_tokens(body),
            "output_tokens": max(1, sum(len(str(b.get("text", ""))) for b in content) // 4),
        }
        if cache_deletions(body) and "cache_deleted_input_tokens" not in usage:
            usage = {**usage, "cache_deleted_input_tokens": _deleted_tokens(body)}
        return {
            "id": f"msg_mock_{next(self._ids):04d}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "mock-model"),
            "content": content,
            "stop_reason": reply.stop_reason,
            "stop_sequence": None,
            "usage": usage,
        }

    def _estimate_tokens(self, body: dict[str, Any]) -> int:
        if self.token_count is not None:
            return self.token_count
        chars = len(json.dumps(body.get("messages", []), ensure_ascii=False))
        system = body.get("system")
        if system:
            chars += len(system if isinstance(system, str) else json.dumps(system, ensure_ascii=False))
        return chars // 4

    def _authorized(self, headers: dict[str, str]) -> bool:
        if self.api_key is None:
            return True
        return headers.get("x-api-key") == self.api_key or headers.get("authorization") == f"Bearer {self.api_key}"


class _Handler(BaseHTTPRequestHandler):
    api: MockMessagesAPI  # set on the subclass made in MockMessagesAPI.start
    server_version = "mock-messages-api/1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass  # keep test output clean

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self._send(404, error_body("not_found_error", f"no route for GET {self.path}"))

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path = self.path.split("?", 1)[0]
        request = RecordedRequest("POST", path, {k.lower(): v for k, v in self.headers.items()}, body)
        self.api._record(request)
        if not self.api._authorized(request.headers):
            self._send(401, error_body("authentication_error", "invalid x-api-key"))
            return
        if raw and body is None:
            self._send(400, error_body("invalid_request_error", "the request body is not valid JSON"))
            return
        if path == "/v1/messages/count_tokens":
            self._send(200, {"input_tokens": self.api._estimate_tokens(body if isinstance(body, dict) else {})})
            return
        if path != "/v1/messages":
            self._send(404, error_body("not_found_error", f"no route for POST {path}"))
            return
        problem = cache_edit_problem(body)
        if problem is None and self.api.strict:
            from strict_messages import problem as strict_problem

            problem = strict_problem(body)
        if problem:
            self._send(400, error_body("invalid_request_error", problem))
            return
        reply = self.api._next_reply(request)
        if reply.delay and self.api._stopping.wait(reply.delay):
            return  # the server is stopping: do not answer
        if reply.raw is not None:
            self._send(reply.status, None, reply.headers, raw=reply.raw, content_type=reply.content_type,
                       length=reply.length, filler=reply.filler, tail=reply.tail)
            return
        payload = reply.body
        if reply.status == 200 and payload is None:
            payload = self.api._message_body(reply, request)
        self._send(reply.status, payload, reply.headers, trickle=reply.trickle)

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None, *,
              raw: bytes | None = None, trickle: float = 0.0, content_type: str = "application/json",
              length: int | None = None, filler: int = 0, tail: bytes = b"") -> None:
        data = raw if raw is not None else json.dumps(payload).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("content-type", content_type)
            if length is None:
                length = len(data) + filler + len(tail)
            if length >= 0:
                self.send_header("content-length", str(length))
            self.send_header("request-id", "req_mock")
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            if filler:
                self.wfile.write(data)
                chunk = b"x" * (1 << 20)
                for start in range(0, filler, len(chunk)):
                    if self.api._stopping.is_set():
                        return
                    self.wfile.write(chunk[:min(len(chunk), filler - start)])
                self.wfile.write(tail)
                return
            if not trickle:
                self.wfile.write(data)
                return
            self.wfile.flush()
            for i in range(len(data)):
                if self.api._stopping.wait(trickle):
                    return  # the server is stopping
                self.wfile.write(data[i:i + 1])
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test): nothing to answer
