"""ctxkit.integrations.langchain: a LangChain v1 agent (``create_agent``) with ``CtxkitMiddleware``,
driven by LangChain's own fake chat model through a long, tool-heavy run (tests/agent_scenario.py)."""
from __future__ import annotations

import asyncio
import json
import re

import pytest

pytest.importorskip("langchain.agents", reason="the langchain extra is not installed (pip install -e '.[test]')")

from agent_scenario import NOW, PERSISTED, STEPS, SUMMARY, bash_output, command, unpaired_openai, write_policy
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage, convert_to_openai_messages
from langchain_core.tools import tool

from ctxkit.integrations.langchain import CtxkitMiddleware
from ctxkit.tokens import make_counter


class ToolCallingFakeModel(GenericFakeChatModel):
    """LangChain's scripted fake chat model, able to take tools (``create_agent`` binds them), keeping
    every request it was sent and reporting its usage as a provider would (the rough count of it)."""

    received: list = []
    overhead: int = 0  # what the provider counts besides the messages (tool definitions, say)

    def bind_tools(self, tools, **kwargs):
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.received.append(list(messages))
        result = super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)
        sent = tokens(messages) + self.overhead
        result.generations[0].message.usage_metadata = {"input_tokens": sent, "output_tokens": 40,
                                                        "total_tokens": sent + 40}
        return result


def script() -> list[AIMessage]:
    calls = [AIMessage("", tool_calls=[{"name": "Bash", "args": {"command": command(i)}, "id": f"call_{i}"}])
             for i in range(STEPS)]
    return [*calls, AIMessage("Every worker finished its batches.")]


@tool("Bash")
def bash(command: str) -> str:
    """Run a shell command."""
    return bash_output(command)


def run_agent(middleware: list, overhead: int = 0) -> tuple[ToolCallingFakeModel, list]:
    model = ToolCallingFakeModel(messages=iter(script()), received=[], overhead=overhead)
    agent = create_agent(model, [bash], system_prompt="You look after the workers.", middleware=middleware)
    result = agent.invoke({"messages": [HumanMessage("Check every worker's log.")]}, {"recursion_limit": 4 * STEPS})
    return model, result["messages"]


def tokens(request: list) -> int:
    return make_counter("rough").count_messages(convert_to_openai_messages(request))


@pytest.fixture(scope="module")
def managed_run(tmp_path_factory):
    """One managed run, which the tests below look at from several sides."""
    tmp_path = tmp_path_factory.mktemp("managed")
    middleware = CtxkitMiddleware(policy=write_policy(tmp_path), store=str(tmp_path / ".ctxkit"), now=NOW)
    model, state = run_agent([middleware])
    return middleware, model, state


def test_the_model_is_sent_fewer_tokens_than_without_the_middleware(managed_run):
    _, managed, _ = managed_run
    plain, _ = run_agent([])
    assert len(managed.received) == len(plain.received) == STEPS + 1
    assert sum(map(tokens, managed.received)) < 0.8 * sum(map(tokens, plain.received))
    assert tokens(managed.received[-1]) < tokens(plain.received[-1]) / 2


def test_the_model_receives_persisted_outputs_then_a_summary_never_an_unpaired_call(managed_run):
    _, model, _ = managed_run
    for i, request in enumerate(model.received):
        assert not unpaired_openai(convert_to_openai_messages(request)), f"request {i}"
    texts = [[m.text for m in request] for request in model.received]
    assert texts[0][0] == "You look after the workers."  # the system prompt, then the messages
    assert any(PERSISTED in t for t in texts[4])  # worker 3's 7,000 characters, persisted with a preview
    first_summary = next(i for i, t in enumerate(texts) if t[1].startswith(SUMMARY))
    assert 0 < first_summary < STEPS
    assert all(t[0] == "You look after the workers." and t[1].startswith(SUMMARY) for t in texts[first_summary:])


def test_a_persisted_output_is_its_tool_message_with_the_preview(managed_run):
    """The model is sent the agent's own ToolMessage (its id, name and status) with the preview as content."""
    _, model, state = managed_run
    sent = next(m for m in model.received[4] if isinstance(m, ToolMessage) and PERSISTED in m.text)
    kept = next(m for m in state if isinstance(m, ToolMessage) and m.tool_call_id == sent.tool_call_id)
    assert sent is not kept and sent.content != kept.content
    assert (sent.id, sent.name, sent.status) == (kept.id, "Bash", kept.status) and kept.id


def test_the_agent_state_keeps_every_output_and_restore_gives_the_originals_back(managed_run):
    middleware, model, state = managed_run
    outputs = [m for m in state if isinstance(m, ToolMessage)]
    assert [m.content for m in outputs] == [bash_output(command(i)) for i in range(STEPS)]
    before_summary = model.received[STEPS // 2][1:]  # what the model was sent after the system prompt
    assert any(PERSISTED in m.text for m in before_summary)
    restored = middleware.restore(before_summary)
    assert convert_to_openai_messages(restored) == convert_to_openai_messages(state[:len(restored)])
    last = model.received[-1][1:]  # a summary, then the turns since
    assert last[0].text.startswith(SUMMARY)
    restored = middleware.restore(last)
    assert convert_to_openai_messages(restored) == convert_to_openai_messages(state[:-1])  # all but the answer


def test_an_async_agent_is_sent_the_same_requests(managed_run, tmp_path):
    """``ainvoke`` goes through ``awrap_model_call`` and ``aprepare``: the same decisions, the same bytes."""
    sync_middleware, sync_model, _ = managed_run
    store = tmp_path / "async" / ".ctxkit"
    middleware = CtxkitMiddleware(policy=write_policy(tmp_path), store=str(store), now=NOW)
    model = ToolCallingFakeModel(messages=iter(script()), received=[])
    agent = create_agent(model, [bash], system_prompt="You look after the workers.", middleware=[middleware])
    asyncio.run(agent.ainvoke({"messages": [HumanMessage("Check every worker's log.")]}, {"recursion_limit": 4 * STEPS}))
    sent_async = json.dumps([convert_to_openai_messages(r) for r in model.received])
    sent_sync = json.dumps([convert_to_openai_messages(r) for r in sync_model.received])
    assert PERSISTED in sent_async and SUMMARY in sent_async
    # the same bytes but for where the store is (and so the hash of an archive that names it)
    blob = re.compile(r"blobs/[0-9a-f]{2}/[0-9a-f]{64}")
    assert blob.sub("BLOB", sent_async.replace(str(store), str(sync_middleware.manager.store_dir))) == blob.sub("BLOB", sent_sync)


def first_summary(model: ToolCallingFakeModel) -> int:
    return next(i for i, request in enumerate(model.received) if request[1].text.startswith(SUMMARY))


def test_the_usage_the_model_reports_counts(managed_run, tmp_path):
    """The middleware records each answer's ``usage_metadata``: a model that counts 8,000 more tokens
    than the messages reaches the threshold, and is sent a summary, sooner."""
    _, honest, _ = managed_run
    middleware = CtxkitMiddleware(policy=write_policy(tmp_path), store=str(tmp_path / "heavy"), now=NOW)
    heavy, _ = run_agent([middleware], overhead=8000)
    assert first_summary(heavy) < first_summary(honest)


def test_each_message_is_converted_once_a_model_call(tmp_path, monkeypatch):
    # converting LangChain messages is most of what a call costs on a long history (45 ms for 1,500
    # messages against 6 ms for the ContextManager's call): each was converted twice
    import ctxkit.integrations.langchain as adapter

    converted, given = [], []
    real = adapter.convert_to_openai_messages
    monkeypatch.setattr(adapter, "convert_to_openai_messages", lambda m: converted.append(m) or real(m))
    middleware = CtxkitMiddleware(policy=write_policy(tmp_path), store=str(tmp_path / ".ctxkit"), now=NOW)
    wrap = middleware.wrap_model_call
    middleware.wrap_model_call = lambda request, handler: given.append(len(request.messages)) or wrap(request, handler)
    run_agent([middleware])
    assert len(given) == STEPS + 1 and len(converted) == sum(given)
