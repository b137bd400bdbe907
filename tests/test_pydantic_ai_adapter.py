"""ctxkit.integrations.pydantic_ai: a Pydantic AI agent with ``CtxkitHistoryProcessor``, driven by
Pydantic AI's own ``FunctionModel`` through a long, tool-heavy run (tests/agent_scenario.py)."""
from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("pydantic_ai", reason="the pydantic-ai extra is not installed (pip install -e '.[test]')")

from agent_scenario import (
    NOW,
    PERSISTED,
    STEPS,
    SUMMARY,
    bash_output,
    command,
    unpaired_anthropic,
    write_policy,
)
from pydantic_ai import Agent
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart, UserPromptPart
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.usage import RequestUsage, UsageLimits

from ctxkit.integrations.pydantic_ai import CtxkitHistoryProcessor, system_parts, to_dicts
from ctxkit.tokens import make_counter

SYSTEM = "You look after the workers."
PROMPT = "Check every worker's log."


def tokens(messages) -> int:
    return make_counter("rough").count_messages(to_dicts(messages))


def run_agent(processors: list, overhead: int = 0) -> tuple[list, list]:
    """The requests the model was sent, and the run's history at the end."""
    received: list = []

    def model(messages, info) -> ModelResponse:
        received.append(list(messages))
        i = len(received) - 1
        # the usage a provider reports: the messages and what it counts besides them (tool definitions, say)
        usage = RequestUsage(input_tokens=tokens(messages) + overhead, output_tokens=40)
        if i < STEPS:
            return ModelResponse([ToolCallPart("Bash", {"command": command(i)}, tool_call_id=f"call_{i}")], usage=usage)
        return ModelResponse([TextPart("Every worker finished its batches.")], usage=usage)

    agent = Agent(FunctionModel(model), system_prompt=SYSTEM, capabilities=[ProcessHistory(p) for p in processors])

    @agent.tool_plain(name="Bash")
    def bash(command: str) -> str:
        """Run a shell command."""
        return bash_output(command)

    result = agent.run_sync(PROMPT, usage_limits=UsageLimits(request_limit=STEPS + 5))
    return received, result.all_messages()


@pytest.fixture(scope="module")
def managed_run(tmp_path_factory):
    """One managed run, which the tests below look at from several sides."""
    tmp_path = tmp_path_factory.mktemp("managed")
    processor = CtxkitHistoryProcessor(policy=write_policy(tmp_path), store=str(tmp_path / ".ctxkit"), now=NOW)
    received, history = run_agent([processor])
    return processor, received, history


def test_the_model_is_sent_persisted_outputs_then_a_summary_fewer_tokens_calls_paired(managed_run):
    _, received, _ = managed_run
    plain, _ = run_agent([])
    assert len(received) == len(plain) == STEPS + 1
    assert sum(map(tokens, received)) < 0.8 * sum(map(tokens, plain))
    for i, request in enumerate(received):
        assert not unpaired_anthropic(to_dicts(request)), f"request {i}"
        assert [p.content for p in system_parts(request)] == [SYSTEM], f"request {i}"  # kept first, once
    text = [str(to_dicts(request)) for request in received]
    assert PERSISTED in text[4]  # worker 3's 7,000 characters, persisted with a preview
    first_summary = next(i for i, t in enumerate(text) if SUMMARY in t)
    assert 0 < first_summary < STEPS
    assert all(to_dicts(r)[0]["content"][0]["text"].startswith(SUMMARY) for r in received[first_summary:])


def test_unchanged_messages_are_the_original_objects(managed_run):
    _, received, _ = managed_run
    first = received[0][0]
    assert isinstance(first, ModelRequest) and received[1][0] is first  # the prompt, as the run made it
    call = received[2][1]
    assert isinstance(call, ModelResponse) and call.usage.input_tokens > 0  # its usage and timestamp kept


def test_restore_gives_the_run_its_original_history_back(managed_run):
    processor, _, history = managed_run
    assert SUMMARY in str(to_dicts(history))  # Pydantic AI keeps what the processor returned
    restored = processor.restore(history)
    outputs = [p.content for m in restored for p in getattr(m, "parts", ()) if isinstance(p, ToolReturnPart)]
    assert outputs == [bash_output(command(i)) for i in range(STEPS)]
    assert [p.tool_name for m in restored for p in m.parts if isinstance(p, ToolReturnPart)] == ["Bash"] * STEPS
    assert not unpaired_anthropic(to_dicts(restored))
    assert to_dicts(restored)[0]["content"][0]["text"] == PROMPT


def first_summary(received: list) -> int:
    return next(i for i, request in enumerate(received) if SUMMARY in str(to_dicts(request)))


def test_the_usage_the_model_reports_counts(managed_run, tmp_path):
    """The processor records each response's usage: a model that counts 8,000 more tokens than the
    messages reaches the threshold, and is sent a summary, sooner."""
    _, honest, _ = managed_run
    processor = CtxkitHistoryProcessor(policy=write_policy(tmp_path), store=str(tmp_path / "heavy"), now=NOW)
    heavy, _ = run_agent([processor], overhead=8000)
    assert first_summary(heavy) < first_summary(honest)


def test_a_rebuilt_message_keeps_its_text_images_and_tool_names():
    """What a stage changed comes back from its Anthropic dict: the prompt's text and images (by URL
    or inline) and each tool return's tool name and call id."""
    from pydantic_ai.messages import BinaryContent, ImageUrl

    from ctxkit.integrations.pydantic_ai import from_dicts

    png = BinaryContent(data=b"\x89PNG\r\n\x1a\n-pixels-", media_type="image/png")
    history = [ModelRequest([UserPromptPart(["Compare these:", ImageUrl(url="https://example.com/a.png"), png])]),
               ModelResponse([ToolCallPart("Bash", {"command": "ls"}, tool_call_id="c1")]),
               ModelRequest([ToolReturnPart("Bash", "a.png b.png", tool_call_id="c1"), UserPromptPart("And now?")])]
    dicts = to_dicts(history)
    assert [b["type"] for b in dicts[0]["content"]] == ["text", "image", "image"]
    rebuilt = from_dicts(dicts)  # no originals: every message rebuilt
    assert all(a is not b for a, b in zip(rebuilt, history, strict=True))
    assert to_dicts(rebuilt) == dicts
    prompt = rebuilt[0].parts[0].content
    assert prompt[1].url == "https://example.com/a.png" and prompt[2].data == png.data
    tool_return, question = rebuilt[2].parts
    assert (tool_return.tool_name, tool_return.tool_call_id, tool_return.content) == ("Bash", "c1", "a.png b.png")
    assert question.content == "And now?"


def test_a_persisted_tool_return_keeps_its_message_and_what_the_api_has_no_place_for(tmp_path):
    """Pydantic AI continues with what the processor returns: a request whose tool return was persisted
    is the original request with that content changed (its run id, metadata and other parts kept), and
    a response of parts the Messages API has no place for (a provider's own web search) stays."""
    from pydantic_ai.messages import NativeToolCallPart, NativeToolReturnPart

    processor = CtxkitHistoryProcessor(policy=write_policy(tmp_path), store=str(tmp_path / ".ctxkit"), now=NOW)
    search = ModelResponse([NativeToolCallPart("web_search", {"query": "worker logs"}, tool_call_id="ws1"),
                            NativeToolReturnPart("web_search", "3 results", tool_call_id="ws1")])
    big = bash_output(command(3))
    history = [ModelRequest([UserPromptPart(PROMPT)]), search,
               ModelResponse([ToolCallPart("Bash", {"command": command(3)}, tool_call_id="c1")]),
               ModelRequest([ToolReturnPart("Bash", big, tool_call_id="c1")], run_id="run-1", metadata={"k": "v"})]
    managed = asyncio.run(processor(history))
    assert managed[:3] == history[:3] and managed[1] is search
    persisted = managed[3]
    assert (persisted.run_id, persisted.metadata, persisted.timestamp) == ("run-1", {"k": "v"}, history[3].timestamp)
    assert persisted.parts[0].tool_name == "Bash" and persisted.parts[0].content.startswith(PERSISTED)
    assert processor.restore(managed)[3].parts[0].content == big


def test_a_next_run_on_the_managed_history_is_sent_the_same_prefix(managed_run):
    """``message_history=result.all_messages()`` continues the conversation: the processor knows its own
    output, so the next run's first request starts with the very bytes the last one was sent (the
    provider's cache stays warm), and the new prompt follows."""
    processor, received, history = managed_run
    sent: list = []

    def model(messages, info) -> ModelResponse:
        sent.append(list(messages))
        return ModelResponse([TextPart("All of them.")])

    agent = Agent(FunctionModel(model), system_prompt=SYSTEM, capabilities=[ProcessHistory(processor)])
    agent.run_sync("Which workers were slow?", message_history=history)
    before, now = to_dicts(received[-1]), to_dicts(sent[0])
    assert now[:len(before)] == before and SUMMARY in str(before)
    assert now[-1]["content"][-1]["text"] == "Which workers were slow?"
