"""What each proxied request cost, kept in the conversation's store for ``simulate`` and ``report``.

The live journals (:mod:`ctxkit.live.state`) keep what was sent, not what it was billed, and only digests
of the messages. So the proxy appends, per conversation, to ``STORE/proxy/<name>/``:

* ``requests.jsonl`` — one short line per answered request: when, the model, the usage the upstream
  reported (Anthropic shape), tokens in → sent, whether the managed body went, and how many of the
  conversation's original messages the request held;
* ``messages.jsonl`` — the conversation's original messages, one a line, each written once and without
  its ``cache_control`` marks (agents move them every request; simulate models the cache itself): a
  request appends the messages past those already written, so the file grows as the conversation does.
  A request whose list does not continue what is written (fewer messages, or the first or the last one
  written is not the same: the agent compacted or edited its history) starts a new pair of files, the old pair renamed aside (``messages.<n>.jsonl``, ``requests.<n>.jsonl``), never
  overwritten: each pair is one session for :func:`as_claude_code`.

Both are appends of whole lines (a line cut short by a killed process or a full disk is ended before the
next append, and skipped when read); the proxy
makes them on one thread of their own, off the requests' path (:mod:`.log_writer`). Each request's line
keeps the size ``messages.jsonl`` had after it (``messages_bytes``), so that a conversation's first request
after a restart reads that file's first and last lines only. Count-only
requests (``count_tokens``) and failed ones are not logged: they are no turn of the conversation.
"""
from __future__ import annotations

import bisect
import itertools
import json
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import orjson

from ..errors import UsageError
from ..quoting import quote
from ..side_files import parse_json
from ..transcript.plain.messages import from_openai
from .gate import without_marks

REQUESTS = "requests.jsonl"
MESSAGES = "messages.jsonl"


def _line(value: Any) -> bytes:
    try:
        return orjson.dumps(value) + b"\n"
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass") + b"\n"


def _parsed(line: bytes) -> Any:
    """A log line's value; :data:`_CUT` for a line cut short (or blank)."""
    if not line.strip():
        return _CUT
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        try:
            return parse_json(line)
        except ValueError:
            return _CUT  # cut short: the request it began was not finished being logged


_CUT = object()


def _readable(line: bytes) -> bool:
    return _parsed(line) is not _CUT


def read_lines(path: Path) -> list[Any]:
    """The whole JSON lines of ``path`` (none when it is missing); a line cut short is left out."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return []
    return [v for v in map(_parsed, raw.split(b"\n")) if v is not _CUT]


def logged_at() -> str:
    """Now, as a request's line says when it was answered."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _last_line(path: Path) -> bytes:
    """The last line of ``path`` (with its newline), read from the end: one line, whatever the file's size.
    Each block read is searched once and joined once (a message of 60 MB, screenshots in it, took 17 s
    when the tail read so far was searched and copied again at every block)."""
    with open(path, "rb") as f:
        pos, blocks = f.seek(0, 2), []
        while pos > 0:
            step = min(65536, pos)
            pos -= step
            f.seek(pos)
            block = f.read(step)
            # (the file's own last byte is the line's newline, not the end of the line before)
            cut = block.rfind(b"\n", 0, len(block) - 1 if not blocks else len(block))
            if cut >= 0:
                blocks.append(block[cut + 1:])
                break
            blocks.append(block)
        return b"".join(reversed(blocks))


def _append_lines(path: Path, data: bytes) -> int:
    """Append ``data`` (whole lines) to ``path``; the file's size after. A last line cut short (a proxy killed
    mid-write, a full disk) is ended first, so that it stays one unreadable line, skipped when read: the
    first line appended after it would otherwise join it and be lost with it."""
    with open(path, "a+b") as f:
        end = f.seek(0, 2)
        if end and data:
            f.seek(end - 1)
            if f.read(1) != b"\n":
                data = b"\n" + data
        f.write(data)  # (appended at the end, whatever was read)
        return f.tell()


class RequestLog:
    """One conversation's log (see the module docstring); ``folder`` is its ``STORE/proxy/<name>``."""

    def __init__(self, folder: Path):
        self.folder = folder
        self._written: tuple[int, bytes, bytes] | None = None  # messages.jsonl: how many, its first and last

    def _messages_written(self) -> tuple[int, bytes, bytes]:
        if self._written is None:
            self._written = self._from_last_request() or self._from_messages()
        return self._written

    def _from_last_request(self) -> tuple[int, bytes, bytes] | None:
        """What ``messages.jsonl`` holds, as the last request's line says (its ``messages`` and the file's size
        it left, ``messages_bytes``): the file's first and last lines read, not the whole of it (a proxy
        restarted on a long conversation read and parsed every message it had logged). None when the line
        does not say, or the file is not the size it left (a write cut short): then it is read whole."""
        try:
            last = orjson.loads(_last_line(self.folder / REQUESTS))
            size = (self.folder / MESSAGES).stat().st_size
        except (OSError, orjson.JSONDecodeError):
            return None
        n = last.get("messages") if isinstance(last, dict) else None
        if not (isinstance(n, int) and not isinstance(n, bool) and n > 0 and last.get("messages_bytes") == size):
            return None
        with open(self.folder / MESSAGES, "rb") as f:
            # (a line cut short before the first message written whole: the proxy killed as it began)
            first = next((line for line in f if _readable(line)), None)
        return None if first is None else (n, first, _last_line(self.folder / MESSAGES))

    def _from_messages(self) -> tuple[int, bytes, bytes]:
        lines = [_line(m) for m in read_lines(self.folder / MESSAGES)]
        return (len(lines), lines[0], lines[-1]) if lines else (0, b"", b"")

    def _continues(self, messages: list[dict]) -> bool:
        """Whether ``messages`` go on from what is written: as many at least, the first and the last written
        the same. Only those two are compared (each request's own work stays the size of what it adds; a
        history rewritten in between without changing either is logged as if it went on)."""
        n, first, last = self._messages_written()
        return n == 0 or (len(messages) >= n and _line(without_marks(messages[0])) == first
                          and _line(without_marks(messages[n - 1])) == last)

    def append(self, *, model: str, messages: list[dict], usage: dict[str, int], tokens_in: int | None,
               tokens_sent: int | None, managed: bool, api: str = "anthropic", at: str | None = None) -> None:
        """Log one answered request (``at``: when it was answered; now, unless told). A write that fails
        names this conversation's folder (a full disk's error names no file: the proxy's warning would not
        say which conversation lost a line)."""
        try:
            self._log(model=model, messages=messages, usage=usage, tokens_in=tokens_in, tokens_sent=tokens_sent,
                      managed=managed, api=api, at=at)
        except OSError as exc:
            if exc.filename is None:
                exc.filename = str(self.folder)
            raise

    def _log(self, *, model: str, messages: list[dict], usage: dict[str, int], tokens_in: int | None,
             tokens_sent: int | None, managed: bool, api: str, at: str | None) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        if not self._continues(messages):  # a history the agent rewrote: a new pair of files, the old one kept
            n = 1
            while (self.folder / f"messages.{n}.jsonl").exists():
                n += 1
            (self.folder / MESSAGES).rename(self.folder / f"messages.{n}.jsonl")
            if (self.folder / REQUESTS).exists():
                (self.folder / REQUESTS).rename(self.folder / f"requests.{n}.jsonl")
            self._written = (0, b"", b"")
        count, first, last = self._messages_written()
        new = [_line(without_marks(m)) for m in messages[count:]]
        try:
            size = _append_lines(self.folder / MESSAGES, b"".join(new))
        except BaseException:  # (a full disk: what the file holds now is read from it the next time)
            self._written = None
            raise
        if new:
            self._written = (len(messages), first or new[0], new[-1])
        entry = {"at": at or logged_at(), "api": api, "model": model, "usage": usage, "tokens_in": tokens_in,
                 "tokens_sent": tokens_sent, "managed": managed, "messages": len(messages), "messages_bytes": size}
        _append_lines(self.folder / REQUESTS, _line(entry))


# -- read back, for simulate and report ---------------------------------------------------------------
NOT_KEPT = "(the answer to the last request is not kept in the proxy's store; its usage is)"


def proxy_sessions(folder: Path) -> list[tuple[Path, Path]]:
    """The (messages, requests) file pairs under ``folder``: a proxy's store (``STORE``, its ``proxy``
    folder) or one conversation's folder. None: ``folder`` holds no proxy log."""
    if (folder / REQUESTS).is_file():
        convs = [folder]
    else:
        found = [*folder.glob(f"proxy/*/{REQUESTS}"), *folder.glob(f"*/{REQUESTS}")]
        # a conversation's folder is named by 12 hex digits (:func:`.conversations.short_name`): another
        # tool's requests.jsonl in a folder of sessions is not taken for the proxy's
        convs = sorted({p.parent for p in found if re.fullmatch(r"[0-9a-f]{12}", p.parent.name)})
    out = []
    for conv in convs:
        older = sorted(conv.glob("requests.*.jsonl"), key=lambda p: int(p.name.split(".")[1])
                       if p.name.split(".")[1].isdigit() else 0)
        for req in [*older, conv / REQUESTS]:
            if req.is_file():
                out.append((conv / req.name.replace("requests", "messages", 1), req))
    return out


def is_anthropic(requests_path: Path) -> bool:
    """Whether a logged conversation speaks the Anthropic Messages API (else OpenAI's Chat Completions)."""
    return _speaks_anthropic(read_lines(requests_path))


def _speaks_anthropic(logged: list[Any]) -> bool:
    return all(r.get("api", "anthropic") == "anthropic" for r in logged if isinstance(r, dict))


def _blocks(content: Any) -> Any:
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def automatic_cache_usage(usage: dict[str, Any], model: str) -> dict[str, Any]:
    """An OpenAI request's usage (in the Messages API's shape: cached tokens as cache reads) in the terms
    of the cache simulate models. OpenAI caches prompts automatically: a prompt of at least the model's
    minimum cacheable length is cached whole by the request that sends it, so the tokens it did not read
    it wrote, at the input price (``pricing.json`` prices an OpenAI model's cache writes as its input)."""
    from ..reports.cache_model import min_cacheable_tokens

    out = dict(usage)
    fresh = out.get("input_tokens")
    prompt = sum(v for k, v in out.items() if k != "output_tokens" and isinstance(v, int))
    if isinstance(fresh, int) and prompt >= min_cacheable_tokens(model):
        out["input_tokens"] = 0
        out["cache_creation_input_tokens"] = out.get("cache_creation_input_tokens", 0) + fresh
    return out


def as_claude_code(messages_path: Path, requests_path: Path) -> list[dict]:
    """One logged conversation as a Claude Code transcript's lines, so that simulate replays it as it replays
    any session: each original message a line; the answer to each request (the message after the ones it
    held) carries the model and usage the upstream reported; an assistant message no logged request
    answered (history the agent brought) is marked ``<synthetic>``, no request. The last request's answer
    is not in the log (no later request held it): a placeholder carries its usage. An OpenAI Chat
    Completions conversation's messages are read as an OpenAI message list is (:func:`from_openai`: tool
    calls as ``tool_use``, ``tool`` messages as results; its system message is left to the overhead, as a
    system prompt is); its usage was logged in the Messages API's shape, cached tokens as cache reads."""
    messages = read_lines(messages_path)
    logged = read_lines(requests_path)
    openai = not _speaks_anthropic(logged)
    requests = [r for r in logged if isinstance(r, dict) and isinstance(r.get("messages"), int)
                and not isinstance(r["messages"], bool)]
    if not requests:
        raise ValueError(f"{requests_path}: no request of this conversation was logged whole; nothing to replay")
    answered = {r["messages"]: r for r in requests if r["messages"] <= len(messages)}
    if len(messages) in answered:
        messages = [*messages, {"role": "assistant", "content": NOT_KEPT}]
    # a message's time: that of the first request (in log order) that held it; the running maximum of the
    # requests' message counts is sorted, so a bisection finds it (a scan per message was quadratic)
    reach = list(itertools.accumulate((r["messages"] for r in requests), max))
    lines, parent = [], None
    for i, m in enumerate(messages):
        if openai and isinstance(m, dict):
            m = from_openai(m)  # its system message: None, counted with the overhead as a system prompt is
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
            continue
        if not isinstance(m.get("content"), (str, list)):  # the proxy logs only what the upstream accepted
            raise ValueError(f"{messages_path}: message {i + 1} has no content the API takes (a string or a list "
                             "of blocks): not a log the proxy wrote; this conversation is not replayed")
        req = answered.get(i) if m["role"] == "assistant" else None
        k = bisect.bisect_left(reach, i)
        at = requests[min(k, len(requests) - 1)].get("at") if requests else None
        message: dict[str, Any] = {"role": m["role"], "content": _blocks(m.get("content")) or _blocks("")}
        if m["role"] == "assistant":
            message = {"id": f"msg_proxy_{i}", "type": "message", **message,
                       "model": str(req.get("model") or "<synthetic>") if req else "<synthetic>",
                       "usage": req["usage"] if req and isinstance(req.get("usage"), dict) else {}}
            if openai and message["usage"]:
                message["usage"] = automatic_cache_usage(message["usage"], message["model"])
        uuid = f"proxy-{i:06d}"
        lines.append({"parentUuid": parent, "isSidechain": False, "type": m["role"], "message": message,
                      "uuid": uuid, "timestamp": at if isinstance(at, str) else "1970-01-01T00:00:00.000Z", "sessionId": requests_path.parent.name})
        parent = uuid
    return lines


def as_sessions(args: list[str], tmp: Path, warn: Callable[[str], None]) -> tuple[list[str], dict[str, str]]:
    """``simulate``'s and ``report``'s arguments with each proxy store (or one conversation's folder of one)
    replaced by its conversations, written under ``tmp`` as Claude Code sessions (:func:`as_claude_code`);
    and the name each is shown with (its ``requests.jsonl``). ``warn`` is told why a conversation is left
    out. docs/proxy.md, "What a proxied day cost"."""
    out: list[str] = []
    labels: dict[str, str] = {}
    for arg in args:
        pairs = proxy_sessions(Path(arg)) if arg != "-" and Path(arg).is_dir() else []
        if not pairs:
            out.append(arg)
            continue
        before = len(out)
        for messages, requests in pairs:
            try:
                lines = as_claude_code(messages, requests)
            except ValueError as exc:
                warn(str(exc))
                continue
            session = tmp / f"{len(labels)}-{requests.parent.name}.jsonl"  # unique across stores
            session.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), "utf-8")
            out.append(str(session))
            labels[str(session)] = str(requests)
        if len(out) == before:
            raise UsageError(f"{quote(arg)}: none of the proxy's conversations there can be replayed (see the "
                             "warnings above)")
    return out, labels
