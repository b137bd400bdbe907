"""Cached microcompact: old tool results deleted server-side by cache edits; the transcript is untouched.

With the microcompact stage's ``mode: cached``, ``ctxkit view --to anthropic-request`` shapes the
request the way the seeds describe Claude Code's cached microcompact (``CACHED_MICROCOMPACT``,
``microCompact.ts`` ``cachedMicrocompactPath`` and the API layer that sends its ``pendingCacheEdits``):

1. every ``tool_result`` block in the cached prefix carries ``"cache_reference": <its tool_use_id>``;
   the cached prefix is everything before the last message, whose last block carries the request's
   ``cache_control`` breakpoint (``{"type": "ephemeral"}``);
2. once the request holds ``cached.trigger`` results of compactable tools (the policy's
   ``tools.compactable``) not yet deleted, all but the stage's ``keep_recent`` most recent of them
   are deleted: a ``{"type": "cache_edits", "edits": [{"type": "delete", "cache_reference": ID},
   ...]}`` block goes into the last user message, after its tool results;
3. that block is *pinned*: every later request sends it again in the same message at the same
   place, so the prefix the server cached stays the same bytes (the deletions are re-sent on every
   request, as the seeds say, and never move).

The local messages never change: the transcript keeps every result in full, and ``ctxkit
compact`` leaves it as it is (``nothing-to-do``) while the cache is warm. Once the cache is cold
(``gap_minutes`` since the model last answered) the stage clears old results in the transcript
itself, as ``time-based`` does (Claude Code tries the time-based path first), and a request made
while the cache is cold carries no cache edits.

**Where the pins are kept.** In the store's session state (``cached_microcompact``: per pin the
index of its request message, the SHA-256 of the request messages up to and including it, and the
ids it deletes). A pin is sent again only while the request's messages up to its message are the
bytes they were when it was made; when that prefix changed (a compaction, a snip, the time-based
clearing, a message that grew) the server's cache is rebuilt anyway, so that pin and every later
one are dropped and the deleted results count again (Claude Code resets its cached-microcompact
state after a compaction too). The markers around them (``cache_reference`` on the newest results,
the ``cache_control`` breakpoint) move with the end of the conversation, as in Claude Code.

This follows the seeds' description of Claude Code's request shape; the cache-editing API is not
public (Claude Code sends it only for Anthropic's own accounts), so no beta header is named for it,
and Claude Code's own trigger (a remote setting) is not known: ``cached.trigger`` (10) is ctxkit's.
"""
from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from ..clock import Clock
from ..stages.microcompact import Microcompact, cache_gap_minutes
from ..store.disk import Store
from ..store.link import find_store
from ..store.sessions import session_key
from ..transcript.model import Transcript

STATE_KEY = "cached_microcompact"
CACHE_CONTROL = {"type": "ephemeral"}


@dataclass(frozen=True)
class Pin:
    """A cache_edits block sent once and re-sent in the same place on every later request."""

    index: int  # the request message it is in
    prefix: str  # SHA-256 of the request messages [0..index] without cache markers
    deleted: tuple[str, ...]  # the cache_reference (tool_use_id) of each deleted result

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "prefix": self.prefix, "deleted": list(self.deleted)}

    def block(self) -> dict[str, Any]:
        return {"type": "cache_edits", "edits": [{"type": "delete", "cache_reference": ref} for ref in self.deleted]}


def prefix_digests(messages: list[dict]) -> list[str]:
    """For each k, the SHA-256 of ``messages[:k + 1]`` (sorted-key JSON, one message a line)."""
    h = hashlib.sha256()
    out = []
    for m in messages:
        h.update(orjson.dumps(m, option=orjson.OPT_SORT_KEYS) + b"\n")
        out.append(h.copy().hexdigest())
    return out


def load_pins(state: dict[str, Any]) -> list[Pin]:
    pins = []
    for p in (state.get(STATE_KEY) or {}).get("pins") or []:
        if isinstance(p, dict) and isinstance(p.get("index"), int) and isinstance(p.get("prefix"), str) \
                and isinstance(p.get("deleted"), list):
            pins.append(Pin(p["index"], p["prefix"], tuple(str(x) for x in p["deleted"])))
    return pins


def still_in_place(pins: list[Pin], messages: list[dict], digests: list[str]) -> list[Pin]:
    """The pins whose request prefix is unchanged, in order; the first that moved ends the list."""
    kept = []
    for pin in sorted(pins, key=lambda p: p.index):
        if pin.index >= len(messages) or digests[pin.index] != pin.prefix or messages[pin.index]["role"] != "user":
            break
        kept.append(pin)
    return kept


def _results(messages: list[dict]) -> list[tuple[int, str]]:
    """(message index, tool_use_id) of every tool_result block, in order."""
    return [(i, b.get("tool_use_id", "")) for i, m in enumerate(messages) if isinstance(m.get("content"), list)
            for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]


def _tool_names(messages: list[dict]) -> dict[str, str]:
    return {b.get("id", ""): b.get("name", "") for m in messages if m["role"] == "assistant"
            and isinstance(m.get("content"), list) for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_use"}


def choose_deletions(messages: list[dict], compactable: frozenset[str] | set[str], deleted: set[str], *,
                     trigger: int, keep_recent: int) -> list[str]:
    """The tool_use ids to delete now: when ``trigger`` compactable results are still live, all but the
    ``keep_recent`` most recent, among those in the cached prefix (before the last message)."""
    names = _tool_names(messages)
    live = [(i, tid) for i, tid in _results(messages) if names.get(tid) in compactable and tid not in deleted]
    if len(live) < trigger:
        return []
    old = live[:max(0, len(live) - keep_recent)]
    return [tid for i, tid in old if i < len(messages) - 1]


def _insert_after_results(content: list[dict], block: dict) -> list[dict]:
    """``block`` placed after the message's tool_result blocks (the API wants those first)."""
    lead = 0
    while lead < len(content) and content[lead].get("type") == "tool_result":
        lead += 1
    return [*content[:lead], block, *content[lead:]]


def _blocks(content: Any) -> list[dict]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def shape_request(messages: list[dict], pins: list[Pin]) -> list[dict]:
    """The request messages with the pinned cache_edits in place, ``cache_reference`` on the tool results of
    the cached prefix and the ``cache_control`` breakpoint on the last block; ``messages`` is not changed."""
    out = [dict(m) for m in messages]
    last = len(out) - 1
    if last < 0:
        return out
    for m in out[:last]:
        if isinstance(m.get("content"), list) and any(b.get("type") == "tool_result" for b in m["content"]):
            m["content"] = [{**b, "cache_reference": b.get("tool_use_id", "")} if b.get("type") == "tool_result"
                            else b for b in m["content"]]
    tail = _blocks(out[last]["content"])
    if tail:
        tail[-1] = {**tail[-1], "cache_control": dict(CACHE_CONTROL)}
    out[last]["content"] = tail
    for pin in pins:
        out[pin.index]["content"] = _insert_after_results(_blocks(out[pin.index]["content"]), pin.block())
    return out


def cached_mode(policy: Any) -> dict[str, Any] | None:
    """The microcompact stage's options when it runs in ``mode: cached``, else None."""
    spec = policy.stage(Microcompact.name)
    if spec is None or not spec.enabled:
        return None
    options = {**Microcompact.defaults(), **dict(spec.options)}
    return options if options["mode"] == "cached" else None


def store_for_request(policy: Any, source: str, t: Transcript, given: Path | None) -> tuple[Any, str | None]:
    """(the store that keeps the pins, a warning or None) for ``view --to anthropic-request``: the one
    ``compact`` uses for this transcript (``--store``, the one it names, else ``.ctxkit/`` beside it);
    (None, None) unless microcompact runs in ``mode: cached``."""
    if cached_mode(policy) is None:
        return None, None
    folder, note = find_store(source, t, given)
    return Store(folder), note


def apply_cache_edits(body: dict[str, Any], t: Transcript, policy: Any, store: Any,
                      now: datetime | None = None) -> dict[str, Any] | None:
    """Give ``body`` (a request built by :func:`ctxkit.reports.request.build_request`) the cache edits of
    microcompact's ``mode: cached``, and record the pins in ``store`` (saved by the caller's ``flush``).

    Returns what was done (``{"pins": n, "deleted": [...], "new": [...], "dropped_pins": n}``), or None
    when the policy's microcompact is not in ``cached`` mode or the cache is cold (no cache edits then)."""
    options = cached_mode(policy)
    if options is None:
        return None
    messages = body.get("messages") or []
    gap = cache_gap_minutes(t.view(), now or Clock().now())
    if gap is not None and gap > options["gap_minutes"]:
        return None  # the stage clears old results in the transcript instead (time-based)
    key = session_key(t)
    earlier = load_pins(store.session_state(key))
    digests = prefix_digests(messages)
    kept = still_in_place(earlier, messages, digests)
    cached = {**Microcompact.defaults()["cached"], **dict(options.get("cached") or {})}
    new = choose_deletions(messages, policy.tools.compactable, {ref for p in kept for ref in p.deleted},
                           trigger=int(cached["trigger"]), keep_recent=int(options["keep_recent"]))
    users = [i for i, m in enumerate(messages) if m["role"] == "user"]
    if not users:
        new = []
    pins = [*kept, Pin(users[-1], digests[users[-1]], tuple(new))] if new else kept
    if pins != earlier:
        store.update_session_state(key, **{STATE_KEY: {"pins": [p.to_json() for p in pins]} if pins else None})
    body["messages"] = shape_request(copy.deepcopy(messages), pins)
    return {"pins": len(pins), "deleted": [ref for p in pins for ref in p.deleted], "new": new,
            "dropped_pins": len(earlier) - len(kept)}
