"""attachments: dynamic state appended at the tail, replayed from the transcript, never touching the prefix."""
from __future__ import annotations

import io
import json
import os
import shutil
import time
from datetime import datetime, timedelta, timezone

import jsonschema
import pytest
from builders import T0, Session
from conftest import CC_CORPUS, FIXED_NOW, cc_sessions, needs_corpus

from ctxkit.reminders import reminder
from ctxkit.stages.attachments import ATTACHMENT_TYPES, announce_full, options_schemas, render_delta
from ctxkit.stages.attachments.stage import Attachments
from ctxkit.stages.attachments.state import local_today
from ctxkit.transcript import pairing_problems, read_transcript

ALL = list(ATTACHMENT_TYPES)
UTC = timezone.utc


# -- helpers --------------------------------------------------------------------------------------
def policy(*types, **options):
    """A policy enabling the named attachment types (options per type as keyword dicts)."""
    return {"attachments": {t: dict(options.get(t, {})) for t in types}}


def run(t, ctx, **stage_options):
    return Attachments("attachments", stage_options).run(t, ctx)


def rerun(result, tmp_path, name="out.jsonl"):
    """Write a stage's output and read it back, as the next ``ctxkit compact`` would."""
    p = tmp_path / name
    buf = io.BytesIO()
    result.transcript.write(buf)
    p.write_bytes(buf.getvalue())
    return read_transcript(p)


def new_entries(before, result):
    return [result.transcript.entry(i) for i in range(before.n_entries, result.transcript.n_entries)]


def tail_texts(result, before):
    """The texts the stage appended, as the model sees them (reminder tags removed for system ones)."""
    out = []
    for e in new_entries(before, result):
        out.extend(r["content"] for r in e.get("rendered", []))
        c = e.get("content")
        if isinstance(c, list):
            out.extend(b["text"] for b in c if b.get("type") == "text")
        elif isinstance(c, str):
            out.append(c)
    return out


def assert_prefix_byte_identical(before, after):
    """Every earlier message of the view serializes to the same bytes; the last may only have grown."""
    old = before.view().api_messages()
    new = after.view().api_messages()
    assert len(new) >= len(old)
    for k, m in enumerate(old):
        a, b = json.dumps(m, sort_keys=True), json.dumps(new[k], sort_keys=True)
        if k < len(old) - 1:
            assert a == b, f"message {k} changed"
        elif a != b:  # the last message may have taken appended blocks (same role merges)
            assert new[k]["role"] == m["role"]
            oc, nc = m["content"], new[k]["content"]
            oc = [{"type": "text", "text": oc}] if isinstance(oc, str) and isinstance(nc, list) else oc
            if isinstance(oc, str):
                assert nc.startswith(oc)
            else:
                assert json.dumps(nc[: len(oc)], sort_keys=True) == json.dumps(oc, sort_keys=True)
    assert pairing_problems(new) == []


def set_mtime(path, when: datetime):
    os.utime(path, (when.timestamp(), when.timestamp()))


# -- registry and options ---------------------------------------------------------------------------
def test_every_type_is_registered_in_claude_codes_order_with_a_valid_options_schema():
    assert ALL == ["queued_commands", "date_change", "deferred_tools_delta", "agent_listing_delta",
                   "mcp_instructions_delta", "changed_files", "nested_memory", "plan_mode", "task_reminder"]
    for name, schema in options_schemas().items():
        jsonschema.Draft202012Validator.check_schema(schema)
        jsonschema.validate(ATTACHMENT_TYPES[name].defaults(), schema)
        assert ATTACHMENT_TYPES[name].defaults()["enabled"] is True
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({"no_such_option": 1}, schema)


def test_no_types_enabled_is_nothing_to_do(tmp_path, make_context):
    s = Session(tmp_path)
    s.prompt("hi")
    out = run(s.write(tmp_path / "t.jsonl"), make_context({}))
    assert out.report.action == "nothing-to-do" and "no attachment type" in out.report.reason


def test_disabled_and_unknown_types(tmp_path, make_context):
    s = Session(tmp_path)
    s.prompt("hi")
    s.attach({"type": "date", "date": "2026-11-29"}, "Today's date is 2026-11-29.")
    ctx = make_context({"attachments": {"date_change": {"enabled": False}, "weather": {}}})
    out = run(s.write(tmp_path / "t.jsonl"), ctx)
    assert out.report.action == "nothing-to-do"
    assert any("unknown attachment type 'weather'" in w for w in out.report.warnings)


def test_waits_while_a_tool_call_has_no_result(tmp_path, make_context):
    s = Session(tmp_path)
    s.prompt("go")
    s.attach({"type": "date", "date": "2026-11-28"}, "Today's date is 2026-11-28.")
    s._chain("assistant", message={"id": "m9", "role": "assistant", "model": "m",
                                   "content": [{"type": "tool_use", "id": "toolu_x", "name": "Bash", "input": {}}]})
    t = s.write(tmp_path / "t.jsonl")
    out = run(t, make_context(policy("date_change")))
    assert out.report.action == "skipped" and out.transcript is t


# -- genuine sessions -----------------------------------------------------------------------------------
def _announced_state(session_dir):
    """The deferred tools and agent types a recorded session last announced (the state it ran with)."""
    tools, agents = set(), {}
    for line in (session_dir / "session.jsonl").read_text().splitlines():
        e = json.loads(line)
        a = e.get("attachment") or {}
        if a.get("type") == "deferred_tools_delta":
            tools |= set(a["addedNames"])
            tools -= set(a["removedNames"])
        elif a.get("type") == "agent_listing_delta":
            agents.update({n: {"type": n, "line": ln} for n, ln in zip(a["addedTypes"], a["addedLines"], strict=True)})
    return {"deferred_tools": sorted(tools), "agents": list(agents.values())}


def _session_date(session_dir):
    for line in (session_dir / "session.jsonl").read_text().splitlines():
        a = json.loads(line).get("attachment") or {}
        if a.get("type") == "date":
            last = a["date"]
    return last


@needs_corpus
@pytest.mark.parametrize("session", cc_sessions(), ids=lambda p: p.name)
def test_replaying_a_genuine_session_with_its_own_state_appends_nothing(session, tmp_path, make_context):
    """The session's real date, deferred_tools_delta and agent_listing_delta attachments are replayed:
    told the same state on the same day, there is nothing new to say."""
    state = tmp_path / "state.json"
    state.write_text(json.dumps(_announced_state(session)))
    day = datetime.fromisoformat(_session_date(session)).replace(hour=12, tzinfo=UTC)
    ctx = make_context(policy("date_change", "deferred_tools_delta", "agent_listing_delta", "queued_commands",
                              "plan_mode"), now=day, state_file=state, cwd=tmp_path)
    t = read_transcript(session / "session.jsonl")
    out = run(t, ctx)
    assert out.report.action == "nothing-to-do", out.report.to_json()
    assert out.transcript is t


@needs_corpus
@pytest.mark.parametrize("session", cc_sessions(), ids=lambda p: p.name)
def test_next_day_on_a_genuine_session(session, make_context, tmp_path):
    t = read_transcript(session / "session.jsonl")
    day = datetime.fromisoformat(_session_date(session)) + timedelta(days=1)
    out = run(t, make_context(policy("date_change"), now=day.replace(hour=9, tzinfo=UTC)))
    assert out.report.action == "applied"
    [entry] = new_entries(t, out)
    assert entry["type"] == "attachment" and entry["renderedRole"] == "system"
    assert entry["attachment"] == {"type": "date_change", "newDate": day.date().isoformat()}
    assert entry["rendered"] == [{"content": "<system-reminder>\nThe date has changed. Today's date is now "
                                  f"{day.date().isoformat()}. DO NOT mention this to the user explicitly because "
                                  "they are already aware.\n</system-reminder>"}]
    order_leaf = t.entry(max(i for i in t.live_indexes() if t.entry(i).get("type") in ("user", "assistant", "attachment")
                             and not t.entry(i).get("isSidechain")))
    assert entry["parentUuid"] == order_leaf["uuid"]
    assert {k: entry[k] for k in ("sessionId", "version", "cwd")} == {k: order_leaf[k] for k in ("sessionId", "version", "cwd")}
    assert_prefix_byte_identical(t, out.transcript)
    view = out.transcript.view().api_messages()
    assert view[-1] == {"role": "system", "content": f"The date has changed. Today's date is now {day.date()}. DO NOT "
                                                     "mention this to the user explicitly because they are already aware."}
    # and the next run knows it was said
    again = run(rerun(out, tmp_path), make_context(policy("date_change"), now=day.replace(hour=10, tzinfo=UTC)))
    assert again.report.action == "nothing-to-do"


@needs_corpus
def test_genuine_deltas_removed_and_added_tools(tmp_path, make_context):
    session = CC_CORPUS / "explore-edit"
    state = _announced_state(session)
    state["deferred_tools"] = [n for n in state["deferred_tools"] if n != "WebSearch"] + ["mcp__github__create_issue"]
    state["agents"] = [a for a in state["agents"] if a["type"] != "statusline-setup"]
    path = tmp_path / "state.json"
    path.write_text(json.dumps(state))
    t = read_transcript(session / "session.jsonl")
    ctx = make_context(policy("deferred_tools_delta", "agent_listing_delta"), state_file=path)
    out = run(t, ctx)
    tools, agents = new_entries(t, out)
    assert tools["attachment"] == {"type": "deferred_tools_delta", "addedNames": ["mcp__github__create_issue"],
                                   "addedLines": ["mcp__github__create_issue"], "removedNames": ["WebSearch"],
                                   "wireHiddenNames": [], "readdedNames": []}
    assert tools["rendered"][0]["content"] == (
        "<system-reminder>\nThe following deferred tools are now available via ToolSearch. Their schemas are NOT "
        "loaded — calling them directly will fail with InputValidationError. Use ToolSearch with query "
        "\"select:<name>[,<name>...]\" to load tool schemas before calling them:\nmcp__github__create_issue\n\n"
        "The following deferred tools are no longer available (their MCP server disconnected). Do not search for "
        "them — ToolSearch will return no match:\nWebSearch\n</system-reminder>")
    assert agents["attachment"]["removedTypes"] == ["statusline-setup"] and agents["attachment"]["addedTypes"] == []
    assert agents["rendered"][0]["content"] == ("<system-reminder>\nThe following agent types are no longer "
                                                "available:\n- statusline-setup\n</system-reminder>")
    assert {tools["renderedRole"], agents["renderedRole"]} == {"system"}
    assert_prefix_byte_identical(t, out.transcript)
    assert run(rerun(out, tmp_path), ctx).report.action == "nothing-to-do"


@needs_corpus
def test_first_announcement_renders_like_the_genuine_one(tmp_path, make_context):
    """Announced from scratch, the state a session ran with renders byte-for-byte as Claude Code did."""
    session = CC_CORPUS / "manual-compact"
    genuine = {}
    for line in (session / "session.jsonl").read_text().splitlines():
        e = json.loads(line)
        if e.get("type") == "attachment" and e["attachment"]["type"] in ("deferred_tools_delta", "agent_listing_delta"):
            genuine.setdefault(e["attachment"]["type"], e["rendered"][0]["content"])
    state = _announced_state(session)
    for kind in genuine:
        msg = announce_full(kind, state)
        assert msg.texts == [genuine[kind]]
        assert msg.role == "system"


@needs_corpus
def test_changed_file_in_a_genuine_session(tmp_path, make_context):
    """explore-edit read app/models.py, then edited it; the project (moved here) changes on disk after."""
    session = CC_CORPUS / "explore-edit"
    work = tmp_path / "project"
    shutil.copytree(session / "workdir", work)
    for p in [work, *work.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    models = work / "app" / "models.py"
    original = models.read_text()
    assert '"""Sum of item prices."""' in original  # the workdir holds the state after the session's Edit
    models.write_text(original.replace("sum(i.price for i in items)", "sum(i.price * i.qty for i in items)"))
    set_mtime(models, FIXED_NOW - timedelta(hours=1))
    t = read_transcript(session / "session.jsonl")
    ctx = make_context(policy("changed_files"), cwd=work)
    out = run(t, ctx)
    [entry] = new_entries(t, out)
    assert entry["renderedRole"] == "user"
    a = entry["attachment"]
    assert a["type"] == "edited_text_file" and a["filename"] == "/tmp/cc-explore-edit-7gpmq8dg/app/models.py"
    assert a["content"] == models.read_text()
    text = entry["rendered"][0]["content"]
    assert text.startswith("<system-reminder>\nNote: /tmp/cc-explore-edit-7gpmq8dg/app/models.py was modified, "
                           "either by the user or by a linter.")
    assert "-        return sum(i.price for i in items)\n+        return sum(i.price * i.qty for i in items)" in text
    assert '         """Sum of item prices."""' in text  # context from the session's own Edit: the base is right
    assert_prefix_byte_identical(t, out.transcript)
    assert run(rerun(out, tmp_path), ctx).report.action == "nothing-to-do"


# -- date_change ---------------------------------------------------------------------------------------------
def test_date_change_needs_an_announced_date(tmp_path, make_context):
    s = Session(tmp_path)
    s.prompt("hi")
    out = run(s.write(tmp_path / "t.jsonl"), make_context(policy("date_change")))
    assert out.report.action == "nothing-to-do"


def test_the_local_date_follows_now_offset_or_the_timezone_option(make_context, monkeypatch):
    late = datetime(2026, 11, 29, 23, 30, tzinfo=UTC)
    assert local_today(make_context(now=late)).isoformat() == "2026-11-29"  # --now ...Z: a UTC date
    tokyo = late.astimezone(timezone(timedelta(hours=9)))
    assert local_today(make_context(now=tokyo)).isoformat() == "2026-11-30"  # --now ...+09:00
    assert local_today(make_context(now=late), "+09:00").isoformat() == "2026-11-30"
    assert local_today(make_context(now=late), "America/New_York").isoformat() == "2026-11-29"
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    try:
        # no offset given (naive, or the CLI says so): the machine's time zone
        assert local_today(make_context(now=late.replace(tzinfo=None))).isoformat() == "2026-11-30"
        assert local_today(make_context(now=late, now_has_offset=False)).isoformat() == "2026-11-30"
        assert local_today(make_context(now=None)) == datetime.now(timezone.utc).astimezone().date()
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


def test_date_change_in_a_plain_transcript_is_replayed_from_its_text(tmp_path, make_context):
    p = tmp_path / "t.jsonl"
    p.write_text("".join(json.dumps(x) + "\n" for x in [
        {"role": "user", "content": [{"type": "text", "text": reminder("Today's date is 2026-11-29.")},
                                     {"type": "text", "text": "hello"}]},
        {"role": "assistant", "content": "hi"}]))
    t = read_transcript(p)
    ctx = make_context(policy("date_change"))
    out = run(t, ctx)
    assert out.transcript.entry(2) == {"role": "user", "content": [{"type": "text", "text": reminder(
        "The date has changed. Today's date is now 2026-11-30. DO NOT mention this to the user explicitly because "
        "they are already aware.")}]}
    assert_prefix_byte_identical(t, out.transcript)
    assert run(rerun(out, tmp_path), ctx).report.action == "nothing-to-do"


# -- changed_files -------------------------------------------------------------------------------------------------
def _read_session(tmp_path, content="a\nb\nc\n"):
    f = tmp_path / "src" / "notes.txt"
    f.parent.mkdir(exist_ok=True)
    f.write_text(content)
    s = Session(tmp_path)
    s.prompt("look at notes")
    s.read(f, content)
    s.say("ok")
    set_mtime(f, T0)  # read after it was last written
    return s, f


def test_unchanged_or_only_touched_files_say_nothing(tmp_path, make_context):
    s, f = _read_session(tmp_path)
    t = s.write(tmp_path / "t.jsonl")
    assert run(t, make_context(policy("changed_files"))).report.action == "nothing-to-do"
    set_mtime(f, FIXED_NOW)  # touched, same content
    assert run(t, make_context(policy("changed_files"))).report.action == "nothing-to-do"


def test_a_file_changed_twice_is_diffed_against_what_was_last_shown(tmp_path, make_context):
    s, f = _read_session(tmp_path)
    t = s.write(tmp_path / "t.jsonl")
    f.write_text("a\nB\nc\n")
    set_mtime(f, FIXED_NOW - timedelta(hours=1))
    out = run(t, make_context(policy("changed_files")))
    [text] = tail_texts(out, t)
    assert text == reminder(
        f"Note: {f} was modified, either by the user or by a linter. This change was intentional, so make sure to "
        "take it into account as you proceed (ie. don't revert it unless the user asks you to). Don't tell the user "
        "this, since they are already aware. Here are the relevant changes (a unified diff against the version you "
        f"last saw):\n--- {f}\t(as you last saw it)\n+++ {f}\t(now on disk, "
        "sha256:" + __import__("hashlib").sha256(b"a\nB\nc\n").hexdigest() + ")\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c")
    t2 = rerun(out, tmp_path)
    later = FIXED_NOW + timedelta(hours=2)
    f.write_text("a\nB\nc\nd\n")
    set_mtime(f, later - timedelta(minutes=30))
    out2 = run(t2, make_context(policy("changed_files"), now=later))
    [text2] = tail_texts(out2, t2)
    assert "@@ -1,3 +1,4 @@\n a\n B\n c\n+d" in text2 and "-b" not in text2
    assert_prefix_byte_identical(t2, out2.transcript)


def test_a_deleted_file_is_reported_once(tmp_path, make_context):
    s, f = _read_session(tmp_path)
    t = s.write(tmp_path / "t.jsonl")
    f.unlink()
    ctx = make_context(policy("changed_files"))
    out = run(t, ctx)
    [entry] = new_entries(t, out)
    assert entry["attachment"] == {"type": "edited_text_file", "filename": str(f), "snippet": "(file deleted)",
                                   "deleted": True}
    assert entry["rendered"][0]["content"] == reminder(
        f"Note: {f} was deleted after you last read it, either by the user or by another process. Don't tell the "
        "user this, since they are already aware. If the task still needs this file, check with the user before "
        "recreating it.")
    t2 = rerun(out, tmp_path)
    assert run(t2, ctx).report.action == "nothing-to-do"
    f.write_text("back\n")  # it comes back: diffed against nothing
    set_mtime(f, FIXED_NOW + timedelta(hours=1))
    out3 = run(t2, make_context(policy("changed_files"), now=FIXED_NOW + timedelta(hours=2)))
    assert "+back" in tail_texts(out3, t2)[0]


def test_files_of_a_project_that_is_not_here_are_not_called_deleted(tmp_path, make_context):
    elsewhere = tmp_path / "gone"
    s = Session(elsewhere)  # the recorded working directory does not exist on this machine
    s.prompt("read")
    s.read(elsewhere / "app" / "x.py", "x\n")
    s.read(elsewhere / "README.md", "hi\n")  # its folder (the root) maps to an existing one
    here = tmp_path / "here"
    here.mkdir()
    t = s.write(tmp_path / "t.jsonl")
    out = run(t, make_context(policy("changed_files"), cwd=here))
    assert out.report.action == "nothing-to-do"
    assert out.report.warnings == [f"changed_files: 2 file(s) the session read are not found under {here}; "
                                   "run ctxkit from the project folder to check them"]


def test_the_sessions_own_edits_and_writes_are_not_changes(tmp_path, make_context):
    s, f = _read_session(tmp_path)
    s.tool("Edit", {"file_path": str(f), "old_string": "b\n", "new_string": "bee\n"}, "The file has been updated.")
    g = tmp_path / "src" / "new.txt"
    s.tool("Write", {"file_path": str(g), "content": "fresh\n"}, "File created.")
    f.write_text("a\nbee\nc\n")
    g.write_text("fresh\n")
    set_mtime(f, FIXED_NOW - timedelta(days=2))
    set_mtime(g, FIXED_NOW - timedelta(days=2))
    t = s.write(tmp_path / "t.jsonl")
    assert run(t, make_context(policy("changed_files"))).report.action == "nothing-to-do"
    g.write_text("fresh\nand more\n")
    set_mtime(g, FIXED_NOW - timedelta(hours=1))
    out = run(t, make_context(policy("changed_files")))
    [text] = tail_texts(out, t)
    assert str(g) in text and "+and more" in text


def test_partial_reads_are_not_tracked(tmp_path, make_context):
    f = tmp_path / "big.txt"
    f.write_text("x\n" * 10)
    s = Session(tmp_path)
    s.prompt("peek")
    s.tool("Read", {"file_path": str(f), "offset": 2, "limit": 3}, "2\tx\n3\tx\n4\tx")
    f.write_text("y\n")
    set_mtime(f, FIXED_NOW)
    assert run(s.write(tmp_path / "t.jsonl"), make_context(policy("changed_files"))).report.action == "nothing-to-do"


def test_changed_file_budgets_cut_and_defer(tmp_path, make_context):
    s = Session(tmp_path)
    s.prompt("read them")
    files = []
    for k in range(3):
        f = tmp_path / f"f{k}.txt"
        f.write_text("old\n" * 200)
        s.read(f, "old\n" * 200)
        files.append(f)
    t = s.write(tmp_path / "t.jsonl")
    for f in files:
        f.write_text("new\n" * 200)
        set_mtime(f, FIXED_NOW - timedelta(hours=1))
    ctx = make_context(policy("changed_files", changed_files={"max_chars_per_file": 1000, "max_chars_total": 2300}))
    out = run(t, ctx)
    texts = tail_texts(out, t)
    assert len(texts) == 2
    for text in texts:
        snippet = text.split("(a unified diff against the version you last saw):\n", 1)[1]
        assert len(snippet) <= 1000 + len("\n</system-reminder>") + 80
        assert "... [diff truncated: " in snippet
    assert out.report.details["deferred"] == [f"changed_files: {files[2]} (budget)"]
    # the deferred file comes next time, diffed against the same base
    out2 = run(rerun(out, tmp_path), ctx)
    [text] = tail_texts(out2, rerun(out, tmp_path, "again.jsonl"))
    assert str(files[2]) in text and "-old" in text


def test_an_unreadable_file_is_a_warning_not_a_failure(tmp_path, make_context):
    blocker = tmp_path / "blocker"
    blocker.write_text("I am a file, not a folder")
    inner = blocker / "inner.txt"  # stat() fails with NotADirectoryError
    s = Session(tmp_path)
    s.prompt("read")
    s.read(inner, "hello\n")
    s.read(tmp_path / "ok.txt", "fine\n")
    (tmp_path / "ok.txt").write_text("changed\n")
    set_mtime(tmp_path / "ok.txt", FIXED_NOW)
    t = s.write(tmp_path / "t.jsonl")
    ctx = make_context(policy("changed_files"))
    out = run(t, ctx)
    assert out.report.action == "applied"
    assert any(f"cannot check {inner}" in w for w in out.report.warnings)
    assert any(f"cannot check {inner}" in w for w in ctx.warnings)


def test_changed_files_in_a_plain_transcript(tmp_path, make_context):
    f = tmp_path / "a.py"
    f.write_text("x = 1\n")
    p = tmp_path / "t.jsonl"
    p.write_text("".join(json.dumps(x) + "\n" for x in [
        {"role": "user", "content": "read a.py"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "r1", "name": "Read", "input": {"file_path": str(f)}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "r1", "content": "     1\u2192x = 1\n     2\u2192"}]},
        {"role": "assistant", "content": "x is 1"}]))
    t = read_transcript(p)
    ctx = make_context(policy("changed_files"))
    assert run(t, ctx).report.action == "nothing-to-do"
    f.write_text("x = 2\n")
    out = run(t, ctx)
    [text] = tail_texts(out, t)
    assert "-x = 1\n+x = 2" in text
    assert out.transcript.entry(4)["role"] == "user"
    t2 = rerun(out, tmp_path)
    assert run(t2, ctx).report.action == "nothing-to-do"  # the sha in the +++ line finds the shown version
    f.write_text("x = 3\n")
    [text2] = tail_texts(run(t2, ctx), t2)
    assert "-x = 2\n+x = 3" in text2


# -- nested_memory ---------------------------------------------------------------------------------------------
def _tree(tmp_path):
    root = tmp_path / "repo"
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "pkg" / ".claude" / "rules").mkdir(parents=True)
    (tmp_path / "CLAUDE.md").write_text("ABOVE THE ROOT\n")
    (root / "CLAUDE.md").write_text("root rules\n")
    (root / "pkg" / "CLAUDE.md").write_text("pkg rules\n")
    (root / "pkg" / "AGENTS.md").write_text("pkg agents\n")
    (root / "pkg" / ".claude" / "rules" / "b.md").write_text("rule b\n")
    (root / "pkg" / ".claude" / "rules" / "a.md").write_text("rule a\n")
    (root / "pkg" / "sub" / "CLAUDE.md").write_text("sub rules\n")
    (root / "pkg" / "sub" / "mod.py").write_text("pass\n")
    return root


def test_nested_memory_on_the_way_down_once(tmp_path, make_context):
    root = _tree(tmp_path)
    s = Session(root)
    s.prompt("look")
    s.read(root / "pkg" / "sub" / "mod.py", "pass\n")
    s.read(root / "pkg" / "sub" / "CLAUDE.md", "sub rules\n")  # read by the session itself: not injected
    t = s.write(tmp_path / "t.jsonl")
    ctx = make_context(policy("nested_memory"))
    out = run(t, ctx)
    entries = new_entries(t, out)
    assert [e["attachment"]["path"] for e in entries] == [
        str(root / "pkg" / "CLAUDE.md"), str(root / "pkg" / "AGENTS.md"),
        str(root / "pkg" / ".claude" / "rules" / "a.md"), str(root / "pkg" / ".claude" / "rules" / "b.md")]
    assert entries[0]["rendered"] == [{"content": reminder(f"Contents of {root / 'pkg' / 'CLAUDE.md'}:\n\npkg rules\n")}]
    assert entries[0]["renderedRole"] == "user"
    assert entries[0]["attachment"]["displayPath"] == "pkg/CLAUDE.md"
    texts = "".join(tail_texts(out, t))
    assert "ABOVE THE ROOT" not in texts and "root rules" not in texts  # above / at the root: never
    assert_prefix_byte_identical(t, out.transcript)
    assert run(rerun(out, tmp_path), ctx).report.action == "nothing-to-do"


def test_nested_memory_after_a_compaction_is_injected_again(tmp_path, make_context):
    root = _tree(tmp_path)
    s = Session(root)
    s.prompt("look")
    s.read(root / "pkg" / "sub" / "mod.py", "pass\n")
    s.attach({"type": "nested_memory", "path": str(root / "pkg" / "sub" / "CLAUDE.md")}, "Contents of ...", "user")
    ctx = make_context(policy("nested_memory", nested_memory={"files": ["CLAUDE.md"]}))
    t = s.write(tmp_path / "t.jsonl")
    assert [e["attachment"]["path"] for e in new_entries(t, run(t, ctx))] == [str(root / "pkg" / "CLAUDE.md")]
    s.boundary()
    s.prompt("again")
    s.read(root / "pkg" / "sub" / "mod.py", "pass\n")
    t2 = s.write(tmp_path / "t2.jsonl")
    assert [e["attachment"]["path"] for e in new_entries(t2, run(t2, ctx))] == [
        str(root / "pkg" / "CLAUDE.md"), str(root / "pkg" / "sub" / "CLAUDE.md")]


def test_nested_memory_outside_the_root_and_unreadable_files(tmp_path, make_context):
    root = _tree(tmp_path)
    (root / "pkg" / "sub" / "CLAUDE.md").write_bytes(b"\xff\xfe not utf-8")
    s = Session(root)
    s.prompt("look")
    s.read(tmp_path / "elsewhere.py", "x\n")  # outside the project: nothing, not even ../CLAUDE.md
    s.read(root / "pkg" / "sub" / "mod.py", "pass\n")
    ctx = make_context(policy("nested_memory", nested_memory={"files": ["CLAUDE.md"], "include_root": True}))
    t = s.write(tmp_path / "t.jsonl")
    out = run(t, ctx)
    assert [e["attachment"]["path"] for e in new_entries(t, out)] == [str(root / "CLAUDE.md"), str(root / "pkg" / "CLAUDE.md")]
    assert out.report.warnings == [f"nested_memory: cannot read {root / 'pkg' / 'sub' / 'CLAUDE.md'}: "
                                   "'utf-8' codec can't decode byte 0xff in position 0: invalid start byte"]


def test_nested_memory_cap_and_budget(tmp_path, make_context):
    root = _tree(tmp_path)
    (root / "pkg" / "CLAUDE.md").write_text("line\n" * 100)
    s = Session(root)
    s.prompt("look")
    s.read(root / "pkg" / "sub" / "mod.py", "pass\n")
    ctx = make_context(policy("nested_memory", nested_memory={"files": ["CLAUDE.md"], "max_chars_per_file": 100,
                                                              "max_chars_total": 150}))
    t = s.write(tmp_path / "t.jsonl")
    out = run(t, ctx)
    [entry] = new_entries(t, out)
    assert entry["attachment"]["content"]["content"].endswith("... [memory file truncated: 80 more lines]")
    assert out.report.details["deferred"] == [f"nested_memory: {root / 'pkg' / 'sub' / 'CLAUDE.md'} (budget)"]


def test_nested_memory_in_a_plain_transcript_is_replayed_from_its_text(tmp_path, make_context):
    root = _tree(tmp_path)
    p = tmp_path / "t.jsonl"
    p.write_text("".join(json.dumps(x) + "\n" for x in [
        {"role": "user", "content": "edit mod.py"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "e1", "name": "Edit",
                                           "input": {"file_path": str(root / "pkg" / "sub" / "mod.py")}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "e1", "content": "updated"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "e2", "name": "Read",
                                           "input": {"file_path": str(root / "pkg" / "nope.py")}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "e2", "content": "File does not exist.",
                                      "is_error": True}]}]))
    ctx = make_context(policy("nested_memory", nested_memory={"files": ["CLAUDE.md"]}), cwd=root)
    t = read_transcript(p)
    out = run(t, ctx)
    assert tail_texts(out, t) == [reminder(f"Contents of {root / 'pkg' / 'CLAUDE.md'}:\n\npkg rules\n"),
                                  reminder(f"Contents of {root / 'pkg' / 'sub' / 'CLAUDE.md'}:\n\nsub rules\n")]
    assert run(rerun(out, tmp_path), ctx).report.action == "nothing-to-do"


# -- plan_mode -----------------------------------------------------------------------------------------------------
def test_plan_mode_full_then_quiet_then_sparse_then_exit(tmp_path, make_context):
    plan = tmp_path / "plan.md"
    opts = {"plan_mode": {"plan_file": str(plan), "turns_between": 2}}
    s = Session(tmp_path)
    s.prompt("plan it", permissionMode="plan")
    t = s.write(tmp_path / "t.jsonl")
    out = run(t, make_context(policy("plan_mode", **opts)))
    [entry] = new_entries(t, out)
    assert entry["attachment"] == {"type": "plan_mode", "reminderType": "full", "isSubAgent": False,
                                   "planFilePath": str(plan), "planExists": False}
    text = entry["rendered"][0]["content"]
    assert text.startswith("<system-reminder>\nPlan mode is active. The user indicated that they do not want you to "
                           "execute yet -- you MUST NOT make any edits")
    assert f"No plan file exists yet. You should create your plan at {plan} using the Write tool." in text
    # no new human turn: nothing
    assert run(rerun(out, tmp_path), make_context(policy("plan_mode", **opts))).report.action == "nothing-to-do"
    # two more human turns: a sparse one (the plan file exists by now)
    s.attach(entry["attachment"], "Plan mode is active.")
    s.say("thinking")
    s.prompt("more", permissionMode="plan")
    s.say("ok")
    s.prompt("and more", permissionMode="plan")
    plan.write_text("# plan\n")
    t2 = s.write(tmp_path / "t2.jsonl")
    [entry2] = new_entries(t2, run(t2, make_context(policy("plan_mode", **opts))))
    assert entry2["attachment"]["reminderType"] == "sparse"
    assert entry2["rendered"][0]["content"] == reminder(
        f"Plan mode still active (see full instructions earlier in conversation). Read-only except plan file ({plan}). "
        "End turns with AskUserQuestion (for clarifications) or ExitPlanMode (for plan approval). Never ask about plan "
        "approval via text or AskUserQuestion.")
    # the user leaves plan mode: one exit note
    s.meta("permission-mode", permissionMode="default")
    t3 = s.write(tmp_path / "t3.jsonl")
    out3 = run(t3, make_context(policy("plan_mode", **opts)))
    [entry3] = new_entries(t3, out3)
    assert entry3["attachment"]["type"] == "plan_mode_exit"
    assert entry3["rendered"][0]["content"] == reminder(
        "## Exited Plan Mode\n\nYou have exited plan mode. You can now make edits, run tools, and take actions. "
        f"The plan file is located at {plan} if you need to reference it.")
    assert run(rerun(out3, tmp_path), make_context(policy("plan_mode", **opts))).report.action == "nothing-to-do"


def test_plan_mode_flag_and_slug_in_the_plan_path(tmp_path, make_context):
    s = Session(tmp_path, slug="quiet-lake")
    s.prompt("go")
    t = s.write(tmp_path / "t.jsonl")
    assert run(t, make_context(policy("plan_mode"))).report.action == "nothing-to-do"
    out = run(t, make_context(policy("plan_mode"), plan_mode=True))
    assert new_entries(t, out)[0]["attachment"]["planFilePath"] == "~/.claude/plans/quiet-lake.md"


def test_plan_mode_in_a_plain_transcript(tmp_path, make_context):
    p = tmp_path / "t.jsonl"
    p.write_text(json.dumps({"role": "user", "content": "plan"}) + "\n")
    ctx = make_context(policy("plan_mode", plan_mode={"plan_file": "PLAN.md"}), plan_mode=True)
    out = run(read_transcript(p), ctx)
    t2 = rerun(out, tmp_path)
    assert "Plan mode is active." in t2.entry(1)["content"][0]["text"]
    assert run(t2, ctx).report.action == "nothing-to-do"


# -- task_reminder --------------------------------------------------------------------------------------------------
def test_task_reminder_after_idle_turns_with_open_tasks(tmp_path, make_context):
    s = Session(tmp_path)
    s.prompt("work")
    s.tool("TodoWrite", {"todos": [{"content": "Write code", "status": "in_progress", "activeForm": "Writing"},
                                   {"content": "Ship", "status": "pending", "activeForm": "Shipping"},
                                   {"content": "Plan", "status": "completed", "activeForm": "Planning"}]}, "ok")
    for k in range(3):
        s.tool("Bash", {"command": f"echo {k}"}, str(k))
    ctx = make_context(policy("task_reminder", task_reminder={"turns_since_use": 3, "turns_between": 3}))
    t = s.write(tmp_path / "t.jsonl")
    out = run(t, ctx)
    [entry] = new_entries(t, out)
    assert entry["attachment"]["type"] == "todo_reminder"
    assert entry["rendered"][0]["content"].endswith(
        "Make sure that you NEVER mention this reminder to the user\n\n\nHere are the existing contents of your todo "
        "list:\n\n[1. [in_progress] Write code\n2. [pending] Ship]\n</system-reminder>")
    assert run(rerun(out, tmp_path), ctx).report.action == "nothing-to-do"
    s.tool("TodoWrite", {"todos": [{"content": "Ship", "status": "completed", "activeForm": "x"}]}, "ok")
    for _ in range(4):
        s.tool("Bash", {"command": "true"}, "")
    t2 = s.write(tmp_path / "t2.jsonl")
    assert run(t2, ctx).report.action == "nothing-to-do"  # nothing open


def test_task_reminder_from_task_tools_and_state_file(tmp_path, make_context):
    s = Session(tmp_path)
    s.prompt("work")
    s.tool("TaskCreate", {"subject": "Add discount", "description": "d"}, "Task #7 created successfully: Add discount")
    s.tool("TaskUpdate", {"taskId": "7", "status": "in_progress"}, "Updated task #7 status")
    s.tool("Bash", {"command": "true"}, "")
    ctx = make_context(policy("task_reminder", task_reminder={"turns_since_use": 1}))
    t = s.write(tmp_path / "t.jsonl")
    text = tail_texts(run(t, ctx), t)[0]
    assert text.startswith("<system-reminder>\nThe task tools haven't been used recently.")
    assert text.endswith("Here are the existing tasks:\n\n#7. [in_progress] Add discount\n</system-reminder>")
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"tasks": [{"id": "1", "subject": "From state", "status": "pending"}]}))
    text2 = tail_texts(run(t, make_context(policy("task_reminder", task_reminder={"turns_since_use": 1}),
                                           state_file=state)), t)[0]
    assert "#1. [pending] From state" in text2 and "Add discount" not in text2


# -- queued_commands --------------------------------------------------------------------------------------------------
def test_queued_file_is_delivered_once_as_user_messages(tmp_path, make_context):
    s = Session(tmp_path)
    s.prompt("work")
    s.tool("Bash", {"command": "make"}, "done")
    q = tmp_path / "queued.json"
    q.write_text(json.dumps(["Also update the README", {"prompt": "build finished", "mode": "task-notification"}]))
    ctx = make_context(policy("queued_commands"), queued_file=q)
    t = s.write(tmp_path / "t.jsonl")
    out = run(t, ctx)
    first, second = new_entries(t, out)
    assert first["renderedRole"] == second["renderedRole"] == "user"
    assert first["attachment"] == {"type": "queued_command", "prompt": "Also update the README", "commandMode": "prompt"}
    assert first["rendered"][0]["content"] == reminder(
        "The user sent a new message while you were working:\nAlso update the README\n\nIMPORTANT: After completing "
        "your current task, you MUST address the user's message above. Do not ignore it.")
    assert second["rendered"][0]["content"] == reminder("A background agent completed a task:\nbuild finished")
    view = out.transcript.view().api_messages()
    assert view[-1]["role"] == "user" and view[-1]["content"][0]["type"] == "tool_result"  # joined after the results
    assert_prefix_byte_identical(t, out.transcript)
    assert run(rerun(out, tmp_path), ctx).report.action == "nothing-to-do"


def test_queue_operations_left_in_the_transcript(tmp_path, make_context):
    s = Session(tmp_path)
    s.meta("queue-operation", operation="enqueue", content="first prompt")
    s.meta("queue-operation", operation="dequeue")
    s.prompt("first prompt")
    s.tool("Bash", {"command": "sleep 9"}, "slept")
    s.meta("queue-operation", operation="enqueue", content="typed while busy")
    s.meta("queue-operation", operation="enqueue", content="cancelled")
    s.meta("queue-operation", operation="remove", content="cancelled")
    t = s.write(tmp_path / "t.jsonl")
    ctx = make_context(policy("queued_commands"))
    out = run(t, ctx)
    [entry] = new_entries(t, out)
    assert entry["attachment"]["prompt"] == "typed while busy"
    assert run(rerun(out, tmp_path), ctx).report.action == "nothing-to-do"


def test_queued_plain_text_file_and_a_missing_file(tmp_path, make_context):
    p = tmp_path / "t.jsonl"
    p.write_text(json.dumps({"role": "user", "content": "go"}) + "\n" + json.dumps({"role": "assistant", "content": "on it"}) + "\n")
    q = tmp_path / "q.txt"
    q.write_text("stop after the tests\n\nand commit\n")
    out = run(read_transcript(p), make_context(policy("queued_commands"), queued_file=q))
    assert out.transcript.entry(2)["content"][0]["text"].startswith(
        "<system-reminder>\nThe user sent a new message while you were working:\nstop after the tests\n\n")
    assert "\nand commit\n" in out.transcript.entry(3)["content"][0]["text"]  # one message per line
    missing = run(read_transcript(p), make_context(policy("queued_commands"), queued_file=tmp_path / "nope"))
    assert missing.report.action == "nothing-to-do"
    assert missing.report.warnings and "cannot read it" in missing.report.warnings[0]


# -- deltas -------------------------------------------------------------------------------------------------------------
def _delta_run(tmp_path, make_context, t, state, name):
    f = tmp_path / f"{name}.json"
    f.write_text(json.dumps(state))
    ctx = make_context(policy("deferred_tools_delta", "agent_listing_delta", "mcp_instructions_delta"), state_file=f)
    out = run(t, ctx)
    return out, rerun(out, tmp_path, f"{name}.jsonl")


def test_a_delta_that_removes_then_re_adds_a_tool(tmp_path, make_context):
    s = Session(tmp_path)
    s.prompt("go")
    t = s.write(tmp_path / "t.jsonl")
    out1, t1 = _delta_run(tmp_path, make_context, t, {"deferred_tools": ["B", "A"]}, "r1")
    assert new_entries(t, out1)[0]["attachment"]["addedNames"] == ["A", "B"]
    out2, t2 = _delta_run(tmp_path, make_context, t1, {"deferred_tools": ["A"]}, "r2")
    assert new_entries(t1, out2)[0]["attachment"] == {
        "type": "deferred_tools_delta", "addedNames": [], "addedLines": [], "removedNames": ["B"],
        "wireHiddenNames": [], "readdedNames": []}
    out3, t3 = _delta_run(tmp_path, make_context, t2, {"deferred_tools": ["A", "B"]}, "r3")
    assert new_entries(t2, out3)[0]["attachment"]["addedNames"] == ["B"]
    assert new_entries(t2, out3)[0]["attachment"]["readdedNames"] == ["B"]
    out4, _ = _delta_run(tmp_path, make_context, t3, {"deferred_tools": ["A", "B"]}, "r4")
    assert out4.report.action == "nothing-to-do"


def test_a_boundary_in_between_announces_the_full_state_again(tmp_path, make_context):
    s = Session(tmp_path)
    s.prompt("go")
    s.attach({"type": "deferred_tools_delta", "addedNames": ["A", "B"], "addedLines": ["A", "B"], "removedNames": []},
             "The following deferred tools are now available via ToolSearch...")
    s.attach({"type": "agent_listing_delta", "addedTypes": ["Explore"], "addedLines": ["- Explore: x"],
              "removedTypes": [], "isInitial": True}, "Available agent types for the Agent tool:...")
    t = s.write(tmp_path / "t.jsonl")
    state = {"deferred_tools": ["A", "B"], "agents": [{"type": "Explore", "line": "- Explore: x"}]}
    out, _ = _delta_run(tmp_path, make_context, t, state, "before")
    assert out.report.action == "nothing-to-do"
    s.boundary()
    s.prompt("continue")
    t2 = s.write(tmp_path / "t2.jsonl")
    out2, _ = _delta_run(tmp_path, make_context, t2, state, "after")
    tools, agents = new_entries(t2, out2)
    assert tools["attachment"]["addedNames"] == ["A", "B"]
    assert agents["attachment"]["isInitial"] is True
    assert agents["rendered"][0]["content"] == reminder(
        "Available agent types for the Agent tool:\n- Explore: x\n\nWhen you launch multiple agents for independent "
        "work, send them in a single message with multiple tool uses so they run concurrently.")
    assert_prefix_byte_identical(t2, out2.transcript)


def test_agent_and_mcp_deltas(tmp_path, make_context):
    s = Session(tmp_path)
    s.prompt("go")
    t = s.write(tmp_path / "t.jsonl")
    state = {"agents": [{"type": "Plan", "description": "Plans.", "tools": ["Read", "Grep"]}],
             "mcp_servers": [{"name": "gh", "instructions": "Use issues."},
                             {"name": "down", "instructions": "x", "status": "failed"},
                             {"name": "quiet"}]}
    out1, t1 = _delta_run(tmp_path, make_context, t, state, "a1")
    agents, mcp = new_entries(t, out1)
    assert agents["attachment"]["addedLines"] == ["- Plan: Plans. (Tools: Read, Grep)"]
    assert mcp["attachment"] == {"type": "mcp_instructions_delta", "addedNames": ["gh"],
                                 "addedBlocks": ["## gh\nUse issues."], "removedNames": []}
    assert mcp["rendered"][0]["content"] == reminder(
        "# MCP Server Instructions\n\nThe following MCP servers have provided instructions for how to use their tools "
        "and resources:\n\n## gh\nUse issues.")
    state2 = {"agents": state["agents"] + [{"type": "Explore", "line": "- Explore: Finds."}],
              "mcp_servers": [{"name": "gh", "instructions": "Use issues and PRs."}]}
    out2, _ = _delta_run(tmp_path, make_context, t1, state2, "a2")
    agents2, mcp2 = new_entries(t1, out2)
    assert agents2["rendered"][0]["content"] == reminder(
        "New agent types are now available for the Agent tool:\n- Explore: Finds.")
    assert mcp2["attachment"]["addedBlocks"] == ["## gh\nUse issues and PRs."]  # changed instructions: again


def test_deltas_in_a_plain_transcript_replay_their_own_text(tmp_path, make_context):
    p = tmp_path / "t.jsonl"
    p.write_text(json.dumps({"role": "user", "content": "go"}) + "\n")
    state = {"deferred_tools": ["A"], "agents": ["Explore"], "mcp_servers": [{"name": "gh", "instructions": "I."}]}
    out1, t1 = _delta_run(tmp_path, make_context, read_transcript(p), state, "p1")
    assert out1.report.details["fired"] == {"deferred_tools_delta": 1, "agent_listing_delta": 1,
                                            "mcp_instructions_delta": 1}
    assert [m["role"] for m in t1.view().api_messages()] == ["user"]
    out2, _ = _delta_run(tmp_path, make_context, t1, state, "p2")
    assert out2.report.action == "nothing-to-do"
    out3, _ = _delta_run(tmp_path, make_context, t1, {"deferred_tools": [], "agents": ["Explore"], "mcp_servers": []}, "p3")
    texts = tail_texts(out3, t1)
    assert texts == [reminder("The following deferred tools are no longer available (their MCP server disconnected). "
                              "Do not search for them — ToolSearch will return no match:\nA"),
                     reminder("The following MCP servers have disconnected. Their instructions above no longer "
                              "apply:\ngh")]


def test_openai_transcripts_get_user_messages(tmp_path, make_context):
    p = tmp_path / "t.jsonl"
    p.write_text(json.dumps({"role": "system", "content": "be nice"}) + "\n" + json.dumps({"role": "user", "content": "go"}) + "\n")
    t = read_transcript(p)
    assert t.format == "openai" or t.format == "anthropic"
    out, _ = _delta_run(tmp_path, make_context, t, {"deferred_tools": ["A"]}, "o1")
    assert out.transcript.entry(2)["role"] == "user"
    assert_prefix_byte_identical(t, out.transcript)


def test_state_file_problems_are_warnings(tmp_path, make_context):
    s = Session(tmp_path)
    s.prompt("go")
    t = s.write(tmp_path / "t.jsonl")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    out = run(t, make_context(policy("deferred_tools_delta"), state_file=bad))
    assert out.report.action == "nothing-to-do"
    assert out.report.warnings == [f"--state {bad}:1:2: not JSON (Expecting property name enclosed in double quotes); "
                                   "deltas skipped"]


def test_delta_max_chars_leaves_the_rest_for_the_next_run(tmp_path, make_context):
    s = Session(tmp_path)
    s.prompt("go")
    t = s.write(tmp_path / "t.jsonl")
    f = tmp_path / "s.json"
    f.write_text(json.dumps({"deferred_tools": [f"tool{k:02d}" for k in range(10)]}))
    ctx = make_context(policy("deferred_tools_delta", deferred_tools_delta={"max_chars": 30}), state_file=f)
    out = run(t, ctx)
    assert new_entries(t, out)[0]["attachment"]["addedNames"] == ["tool00", "tool01", "tool02", "tool03"]
    assert out.report.details["deferred"] == ["deferred_tools_delta: 6 more added (max_chars)"]
    out2 = run(rerun(out, tmp_path), ctx)
    assert new_entries(rerun(out, tmp_path, "x.jsonl"), out2)[0]["attachment"]["addedNames"][0] == "tool04"


def test_render_delta_and_announce_full_for_other_stages():
    state = {"deferred_tools": ["B", "A"], "agents": [{"type": "Plan", "line": "- Plan: p"}]}
    msg = announce_full("deferred_tools_delta", state)
    assert msg.attachment["addedNames"] == ["A", "B"] and msg.role == "system"
    assert announce_full("mcp_instructions_delta", state) is None  # the state says nothing of MCP
    d = render_delta("agent_listing_delta", [], ["Explore"], state, role="user")
    assert d.texts == [reminder("The following agent types are no longer available:\n- Explore")] and d.role == "user"
    assert render_delta("deferred_tools_delta", [], [], state) is None


# -- the stage as a whole ----------------------------------------------------------------------------------------------
def test_stage_budget_defers_but_never_queued_input(tmp_path, make_context):
    s = Session(tmp_path)
    s.prompt("go")
    s.attach({"type": "date", "date": "2026-11-29"}, "Today's date is 2026-11-29.")
    t = s.write(tmp_path / "t.jsonl")
    q = tmp_path / "q.json"
    q.write_text(json.dumps(["x" * 400]))
    ctx = make_context(policy("queued_commands", "date_change"), queued_file=q)
    out = run(t, ctx, max_tokens=50)
    assert out.report.details["fired"] == {"queued_commands": 1}
    assert out.report.details["deferred"][0].startswith("date_change: ")
    assert out.report.details["tokens_appended"] > 50


def test_all_types_together_keep_the_prefix_and_are_deterministic(tmp_path, make_context):
    root = _tree(tmp_path)
    s = Session(root)
    s.prompt("go", permissionMode="plan")
    s.attach({"type": "date", "date": "2026-11-29"}, "Today's date is 2026-11-29.")
    s.read(root / "pkg" / "sub" / "mod.py", "pass\n")
    set_mtime(root / "pkg" / "sub" / "mod.py", T0)
    (root / "pkg" / "sub" / "mod.py").write_text("pass  # edited\n")
    set_mtime(root / "pkg" / "sub" / "mod.py", FIXED_NOW - timedelta(hours=1))
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"deferred_tools": ["A"], "agents": ["Explore"], "mcp_servers": []}))
    t = s.write(tmp_path / "t.jsonl")
    outs = []
    for k in range(2):
        ctx = make_context(policy(*ALL, plan_mode={"plan_file": "PLAN.md"}), state_file=state, store_dir=tmp_path / f"s{k}")
        out = run(t, ctx)
        buf = io.BytesIO()
        out.transcript.write(buf)
        outs.append(buf.getvalue())
    assert outs[0] == outs[1]
    assert out.report.details["fired"] == {"date_change": 1, "deferred_tools_delta": 1, "agent_listing_delta": 1,
                                           "changed_files": 1, "nested_memory": 5, "plan_mode": 1}
    assert_prefix_byte_identical(t, out.transcript)
    src = (tmp_path / "t.jsonl").read_bytes()
    assert outs[0].startswith(src)  # not one earlier byte changed: only lines appended
