"""LangChain v1: ``CtxkitMiddleware``, an ``AgentMiddleware`` that manages what the model is sent.

    from langchain.agents import create_agent
    from ctxkit.integrations.langchain import CtxkitMiddleware

    agent = create_agent(model, tools, middleware=[CtxkitMiddleware(policy="default", store=".ctxkit")])

It wraps each model call (``wrap_model_call``): the request's messages go to
``ContextManager.prepare`` as OpenAI chat dicts and come back as LangChain messages (the ones no
stage changed are the original objects). The agent's state keeps the full history: only the
request is managed, so nothing the agent recorded is lost, and the ContextManager's frozen
decisions keep what the model is sent the same from call to call (the provider's cache stays
warm). The model's token usage, when it reports one, is recorded with ``record_usage``.
"""
from __future__ import annotations

from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ToolMessage,
    convert_to_messages,
    convert_to_openai_messages,
)
from langchain_core.utils.function_calling import convert_to_openai_tool

from ctxkit.live import ContextManager

from ._convert import api_usage, back_to_framework


def to_dicts(messages: list[BaseMessage]) -> list[dict]:
    """LangChain messages as OpenAI chat dicts, one dict per message."""
    return [convert_to_openai_messages(m) for m in messages]


def from_dicts(dicts: list[dict], originals: list[BaseMessage] = (),
               original_dicts: list[dict] | None = None) -> list[BaseMessage]:
    """OpenAI chat dicts as LangChain messages; a dict equal to one made from ``originals`` is that
    message, a tool result whose content a stage changed is its original with the new content (id,
    name, artifact kept). ``original_dicts``: ``to_dicts(originals)``, when the caller has it (converting
    is most of what a call costs on a long history: it is done once)."""
    made = original_dicts if original_dicts is not None else to_dicts(list(originals))
    pairs = [(d, [m]) for d, m in zip(made, originals, strict=True)]
    tool_messages = {m.tool_call_id: m for m in originals if isinstance(m, ToolMessage)}

    def convert(d: dict) -> list[BaseMessage]:
        original = tool_messages.get(d.get("tool_call_id")) if d.get("role") == "tool" else None
        if original is not None:
            return [original.model_copy(update={"content": d.get("content")})]
        return convert_to_messages([d])

    return back_to_framework(pairs, dicts, convert)


def usage_of(message: Any) -> dict | None:
    """The Anthropic-shaped usage of a LangChain ``AIMessage`` (its ``usage_metadata`` counts cached
    input tokens inside ``input_tokens``; the API's usage counts them apart)."""
    meta = getattr(message, "usage_metadata", None)
    if not meta:
        return None
    details = meta.get("input_token_details") or {}
    return api_usage(meta.get("input_tokens", 0), meta.get("output_tokens", 0),
                     details.get("cache_read") or 0, details.get("cache_creation") or 0)


class CtxkitMiddleware(AgentMiddleware):
    """Runs a ctxkit policy on every model request of a LangChain agent.

    ``policy``, ``store``, ``model``, ``context_window`` and ``now`` are ``ContextManager``'s; or pass
    a ``manager`` of your own. One middleware holds one conversation's decisions: give each
    conversation (each thread) its own.
    """

    def __init__(self, policy: str = "default", store: str = ".ctxkit", *, model: str | None = None,
                 context_window: int | None = None, now: Any = None, manager: ContextManager | None = None):
        super().__init__()
        self.manager = manager or ContextManager(policy=policy, store=store, model=model,
                                                 context_window=context_window, now=now)

    def _request_args(self, request) -> tuple[list[dict], dict]:
        system = request.system_message.text if request.system_message is not None else None
        tools = [convert_to_openai_tool(t) for t in request.tools] or None
        return to_dicts(request.messages), {"system": system, "tools": tools}

    def _record(self, response: Any) -> None:
        """The usage of the handler's answer (a ``ModelResponse``; an inner middleware may give an ``AIMessage``)."""
        inner = getattr(response, "model_response", response)
        for m in getattr(inner, "result", [inner]):
            if isinstance(m, AIMessage) and (usage := usage_of(m)):
                self.manager.record_usage(usage)

    def wrap_model_call(self, request, handler):
        dicts, kwargs = self._request_args(request)
        managed = self.manager.prepare(dicts, **kwargs)
        response = handler(request.override(messages=from_dicts(managed, request.messages, dicts)))
        self._record(response)
        return response

    async def awrap_model_call(self, request, handler):
        dicts, kwargs = self._request_args(request)
        managed = await self.manager.aprepare(dicts, **kwargs)
        response = await handler(request.override(messages=from_dicts(managed, request.messages, dicts)))
        self._record(response)
        return response

    def restore(self, messages: list[BaseMessage]) -> list[BaseMessage]:
        """The messages with every original ctxkit stored put back (what ``ContextManager.restore`` does)."""
        dicts = to_dicts(messages)
        return from_dicts(self.manager.restore(dicts), messages, dicts)
