"""A call whose result never came, followed by another assistant message (the turn was cut off and the
model called again; a real aistrad session has one): ``view --to anthropic-request`` answers it with an
error result in a user message of its own, as Claude Code does on resume, so the API does not refuse
the request; so do the message lists (``view``, ``--to openai``). Doctor's finding and what compact and
expand do to the file stay as they were."""
from __future__ import annotations

import json

from builders import Call, Turn, conversation, write

from ctxkit.cli.main import app
from ctxkit.transcript.view import NO_RESULT, pairing_problems


def _cut_off(tmp_path):
    """Two rounds of calls; the first round's result line never reached the file, and the second round's
    assistant line hangs off the unanswered call (as Claude Code chains it)."""
    entries = conversation([Turn("Read both", [[Call("Read", {"file_path": "a.py"}, "A")],
                                               [Call("Read", {"file_path": "b.py"}, "B")]], "Both read.")])
    k = next(k for k, e in enumerate(entries) if e["type"] == "user" and isinstance(e["message"]["content"], list))
    lost = entries.pop(k)
    for e in entries:
        if e.get("parentUuid") == lost["uuid"]:
            e["parentUuid"] = lost["parentUuid"]
    call = entries[k - 1]["message"]["content"][0]["id"]
    return write(tmp_path / "cut.jsonl", entries), call, k  # (k: the line that follows the call)


def test_the_request_answers_a_call_another_assistant_message_follows(runner, tmp_path):
    path, call, line = _cut_off(tmp_path)
    result = runner.invoke(app, ["view", str(path), "--to", "anthropic-request"])
    assert result.exit_code == 0, result.stderr
    msgs = json.loads(result.stdout)["messages"]
    assert pairing_problems(msgs) == []
    at = next(i for i, m in enumerate(msgs) if m["role"] == "assistant" and isinstance(m["content"], list)
              and any(b.get("id") == call for b in m["content"]))
    assert msgs[at + 1] == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": call, "is_error": True, "content": NO_RESULT}]}
    assert msgs[at + 2]["role"] == "assistant"  # the model's next call, as it was
    assert [m["role"] for m in msgs] == ["user", "assistant", "user", "assistant", "user", "assistant"]


def test_the_message_lists_answer_the_call_too_so_that_either_api_takes_them(runner, tmp_path):
    """``view`` (anthropic messages) and ``--to openai``: lists a user sends on; both APIs refuse a call with
    no result after it, so the call is answered there too, in words that say what happened."""
    path, call, _ = _cut_off(tmp_path)
    view = runner.invoke(app, ["view", str(path)])
    msgs = [json.loads(x) for x in view.stdout.splitlines()]
    assert [m["role"] for m in msgs] == ["user", "assistant", "user", "assistant", "user", "assistant"]
    assert pairing_problems(msgs) == []
    assert msgs[2]["content"][0]["tool_use_id"] == call and msgs[2]["content"][0]["content"] == NO_RESULT
    openai = [json.loads(x) for x in runner.invoke(app, ["view", str(path), "--to", "openai"]).stdout.splitlines()]
    answered = [m for m in openai if m["role"] == "tool" and m.get("tool_call_id") == call]
    assert len(answered) == 1 and NO_RESULT in json.dumps(answered[0])


def test_doctor_compact_and_expand_still_see_the_call_as_the_file_has_it(runner, tmp_path):
    path, call, line = _cut_off(tmp_path)
    doctor = runner.invoke(app, ["doctor", str(path), "--json"])
    found = [(f["rule"], f["line"]) for f in json.loads(doctor.stdout)["findings"] if f["severity"] == "error"]
    assert ("consecutive-assistant", line + 1) in found, found
    # compact and expand: the input back byte for byte
    out = tmp_path / "out.jsonl"
    assert runner.invoke(app, ["compact", str(path), "--force", "-p", "no-llm", "-o", str(out)]).exit_code == 0
    back = runner.invoke(app, ["expand", str(out)])
    assert back.exit_code == 0 and back.stdout_bytes.startswith(path.read_bytes())
