"""Pydantic AI: ``CtxkitHistoryProcessor``, a history processor that manages what the model is sent.

    from pydantic_ai import Agent
    from pydantic_ai.capabilities import ProcessHistory
    from ctxkit.integrations.pydantic_ai import CtxkitHistoryProcessor

    ctxkit_history = CtxkitHistoryProcessor(policy="default", store=".ctxkit")
    agent = Agent(model, capabilities=[ProcessHistory(ctxkit_history)])

(Pydantic AI 2 takes history processors as the ``ProcessHistory`` capability; the
``history_processors`` argument of version 1 is gone.) Before each model request Pydantic AI
passes the history to its processors and continues the run
with what they return, so the run's history *is* the managed one: a persisted output's preview
or a summary replaces what it stands for there too. The originals are in the store, and
``processor.restore(messages)`` puts them back (``result.all_messages()`` included). Each
``ModelRequest`` becomes one Anthropic user message and each ``ModelResponse`` one assistant
message, so a message no stage changed comes back as the original object; the system prompt
parts go to ``prepare`` as ``system`` and stay at the start of the history. The usage of each new
``ModelResponse`` is recorded with ``record_usage``.

A request whose tool returns a stage persisted or cleared is the original with their new content;
anything else a stage rewrote is rebuilt from its dict (a tool return keeps its tool name and call
id, a user prompt its text and images; other media are counted as a line naming them). Parts the
Messages API has no place for stay in their message, uncounted; a message of only such parts goes
with the next message.
"""
from __future__ import annotations

import base64
import dataclasses
from typing import Any

from pydantic_ai.messages import (
    BinaryContent,
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    SystemPromptPart,
    TextContent,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from ctxkit.live import ContextManager

from ._convert import api_usage, back_to_framework, text_of


def _user_block(item: Any) -> dict | None:
    """One item of a user prompt as an Anthropic block: text and images as the API has them, other
    media (documents, audio, video) as a line of text naming them (what a token count needs)."""
    if isinstance(item, str):
        return {"type": "text", "text": item}
    if isinstance(item, TextContent):
        return {"type": "text", "text": item.content}
    if isinstance(item, ImageUrl):
        return {"type": "image", "source": {"type": "url", "url": item.url}}
    if isinstance(item, BinaryContent):
        if item.is_image:
            return {"type": "image", "source": {"type": "base64", "media_type": item.media_type,
                                                "data": base64.b64encode(item.data).decode()}}
        return {"type": "text", "text": f"[{item.media_type}, {len(item.data)} bytes]"}
    if hasattr(item, "url"):
        return {"type": "text", "text": f"[{getattr(item, 'kind', 'file')}: {item.url}]"}
    return None  # a cache point: nothing the model reads


def _user_item(block: dict) -> Any:
    if block.get("type") != "image":
        return block.get("text", "")
    source = block.get("source") or {}
    if source.get("type") == "url":
        return ImageUrl(url=source["url"])
    return BinaryContent(data=base64.b64decode(source.get("data", "")), media_type=source.get("media_type", "image/png"))


def _aligned_blocks(message: ModelRequest) -> list[tuple[dict, int]]:
    """The request's Anthropic blocks, each with the index of the part it was made from. Parts the
    Messages API has no place for (system prompt parts, Pydantic AI's own bookkeeping parts) make none."""
    blocks: list[tuple[dict, int]] = []
    for k, part in enumerate(message.parts):
        if isinstance(part, UserPromptPart):
            items = [part.content] if isinstance(part.content, str) else part.content
            blocks += [(b, k) for b in map(_user_block, items) if b is not None]
        elif isinstance(part, ToolReturnPart):
            blocks.append(({"type": "tool_result", "tool_use_id": part.tool_call_id,
                            "content": part.model_response_str()}, k))
        elif isinstance(part, RetryPromptPart):
            if part.tool_name is None:
                blocks.append(({"type": "text", "text": part.model_response()}, k))
            else:
                blocks.append(({"type": "tool_result", "tool_use_id": part.tool_call_id,
                                "content": part.model_response(), "is_error": True}, k))
    return blocks


def _request_blocks(message: ModelRequest) -> list[dict]:
    return [b for b, _ in _aligned_blocks(message)]


def _response_blocks(message: ModelResponse) -> list[dict]:
    blocks: list[dict] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            blocks.append({"type": "text", "text": part.content})
        elif isinstance(part, ToolCallPart):
            blocks.append({"type": "tool_use", "id": part.tool_call_id, "name": part.tool_name,
                           "input": part.args_as_dict()})
        elif isinstance(part, ThinkingPart) and part.content:
            blocks.append({"type": "thinking", "thinking": part.content, "signature": part.signature or ""})
    return blocks


def _dict_of(m: ModelMessage) -> dict:
    return ({"role": "user", "content": _request_blocks(m)} if isinstance(m, ModelRequest)
            else {"role": "assistant", "content": _response_blocks(m)})


def _pairs(messages: list[ModelMessage]) -> list[tuple[dict, list[ModelMessage]]]:
    """Each message with its Anthropic dict. A message with nothing the API has a place for (a request
    of system prompt parts only: they go to ``prepare`` as ``system``) goes with the next message."""
    out: list[tuple[dict, list[ModelMessage]]] = []
    pending: list[ModelMessage] = []
    for m in messages:
        d = _dict_of(m)
        if d["content"]:
            out.append((d, [*pending, m]))
            pending = []
        else:
            pending.append(m)
    if pending and out:
        out[-1][1].extend(pending)
    return out


def _signature(d: dict) -> tuple:
    content = d["content"] if isinstance(d["content"], list) else ()
    return d["role"], tuple((b.get("type"), b.get("tool_use_id") or b.get("id")) for b in content)


def _patched(d: dict, originals: list[ModelMessage]) -> list[ModelMessage] | None:
    """An original request with only its tool returns changed (persisted, cleared): the original with
    their new content, every other part and field kept. None when the change is another."""
    request = originals[-1]
    if not isinstance(request, ModelRequest):
        return None
    aligned = _aligned_blocks(request)
    parts = list(request.parts)
    for (old, k), new in zip(aligned, d["content"], strict=True):
        if old == new:
            continue
        if new.get("type") != "tool_result" or not isinstance(parts[k], ToolReturnPart):
            return None
        parts[k] = dataclasses.replace(parts[k], content=text_of(new.get("content")))
    return [*originals[:-1], dataclasses.replace(request, parts=parts)]


def to_dicts(messages: list[ModelMessage]) -> list[dict]:
    """Pydantic AI messages as Anthropic message dicts, one per message (system prompt parts left out)."""
    return [d for d, _ in _pairs(messages)]


def system_parts(messages: list[ModelMessage]) -> list[SystemPromptPart]:
    return [p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, SystemPromptPart)]


def _tool_names(messages: list[ModelMessage], dicts: list[dict]) -> dict[str, str]:
    names = {p.tool_call_id: p.tool_name for m in messages if isinstance(m, ModelResponse)
             for p in m.parts if isinstance(p, ToolCallPart)}
    for d in dicts:
        for b in d["content"] if isinstance(d["content"], list) else ():
            if b.get("type") == "tool_use":
                names[b["id"]] = b["name"]
    return names


def _from_dict(d: dict, names: dict[str, str]) -> list[ModelMessage]:
    content = d["content"]
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    if d["role"] == "assistant":
        parts: list[Any] = []
        for b in blocks:
            if b.get("type") == "text":
                parts.append(TextPart(b["text"]))
            elif b.get("type") == "tool_use":
                parts.append(ToolCallPart(b["name"], b.get("input"), tool_call_id=b["id"]))
            elif b.get("type") == "thinking":
                parts.append(ThinkingPart(b.get("thinking", ""), signature=b.get("signature") or None))
        return [ModelResponse(parts)]
    parts = []
    prompt: list[Any] = []  # the blocks of one user prompt: text and images between tool results
    for b in [*blocks, None]:
        if b is not None and b.get("type") in ("text", "image"):
            prompt.append(_user_item(b))
            continue
        if prompt:
            parts.append(UserPromptPart(prompt[0] if len(prompt) == 1 and isinstance(prompt[0], str) else prompt))
            prompt = []
        if b is not None and b.get("type") == "tool_result":
            parts.append(ToolReturnPart(names.get(b["tool_use_id"], ""), text_of(b.get("content")),
                                        tool_call_id=b["tool_use_id"]))
    return [ModelRequest(parts)]


def from_dicts(dicts: list[dict], originals: list[ModelMessage] = (),
               pairs: list[tuple[dict, list[ModelMessage]]] | None = None) -> list[ModelMessage]:
    """Anthropic message dicts as Pydantic AI messages; a dict equal to one made from ``originals`` is
    that message, one that differs from it only in tool results is that message with their new
    content. The originals' system prompt parts stay first in the history. ``pairs``: ``_pairs(originals)``,
    when the caller has it (converting is most of what a call costs on a long history: it is done once)."""
    names = _tool_names(originals, dicts)
    pairs = pairs if pairs is not None else _pairs(originals)
    same_shape = {_signature(d): objects for d, objects in pairs}

    def convert(d: dict) -> list[ModelMessage]:
        shaped = same_shape.get(_signature(d))
        return (shaped and _patched(d, shaped)) or _from_dict(d, names)

    out = back_to_framework(pairs, dicts, convert)
    system = system_parts(originals)
    if system and not system_parts(out):
        first = next((i for i, m in enumerate(out) if isinstance(m, ModelRequest)), None)
        if first is None:
            out.insert(0, ModelRequest(list(system)))
        else:
            out[first] = dataclasses.replace(out[first], parts=[*system, *out[first].parts])
    return out


def usage_of(response: ModelResponse) -> dict | None:
    u = response.usage
    if not (u.input_tokens or u.output_tokens):
        return None
    return api_usage(u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens)


class CtxkitHistoryProcessor:
    """A Pydantic AI history processor running a ctxkit policy before every model request.

    ``policy``, ``store``, ``model``, ``context_window`` and ``now`` are ``ContextManager``'s; or pass
    a ``manager`` of your own. One processor holds one conversation's decisions: give each
    conversation its own.
    """

    def __init__(self, policy: str = "default", store: str = ".ctxkit", *, model: str | None = None,
                 context_window: int | None = None, now: Any = None, manager: ContextManager | None = None):
        self.manager = manager or ContextManager(policy=policy, store=store, model=model,
                                                 context_window=context_window, now=now)
        self._last_recorded: ModelResponse | None = None
        self._prepared = False

    async def __call__(self, messages: list[ModelMessage]) -> list[ModelMessage]:
        # the newest response answers what this processor prepared last (a new processor, on a history
        # from before it, has nothing to attribute a usage to)
        responses = [m for m in messages if isinstance(m, ModelResponse)]
        if self._prepared and responses and responses[-1] is not self._last_recorded:
            self._last_recorded = responses[-1]
            if usage := usage_of(responses[-1]):
                self.manager.record_usage(usage)
        system = "\n\n".join(p.content for p in system_parts(messages)) or None
        pairs = _pairs(messages)
        managed = await self.manager.aprepare([d for d, _ in pairs], system=system)
        self._prepared = True
        return from_dicts(managed, messages, pairs)

    def restore(self, messages: list[ModelMessage]) -> list[ModelMessage]:
        """The messages with every original ctxkit stored put back (what ``ContextManager.restore`` does)."""
        pairs = _pairs(messages)
        return from_dicts(self.manager.restore([d for d, _ in pairs]), messages, pairs)
