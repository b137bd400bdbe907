"""What sessions recorded with Claude Code 2.1.328 beyond the shared corpus showed (bench/cc_scenarios,
recorded by bench/record_cc_sessions.py): the request ``view --to anthropic-request`` builds equals the
body Claude Code sent after a local command (``/cost``), a custom command typed as the first prompt, a
subagent's notification, and a task reminder. Small synthetic sessions shaped like those recordings:
request records (``api-request-shape``, ``-blob``, ``api-request``) with digests made as Claude Code
makes them (:mod:`ctxkit.transcript.claude_code.requests`)."""
from __future__ import annotations

import json

from builders import Session

from ctxkit.cli.main import app
from ctxkit.reports.claude_code_layout import first_prompt_text
from ctxkit.transcript.claude_code.requests import (
    as_blocks,
    billing_header,
    digest,
    message_digest,
    without_cache_control,
)

SHAPE = {"system": [{"type": "text", "text": "You are a test agent."}],
         "tools": [{"name": "Bash", "description": "Run a command", "input_schema": {"type": "object"}}]}
PARAMS = {"model": "claude-opus-5-5", "max_tokens": 128000, "thinking": {"type": "adaptive", "display": "omitted"}}
ATTRIBUTION = "<system-reminder>\nEnd git commit messages with:\nCo-Authored-By: Claude\n</system-reminder>"
CAVEAT = ("<local-command-caveat>The command below was run directly in Claude Code, not sent to you as a request, "
          "and its output goes straight to the user.</local-command-caveat>")
USAGE = "<command-name>/usage</command-name>\n            <command-message>usage</command-message>\n" \
        "            <command-args></command-args>"
STDOUT = "<local-command-stdout>Estimated cost:        $0.0221\nTotal duration (API):  0s</local-command-stdout>"
GREET = "<command-message>greet</command-message>\n<command-name>/greet</command-name>\n<command-args>Alice</command-args>"


class Recorded(Session):
    """A :class:`Session` that also writes Claude Code's request records."""

    def __init__(self, cwd, version="2.1.328"):
        super().__init__(cwd)
        self.sent: dict[str, list[dict]] = {}
        self.version = version
        self.meta("api-request-shape", shapeHash=digest(SHAPE), shape=SHAPE, version=version)

    def say(self, text):
        e = super().say(text)
        e["message"]["model"] = PARAMS["model"]  # the model a request is built for: the session's
        return e

    def blob(self, message: dict) -> str:
        h = message_digest(message)
        self.meta("api-request-blob", hash=h, message=message)
        return h

    def request(self, rid: str, messages: list[dict], base: str | None = None, keep: int = 0,
                params: dict | None = None) -> None:
        """An ``api-request`` sending ``messages`` (the first ``keep`` as request ``base`` sent them)."""
        params = params or PARAMS
        body = {**params, "system": SHAPE["system"], "tools": SHAPE["tools"],
                "messages": [as_blocks(m) for m in messages]}
        self.meta("api-request", id=rid, version=self.version, querySource="sdk", shapeHash=digest(SHAPE),
                  params=params, **({"base": base} if base else {}), keep=keep,
                  tail=[message_digest(m) for m in messages[keep:]], cacheControl=[], requestDigest=digest(body))
        self.sent[rid] = messages

    def first_turn(self, prompt: str, answer: str) -> dict:
        """The session's first prompt, the request that sent it (``r1``) and the answer: that message."""
        self.prompt(prompt)
        first = {"role": "user", "content": prompt}
        self.request("r1", [first])
        self.say(answer)
        return first

    def local_command(self, stdout: str) -> None:
        """``/cost`` typed as a prompt: the caveat, the command's lines, its output as a system entry."""
        self.prompt(CAVEAT, isMeta=True)
        self.prompt(USAGE)
        self._chain("system", subtype="local_command", content=stdout, level="info", isMeta=False)


def request_messages(runner, path) -> list[dict]:
    result = runner.invoke(app, ["view", "--to", "anthropic-request", str(path)])
    assert result.exit_code == 0, result.output
    return without_cache_control(json.loads(result.stdout)["messages"])


def test_a_local_command_s_output_is_sent_and_the_prompt_after_it_is_the_recorded_message(tmp_path, runner):
    """After ``/cost``, Claude Code sends one user message: the caveat, the command, its output (a system
    entry) and the next prompt, each text but the last ending in a newline. The request had the
    output missing and that message twice (the view's, then the recorded one)."""
    s = Recorded(tmp_path)
    s.prompt("List the files")
    s.attach({"type": "remote_session_change"}, ATTRIBUTION.removeprefix("<system-reminder>\n")
             .removesuffix("\n</system-reminder>"), role="user")
    first = {"role": "user", "content": [{"type": "text", "text": ATTRIBUTION + "\n"},
                                         {"type": "text", "text": "List the files"}]}
    s.blob(first)
    s.request("r1", [first])
    s.say("Three files.")
    s.local_command(STDOUT)
    s.prompt("Now list the app folder")
    merged = {"role": "user", "content": [{"type": "text", "text": x + "\n"} for x in (CAVEAT, USAGE, STDOUT)]
              + [{"type": "text", "text": "Now list the app folder"}]}
    s.blob(merged)
    s.write(tmp_path / "s.jsonl")
    answer = {"role": "assistant", "content": [{"type": "text", "text": "Three files."}]}
    assert request_messages(runner, tmp_path / "s.jsonl") == [first, answer, merged]
    view = "\n".join(json.dumps(m.content) for m in s.write(tmp_path / "s.jsonl").view().messages)
    assert "Estimated cost" in view  # the output is part of what the model reads next


def test_a_custom_command_typed_as_the_first_prompt_opens_the_request_as_recorded(tmp_path, runner):
    """``/greet Alice`` as the session's first prompt: its lines and expansion (an isMeta entry) with the
    reminders before them, as Claude Code recorded the message; the request had the view's
    message without the reminders, and the reminders as a message of their own after it."""
    s = Recorded(tmp_path)
    s.prompt(GREET)
    s.prompt([{"type": "text", "text": "Greet Alice warmly and read README.md first.\n"}], isMeta=True)
    s._chain("attachment", attachment={"type": "model", "identity": {"modelId": PARAMS["model"]}})
    s.attach({"type": "remote_session_change"}, ATTRIBUTION.removeprefix("<system-reminder>\n")
             .removesuffix("\n</system-reminder>"), role="user")
    opening = {"role": "user", "content": [{"type": "text", "text": ATTRIBUTION + "\n"},
                                           {"type": "text", "text": GREET + "\n"},
                                           {"type": "text", "text": "Greet Alice warmly and read README.md first.\n"}]}
    s.blob(opening)
    s.write(tmp_path / "s.jsonl")
    assert request_messages(runner, tmp_path / "s.jsonl") == [opening]


def test_a_notification_after_a_summary_of_tools_used_is_sent_as_recorded_once(tmp_path, runner):
    """A subagent's notification arrives after the attachment naming the tools used: Claude Code sends
    them as one message (recorded as a blob); the request had both the view's messages and the blob."""
    s = Recorded(tmp_path)
    first = s.first_turn("Use an agent", "The agent found one test file.")
    s.attach({"type": "tools_used_summary"}, "<tools-used-before-summary>Read</tools-used-before-summary>",
             role="user")
    note = "<task-notification>\n<task-id>a1</task-id>\n<status>completed</status>\n</task-notification>"
    s.prompt(note, origin={"kind": "task-notification"})
    written = s.write(tmp_path / "s.jsonl")
    sent_note = written.view().messages[-1].content[-1]["text"]  # the notice Claude Code wraps it in
    assert sent_note.startswith("<system-reminder>\n[SYSTEM NOTIFICATION") and note in sent_note
    merged = {"role": "user", "content": [
        {"type": "text", "text": "<system-reminder>\n<tools-used-before-summary>Read</tools-used-before-summary>\n"
                                 "</system-reminder>\n"}, {"type": "text", "text": sent_note}]}
    s.blob(merged)
    s.write(tmp_path / "s.jsonl")
    answer = {"role": "assistant", "content": [{"type": "text", "text": "The agent found one test file."}]}
    assert request_messages(runner, tmp_path / "s.jsonl") == [first, answer, merged]


def test_a_system_reminder_keeps_the_newline_its_own_text_ends_with(tmp_path):
    """The task reminder renders as ``<system-reminder>\\n...applicable.\\n\\n</system-reminder>``; Claude
    Code sends ``...applicable.\\n``: it takes off the wrapper's newlines, not the text's own."""
    s = Session(tmp_path)
    s.prompt("Summarise what changed")
    s.attach({"type": "task_reminder", "content": [], "itemCount": 0},
             "The task tools haven't been used recently. This is just a gentle reminder.\n")
    system = [m for m in s.write(tmp_path / "s.jsonl").view().messages if m.role == "system"]
    assert [b["text"] for b in system[0].content] == [
        "The task tools haven't been used recently. This is just a gentle reminder.\n"]


def test_the_billing_header_reads_the_prompt_after_a_mentioned_file_s_reminders(tmp_path, runner):
    """``@app/models.py explain this file``: Claude Code's first messages are the Read the mention
    triggered (reminders only), then the prompt; the header's fingerprint is the prompt's. The request
    had the fingerprint of an empty text (the first message has no text but reminders)."""
    s = Recorded(tmp_path)
    s.prompt("@app/models.py explain this file", entrypoint="sdk-cli")
    s._chain("attachment", attachment={"type": "model", "identity": {"modelId": PARAMS["model"]}})
    called = "<system-reminder>\nCalled the Read tool with the following input: {\"file_path\":\"app/models.py\"}\n" \
             "</system-reminder>"
    result = "<system-reminder>\nResult of calling the Read tool:\n1\tclass User: pass\n</system-reminder>"
    s.attach({"type": "file", "filename": "app/models.py"}, called.removeprefix("<system-reminder>\n")
             .removesuffix("\n</system-reminder>"), role="user")
    s.attach({"type": "file", "filename": "app/models.py"}, result.removeprefix("<system-reminder>\n")
             .removesuffix("\n</system-reminder>"), role="user")
    s.attach({"type": "remote_session_change"}, ATTRIBUTION.removeprefix("<system-reminder>\n")
             .removesuffix("\n</system-reminder>"), role="user")
    opening = [{"role": "user", "content": called},
               {"role": "user", "content": [{"type": "text", "text": result + "\n"},
                                            {"type": "text", "text": ATTRIBUTION + "\n"},
                                            {"type": "text", "text": "@app/models.py explain this file"}]}]
    for message in opening:
        s.blob(message)
    s.write(tmp_path / "s.jsonl")
    done = runner.invoke(app, ["view", "--to", "anthropic-request", str(tmp_path / "s.jsonl")])
    assert done.exit_code == 0, done.output
    assert without_cache_control(json.loads(done.stdout)["messages"]) == opening
    header = json.loads(done.stdout)["system"][0]["text"]
    assert header == billing_header("2.1.328", "sdk-cli", "@app/models.py explain this file")
    assert header != billing_header("2.1.328", "sdk-cli", "")
    assert first_prompt_text(opening) == "@app/models.py explain this file"  # not the first message's: none


def test_a_resumed_run_on_another_model_is_sent_to_that_model_as_recorded(tmp_path, runner):
    """``claude --resume ID --model sonnet``: the run writes a model attachment (a system message after
    the prompt) and the prompt with its reminders as one recorded message. Claude Code sends that
    message, then the system one, to the new model, with the max_tokens it sent before (128,000, more
    than ctxkit's table gives Sonnet 5). The request was the old model's, capped at 64,000, with the
    prompt and the reminders twice."""
    s = Recorded(tmp_path)
    first = s.first_turn("Say hi", "Hi.")
    s.prompt("Continue on another model")
    powered = "You are powered by the model named Sonnet 5.5. The exact model ID is claude-sonnet-5-5."
    s.attach({"type": "model", "identity": {"modelId": "claude-sonnet-5-5"}, "text": powered}, powered)
    s.attach({"type": "remote_session_change"}, ATTRIBUTION.removeprefix("<system-reminder>\n")
             .removesuffix("\n</system-reminder>"), role="user")
    merged = {"role": "user", "content": [{"type": "text", "text": ATTRIBUTION + "\n"},
                                          {"type": "text", "text": "Continue on another model"}]}
    system = {"role": "system", "content": [{"type": "text", "text": powered}]}
    s.blob(merged)
    s.blob(system)
    s.write(tmp_path / "s.jsonl")
    done = runner.invoke(app, ["view", "--to", "anthropic-request", str(tmp_path / "s.jsonl")])
    assert done.exit_code == 0, done.output
    body = json.loads(done.stdout)
    assert (body["model"], body["max_tokens"]) == ("claude-sonnet-5-5", 128000)
    answer = {"role": "assistant", "content": [{"type": "text", "text": "Hi."}]}
    assert without_cache_control(body["messages"]) == [first, answer, merged, system]


def _texts_after_local_command(tmp_path, version: str, **marks) -> str:
    """The view's user text of a session where ``/model`` ran between two prompts (its lines and its output
    both system entries, as Claude Code 2.1.59 writes them), the entries written by ``version``."""
    s = Session(tmp_path)
    s.prompt("List the files")
    s.say("Three files.")
    s._chain("system", subtype="local_command", content=USAGE.replace("usage", "model"), level="info", isMeta=False)
    s._chain("system", subtype="local_command", content="<local-command-stdout>Kept model as sonnet</local-command-stdout>",
             level="info", isMeta=False, **marks)
    s.prompt("Now list the app folder")
    for e in s.entries:
        e["version"] = version
    return "\n".join(json.dumps(m.content) for m in s.write(tmp_path / "s.jsonl").view().messages)


def test_a_local_command_is_sent_only_by_the_versions_that_send_it(tmp_path):
    """Claude Code sends a local command's system entries as user text from 2.1.63 on; up to 2.1.62 its
    request builder dropped every system entry, and 2.1.328 drops an output marked ``isDisplayOnly``.
    The view had them in every version: a 2.0 or 2.1.59 session's counts and request carried
    text its model never read."""
    assert "Kept model" in _texts_after_local_command(tmp_path, "2.1.63")
    assert "/model" in _texts_after_local_command(tmp_path, "2.1.328")
    for old in ("1.0.98", "2.0.67", "2.1.59", "2.1.62"):
        view = _texts_after_local_command(tmp_path, old)
        assert "Kept model" not in view and "/model" not in view, old
    shown = _texts_after_local_command(tmp_path, "2.1.328", isDisplayOnly=True)
    assert "Kept model" not in shown and "/model" in shown  # the command line was sent, its output shown only


def test_a_run_resumed_on_another_model_asks_what_claude_code_sends_that_model(tmp_path, runner):
    """``claude --resume ID --model claude-haiku-4-5`` after requests of 128,000 max_tokens on Opus 5.5:
    Claude Code 2.1.328 sent Haiku 4.5 its own default, 32,000 (run against the stand-in API), not the
    recorded 128,000 (which the API refuses: Haiku 4.5 writes 64,000 at most) nor 64,000. Sonnet 5.5's
    default is 128,000 too."""
    for model, expected in (("claude-haiku-4-5", 32000), ("claude-sonnet-5-5", 128000)):
        s = Recorded(tmp_path / model)
        s.prompt("List the files")
        first = {"role": "user", "content": [{"type": "text", "text": "List the files"}]}
        s.blob(first)
        s.request("r1", [first])
        s.say("Three files.")
        s.prompt("Now the tests")
        s._chain("attachment", attachment={"type": "model", "identity": {"modelId": model}})
        (tmp_path / model).mkdir()
        s.write(tmp_path / model / "s.jsonl")
        result = runner.invoke(app, ["view", "--to", "anthropic-request", str(tmp_path / model / "s.jsonl")])
        assert result.exit_code == 0, result.output
        body = json.loads(result.stdout)
        assert (body["model"], body["max_tokens"]) == (model, expected)


def test_the_parts_of_one_system_attachment_are_one_text_a_line_apart(tmp_path, runner):
    """A subagent's notification queued after the tools-used summary (``queued_command``, rendered as two
    system parts; recorded with Claude Code 2.1.328): sent as one system text, the parts a newline
    apart. The view joined them by a blank line, so the request held the view's message and then the
    recorded one: the notification twice."""
    tools_used = "<tools-used-before-summary>Glob</tools-used-before-summary>"
    notice = "[SYSTEM NOTIFICATION - NOT USER INPUT]\n<task-notification>\n<status>completed</status>\n</task-notification>"
    s = Recorded(tmp_path)
    s.prompt("Use an agent to survey the tests")
    first = {"role": "user", "content": [{"type": "text", "text": "Use an agent to survey the tests"}]}
    s.blob(first)
    s.request("r1", [first])
    s.say("Delegating.")
    s._chain("attachment", attachment={"type": "queued_command", "commandMode": "task-notification"},
             rendered=[{"content": f"<system-reminder>\n{x}\n</system-reminder>"} for x in (tools_used, notice)],
             renderedRole="system")
    merged = {"role": "system", "content": [{"type": "text", "text": f"{tools_used}\n{notice}"}]}
    s.blob(merged)
    s.write(tmp_path / "s.jsonl")
    answer = {"role": "assistant", "content": [{"type": "text", "text": "Delegating."}]}
    assert request_messages(runner, tmp_path / "s.jsonl") == [first, answer, merged]
