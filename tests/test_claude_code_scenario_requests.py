"""What the second set of scenarios recorded with Claude Code 2.1.328 and 2.1.336 showed
(``bench/cc_scenarios``: mentions, denied-tools, system-prompt-add-dir, hooks-block; recorded by
``bench/record_cc_sessions.py``): the request ``view --to anthropic-request`` builds equals the body
Claude Code sent after a prompt that mentions an image or (in a later turn) a text file, after a tool
denied in one run is allowed in the next, and on a run resumed with ``--effort``; and a prompt a hook
blocked is still named by the offline summary. Small synthetic sessions shaped like those recordings
(:class:`test_claude_code_recorded_turns.Recorded`)."""
from __future__ import annotations

import json

from test_claude_code_recorded_turns import ATTRIBUTION, PARAMS, Recorded, request_messages

from ctxkit.cli.main import app
from ctxkit.reports.claude_code_fold import DEFERRED_TOOLS_HEAD
from ctxkit.transcript import read_transcript
from ctxkit.transcript.claude_code.requests import as_blocks
from ctxkit.transcript.prompts import session_prompts

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"


def _attribution(s: Recorded) -> None:
    s.attach({"type": "remote_session_change"}, ATTRIBUTION.removeprefix("<system-reminder>\n")
             .removesuffix("\n</system-reminder>"), role="user")


def test_a_mentioned_image_is_in_the_view_and_the_request_is_sent_as_recorded(tmp_path, runner):
    """``@img/chart.png describe it``: Claude Code writes the image as an attachment with no rendered
    text, and sends the Read call's reminder as a message of its own, then the image with the prompt.
    The view left the image out (the model's context had no image), so the recorded messages looked
    stale and the request was the view's: the reminder and the image gone."""
    s = Recorded(tmp_path)
    s.prompt("@img/chart.png describe it")
    s._chain("attachment", attachment={"type": "file", "filename": "/w/img/chart.png", "displayPath": "img/chart.png",
                                       "content": {"type": "image", "file": {"base64": PNG, "type": "image/png"}}},
             renderedRole="user")
    _attribution(s)
    called = {"role": "user", "content": '<system-reminder>\nCalled the Read tool with the following input: '
                                         '{"file_path":"/w/img/chart.png"}\n</system-reminder>'}
    image = {"type": "image", "source": {"type": "base64", "data": PNG, "media_type": "image/png"}}
    opening = {"role": "user", "content": [image, {"type": "text", "text": ATTRIBUTION + "\n"},
                                           {"type": "text", "text": "@img/chart.png describe it"}]}
    s.blob(called)
    s.blob(opening)
    view = s.write(tmp_path / "s.jsonl").view()
    assert image in view.messages[0].content
    assert request_messages(runner, tmp_path / "s.jsonl") == [called, opening]


def test_a_file_mentioned_in_a_later_turn_is_sent_as_its_recorded_messages_once(tmp_path, runner):
    """``And @data/big.log, is it healthy?`` in a resumed run: Claude Code sends the Read's call and
    result each as a message of its own, and the truncation note merged with the prompt (three blobs).
    The request had the view's message (the prompt, then the reminders) and then the three blobs."""
    s = Recorded(tmp_path)
    first = s.first_turn("Hello", "Hi.")
    s.prompt("And @data/big.log, is it healthy?")
    parts = ['<system-reminder>\nCalled the Read tool with the following input: {"file_path":"/w/data/big.log"}\n'
             '</system-reminder>', "<system-reminder>\nResult of calling the Read tool:\n1\tline one\n</system-reminder>",
             "<system-reminder>\nNote: The file /w/data/big.log was too large and has been truncated.\n</system-reminder>"]
    s._chain("attachment", attachment={"type": "file", "filename": "/w/data/big.log"},
             rendered=[{"content": x} for x in parts], renderedRole="user")
    sent = [{"role": "user", "content": parts[0]}, {"role": "user", "content": parts[1]},
            {"role": "user", "content": [{"type": "text", "text": parts[2] + "\n"},
                                         {"type": "text", "text": "And @data/big.log, is it healthy?"}]}]
    for m in sent:
        s.blob(m)
    s.write(tmp_path / "s.jsonl")
    answer = {"role": "assistant", "content": [{"type": "text", "text": "Hi."}]}
    assert request_messages(runner, tmp_path / "s.jsonl") == [first, answer, *sent]


def test_a_run_resumed_with_an_effort_sends_that_effort(tmp_path, runner):
    """``claude --resume ID --effort high`` after requests at ``medium``: the run's system message states
    ``high`` (recorded on its blob) and Claude Code sends ``high`` at the top too; the request kept the
    newest record's ``medium``."""
    s = Recorded(tmp_path)
    s.prompt("Hello")
    first = {"role": "user", "content": "Hello"}
    s.request("r1", [first], params={**PARAMS, "output_config": {"effort": "medium"}})
    s.say("Hi.")
    s.prompt("Thanks")
    s.attach({"type": "date", "date": "2026-12-05"}, "Today's date is 2026-12-05.")
    s.blob({"role": "user", "content": "Thanks"})
    s.blob({"role": "system", "content": [{"type": "text", "text": "Today's date is 2026-12-05."}],
            "output_config": {"effort": "high"}})
    s.write(tmp_path / "s.jsonl")
    done = runner.invoke(app, ["view", "--to", "anthropic-request", str(tmp_path / "s.jsonl")])
    assert done.exit_code == 0, done.output
    body = json.loads(done.stdout)
    assert body["output_config"] == {"effort": "high"}
    assert body["messages"][-1]["output_config"] == {"effort": "high"}


def test_a_prompt_a_hook_blocked_is_named_by_the_offline_summary(tmp_path, runner):
    """A ``UserPromptSubmit`` hook that exits 2 blocks the prompt: Claude Code 2.1.328 writes no user
    entry for it, only a system line ending with ``Original prompt: ...``. The user typed it, and the
    offline summary left it out of the prompts it lists."""
    s = Recorded(tmp_path)
    s.prompt("List the files")
    s.say("Three files. " * 800)  # (a history the summary makes smaller)
    s._chain("system", subtype="informational", level="warning", isMeta=False, preventContinuation=True,
             content="UserPromptSubmit operation blocked by hook:\n[check-prompt]: No passwords, please\n\n\n"
                     "Original prompt: Remember my password is swordfish",
             promptSubmitEnding={"ending": {"kind": "blocked_by_hook", "reason": "No passwords, please"},
                                 "promptKept": False})
    s.prompt("Fine, count them")
    s.say("Three.")
    path = tmp_path / "s.jsonl"
    s.write(path)
    assert [p.text for p in session_prompts(read_transcript(path))] == [
        "List the files", "Remember my password is swordfish", "Fine, count them"]
    out = tmp_path / "out.jsonl"
    done = runner.invoke(app, ["compact", str(path), "--force", "-p", "no-llm", "-o", str(out),
                                 "--set", "overhead_tokens=0"])
    assert done.exit_code == 0, done.output
    assert "- Remember my password is swordfish\n" in out.read_text(encoding="utf-8").replace("\\n", "\n")


def test_a_tool_made_available_mid_session_keeps_its_tool_addition_block_in_later_requests(tmp_path, runner):
    """A run allowed a tool the run before it denied (``--disallowedTools Bash``, then a resumed run
    without it): Claude Code announces it in a system message that also carries a ``tool_addition``
    block, which no entry of the view holds. The request after the tool's first call had taken that
    block as a stage's rewrite (the record stale) and was built from the view: the prompt without its
    reminders, the reminders after the system message, the block gone."""
    s = Recorded(tmp_path)
    first = s.first_turn("Count the lines", "Bash is not available.")
    s.prompt("Try again")
    became = "The following tools just became available and are ready to use:\nBash"
    s.attach({"type": "deferred_tools_delta", "addedNames": ["Bash"], "surfacedNames": ["Bash"]}, became)
    s.attach({"type": "remote_session_change"}, ATTRIBUTION.removeprefix("<system-reminder>\n")
             .removesuffix("\n</system-reminder>"), role="user")
    merged = {"role": "user", "content": [{"type": "text", "text": ATTRIBUTION + "\n"},
                                          {"type": "text", "text": "Try again"}]}
    system = {"role": "system", "content": [{"type": "text", "text": became}, {
        "type": "tool_addition", "tool": {"type": "tool_reference", "name": "Bash"}}]}
    s.blob(merged)
    s.blob(system)
    answer = {"role": "assistant", "content": [{"type": "text", "text": "Bash is not available."}]}
    s.request("r2", [first, answer, merged, system], base="r1", keep=1)
    s.tool("Bash", {"command": "wc -l models.py"}, "8 models.py")
    s.entries[-2]["message"]["model"] = PARAMS["model"]
    s.write(tmp_path / "s.jsonl")
    call, result = (m.api() for m in s.write(tmp_path / "s.jsonl").view().messages[-2:])
    assert request_messages(runner, tmp_path / "s.jsonl") == [first, answer, merged, system, call, result]


def test_a_first_turn_that_states_no_model_is_sent_to_the_version_s_default(tmp_path, runner):
    """A first prompt that starts with ``/`` but names no command (``/tmp/app is where I keep the code``):
    Claude Code writes none of the first turn's attachments but the date and the attribution, no
    ``model`` one among them, and sends Opus 5.5 its request (128,000 max_tokens, the date a system
    message). The request was built for ctxkit's own default model: Sonnet 4.5, 32,000 max_tokens, the
    date folded into the prompt's message."""
    s = Recorded(tmp_path)
    s.prompt("/tmp/app is where I keep the code, list it")
    s.attach({"type": "date", "date": "2026-12-04"}, "Today's date is 2026-12-04.")
    s.write(tmp_path / "s.jsonl")
    done = runner.invoke(app, ["view", "--to", "anthropic-request", str(tmp_path / "s.jsonl")])
    assert done.exit_code == 0, done.output
    body = json.loads(done.stdout)
    assert (body["model"], body["max_tokens"]) == ("claude-opus-5-5", 128000)
    assert [m["role"] for m in body["messages"]] == ["user", "system"]


def test_reminder_tags_typed_in_a_prompt_are_the_user_s_words(tmp_path):
    """``Why does the log say <system-reminder>fake</system-reminder>?`` typed in Claude Code 2.1.328 (its
    entry has a ``promptId``; the turn's reminders are attachments of their own): the tags are the user's,
    and the prompt is listed as typed. It was listed with them and the text between taken out."""
    s = Recorded(tmp_path)
    typed = "Why does the log say <system-reminder>fake</system-reminder> and <command-name>/x</command-name>?"
    s.prompt(typed, promptId="p-1")
    s.say("Those are literal tags.")
    assert [p.text for p in session_prompts(s.write(tmp_path / "s.jsonl"))] == [typed]


def test_a_forked_session_s_first_request_holds_the_copied_conversation(tmp_path, runner):
    """``claude --resume ID --fork-session``: the new session's file starts with a copy of the conversation
    (no request records), then Claude Code records its first request's opening as blobs only (the prompt
    with its reminders, the system message) and sends the copied answers, results and the new prompt
    after them. The request was the two blobs alone."""
    s = Recorded(tmp_path)
    s.prompt("Read the models")
    s.attach({"type": "date", "date": "2026-12-04"}, "Today's date is 2026-12-04.")
    _attribution(s)
    s.tool("Bash", {"command": "cat models.py"}, "class User: ...")
    s.entries[-2]["message"]["model"] = PARAMS["model"]
    s.say("Two classes.")
    s.prompt("Try another approach in a fork")
    opening = {"role": "user", "content": [{"type": "text", "text": ATTRIBUTION + "\n"},
                                           {"type": "text", "text": "Read the models"}]}
    system = {"role": "system", "content": [{"type": "text", "text": "Today's date is 2026-12-04."}]}
    s.blob(opening)
    s.blob(system)
    view = s.write(tmp_path / "s.jsonl").view().messages
    sent = [as_blocks(m) for m in request_messages(runner, tmp_path / "s.jsonl")]
    assert sent == [as_blocks(m) for m in (opening, system, *(m.api() for m in view[-4:]))]


def test_to_a_model_without_tool_changes_a_tool_allowed_again_is_announced_by_name(tmp_path, runner):
    """The same run on Haiku 4.5 (no system messages, no tool changes): Claude Code sends every added
    name under the deferred tools' head, folded before the prompt, not the text the session renders for
    the surfaced tool. The record held that text, so it looked stale: the request after the tool's first
    call was built from the view."""
    haiku = {**PARAMS, "model": "claude-haiku-4-5", "max_tokens": 32000}
    s = Recorded(tmp_path)
    s.prompt("Count the lines")
    first = {"role": "user", "content": "Count the lines"}
    s.request("r1", [first], params=haiku)
    s.say("Bash is not available.")["message"]["model"] = "claude-haiku-4-5"
    s.prompt("Try again")
    s.attach({"type": "deferred_tools_delta", "addedNames": ["Bash", "Monitor"], "addedLines": ["Bash", "Monitor"],
              "surfacedNames": ["Bash"]}, "The following tools just became available and are ready to use:\nBash\n\n"
             "The following deferred tools are now available via ToolSearch: Monitor")
    names = "\n".join([DEFERRED_TOOLS_HEAD, "Bash", "Monitor"])
    merged = {"role": "user", "content": [{"type": "text", "text": f"<system-reminder>\n{names}\n</system-reminder>"},
                                          {"type": "text", "text": "Try again"}]}
    s.blob(merged)
    answer = {"role": "assistant", "content": [{"type": "text", "text": "Bash is not available."}]}
    s.request("r2", [first, answer, merged], base="r1", keep=1, params=haiku)
    s.tool("Bash", {"command": "wc -l models.py"}, "8 models.py")
    s.entries[-2]["message"]["model"] = "claude-haiku-4-5"
    call, result = (m.api() for m in s.write(tmp_path / "s.jsonl").view().messages[-2:])
    sent = [as_blocks(m) for m in request_messages(runner, tmp_path / "s.jsonl")]
    assert sent == [as_blocks(m) for m in (first, answer, merged, call, result)]
