"""The offline (extractive) summary keeps the task (issue 11, item 7).

After ``ctxkit compact --force`` without an API key, the summary names every prompt the user typed
in the session (before earlier compactions too), counts no local command or harness message as a
request, quotes errors from the stored original rather than the placeholder, pairs a failure only
with its own later success, and quotes code in whole lines.
"""
from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest
from builders import Session
from conftest import PUBLIC_CORPUS, recorded_cc_sessions

from ctxkit.cli.main import app
from ctxkit.summarize import ExtractiveSummarizer, SessionFacts
from ctxkit.summarize.prompt import section_heading
from ctxkit.transcript import read_transcript

NOW = "2026-11-29T23:30:00Z"
#: How the texts that are not requests start (harness messages, local commands).
HARNESS = ("<task-notification>", "<local-command", "<command-name>", "<command-message>", "Caveat:",
           "[Request interrupted", "Stop hook feedback", "Base directory for this skill", "<bash-input>", "<bash-",
           "/compact", "/mcp", "/model", "<system-reminder>", "This session is being continued")


def section(summary: str, n: int) -> str:
    body = summary.split(section_heading(n), 1)[1]
    return body.split(section_heading(n + 1), 1)[0] if n < 9 else body


def bullets(summary: str) -> list[str]:
    """The requests section 6 lists (one per ``- `` line; the corpus prompts are one line each)."""
    return [line[2:] for line in section(summary, 6).strip().splitlines() if line.startswith("- ")]


def requests(summary: str) -> list[str]:
    """Every text the summary presents as a request of the user's: section 6's list, the requests
    section 1 quotes, and the one section 9 continues."""
    first = re.findall(r"(?:The user's first request|First request since then|Most recent request):\n(.*)",
                       section(summary, 1))
    latest = re.findall(r'(?:most recent request|has not been answered yet): "(.*)"', section(summary, 9))
    return [*bullets(summary), *first, *latest]


def compact_forced(runner, src: Path, tmp_path: Path, *extra: str) -> tuple[str, str]:
    """``ctxkit compact COPY --force`` offline; returns the summary and the text of the view after it."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    copy = work / src.name
    shutil.copyfile(src, copy)
    out = work / "out.jsonl"
    # overhead_tokens=0: the corpus's stand-in API reported usage without a system prompt or tools, so the
    # summary is compared with the history it replaces on the same footing (docs/tokens.md)
    r = runner.invoke(app, ["compact", str(copy), "--force", "--now", NOW, "-o", str(out), "--set", "overhead_tokens=0",
                            *extra])
    assert r.exit_code == 0, r.stderr
    assert "autocompact: applied: manual compaction (summary by extractive)" in r.stderr, r.stderr
    view = read_transcript(out).view()
    summary = view.messages[0].content[0]["text"]
    rest = "\n".join(b.get("text", "") if b.get("type") == "text" else json.dumps(b.get("content"))
                     for m in view.messages[1:] for b in m.content)
    return summary, rest


def assert_requests(summary: str, rest: str, typed: list[str], also: list[str] = ()) -> None:
    """Every typed prompt is named (in the summary's list, or kept word for word after it), nothing
    else is listed as one (but the custom commands ``also`` names), and no local command or harness
    text is quoted as a request."""
    listed = bullets(summary)
    others = section(summary, 6).strip() + "\n"  # a prompt of several lines is one item of several lines
    for prompt in [*typed, *also]:
        item = f"- {prompt}\n"
        if item in others:
            others = others.replace(item, "", 1)
        else:
            assert prompt not in typed or prompt in rest, f"{prompt!r} is not named\n{summary}"
    assert [p[2:] for p in others.splitlines() if p.startswith("- ")] == []
    assert all(p in listed for p in typed if "\n" not in p and p not in rest)
    for request in requests(summary):
        assert not request.startswith(HARNESS), request


# -- the done-when test: every recorded session ------------------------------------------------------
@pytest.mark.skipif(not recorded_cc_sessions(), reason="shared corpus not found")
@pytest.mark.parametrize("folder", recorded_cc_sessions(), ids=lambda p: p.name)
def test_every_prompt_the_user_typed_is_named_after_a_forced_offline_compaction(runner, tmp_path, folder):
    src = folder / "session.jsonl"
    entries = [json.loads(line) for line in src.read_text().splitlines() if line.strip()]
    queued = [e["content"] for e in entries if e.get("type") == "queue-operation" and e.get("operation") == "enqueue"
              and isinstance(e.get("content"), str)]
    # Claude Code queues a background task's notification too: not typed, never a request
    typed = [x for x in queued if not x.startswith(("/", "<task-notification>"))]
    assert typed
    summary, rest = compact_forced(runner, src, tmp_path)
    # a custom command that expanded into a prompt may be listed as its command line; a local one never
    commands = [x for x in queued if x.startswith("/")]
    # a session forked from another (``--fork-session``) holds a copy of its conversation: prompts typed
    # there, before this file's first queue operation, which this file does not hold
    first_queued = next(e["timestamp"] for e in entries if e.get("type") == "queue-operation")
    copied = [e["message"]["content"] for e in entries if e.get("type") == "user" and e["timestamp"] < first_queued
              and not e.get("isMeta") and isinstance(e["message"].get("content"), str)]
    assert_requests(summary, rest, typed, also=[x for x in commands if x not in ("/cost", "/compact", "/usage")
                                                and not x.startswith("/compact ")] + copied)


# The public corpus: its queue-operations hold a background-task notification and `/mcp` (neither is a
# request); the prompts were read off the files by hand (the ones on the conversation, not rewound).
PUBLIC = {
    "spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl": [
        "Work on bead spotter-dov. Run bd show spotter-dov to see the issue details and bd ready to find available "
        "subtasks. Start with the first ready task.", "continue"],
    "spotter/tool_heavy.jsonl": ["start phoenix in background"],
    "spotter/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl": [
        "Work on bead spotter-4te. Run bd show spotter-4te to see the issue details and bd ready to find available "
        "subtasks. Start with the first ready task.", "continue implementation"],
    # a rewind: the two prompts of the abandoned branch (lines 28 and 35) are not the conversation's
    "kfischer/b3edadab-bca0-4054-9b41-f7ffa6941260.jsonl": [
        "Hello I want to have some test conversation with you create some file for me",
        "ok edit it and add some content",
        "Ok now make a task agent that will add some content too so I can test how those agent threads are handled",
        "Ok in the future some new content was added look at it", "Hi",
        "Ok ultrathink and come up with a chain of cause and effect relationships spanning at least 20 steps that "
        "links today to the second world war", "Ok ultrathink and try again"],
}


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_public_sessions_name_their_prompts_and_no_harness_text(runner, tmp_path, name):
    src = PUBLIC_CORPUS / name
    if not src.exists():
        pytest.skip(f"public corpus file {src} not found")
    summary, rest = compact_forced(runner, src, tmp_path)
    typed = PUBLIC[name]
    if name == "spotter/tool_heavy.jsonl":  # its second prompt mentions xterm.js: longer than a line here
        typed = [*typed, bullets(summary)[-1]]
        assert typed[-1].startswith("scrolling back in xterm.js still does not work")
    assert_requests(summary, rest, typed)


# -- the whole session: prompts from before an earlier compaction ------------------------------------
def test_prompts_before_an_earlier_compaction_are_listed_from_the_transcript(runner, tmp_path):
    s = Session(tmp_path)
    s.prompt("Rename the billing module to invoicing")
    s.tool("Bash", {"command": "git mv billing invoicing"}, "renamed " * 500)
    s.say("Renamed.")
    s.boundary("Summary: the user asked for some renaming.")  # a model's summary, not the words typed
    s.prompt("Now update the imports in app.py")
    s.tool("Bash", {"command": "grep -rn billing ."}, "app.py:1:import billing\n" * 300)
    s.say("Updated.")
    s.prompt("And run the tests")
    s.say("They pass.")
    s.write(tmp_path / "s.jsonl")
    summary, _ = compact_forced(runner, tmp_path / "s.jsonl", tmp_path)
    assert bullets(summary) == ["Rename the billing module to invoicing", "Now update the imports in app.py",
                                "And run the tests"]
    assert "The user's first request:\nRename the billing module to invoicing" in section(summary, 1)


def test_a_subagent_s_long_prompt_is_cut_where_a_typed_one_is_not(runner, tmp_path):
    """A subagent's transcript (its lines on the sidechain): its prompt is the main agent's (spotter's
    compaction agent: 8,900 characters of instructions), cut at 2,000 characters; the same prompt typed
    by a person is quoted whole."""
    prompt = "Summarise the conversation; " + "list every file and error in detail. " * 120  # 4,500 characters
    quoted = {}
    for sidechain in (False, True):
        s = Session(tmp_path / str(sidechain))
        s.prompt(prompt)
        s.tool("Bash", {"command": "ls"}, "a.py\n" * 2000)
        s.say("Done.")
        for e in s.entries:
            e["isSidechain"] = sidechain
        (tmp_path / str(sidechain)).mkdir()
        s.write(tmp_path / str(sidechain) / "s.jsonl")
        summary, _ = compact_forced(runner, tmp_path / str(sidechain) / "s.jsonl", tmp_path / str(sidechain))
        quoted[sidechain] = section(summary, 6)
    assert f"- {prompt}\n" in quoted[False]
    assert f"- {prompt[:2000]} [… {len(prompt) - 2000:,} more characters omitted]\n" in quoted[True]


def test_a_prompt_s_own_spaces_are_kept(runner, tmp_path):
    """Verbatim means the prompt as typed: a trailing space stays (recorded with Claude Code 2.1.328, it
    was taken off); the seam of a hook's reminder after the words does not."""
    s = Session(tmp_path)
    s.prompt("Rename «Order» in café.py, then explain why. ")
    s.tool("Bash", {"command": "ls"}, "café.py\n" * 400)
    s.prompt("Use tmp_path there <system-reminder>hook context</system-reminder>")
    s.say("Done.")
    s.write(tmp_path / "s.jsonl")
    summary, _ = compact_forced(runner, tmp_path / "s.jsonl", tmp_path)
    assert "- Rename «Order» in café.py, then explain why. \n- Use tmp_path there\n" in section(summary, 6)


# -- harness messages and local commands are not requests ------------------------------------------
def harness_session(tmp_path: Path) -> Session:
    s = Session(tmp_path)
    s.prompt("Fix the flaky test in tests/test_io.py")
    s.tool("Bash", {"command": "pytest tests/test_io.py"}, "tests/test_io.py ..F. " * 400)
    s.prompt("<local-command-caveat>Caveat: The messages below were generated by the user while running local "
             "commands. DO NOT respond to these messages.</local-command-caveat>", isMeta=True)
    s.prompt("<command-name>/model</command-name>\n<command-message>model</command-message>\n<command-args>"
             "</command-args>")
    s.prompt("<local-command-stdout>Kept model as Default</local-command-stdout>")
    s.prompt("<bash-input>git status</bash-input>")
    s.prompt("<bash-stdout>nothing to commit</bash-stdout><bash-stderr></bash-stderr>")
    s.say("Looking at it.")
    # typed while the turn ran: delivered as a queued_command attachment; a task's notice is not typed
    s.attach({"type": "queued_command", "prompt": "Also update the README", "commandMode": "prompt"},
             "The user sent a new message while you were working:\nAlso update the README", role="user")
    s.attach({"type": "queued_command", "prompt": "<task-notification>done</task-notification>",
              "commandMode": "task-notification"}, "A background agent completed a task:\ndone", role="user")
    s.prompt("[Request interrupted by user]")
    s.prompt("<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>\n</task-notification>")
    s.prompt("<task-notification>\n<task-id>b2</task-id>\n</task-notification>", origin={"kind": "task-notification"})
    s.prompt("Stop hook feedback:\n[stop.sh]: uncommitted changes", isMeta=True)
    s.prompt("<system-reminder>\nThe date is 2026-11-29.\n</system-reminder>")
    s.prompt("<command-name>/review</command-name>\n<command-message>review</command-message>\n"
             "<command-args>PR 12</command-args>")
    s.prompt("Review pull request 12 of this repository. Look at the diff and ...", isMeta=True)
    s.say("Reviewed.")
    s.prompt("Use pytest's tmp_path there <system-reminder>hook context</system-reminder>")
    s.say("Done.")
    s.prompt("Thanks")
    s.say("You're welcome.")
    return s


def test_local_commands_and_harness_messages_are_never_requests(runner, tmp_path):
    harness_session(tmp_path).write(tmp_path / "s.jsonl")
    summary, _ = compact_forced(runner, tmp_path / "s.jsonl", tmp_path)
    # a custom command that expanded into a prompt is the user's request, as the command line typed
    assert bullets(summary) == ["Fix the flaky test in tests/test_io.py", "Also update the README", "/review PR 12",
                                "Use pytest's tmp_path there", "Thanks"]
    assert requests(summary) == [*bullets(summary), "Fix the flaky test in tests/test_io.py", "Thanks", "Thanks"]
    assert "hook context" not in summary and "Review pull request 12 of this repository" not in summary


def test_plain_messages_leave_the_same_harness_shapes_out():
    texts = ["<task-notification>\n<task-id>b1</task-id>\n</task-notification>", "[Request interrupted by user]",
             "[Request interrupted by user for tool use]", "<bash-input>ls</bash-input>",
             "<command-name>/compact</command-name>\n<command-args>focus</command-args>",
             "<local-command-stdout>Compacted</local-command-stdout>", "Stop hook feedback:\nfailed",
             "<teammate-message>hi</teammate-message>",
             "<ide_opened_file>The user opened src/x.py in the IDE.</ide_opened_file>"]
    history = [{"role": "user", "content": "Ship the release notes"}]
    for k, text in enumerate(texts):
        history += [{"role": "assistant", "content": [{"type": "text", "text": f"step {k}"}]},
                    {"role": "user", "content": text}]
    history.append({"role": "assistant", "content": [{"type": "text", "text": "done"}]})
    summary = ExtractiveSummarizer().summarize(history)
    assert bullets(summary) == ["Ship the release notes"]
    assert "Most recent request" not in section(summary, 1)


def test_a_long_prompt_is_verbatim_up_to_its_limit_then_marked():
    prompt = "Refactor. " * 1300  # 13,000 characters
    summary = ExtractiveSummarizer(facts=SessionFacts(prompts=(prompt,))).summarize(
        [{"role": "assistant", "content": [{"type": "text", "text": "ok"}]}])
    assert f"- {prompt[:10000]} [… 3,000 more characters omitted]\n" in section(summary, 6)


def test_a_long_spec_in_a_long_session_is_quoted_whole():
    """held-out 01a88240: an 11,092-character plan ("Implement the following plan: ...") was cut at 10,000, its
    last steps gone from the context. Where the prompts take at most a fifth of what the summary replaces,
    each is quoted whole, however long; in a short session the cut stays."""
    spec = "## Core principle: keep every checkpoint in the repository. " * 500  # about 29,500 characters
    work = [{"role": "assistant", "content": [{"type": "tool_use", "id": f"t{k}", "name": "Read",
                                               "input": {"file_path": f"/w/{k}.py"}}]} for k in range(40)]
    work += [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{k}",
                                           "content": f"line {k}\n" * 800}]} for k in range(40)]
    long_session = ExtractiveSummarizer(facts=SessionFacts(prompts=(spec, "go on"))).summarize(work)
    assert bullets(long_session) == [spec, "go on"]
    short_session = ExtractiveSummarizer(facts=SessionFacts(prompts=(spec, "go on"))).summarize(work[:2])
    assert "more characters omitted]" in section(short_session, 6)


def test_a_prompt_of_a_few_thousand_characters_is_quoted_whole():
    """A 2,800-character prompt (instructions with unicode, quotes, a tab) is the user's request word for
    word: it was cut at 2,000 characters before."""
    prompt = "Rename «Order» → «Bestellung» in café.py — keep \"日本語\" and 🚀, a \\ and a tab\there. " + \
        "Also explain why. " * 150
    summary = ExtractiveSummarizer(facts=SessionFacts(prompts=(prompt, "Thanks"))).summarize(
        [{"role": "assistant", "content": [{"type": "text", "text": "ok"}]}])
    assert bullets(summary) == [prompt, "Thanks"]
    # section 1 opens it (cut at a word) and says where the rest is: quoted twice, a paste took the summary
    # past the history
    opening = prompt[:1000].rsplit(" ", 1)[0]
    assert f"The user's first request:\n{opening} [… continued in 6. All user messages]\n" in section(summary, 1)
    assert prompt not in section(summary, 1)



def test_many_pasted_prompts_share_one_cut_and_the_compaction_still_frees_room(runner, tmp_path):
    """Thirty prompts each pasting a 9,000-character log: quoted up to 10,000 characters each, the summary
    was larger than the conversation and ``compact --force`` left the session as it was ("would not be
    smaller"). The prompts share one cut, never below 2,000 characters, and the compaction frees room. (Of
    logs of one length none is longer than the others: the longest cannot be cut alone, all are.)"""
    s = Session(tmp_path)
    for k in range(30):
        log = "\n".join(f"ERROR step {k}-{j}: worker {j * 7 % 13} lost lease {k * 31 + j}" for j in range(300))
        s.prompt((f"Log {k:02d}, please fix:\n" + log)[:9000])
        s.say(f"Fixed issue {k}.")
    s.write(tmp_path / "s.jsonl")
    summary, _ = compact_forced(runner, tmp_path / "s.jsonl", tmp_path)  # asserts it applied
    quoted = re.findall(r"^- (Log \d+, please fix:\n.*?) \[… [\d,]+ more characters omitted\]$", section(summary, 6),
                        re.DOTALL | re.MULTILINE)
    assert len(quoted) == 30 and len({len(q) for q in quoted}) == 1  # one cut for all
    assert 2000 <= len(quoted[0]) < 9000
    few = ExtractiveSummarizer(facts=SessionFacts(prompts=("x" * 9000, "y" * 9000))).summarize(
        [{"role": "assistant", "content": [{"type": "text", "text": "ok"}]}])
    assert bullets(few) == ["x" * 9000, "y" * 9000]  # two long prompts still whole

# -- errors quoted from the stored original ------------------------------------------------------------
ERROR = ("Exit code 1\nTraceback (most recent call last):\n  File \"app.py\", line 3, in <module>\n    import yaml\n"
         "ModuleNotFoundError: No module named 'yaml'")


def error_session(tmp_path: Path) -> Path:
    s = Session(tmp_path)
    s.prompt("Make app.py run")
    s.tool("Bash", {"command": "python app.py"}, ERROR, is_error=True)
    for k in range(7):  # later results: the failed one is no longer among the 5 most recent
        s.tool("Bash", {"command": f"echo step {k}"}, f"step {k} " + "output " * 40)
    s.say("Installed PyYAML; it runs.")
    s.write(tmp_path / "s.jsonl")
    return tmp_path / "s.jsonl"


def test_an_error_microcompact_cleared_in_an_earlier_run_is_quoted_from_the_store(runner, tmp_path):
    src = error_session(tmp_path)
    first = runner.invoke(app, ["compact", str(src), "--now", NOW, "-o", str(tmp_path / "cleared.jsonl")])
    assert "microcompact: applied: cleared" in first.stderr, first.stderr
    assert "[Old tool result content cleared]" in (tmp_path / "cleared.jsonl").read_text()
    summary, _ = compact_forced(runner, tmp_path / "cleared.jsonl", tmp_path, "--store", str(tmp_path / ".ctxkit"))
    errors = section(summary, 4)
    assert "- Bash `python app.py` failed:\n    Exit code 1\n" in errors
    assert "    ModuleNotFoundError: No module named 'yaml'" in errors
    assert "[Old tool result content cleared]" not in summary


def test_an_error_the_budget_persisted_in_an_earlier_run_is_quoted_from_the_store(runner, tmp_path):
    s = Session(tmp_path)
    s.prompt("Run the whole suite")
    log = "".join(f"tests/test_{k:04d}.py::test_case PASSED\n" for k in range(1500))  # ~60,000 characters
    s.tool("Bash", {"command": "pytest -v"}, f"Exit code 1\n{log}FAILED tests/test_9999.py::test_last - assert 1 == 2",
           is_error=True)
    s.say("One test fails.")
    s.write(tmp_path / "s.jsonl")
    first = runner.invoke(app, ["compact", str(tmp_path / "s.jsonl"), "--now", "2026-11-29T10:05:00Z",
                                "-o", str(tmp_path / "persisted.jsonl")])
    assert "tool-result-budget: applied: persisted 1 result(s)" in first.stderr, first.stderr
    assert "test_9999" not in (tmp_path / "persisted.jsonl").read_text()  # past the preview
    summary, _ = compact_forced(runner, tmp_path / "persisted.jsonl", tmp_path, "--store", str(tmp_path / ".ctxkit"))
    assert "    FAILED tests/test_9999.py::test_last - assert 1 == 2" in section(summary, 4)
    assert "<persisted-output>" not in section(summary, 4)


def test_an_error_cleared_in_the_same_run_is_quoted_from_the_input(runner, tmp_path):
    summary, _ = compact_forced(runner, error_session(tmp_path), tmp_path)
    assert "    ModuleNotFoundError: No module named 'yaml'" in section(summary, 4)
    assert "[Old tool result content cleared]" not in summary


# -- a failure and its own fix --------------------------------------------------------------------------
def tool_round(tid: str, name: str, tool_input: dict, result: str, is_error: bool = False) -> list[dict]:
    block = {"type": "tool_result", "tool_use_id": tid, "content": result, **({"is_error": True} if is_error else {})}
    return [{"role": "assistant", "content": [{"type": "tool_use", "id": tid, "name": name, "input": tool_input}]},
            {"role": "user", "content": [block]}]


def test_a_failure_is_paired_only_with_a_later_success_of_the_same_command_or_file():
    history = [{"role": "user", "content": "Fix the build"},
               *tool_round("a", "Bash", {"command": "make build"}, "Exit code 2\nmissing header", True),
               *tool_round("b", "Bash", {"command": "ls include"}, "util.h"),
               *tool_round("c", "Edit", {"file_path": "src/a.c", "old_string": "x", "new_string": "y"},
                           "String not found", True),
               *tool_round("d", "Edit", {"file_path": "src/b.c", "old_string": "x", "new_string": "y"}, "ok"),
               *tool_round("e", "Bash", {"command": "CFLAGS=-Iinclude make build"}, "built")]
    errors = section(ExtractiveSummarizer().summarize(history), 4)
    assert errors.strip().splitlines() == [
        "- Bash `make build` failed:",
        "    Exit code 2",
        "    missing header",
        "  then succeeded: Bash `CFLAGS=-Iinclude make build`",  # its own retry, not the unrelated `ls include`
        "- Edit `src/a.c` failed: String not found",  # the edit of src/b.c did not fix src/a.c
    ]


# -- code in whole lines ---------------------------------------------------------------------------------
CODE = "\n".join(f"def handler_{k}(request):  # route {k}\n    return respond(request, status={200 + k})"
                 for k in range(30))


def test_code_is_quoted_in_whole_lines():
    history = [{"role": "user", "content": "Add the handlers"},
               *tool_round("w", "Write", {"file_path": "app/handlers.py", "content": CODE}, "written"),
               {"role": "assistant", "content": [{"type": "text", "text": f"Here they are:\n```python\n{CODE}\n```"}]},
               {"role": "user", "content": "Good"},
               {"role": "assistant", "content": [{"type": "text", "text": f"Final:\n```python\n{CODE}\n{CODE}\n```"}]}]
    summary = ExtractiveSummarizer().summarize(history)
    source = set(CODE.splitlines())
    quoted = re.search(r"last change \(Write\):\n((?:    .*\n)+)", section(summary, 3)).group(1).splitlines()
    assert quoted[-1] == f"    [… {60 - len(quoted) + 1} more lines omitted]"
    assert all(line[4:] in source for line in quoted[:-1])  # each quoted line is a whole line of the file
    current = section(summary, 8).split("Last assistant message:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert current[0] == "Final:" and current[1] == "```python"
    assert all(line in source for line in current[2:-2])
    assert current[-2:] == ["```", f"[… {2 + 2 * 60 + 1 - len(current) + 2} more lines omitted]"]
    # an earlier remark's code block is named, not squashed into the line and cut
    assert "- Here they are: [python code, 60 lines]" in section(summary, 5)


def test_the_next_step_answers_the_latest_prompt_of_the_session_when_nothing_answered_it():
    history = [{"role": "user", "content": "Make the parser faster"},
               {"role": "assistant", "content": [{"type": "text", "text": "Profiling."}]},
               {"role": "user", "content": [{"type": "text", "text": "Use a cache"},  # merged user turns
                                            {"type": "text", "text": "[Request interrupted by user]"},
                                            {"type": "text", "text": "No, use a lookup table"}]}]
    facts = SessionFacts(prompts=("Write a parser", "Make the parser faster", "Use a cache", "No, use a lookup table"))
    summary = ExtractiveSummarizer(facts=facts).summarize(history)
    assert section(summary, 9).strip() == ("Respond to the user's most recent message, which has not been answered "
                                           'yet: "No, use a lookup table"')
    assert bullets(summary) == list(facts.prompts)


def test_a_secret_in_an_earlier_prompt_is_redacted_before_the_prompt_is_quoted(runner, tmp_path):
    """Redacted where the session's prompts are read (summary_facts), before any quote is cut: a cut at
    10,000 characters would fall inside the token, where the output's redaction would miss it."""
    token = "ghp_" + "".join("abcdefghijkLMNOPQRSTU0123456789"[b % 31] for b in hashlib.shake_256(b"gh").digest(36))
    s = Session(tmp_path)
    s.prompt("a" * 9990 + " " + token + " is the token for the release script")  # cut at 10,000 inside the token
    s.say("Released.")
    s.boundary()
    s.prompt("Now tag it")
    s.tool("Bash", {"command": "git tag v1"}, "tagged " * 3000)
    s.say("Tagged.")
    s.write(tmp_path / "s.jsonl")
    summary, _ = compact_forced(runner, tmp_path / "s.jsonl", tmp_path)
    assert token[:8] not in summary
    assert bullets(summary)[0] == "a" * 9990 + " [REDACTED:github-token] is the token for the release script"
    cut = ExtractiveSummarizer(facts=SessionFacts(prompts=(bullets(summary)[0], "Now tag it"))).summarize([])
    # the cut of the same quote falls in the marker: it cuts before it, never half a marker
    assert bullets(cut)[0].endswith("a  [… 59 more characters omitted]")


# -- the room goes to commands and errors, not to repeats (issue 28, item 11) ---------------------------
def _long_audit() -> list[dict]:
    """A long audit: 13 distinct shell commands, one identical error met 6 times, and 6 report files
    written whose content is one boilerplate line repeated 33 times."""
    messages: list[dict] = [{"role": "user", "content": "Audit the repository: run the checks and write a report "
                                                         "per module."}]
    n = 0

    def call(name: str, tool_input: dict, result: str, is_error: bool = False) -> None:
        nonlocal n
        n += 1
        messages.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_{n:02d}", "name": name,
                                                           "input": tool_input}]})
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{n:02d}",
                                                      "content": result, **({"is_error": True} if is_error else {})}]})

    for k in range(6):
        call("Bash", {"command": f"python -m audit.module_{k} --strict"},
             "Traceback (most recent call last):\n  File \"<frozen runpy>\", line 189\n"
             "ModuleNotFoundError: No module named 'audit'", is_error=True)
    for k, command in enumerate(["git status --porcelain", "git log --oneline -20", "ls -la src",
                                 "wc -l src/*.py", "grep -rn TODO src", "pip list --outdated", "pytest -q tests"]):
        call("Bash", {"command": command}, f"output of check {k}\n" * 5)
    for k in range(6):
        call("Write", {"file_path": f"/work/reports/module_{k}.txt", "content": "result line\n" * 33}, "File created.")
    messages.append({"role": "assistant", "content": [{"type": "text", "text": "The reports are written."}]})
    return messages


def test_the_offline_summary_says_a_repeated_error_once_and_boilerplate_once_and_lists_every_command():
    from ctxkit.summarize.retention import measure

    history = _long_audit()
    summary = ExtractiveSummarizer().summarize(history)
    errors = section(summary, 4)
    assert errors.count("ModuleNotFoundError: No module named 'audit'") == 1
    assert "failed (6 times)" in errors and "the same error from: Bash `python -m audit.module_0 --strict`" in errors
    files = section(summary, 3)
    assert files.count("result line") == 6  # once per file, then counted
    assert files.count("[… the same line 32 more times]") == 6
    kept = measure(history, [{"role": "user", "content": summary}])
    assert (kept.kept["commands"], kept.total["commands"]) == (13, 13)
    assert kept.kept["errors"] == kept.total["errors"]
    assert len(summary) < 6_000
