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

What a stage rewrites is rebuilt from its dict: a changed tool return keeps its tool name and call
id, a user prompt its text and images; other media (documents, audio, video) are counted as a line
naming them, and a rebuilt message carries that line instead.
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


def _request_blocks(message: ModelRequest) -> list[dict]:
    blocks: list[dict] = []
    for part in message.parts:
        if isinstance(part, UserPromptPart):
            items = [part.content] if isinstance(part.content, str) else part.content
            blocks += [b for b in map(_user_block, items) if b is not None]
        elif isinstance(part, ToolReturnPart):
            blocks.append({"type": "tool_result", "tool_use_id": part.tool_call_id,
                           "content": part.model_response_str()})
        elif isinstance(part, RetryPromptPart):
            if part.tool_name is None:
                blocks.append({"type": "text", "text": part.model_response()})
            else:
                blocks.append({"type": "tool_result", "tool_use_id": part.tool_call_id,
                               "content": part.model_response(), "is_error": True})
    return blocks


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


def _pairs(messages: list[ModelMessage]) -> list[tuple[dict, list[ModelMessage]]]:
    """Each message with its Anthropic dict; a request holding only system prompt parts has none
    (they go to ``prepare`` as ``system``)."""
    out = []
    for m in messages:
        d = ({"role": "user", "content": _request_blocks(m)} if isinstance(m, ModelRequest)
             else {"role": "assistant", "content": _response_blocks(m)})
        if d["content"]:
            out.append((d, [m]))
    return out


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


def from_dicts(dicts: list[dict], originals: list[ModelMessage] = ()) -> list[ModelMessage]:
    """Anthropic message dicts as Pydantic AI messages; a dict equal to one made from ``originals`` is
    that message. The originals' system prompt parts stay first in the history."""
    names = _tool_names(originals, dicts)
    out = back_to_framework(_pairs(originals), dicts,
                            lambda d: _from_dict(d, names))
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
        managed = await self.manager.aprepare(to_dicts(messages), system=system)
        self._prepared = True
        return from_dicts(managed, messages)

    def restore(self, messages: list[ModelMessage]) -> list[ModelMessage]:
        """The messages with every original ctxkit stored put back (what ``ContextManager.restore`` does)."""
        return from_dicts(self.manager.restore(to_dicts(messages)), messages)
