"""Gemini CLI's single-JSON files: the older session layout (one ``ConversationRecord``, read as
``gemini``) and ``/chat save`` checkpoints (the history as ``Content``, read as ``gemini-checkpoint``,
both of Gemini CLI's layouts): detected by content, viewed as Gemini CLI sends them, masked and
compacted in the shape Gemini CLI reads back, and expanded byte for byte."""
from __future__ import annotations

import json
from pathlib import Path

import gemini_sessions as g
from test_agent_masking import OPTIONS, ctxkit

from ctxkit.transcript import pairing_problems, read_transcript

SUMMARY_OPENING = "This session is being continued from a previous conversation"
MASKING = OPTIONS


def _size(k: int) -> int:
    return 20000 if k in (1, 5) else 300  # (two results over the 30,000 characters the budget allows)


def history(with_ids: bool = True, response_ids: bool = True) -> list[dict]:
    """A chat's history as ``/chat save`` writes it: the setup turn, then six turns with a shell call each."""
    out = [{"role": "user", "parts": [{"text": "This is the Gemini CLI. We are setting up the context for our chat."}]},
           {"role": "model", "parts": [{"text": "Got it. Thanks for the context!"}]}]
    for k in range(6):
        call = {"name": "run_shell_command", "args": {"command": f"seq {k}"}}
        if with_ids:
            call["id"] = f"c{k}"
        out += [{"role": "user", "parts": [{"text": f"count {k}"}]},
                {"role": "model", "parts": [{"text": "**Counting**", "thought": True}, {"functionCall": call}]},
                {"role": "user", "parts": [{"functionResponse": {**({"id": f"c{k}"} if response_ids else {}),
                                                                 "name": "run_shell_command",
                                                                 "response": {"output": f"{k}\n" * _size(k)}}}]},
                {"role": "model", "parts": [{"text": f"counted {k}"}]}]
    return out


def older_session() -> dict:
    recs = []
    for k in range(6):
        recs += [g.user(f"u{k}", f"count {k}"),
                 g.gemini(f"g{k}", "", [g.tool_call(f"c{k}", "run_shell_command", {"command": f"seq {k}"},
                                                    f"{k}\n" * _size(k))], tokens=2000 + k),
                 g.gemini(f"h{k}", f"counted {k}")]
    meta = g.metadata()
    del meta["kind"]
    return {**meta, "messages": recs}


FILES = {"checkpoint-new.json": ("gemini-checkpoint", lambda: {"history": history(), "authType": "gemini-api-key"}),
         "checkpoint-legacy.json": ("gemini-checkpoint", history),
         "session-2025-09-01T10-00-5a1e2b3c.json": ("gemini", older_session)}


def _write(folder: Path) -> None:
    for name, (_, make) in FILES.items():
        (folder / name).write_text(json.dumps(make(), indent=2))


def test_each_file_is_named_by_its_content_and_viewed_as_gemini_cli_sends_it(tmp_path):
    _write(tmp_path)
    for name, (fmt, _) in FILES.items():
        stats = ctxkit("stats", "--json", name, cwd=tmp_path)
        assert stats.returncode == 0, stats.stderr
        assert json.loads(stats.stdout)["format"] == fmt
        view = read_transcript(tmp_path / name).view()
        api = view.api_messages()
        assert not pairing_problems(api)
        uses = [b["id"] for m in api if m["role"] == "assistant" for b in m["content"] if b["type"] == "tool_use"]
        assert uses == [f"c{k}" for k in range(6)], name
        assert not any("Counting" in json.dumps(m) for m in api)  # thoughts are the model's own: left out
    # a call without an id takes its response's; one never answered is answered, so the request stays valid
    hist = history(with_ids=False)
    del hist[-2:]  # the last call's response and answer: never recorded
    (tmp_path / "cut.json").write_text(json.dumps(hist, indent=2))
    api = read_transcript(tmp_path / "cut.json").view().api_messages()
    assert not pairing_problems(api)
    results = [b for m in api for b in m["content"] if isinstance(m["content"], list) and b["type"] == "tool_result"]
    assert [r["tool_use_id"] for r in results] == [f"c{k}" for k in range(5)] + ["call-24-1"]  # (its line, its part)
    assert results[-1]["content"] == "[no result recorded]"


def test_masking_writes_a_function_response_and_expand_gives_each_file_back(tmp_path):
    for name in FILES:
        # (a store each: two checkpoints of one chat are one conversation, whose decisions the second replays)
        tmp_path = tmp_path.parent / f"{tmp_path.name}-{name}"
        tmp_path.mkdir()
        _write(tmp_path)
        done = ctxkit("compact", "-p", "no-llm", "--force", *MASKING, name, "-o", "m-" + name, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert "tool-result-budget: applied: persisted 2 result(s)" in done.stderr, (name, done.stderr)
        assert "microcompact: applied: cleared 4 old tool result(s)" in done.stderr, (name, done.stderr)
        text = (tmp_path / ("m-" + name)).read_text()
        assert text.count('"output": "[Old tool result content cleared]"') == 4  # as Gemini CLI records an output
        again = ctxkit("compact", "-p", "no-llm", "--force", *MASKING, "m-" + name, "-o", "a-" + name, cwd=tmp_path)
        assert (tmp_path / ("a-" + name)).read_bytes() == (tmp_path / ("m-" + name)).read_bytes(), again.stderr
        back = ctxkit("expand", "m-" + name, "-o", "e-" + name, cwd=tmp_path)
        assert back.returncode == 0, back.stderr
        assert (tmp_path / ("e-" + name)).read_bytes() == (tmp_path / name).read_bytes(), name


def test_a_compacted_checkpoint_is_a_history_gemini_cli_loads_and_expand_undoes_it(tmp_path):
    _write(tmp_path)
    for name in ("checkpoint-new.json", "checkpoint-legacy.json"):
        done = ctxkit("compact", "-p", "no-llm", "--force", name, "-o", "c-" + name, cwd=tmp_path)
        assert done.returncode == 0 and "autocompact: applied" in done.stderr, done.stderr
        doc = json.loads((tmp_path / ("c-" + name)).read_text())
        hist = doc["history"] if isinstance(doc, dict) else doc
        if name == "checkpoint-new.json":
            assert doc["authType"] == "gemini-api-key"  # what /chat resume checks is kept
        # what /chat resume sets as the chat's history: the summary, Gemini CLI's acknowledgement, the kept tail;
        # every content a {role, parts}, the roles alternating
        assert all(set(c) == {"role", "parts"} for c in hist)
        assert hist[0]["parts"][0]["text"].startswith(SUMMARY_OPENING)
        # (Gemini CLI's acknowledgement follows the summary when the kept tail opens with a user turn; here it
        # opens with the model's last answer, which follows the summary itself)
        assert hist[1]["role"] == "model"
        assert all(a["role"] != b["role"] for a, b in zip(hist, hist[1:], strict=False))
        assert len(hist) < len(history())
        twice = ctxkit("compact", "-p", "no-llm", "--force", "c-" + name, "-o", "cc-" + name, cwd=tmp_path)
        assert twice.returncode == 0, twice.stderr
        back = ctxkit("expand", "cc-" + name, "-o", "e-" + name, cwd=tmp_path)
        assert back.returncode == 0, back.stderr
        assert (tmp_path / ("e-" + name)).read_bytes() == (tmp_path / name).read_bytes()


def test_a_compacted_older_session_holds_no_rewind_and_expand_undoes_it(tmp_path):
    _write(tmp_path)
    name = "session-2025-09-01T10-00-5a1e2b3c.json"
    done = ctxkit("compact", "-p", "no-llm", "--force", name, "-o", "c.json", cwd=tmp_path)
    assert done.returncode == 0 and "autocompact: applied" in done.stderr, done.stderr
    doc = json.loads((tmp_path / "c.json").read_text())
    assert doc["sessionId"] == g.SESSION_ID and "$rewindTo" not in json.dumps(doc)  # the older loader has no rewind
    assert doc["messages"][0]["type"] == "user" and doc["messages"][0]["content"][0]["text"].startswith(SUMMARY_OPENING)
    assert ctxkit("expand", "c.json", "-o", "e.json", cwd=tmp_path).returncode == 0
    assert (tmp_path / "e.json").read_bytes() == (tmp_path / name).read_bytes()
    over = ctxkit("compact", "-p", "no-llm", "--force", name, "-o", name, cwd=tmp_path)
    assert over.returncode != 0 and over.returncode != 4 and "Traceback" not in over.stderr


def test_a_kept_tail_opening_with_a_prompt_follows_gemini_clis_acknowledgement(tmp_path):
    """(The roles of a history alternate: a summary, then a user turn, would not; Gemini CLI's own
    compression answers its summary with this sentence, and ``ctxkit expand`` takes it out again.)"""
    from ctxkit.stages.autocompact.compaction import Compaction, uncompact_plain, write_compaction
    from ctxkit.store.disk import Store

    path = tmp_path / "checkpoint.json"
    path.write_text(json.dumps({"history": history(), "authType": "gemini-api-key"}, indent=2))
    t = read_transcript(path)
    view = t.view()
    keep_from = max(k for k, m in enumerate(view.messages) if m.role == "user" and m.kind == "prompt")
    store = Store(tmp_path / "store")
    written = write_compaction(t, view, Compaction(summary="the summary", keep_from=keep_from),
                               count=lambda msgs: 0, store=store, timestamp="2026-03-01T11:00:00.000Z")
    api = written.transcript.view().api_messages()
    assert api[0]["content"][0]["text"].startswith(SUMMARY_OPENING)
    assert api[1] == {"role": "assistant", "content": [{"type": "text", "text": "Got it. Thanks for the additional "
                                                                                 "context!"}]}
    assert api[2] == {"role": "user", "content": [{"type": "text", "text": "count 5"}]}
    back = uncompact_plain(written.transcript, store)
    assert [back.entry(i) for i in back.live_indexes()] == [t.entry(i) for i in t.live_indexes()]


def test_function_responses_without_ids_are_masked_by_the_call_they_answer(tmp_path):
    """(Gemini CLI 0.61 sends, and so keeps in a chat's history, a function response without the id its call
    has: the call before it says which result it is, for the stages and for expand.)"""
    path = tmp_path / "checkpoint.json"
    path.write_text(json.dumps({"history": history(response_ids=False), "authType": "gemini-api-key"}, indent=2))
    api = read_transcript(path).view().api_messages()
    assert [b["tool_use_id"] for m in api if isinstance(m["content"], list) for b in m["content"]
            if b["type"] == "tool_result"] == [f"c{k}" for k in range(6)]
    done = ctxkit("compact", "-p", "no-llm", "--force", *MASKING, path.name, "-o", "m.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "tool-result-budget: applied: persisted 2 result(s)" in done.stderr
    assert "microcompact: applied: cleared 4 old tool result(s)" in done.stderr
    assert (tmp_path / "m.json").read_text().count('"output": "[Old tool result content cleared]"') == 4
    back = ctxkit("expand", "m.json", "-o", "e.json", cwd=tmp_path)
    assert back.returncode == 0 and "restored 5 tool output(s)" in back.stderr, back.stderr
    assert (tmp_path / "e.json").read_bytes() == path.read_bytes()


def test_a_document_with_crlf_line_endings_comes_back_byte_for_byte(tmp_path):
    """A session or checkpoint laid out with CRLF (written, or checked out, on Windows): the elements a
    compaction takes out are laid out again with CRLF when expand puts them back (they came back with LF)."""
    _write(tmp_path)
    for name in FILES:
        crlf = tmp_path / f"crlf-{name}"
        crlf.write_bytes((tmp_path / name).read_bytes().replace(b"\n", b"\r\n"))
        done = ctxkit("compact", "-p", "no-llm", "--force", crlf.name, "-o", f"c-{name}", cwd=tmp_path)
        assert done.returncode == 0 and "autocompact: applied" in done.stderr, done.stderr
        assert ctxkit("expand", f"c-{name}", "-o", f"e-{name}", cwd=tmp_path).returncode == 0
        assert (tmp_path / f"e-{name}").read_bytes() == crlf.read_bytes(), name
