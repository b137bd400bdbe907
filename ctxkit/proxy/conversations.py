"""Which conversation a request belongs to, and the state the proxy keeps for each.

An agent sends its whole conversation again on every request; nothing on the wire says which conversation
it is. The proxy names it so (the first message digested without its ``cache_control`` marks, which agents
move from request to request):

- ``metadata.user_id``, taken whole, when the body has one (Claude Code puts its session there), joined
  with a digest of the first message — Claude Code sends its subagents and side queries (titles, topic
  checks) under the same ``user_id`` with other first messages, and each of those is its own growing list;
- else a digest of the model family's first message alone (OpenAI-SDK agents send no id). Two
  conversations that open with the very same first message and no id share one state: each request is
  still managed from its own messages, but frozen decisions are found again only by content.

The key never leaves the proxy's memory except as a digest (the folder its store lives in and the log's
conversation column), so a ``user_id`` is not written anywhere in the clear.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .gate import Counted, without_marks
from .request_log import RequestLog


def _digest(value: Any) -> str:
    raw = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()


def conversation_key(body: dict[str, Any]) -> str:
    """The name of the conversation ``body`` continues (see the module docstring). The first message is
    digested as the cache compares it (:func:`.gate.without_marks`): Claude Code marks its last message
    with ``cache_control`` (as blocks), so a one-message conversation's first request carries a mark its
    next one does not; with the mark in the key those were two conversations, each with its own manager."""
    messages = body.get("messages")
    first = without_marks(messages[0]) if isinstance(messages, list) and messages else None
    metadata = body.get("metadata")
    user_id = metadata.get("user_id") if isinstance(metadata, dict) else None
    if isinstance(user_id, str) and user_id:
        return f"{user_id}\x00{_digest(first)}"
    return _digest(first)


def short_name(key: str) -> str:
    """What the log and the store call a conversation: 12 hex digits of its key's digest."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:12]


@dataclass
class Conversation:
    """One conversation: its manager, what was last sent upstream and when, how many requests it has had."""

    name: str
    manager: Any
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    last_sent: list[dict] | None = None  # the messages of the last body sent upstream
    last_sent_at: float | None = None  # time.monotonic() of that request
    requests: int = 0
    counted: tuple[Counted, Counted] = field(default_factory=lambda: (Counted(), Counted()))  # original, managed
    log: RequestLog | None = None  # what each request cost, for simulate and report (:mod:`.request_log`)
    #: the last request's original messages and the manager's answer to them, and how many leading messages
    #: the answer left as they were (:func:`.rewrite.reuse_previous`, :func:`.rewrite.unchanged`)
    last_original: list[dict] = field(default_factory=list)
    last_managed: list[dict] = field(default_factory=list)
    same_upto: int = 0


class Conversations:
    """The conversations seen lately, each with its own manager made by ``make_manager(store_dir, model)``;
    a manager's store is ``STORE/proxy/<name>`` so that conversations never mix their decisions.

    At most ``keep`` are held in memory (each holds its last request's messages): the one used longest
    ago is let go first. Its decisions are in its store, so a request that comes back for it gets a new
    manager that goes on from them; only the proxy's memory of what the cache holds is lost, and the
    cost gate then takes the cache as cold."""

    def __init__(self, make_manager: Callable[[Path, str | None], Any], store: Path, *,
                 clock: Callable[[], float] = time.monotonic, keep: int = 256):
        self._make = make_manager
        self.store = store
        self.clock = clock
        self.keep = keep
        self._by_key: OrderedDict[str, Conversation] = OrderedDict()

    def get(self, body: dict[str, Any]) -> Conversation:
        key = conversation_key(body)
        found = self._by_key.get(key)
        if found is None:
            name = short_name(key)
            model = body.get("model") if isinstance(body.get("model"), str) else None
            folder = self.store / "proxy" / name
            found = Conversation(name, self._make(folder, model), log=RequestLog(folder))
            self._by_key[key] = found
            while len(self._by_key) > self.keep:
                self._by_key.popitem(last=False)
        else:
            self._by_key.move_to_end(key)
        return found

    def __len__(self) -> int:
        return len(self._by_key)


def live_managers(policy: Any = "default", context_window: int | None = None) -> Callable[[Path, str | None], Any]:
    """What the proxy makes a conversation's manager with: a ``ctxkit.ContextManager`` over ``policy``,
    storing into the conversation's own folder, for the model its first request names."""
    def make(store: Path, model: str | None) -> Any:
        from ..live import ContextManager

        return ContextManager(policy=policy, store=store, model=model, context_window=context_window)
    return make
