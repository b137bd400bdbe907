"""OpenAI Agents SDK: ``CtxkitInputFilter``, a ``call_model_input_filter`` that manages what the model is sent.

    from agents import RunConfig, Runner
    from ctxkit.integrations.openai_agents import CtxkitInputFilter

    ctxkit_filter = CtxkitInputFilter(policy="default", store=".ctxkit")
    result = await Runner.run(agent, "...", run_config=RunConfig(call_model_input_filter=ctxkit_filter),
                              hooks=ctxkit_filter.hooks)

Before each model call the SDK passes the input items and instructions to the filter; the items
go to ``ContextManager.prepare`` as OpenAI chat dicts (converted as the SDK converts them for Chat
Completions models) and come back as input items (the ones no stage changed are the original
items). The run keeps its own items: only what is sent is managed, so nothing the run recorded is
lost. ``hooks`` (a ``RunHooks``) records each response's usage with ``record_usage``; the filter
alone is not told it.

An assistant message and the function calls that follow it are one chat message, so they are
managed together; an item the Chat Completions format has no place for (reasoning, a hosted tool's
call such as a web search) goes with the message after it. With a server-side conversation (``conversation_id``, ``previous_response_id``)
the server holds the history and the SDK sends only new items: use ctxkit without one.
"""
from __future__ import annotations

from typing import Any

from agents import FunctionTool, RunHooks, UserError
from agents.models.chatcmpl_converter import Converter
from agents.run_config import CallModelData, ModelInputData

from ctxkit.live import ContextManager

from ._convert import api_usage, back_to_framework, text_of


def to_pairs(items: list[Any]) -> list[tuple[dict, list[Any]]]:
    """Each chat message with the input items it was made from."""
    pairs: list[tuple[dict, list[Any]]] = []
    pending: list[Any] = []  # items with no chat message of their own: they go with the next one
    for item in items:
        try:
            converted = Converter.items_to_messages([item])
        except UserError:  # a hosted tool's call (web search, file search, ...), an item reference
            converted = []
        if not converted:
            pending.append(item)
            continue
        for d in converted:
            prev = pairs[-1][0] if pairs else None
            if (d.get("role") == "assistant" and d.get("tool_calls") and not d.get("content")
                    and prev is not None and prev.get("role") == "assistant" and not pending):
                prev["tool_calls"] = [*(prev.get("tool_calls") or []), *d["tool_calls"]]
                pairs[-1][1].append(item)
            else:
                pairs.append((dict(d), [*pending, item]))
                pending = []
    if pending and pairs:
        pairs[-1][1].extend(pending)
    return pairs


def _user_content(content: Any) -> Any:
    if isinstance(content, str) or content is None:
        return content or ""
    parts = []
    for p in content:
        if p.get("type") == "image_url":
            url = p["image_url"] if isinstance(p["image_url"], str) else p["image_url"].get("url")
            parts.append({"type": "input_image", "image_url": url, "detail": "auto"})
        else:
            parts.append({"type": "input_text", "text": p.get("text", "")})
    return parts


def from_dict(d: dict) -> list[dict]:
    """A chat message as Responses input items (what a stage changed or added)."""
    role = d.get("role")
    if role == "tool":
        content = d.get("content")
        return [{"type": "function_call_output", "call_id": d.get("tool_call_id"),
                 "output": content if isinstance(content, str) else text_of(content)}]
    if role == "assistant":
        out: list[dict] = []
        if text := text_of(d.get("content")):
            out.append({"role": "assistant", "content": text})
        for call in d.get("tool_calls") or []:
            fn = call.get("function") or {}
            out.append({"type": "function_call", "call_id": call["id"], "name": fn.get("name", ""),
                        "arguments": fn.get("arguments") or "{}"})
        return out
    if role in ("system", "developer"):
        return [{"role": role, "content": text_of(d.get("content"))}]
    return [{"role": "user", "content": _user_content(d.get("content"))}]


def from_dicts(dicts: list[dict], originals: list[Any] = (), pairs: list[tuple[dict, list[Any]]] | None = None) -> list[Any]:
    """Chat dicts as input items; a dict equal to one made from ``originals`` is those items, a tool
    result whose content a stage changed is its original item with the new output (id, status kept).
    ``pairs``: ``to_pairs(originals)``, when the caller has it (converting is done once a call)."""
    outputs = {item["call_id"]: item for item in originals
               if isinstance(item, dict) and item.get("type") == "function_call_output"}

    def convert(d: dict) -> list[Any]:
        original = outputs.get(d.get("tool_call_id")) if d.get("role") == "tool" else None
        if original is not None:
            return [{**original, "output": from_dict(d)[0]["output"]}]
        return from_dict(d)

    return back_to_framework(pairs if pairs is not None else to_pairs(originals), dicts, convert)


def function_tools(agent: Any) -> list[dict] | None:
    """The agent's function tools as the API is sent them (name, description, parameters): counted as
    the request's overhead until a usage is recorded. Hosted tools have no definition to count."""
    tools = [{"name": t.name, "description": t.description, "parameters": t.params_json_schema}
             for t in getattr(agent, "tools", None) or () if isinstance(t, FunctionTool)]
    return tools or None


class _UsageHooks(RunHooks):
    def __init__(self, manager: ContextManager):
        self.manager = manager

    async def on_llm_end(self, context, agent, response) -> None:
        u = response.usage
        if u.input_tokens or u.output_tokens:
            cached = getattr(u.input_tokens_details, "cached_tokens", 0) or 0
            self.manager.record_usage(api_usage(u.input_tokens, u.output_tokens, cached))


class CtxkitInputFilter:
    """An Agents SDK ``call_model_input_filter`` running a ctxkit policy before every model call.

    ``policy``, ``store``, ``model``, ``context_window`` and ``now`` are ``ContextManager``'s; or pass
    a ``manager`` of your own. One filter holds one conversation's decisions: give each
    conversation its own. Pass ``hooks`` to ``Runner.run`` for the usage to be recorded.
    """

    def __init__(self, policy: str = "default", store: str = ".ctxkit", *, model: str | None = None,
                 context_window: int | None = None, now: Any = None, manager: ContextManager | None = None):
        self.manager = manager or ContextManager(policy=policy, store=store, model=model,
                                                 context_window=context_window, now=now)
        self.hooks = _UsageHooks(self.manager)

    async def __call__(self, data: CallModelData) -> ModelInputData:
        items = list(data.model_data.input)
        pairs = to_pairs(items)
        managed = await self.manager.aprepare([d for d, _ in pairs], system=data.model_data.instructions,
                                              tools=function_tools(data.agent))
        return ModelInputData(input=from_dicts(managed, items, pairs), instructions=data.model_data.instructions)

    def restore(self, items: list[Any]) -> list[Any]:
        """The items with every original ctxkit stored put back (what ``ContextManager.restore`` does)."""
        pairs = to_pairs(items)
        return from_dicts(self.manager.restore([d for d, _ in pairs]), items, pairs)
