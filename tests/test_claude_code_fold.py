"""Requests to a model that takes no system-role messages (Haiku 4.5, Sonnet 4.5/4.6, Opus 4.5-4.7), as
Claude Code 2.1.328 sends them: the environment, the date and the other system attachments as reminders
before the prompt, a reminder written after tool results appended to the last result, the billing
header first in the system prompt. Synthetic sessions shaped like the ones bench/record_cc_sessions.py
recorded with ``CC_RUN_ARGS="--model claude-haiku-4-5"`` (the request records written as Claude Code
writes them, :mod:`ctxkit.transcript.claude_code.requests`)."""
from __future__ import annotations

import json

from builders import Session
from test_claude_code_recorded_turns import ATTRIBUTION, SHAPE, Recorded

from ctxkit.cli.main import app
from ctxkit.reports.claude_code_layout import first_prompt_text
from ctxkit.transcript.claude_code.requests import billing_header, without_cache_control

HAIKU = {"model": "claude-haiku-4-5", "max_tokens": 32000,
         "thinking": {"budget_tokens": 31999, "type": "enabled", "display": "omitted"}}
ENVIRONMENT = "# Environment\nYou have been invoked in the following environment: \n - Platform: linux"
DATE = "Today's date is 2026-12-04."
LEFT = "<total_tokens>14997248 tokens left</total_tokens>"


def wrapped(text: str) -> str:
    return f"<system-reminder>\n{text}\n</system-reminder>"


def opening_turn(s: Session, prompt: str) -> None:
    """A first prompt (run with ``claude -p``) and the attachments Claude Code writes with it: the
    environment and the date (system-role), the attribution (user-role)."""
    s.prompt(prompt, entrypoint="sdk-cli")
    s.attach({"type": "environment"}, ENVIRONMENT)
    s.attach({"type": "date"}, DATE)
    s.attach({"type": "remote_session_change"}, ATTRIBUTION.removeprefix("<system-reminder>\n")
             .removesuffix("\n</system-reminder>"), role="user")


def recorded_haiku_opening(s: Session, prompt: str) -> dict:
    """The opening turn, and the first request as Claude Code recorded it for Haiku: the system attachments as
    reminders before the attribution and the prompt, in one user message (its blob, then the request)."""
    opening_turn(s, prompt)
    opening = {"role": "user", "content": [{"type": "text", "text": wrapped(ENVIRONMENT)},
                                           {"type": "text", "text": wrapped(DATE)},
                                           {"type": "text", "text": ATTRIBUTION + "\n"},
                                           {"type": "text", "text": prompt}]}
    s.blob(opening)
    s.request("r1", [opening], params=HAIKU)
    return opening


def on_haiku(s: Session) -> None:
    for e in s.entries:
        if e.get("type") == "assistant":
            e["message"]["model"] = HAIKU["model"]


def request(runner, path, *args) -> dict:
    result = runner.invoke(app, ["view", "--to", "anthropic-request", *args, str(path)])
    assert result.exit_code == 0, result.output
    return without_cache_control(json.loads(result.stdout))


def test_a_recorded_haiku_session_is_sent_as_claude_code_sent_it(tmp_path, runner):
    """The recorded messages are the request: the opening with the system attachments as reminders before
    the attribution and the prompt, the tokens-left reminder appended to the Read's result (its text's
    trailing tab stripped). The request had the prompt first and the environment as a system message."""
    s = Recorded(tmp_path)
    opening = recorded_haiku_opening(s, "Inspect the app")
    result = s.read(tmp_path / "app.py", "class User:\n\t")
    call = s.entries[-2]["message"]
    s.attach({"type": "total_tokens_reminder"}, LEFT)
    folded = {"role": "user", "content": [{**result["message"]["content"][0],
                                           "content": "1\tclass User:\n2" + "\n\n" + wrapped(LEFT)}]}
    s.blob(folded)
    on_haiku(s)
    s.write(tmp_path / "s.jsonl")
    body = request(runner, tmp_path / "s.jsonl")
    assert body["model"] == "claude-haiku-4-5" and body["max_tokens"] == 32000
    assert body["messages"] == [opening, {"role": "assistant", "content": call["content"]}, folded]
    assert body["system"] == [{"type": "text", "text": billing_header("2.1.328", "sdk-cli", "Inspect the app")},
                              *SHAPE["system"]]


def test_without_records_the_system_attachments_are_folded_where_claude_code_puts_them(tmp_path, runner):
    """A session that records no requests, on Haiku: no system-role message is sent; the environment and
    the date go first in the opening message, a reminder written after a tool result is appended to it,
    one written with a later prompt goes before that prompt. On Opus 5.5 the same session keeps them as
    system messages."""
    s = Session(tmp_path)
    opening_turn(s, "Inspect the app")
    s.tool("Bash", {"command": "ls"}, "app.py\n")
    s.attach({"type": "total_tokens_reminder"}, LEFT)
    s.say("One file.")
    s.prompt("Now read it")
    s.attach({"type": "total_tokens_reminder"}, LEFT)
    on_haiku(s)
    s.write(tmp_path / "s.jsonl")
    messages = request(runner, tmp_path / "s.jsonl")["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant", "user"]
    assert [b["text"] for b in messages[0]["content"]] == [
        wrapped(ENVIRONMENT), wrapped(DATE), ATTRIBUTION + "\n", "Inspect the app"]
    assert messages[2]["content"][0]["content"] == "app.py\n\n" + wrapped(LEFT)
    assert [b["text"] for b in messages[4]["content"]] == [wrapped(LEFT) + "\n", "Now read it"]
    on_opus = request(runner, tmp_path / "s.jsonl", "--set", "model=claude-opus-5-5")["messages"]
    assert [m["role"] for m in on_opus] == ["user", "system", "assistant", "user", "system", "assistant", "user",
                                            "system"]


def test_a_result_of_blocks_takes_the_reminder_as_a_block_after_its_text(tmp_path, runner):
    """A tool result whose content is blocks (an agent launched in the background): the reminder is a text
    block of the result, after its text, which ends with a newline as Claude Code merges it."""
    s = Session(tmp_path)
    s.prompt("Use an agent")
    s.tool("Agent", {"prompt": "survey"}, [{"type": "text", "text": "Async agent launched."}])
    s.attach({"type": "total_tokens_reminder"}, LEFT)
    on_haiku(s)
    s.write(tmp_path / "s.jsonl")
    result = request(runner, tmp_path / "s.jsonl")["messages"][-1]["content"][-1]
    assert result["type"] == "tool_result"
    assert result["content"] == [{"type": "text", "text": "Async agent launched.\n"},
                                 {"type": "text", "text": wrapped(LEFT)}]


def test_after_a_change_to_a_model_that_takes_system_messages_the_rewritten_request_is_sent(tmp_path, runner):
    """A session begun on Haiku and resumed on Opus 5.5: Claude Code writes the whole request again (the
    environment now a system message, the new prompt after its attribution) but not the answers and
    results the conversation holds; the request is those blobs with the answer and the result between
    them, as it sent them (it had the attribution after the prompt, in a message of its own)."""
    s = Recorded(tmp_path)
    recorded_haiku_opening(s, "List the files")
    result = s.tool("Bash", {"command": "ls"}, "app.py")
    s.say("One file.")
    on_haiku(s)
    s.prompt("Continue on Opus")
    s.attach({"type": "model"}, "You are powered by the model named Opus 5.5.")
    s.attach({"type": "remote_session_change"}, ATTRIBUTION.removeprefix("<system-reminder>\n")
             .removesuffix("\n</system-reminder>"), role="user")
    opening = {"role": "user", "content": [{"type": "text", "text": ATTRIBUTION + "\n"},
                                           {"type": "text", "text": "List the files"}]}
    environment = {"role": "system", "content": [{"type": "text", "text": f"{ENVIRONMENT}\n\n{DATE}"}]}
    prompt = {"role": "user", "content": [{"type": "text", "text": ATTRIBUTION + "\n"},
                                          {"type": "text", "text": "Continue on Opus"}]}
    model = {"role": "system", "content": [{"type": "text", "text": "You are powered by the model named Opus 5.5."}]}
    for message in (opening, environment, prompt, model):
        s.blob(message)
    path = tmp_path / "s.jsonl"
    s.write(path)
    body = request(runner, path, "--set", "model=claude-opus-5-5")
    call = s.entries[[e.get("uuid") for e in s.entries].index(result["parentUuid"])]["message"]["content"]
    assert body["messages"] == [opening, environment, {"role": "assistant", "content": call},
                                result["message"], {"role": "assistant", "content": [
                                    {"type": "text", "text": "One file."}]}, prompt, model]
    assert first_prompt_text(body["messages"]) == "List the files"


def test_a_tool_calls_caller_the_transcript_carries_is_not_sent_on_any_model(tmp_path, runner):
    """Claude Code 2.1.38 writes ``caller`` on each tool_use (spotter's sessions); a request must not carry
    it, on the layout of a model that takes no system messages as on the others'."""
    from builders import Call, Turn, conversation, write

    for model in ("claude-sonnet-4-5", "claude-opus-4-6", "claude-opus-5-5"):
        entries = conversation([Turn("Read it", [[Call("Read", {"file_path": "a.py"}, "A")]], "Read.")])
        for e in entries:
            content = e["message"]["content"] if isinstance(e.get("message"), dict) else None
            if e["type"] == "assistant":
                e["message"]["model"] = model
            for b in content if isinstance(content, list) else []:
                if b.get("type") == "tool_use":
                    b["caller"] = {"type": "direct"}
        path = write(tmp_path / f"{model}.jsonl", entries)
        result = runner.invoke(app, ["view", str(path), "--to", "anthropic-request"])
        assert result.exit_code == 0, result.stderr
        body = json.loads(result.stdout)
        calls = [b for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]
                 if b.get("type") == "tool_use"]
        assert calls and all("caller" not in b for b in calls), (model, calls)
