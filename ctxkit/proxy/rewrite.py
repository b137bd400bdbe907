"""The one function between the wire and the policy: a request body in, the body to send out.

Only ``messages`` is ever rewritten, and only when the conversation's ``ContextManager`` changed them and
the gate (:mod:`.gate`) says the change pays. Everything else — unknown fields, ``system``, ``tools``,
``metadata``, ``cache_control`` marks, blocks no stage manages — reaches the upstream as the agent wrote
it, because the new body is the old one with one key's value replaced, in the same key order. When the
messages are not replaced the original bytes are sent, untouched.

A body that is not JSON, has no message list, names a model ctxkit does not know, or that the manager
fails on, is passed through unmanaged with a warning: the proxy never answers an error of its own making.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

import anyio.to_thread
import orjson

from ..tokens.models import model_info
from .conversations import Conversation, Conversations
from .gate import DEFAULT_CACHE_TTL, Verdict, judge

Api = Literal["anthropic", "openai"]


@dataclass
class Outcome:
    """What to send upstream, and what to say about it once the response is in."""

    body: bytes
    conversation: Conversation | None = None
    verdict: Verdict | None = None  # None: the manager changed nothing (or the body was not managed)
    sent_managed: bool = False
    warning: str | None = None
    tokens_in: int | None = None
    tokens_sent: int | None = None
    #: the body sent is the manager's answer (managed, or unchanged by it): the response's usage counts
    #: what the manager returned, so it is fed back; not after a failure, the gate's veto or a dry run
    usage_fits: bool = False
    model: str | None = None
    api: Api | None = None
    messages: list[dict] | None = None  # the original messages (managed requests only)


def dump_body(body: dict[str, Any]) -> bytes:
    """Compact JSON, as agents send it; ``json`` for what orjson refuses (integers past 64 bits)."""
    try:
        return orjson.dumps(body)
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")


def _parse(raw: bytes) -> tuple[dict[str, Any] | None, str | None]:
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        try:  # orjson refuses lone surrogates and huge integers that json takes
            body = json.loads(raw)
        except (ValueError, RecursionError):
            return None, "the request body is not JSON"
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list) or not body["messages"]:
        return None, "the request body has no message list"
    if not all(isinstance(m, dict) for m in body["messages"]):
        return None, "the request's message list holds something other than messages"
    if not isinstance(body.get("model"), str):
        return None, "the request names no model"
    return body, None


def reuse_previous(previous: list[dict], messages: list[dict]) -> list[dict]:
    """``messages`` with each leading message equal to the previous request's replaced by that one's object.

    An agent resends its whole history with every request, parsed afresh into new objects; the manager's
    check that the conversation goes on, the gate's counts and :func:`unchanged` would each walk every
    message of two equal copies. Compared once here, the same objects are then told equal at a glance
    (one deep comparison a request instead of three: ~1 ms of a 240 KB request's CPU)."""
    k, n = 0, min(len(previous), len(messages))
    while k < n and (messages[k] is previous[k] or messages[k] == previous[k]):
        k += 1
    return previous[:k] + messages[k:] if k else messages


def unchanged(conv: Conversation, managed: list[dict], original: list[dict]) -> bool:
    """Whether the manager's answer is the original messages; the leading pairs the last request found
    equal, still the same objects on both sides, are not compared again."""
    n = min(len(managed), len(original))
    known = min(conv.same_upto, n)
    before_m, before_o = conv.last_managed, conv.last_original
    k = 0
    while k < known and managed[k] is before_m[k] and original[k] is before_o[k]:
        k += 1
    while k < n and managed[k] == original[k]:
        k += 1
    conv.last_managed, conv.last_original, conv.same_upto = managed, original, k
    return k == len(managed) == len(original)


async def prepare_body(raw: bytes, api: Api, conversations: Conversations, *, dry_run: bool = False,
                       count_only: bool = False) -> Outcome:
    """The body to send for ``raw`` (see the module docstring). ``count_only`` (``count_tokens``): the
    same choice, but the request does not count as a turn nor move what the cache is taken to hold."""
    body, problem = _parse(raw)
    if body is None:
        return Outcome(raw, warning=f"{problem}; passed through unmanaged")
    model = body["model"]
    if model_info(model) is None:
        return Outcome(raw, warning=f"unknown model {model!r}; passed through unmanaged")
    conv = conversations.get(body)
    async with conv.lock:
        original = reuse_previous(conv.last_original, body["messages"])
        try:
            managed = await _prepared(conv.manager, original, body, api)
        except Exception as exc:  # noqa: BLE001 - the manager's failure is not the client's: send what it sent
            return Outcome(raw, conv, warning=f"the policy failed ({type(exc).__name__}: {exc}); passed through "
                           "unmanaged")
        now = conversations.clock()
        warm = conv.last_sent_at is not None and now - conv.last_sent_at < DEFAULT_CACHE_TTL
        verdict = None
        if not unchanged(conv, managed, original):
            verdict = judge(original, managed, previous=conv.last_sent, cache_warm=warm,
                            requests_so_far=conv.requests + 1, model=model, counts=conv.counted)
        else:
            conv.counted[0].update(original)
        t_in = conv.counted[0].total
        send_managed = verdict is not None and verdict.send_managed and not dry_run
        sent = managed if send_managed else original
        if not count_only:
            conv.last_sent, conv.last_sent_at = sent, now
            conv.requests += 1
    out = dump_body({**body, "messages": managed}) if send_managed else raw
    t_sent = verdict.tokens_managed if send_managed else t_in
    return Outcome(out, conv, verdict, send_managed, tokens_in=t_in, tokens_sent=t_sent,
                   usage_fits=verdict is None or send_managed, model=model, api=api, messages=original)


async def _prepared(manager: Any, messages: list[dict], body: dict[str, Any], api: Api) -> list[dict]:
    """The manager's answer, computed in a worker thread: a long conversation's pipeline (or a summarizer
    call) must not hold up the other conversations' streams on the event loop."""
    system = body.get("system") if api == "anthropic" else None
    tools = body.get("tools")
    return await anyio.to_thread.run_sync(lambda: manager.prepare(messages, system=system, tools=tools))
