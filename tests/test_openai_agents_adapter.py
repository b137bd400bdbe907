"""ctxkit.integrations.openai_agents: an OpenAI Agents SDK run with ``CtxkitInputFilter`` as its
``call_model_input_filter``, driven by a ``Model`` of the test's own (it reports a usage computed from what it
is sent, which the SDK's ``agents.testing.ScriptedModel`` cannot) through a
long, tool-heavy run (tests/agent_scenario.py)."""
from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("agents", reason="the openai-agents extra is not installed (pip install -e '.[test]')")

from agent_scenario import NOW, PERSISTED, STEPS, SUMMARY, bash_output, command, unpaired_openai, write_policy
from agents import Agent, Model, ModelResponse, RunConfig, Runner, Usage, function_tool
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from ctxkit.integrations.openai_agents import CtxkitInputFilter, to_pairs
from ctxkit.tokens import make_counter

INSTRUCTIONS = "You look after the workers."
PROMPT = "Check every worker's log."


def chat(items) -> list[dict]:
    return [d for d, _ in to_pairs(items)]


def tokens(items) -> int:
    return make_counter("rough").count_messages(chat(items))


class ScriptedModel(Model):
    """Calls ``Bash`` once per step, then answers; keeps every input it is given and reports its usage
    as the Responses API would (the rough count of that input)."""

    def __init__(self, overhead: int = 0):
        self.overhead = overhead  # what the API counts besides the input (tool definitions, instructions)
        self.received: list[list] = []
        self.instructions: list[str | None] = []

    async def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs,
                           tracing, *, previous_response_id=None, conversation_id=None, prompt=None):
        self.received.append(list(input))
        self.instructions.append(system_instructions)
        i = len(self.received) - 1
        sent = tokens(input) + self.overhead
        usage = Usage(requests=1, input_tokens=sent, output_tokens=40, total_tokens=sent + 40)
        if i < STEPS:
            out = ResponseFunctionToolCall(type="function_call", call_id=f"call_{i}", name="Bash", id=f"fc_{i}",
                                           arguments=f'{{"command": "{command(i)}"}}', status="completed")
        else:
            out = ResponseOutputMessage(id="msg_end", type="message", role="assistant", status="completed",
                                        content=[ResponseOutputText(type="output_text", annotations=[],
                                                                    text="Every worker finished its batches.")])
        return ModelResponse(output=[out], usage=usage, response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError("the tests run Runner.run, not run_streamed")


@function_tool(name_override="Bash")
def bash(command: str) -> str:
    """Run a shell command."""
    return bash_output(command)


def run_agent(ctxkit_filter: CtxkitInputFilter | None, overhead: int = 0, tool=bash,
              hooks: bool = True) -> tuple[ScriptedModel, list]:
    model = ScriptedModel(overhead)
    agent = Agent(name="workers", instructions=INSTRUCTIONS, model=model, tools=[tool])
    config = RunConfig(tracing_disabled=True, call_model_input_filter=ctxkit_filter)
    hooks = ctxkit_filter.hooks if ctxkit_filter and hooks else None
    result = asyncio.run(Runner.run(agent, PROMPT, run_config=config, hooks=hooks, max_turns=STEPS + 5))
    assert result.final_output == "Every worker finished its batches."
    return model, result.to_input_list()


@pytest.fixture(scope="module")
def managed_run(tmp_path_factory):
    """One managed run, which the tests below look at from several sides."""
    tmp_path = tmp_path_factory.mktemp("managed")
    ctxkit_filter = CtxkitInputFilter(policy=write_policy(tmp_path), store=str(tmp_path / ".ctxkit"), now=NOW)
    model, items = run_agent(ctxkit_filter)
    return ctxkit_filter, model, items


def test_the_model_is_sent_persisted_outputs_then_a_summary_fewer_tokens_calls_paired(managed_run):
    _, model, _ = managed_run
    plain, _ = run_agent(None)
    assert len(model.received) == len(plain.received) == STEPS + 1
    assert sum(map(tokens, model.received)) < 0.8 * sum(map(tokens, plain.received))
    assert set(model.instructions) == {INSTRUCTIONS}
    for i, request in enumerate(model.received):
        assert not unpaired_openai(chat(request)), f"request {i}"
    text = [str(request) for request in model.received]
    assert PERSISTED in text[4]  # worker 3's 7,000 characters, persisted with a preview
    first_summary = next(i for i, t in enumerate(text) if SUMMARY in t)
    assert 0 < first_summary < STEPS
    assert all(chat(r)[0]["content"].startswith(SUMMARY) for r in model.received[first_summary:])


def first_summary(model: ScriptedModel) -> int:
    return next(i for i, request in enumerate(model.received) if SUMMARY in str(request))


def test_unchanged_items_are_the_originals(managed_run):
    _, model, items = managed_run
    assert model.received[3][1] == items[1]  # the first function call, with its id and status
    assert model.received[3][1]["id"] == "fc_0"


def test_the_usage_the_model_reports_counts(managed_run, tmp_path):
    """``hooks`` records each response's usage: a model that counts 8,000 more tokens (tool definitions,
    say) than the messages reaches the threshold, and is sent a summary, sooner."""
    _, honest, _ = managed_run
    ctxkit_filter = CtxkitInputFilter(policy=write_policy(tmp_path), store=str(tmp_path / "heavy"), now=NOW)
    heavy, _ = run_agent(ctxkit_filter, overhead=8000)
    assert first_summary(heavy) < first_summary(honest)


def test_without_the_hooks_the_tool_definitions_are_counted(managed_run, tmp_path):
    """Before any usage is known (no hooks), the filter counts the agent's function tools: a tool with a
    long description (as some MCP servers have) brings the summary sooner."""
    _, honest, _ = managed_run
    manual = function_tool(bash_output, name_override="Bash", description_override="Run a shell command. " * 1500)
    ctxkit_filter = CtxkitInputFilter(policy=write_policy(tmp_path), store=str(tmp_path / "tools"), now=NOW)
    heavy, _ = run_agent(ctxkit_filter, tool=manual, hooks=False)
    assert first_summary(heavy) < first_summary(honest)


def test_restore_gives_every_original_back(managed_run):
    ctxkit_filter, model, items = managed_run
    last = model.received[-1]
    assert SUMMARY in str(last[0])
    restored = ctxkit_filter.restore(last)
    assert chat(restored) == chat(items[:-1])  # the whole run but the final answer
    outputs = [i["output"] for i in restored if i.get("type") == "function_call_output"]
    assert outputs == [bash_output(command(i)) for i in range(STEPS)]


def test_items_without_a_chat_form_travel_with_the_next_message():
    """Reasoning and a hosted tool's call (a web search) have no chat form: they are not lost, they go
    with the message after them, as the very same items."""
    from ctxkit.integrations.openai_agents import from_dicts

    items = [{"role": "user", "content": "Find the release notes."},
             {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "search first"}]},
             {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "notes"}},
             {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
              "content": [{"type": "output_text", "text": "Found them.", "annotations": []}]}]
    pairs = to_pairs(items)
    assert [d["role"] for d, _ in pairs] == ["user", "assistant"]
    assert pairs[1][1] == items[1:]
    back = from_dicts([d for d, _ in pairs], items)
    assert len(back) == len(items) and all(a is b for a, b in zip(back, items, strict=True))


def test_a_changed_output_is_its_item_with_the_new_output():
    """A function call output a stage changed is the run's own item (its id and status) with the new output."""
    from ctxkit.integrations.openai_agents import from_dicts

    items = [{"role": "user", "content": PROMPT},
             {"type": "function_call", "call_id": "c1", "name": "Bash", "arguments": "{}"},
             {"type": "function_call_output", "call_id": "c1", "output": "x" * 9000, "id": "fco_1", "status": "completed"}]
    dicts = chat(items)
    dicts[2] = {**dicts[2], "content": "[Old tool result content cleared]"}
    back = from_dicts(dicts, items)
    assert back[:2] == items[:2]
    assert back[2] == {**items[2], "output": "[Old tool result content cleared]"}
