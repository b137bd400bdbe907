"""The genuine Gemini CLI resumes a session ctxkit compacted, and its next request carries the compacted
history: recorded against a stand-in of the Gemini API on loopback (tests/gemini_standin.py, through
``GOOGLE_GEMINI_BASE_URL``), compacted with ``ctxkit compact --force``, resumed with ``gemini --resume``.
Gemini CLI is plain JavaScript: its npm package is fetched once with ``npm pack`` into
~/.cache/ctxkit-tests/ and run with node (the test skips, saying why, when either is missing)."""
from __future__ import annotations

import json
import os
import pty
import select
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
from agent_sessions import compact_in_place
from gemini_standin import GeminiStandIn, function_call, text

GEMINI_VERSION = "0.61.0"
CACHE = Path.home() / ".cache" / "ctxkit-tests" / f"gemini-cli-{GEMINI_VERSION}"


def _gemini() -> list[str]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: Gemini CLI cannot run")
    major = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip().lstrip("v").split(".")[0]
    if not major.isdigit() or int(major) < 20:
        pytest.skip(f"Gemini CLI {GEMINI_VERSION} needs node 20 or later (this is {major})")
    script = CACHE / "package" / "bundle" / "gemini.js"
    if script.exists():
        return [node, str(script)]
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed: Gemini CLI cannot be fetched")
    CACHE.mkdir(parents=True, exist_ok=True)
    try:
        done = subprocess.run([npm, "pack", f"@google/gemini-cli@{GEMINI_VERSION}", "--pack-destination", str(CACHE)],
                              capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        pytest.skip("the npm registry did not answer in time")
    tgz = CACHE / f"google-gemini-cli-{GEMINI_VERSION}.tgz"
    if done.returncode != 0 or not tgz.exists():
        pytest.skip(f"the npm registry is unreachable: npm pack failed ({done.stderr.strip()[-200:]})")
    with tarfile.open(tgz) as tar:
        tar.extractall(CACHE, filter="data")
    tgz.unlink()
    return [node, str(script)]


def _recorded(tmp_path: Path):
    """A session the genuine Gemini CLI recorded (three shell calls with long outputs, then an answer), and
    how to run it again in the same home: ``(the session file, run(api, *args))``."""
    gemini = _gemini()
    home, work = tmp_path / "home", tmp_path / "home" / "work"
    (home / ".gemini").mkdir(parents=True)
    work.mkdir()
    (home / ".gemini" / "settings.json").write_text(json.dumps({
        "security": {"auth": {"selectedType": "gemini-api-key"}}, "general": {"disableAutoUpdate": True},
        "privacy": {"usageStatisticsEnabled": False}}))

    def run(api: GeminiStandIn, *args: str) -> None:
        env = {**os.environ, "HOME": str(home), "GEMINI_API_KEY": "test", "GOOGLE_GEMINI_BASE_URL": api.url,
               "GEMINI_CLI_TRUST_WORKSPACE": "true"}
        done = subprocess.run([*gemini, *args, "--yolo", "-m", "gemini-2.5-pro"], cwd=work, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]

    script = [[function_call("run_shell_command", {"command": f"seq {k} 3000"})] for k in range(3)]
    with GeminiStandIn([*script, [text("Counted.")]]) as api:
        run(api, "-p", "count three times")
        run.history = [*api.requests[-1]["body"]["contents"], {"role": "model", "parts": [text("Counted.")]}]
    [session] = (home / ".gemini" / "tmp").rglob("session-*.jsonl")
    # Gemini CLI runs headless, whatever its terminal, where CI=true or GITHUB_ACTIONS=true (its
    # isHeadlessMode): the interactive run is given an environment without them, as a user's terminal is
    outside_ci = {k: v for k, v in os.environ.items() if k not in ("CI", "GITHUB_ACTIONS")}
    run.interactive = lambda api, keys: _interactive(gemini, work, {
        **outside_ci, "HOME": str(home), "GEMINI_API_KEY": "test", "GOOGLE_GEMINI_BASE_URL": api.url,
        "GEMINI_CLI_TRUST_WORKSPACE": "true", "TERM": "xterm-256color"}, api, keys)
    return session, run


def _interactive(gemini: list[str], work: Path, env: dict, api: GeminiStandIn, keys: list[tuple[str, str]]) -> str:
    """Run Gemini CLI's interactive UI on a pseudo-terminal and type ``keys``: each ``(text, then wait for)``,
    the text typed and Enter pressed once the screen shows what the step before waited for; after the last
    one, wait for the stand-in's first request. Returns what the screen showed."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: the CLI, its terminal the pseudo-terminal
        os.chdir(work)
        os.execve(gemini[0], [*gemini, "--yolo", "-m", "gemini-2.5-pro"], env)
    screen = b""

    def until(done, seconds: float) -> bool:
        nonlocal screen
        end = time.monotonic() + seconds
        while not done() and time.monotonic() < end:
            if select.select([fd], [], [], 0.2)[0]:
                try:
                    screen += os.read(fd, 65536)
                except OSError:
                    return done()
        return done()

    try:
        shown = "Authenticated with"
        for typed, wait_for in keys:
            assert until(lambda w=shown: w.encode() in screen, 180), screen[-2000:].decode(errors="replace")
            os.write(fd, typed.encode())
            until(lambda: False, 1.5)  # (the UI takes the keys in, then Enter)
            os.write(fd, b"\r")
            shown = wait_for
        assert until(lambda: bool(api.requests), 180), screen[-2000:].decode(errors="replace")
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)
    return screen.decode(errors="replace")


def _check_resumed(sent: list[dict], prompt: str = "and now?") -> None:
    """The request after the resume: the summary, the kept answer, the new prompt; no summarized call."""
    parts = [p for c in sent for p in c["parts"]]
    texts = [p.get("text", "") for p in parts]
    assert any(x.startswith("This session is being continued from a previous conversation") for x in texts)
    assert not any("functionCall" in p or "functionResponse" in p for p in parts)  # summarized, not sent again
    assert "Counted." in texts and texts[-1] == prompt  # the kept tail, then the new prompt


def _ctxkit(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ctxkit.cli.main", *args], capture_output=True, text=True,
                          timeout=120)


def _compact_document(tmp_path: Path, path: Path, fmt: str) -> Path:
    """Compact a JSON document Gemini CLI reads whole into another file and put that in place, as a user
    would (ctxkit does not write over such a file); returns the compacted file."""
    assert json.loads(_ctxkit("stats", "--json", str(path)).stdout)["format"] == fmt
    compacted = tmp_path / "compacted.json"
    done = _ctxkit("compact", "--force", "-p", "no-llm", "--store", str(tmp_path / "store"), str(path),
                   "-o", str(compacted))
    assert done.returncode == 0 and "autocompact: applied" in done.stderr, done.stderr
    shutil.copyfile(compacted, path)
    return compacted


def _expands_to(tmp_path: Path, compacted: Path, before: bytes) -> None:
    done = _ctxkit("expand", "--store", str(tmp_path / "store"), str(compacted), "-o", str(tmp_path / "e.json"))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "e.json").read_bytes() == before


def test_gemini_resumes_a_session_ctxkit_compacted_with_the_compacted_history(tmp_path):
    session, run = _recorded(tmp_path)
    before = session.read_bytes()
    session_id = json.loads(before.splitlines()[0])["sessionId"]
    compact_in_place(session, "gemini", tmp_path / "store")
    # resume in the genuine CLI: its next request is the compacted history, then the new prompt
    with GeminiStandIn([[text("Resumed.")]]) as api:
        run(api, "--resume", session_id, "-p", "and now?")
        _check_resumed(api.requests[0]["body"]["contents"])
    done = subprocess.run([sys.executable, "-m", "ctxkit.cli.main", "expand", "--store", str(tmp_path / "store"),
                           str(session), "-o", str(tmp_path / "expanded.jsonl")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "expanded.jsonl").read_bytes().startswith(before)


def _as_older_json(session: Path) -> Path:
    """The session Gemini CLI recorded, as Gemini CLI before 0.39 kept one: one ``ConversationRecord``
    (``JSON.stringify(record, null, 2)`` to ``session-*.json``), its ``messages`` the conversation the
    JSONL lines add up to (the metadata line, ``$set`` merged into it, records upserted by ``id``)."""
    meta: dict = {}
    messages: dict[str, dict] = {}
    for raw in session.read_text().splitlines():
        d = json.loads(raw)
        if "$set" in d:
            messages.update({m["id"]: m for m in d["$set"].pop("messages", [])})
            meta.update(d["$set"])
        elif "$rewindTo" in d:
            raise AssertionError("a rewind in a fresh recording")
        elif isinstance(d.get("id"), str) and "type" in d:
            messages[d["id"]] = d
        else:
            meta.update(d)
    older = session.with_suffix(".json")
    older.write_text(json.dumps({**meta, "messages": list(messages.values())}, indent=2))
    session.unlink()
    return older


def test_gemini_resumes_an_older_json_session_ctxkit_compacted(tmp_path):
    """Gemini CLI 0.61 still resumes a session file of the older single-JSON layout (its
    ``parseLegacyRecordFallback`` takes the ``messages`` as they are): ctxkit compacts one into another file,
    which the user puts in place; the next request carries the summary, not the summarized calls."""
    recorded, run = _recorded(tmp_path)
    session_id = json.loads(recorded.read_bytes().splitlines()[0])["sessionId"]
    session = _as_older_json(recorded)
    before = session.read_bytes()
    compacted = _compact_document(tmp_path, session, "gemini")
    assert "$rewindTo" not in compacted.read_text()  # (the older loader reads messages as they are)
    with GeminiStandIn([[text("Resumed.")]]) as api:
        run(api, "--resume", session_id, "-p", "and now?")
        _check_resumed(api.requests[0]["body"]["contents"])
    _expands_to(tmp_path, compacted, before)


def test_gemini_resumes_a_chat_save_checkpoint_ctxkit_compacted(tmp_path):
    """``/chat resume <tag>`` (interactive only: in ``-p`` mode Gemini CLI refuses its result) makes the
    checkpoint's history the chat's: the next request carries the summary, not the summarized calls."""
    recorded, run = _recorded(tmp_path)
    checkpoint = recorded.parent.parent / "checkpoint-before.json"  # where /chat save writes (Logger)
    checkpoint.write_text(json.dumps({"history": run.history, "authType": "gemini-api-key"}, indent=2))
    before = checkpoint.read_bytes()
    compacted = _compact_document(tmp_path, checkpoint, "gemini-checkpoint")
    with GeminiStandIn([[text("Resumed.")]]) as api:  # ("?" would open the UI's shortcut help)
        run.interactive(api, [("/chat resume before", "Counted."), ("and now.", "")])
        _check_resumed(api.requests[0]["body"]["contents"], "and now.")
    _expands_to(tmp_path, compacted, before)


def _sent_items(contents: list[dict]) -> list[tuple]:
    """The texts, calls and responses of a request Gemini CLI sent, in order (its fresh session context aside)."""
    items = []
    for c in contents:
        for p in c["parts"]:
            if "functionCall" in p:
                items.append(("call", p["functionCall"]["name"], p["functionCall"].get("args", {})))
            elif "functionResponse" in p:
                response = p["functionResponse"]["response"]
                items.append(("text", response["output"] if set(response) == {"output"} else json.dumps(response)))
            elif isinstance(p.get("text"), str) and not p.get("thought") and not p["text"].startswith("<session_context>"):
                items.append(("text", p["text"]))
    return items


def test_the_view_of_a_resumed_session_carries_what_gemini_cli_sends(tmp_path):
    """Uncompacted, a session resumes as ctxkit views it: every text, call and response of the request the
    genuine CLI sent is in ``view --to anthropic-request``, in the same order — the function-response records
    0.61 writes besides the calls' results are sent too, so the view carries each output twice — and every
    call of the view is answered by the message after it."""
    session, run = _recorded(tmp_path)
    session_id = json.loads(session.read_bytes().splitlines()[0])["sessionId"]
    done = _ctxkit("view", "--to", "anthropic-request", str(session))
    assert done.returncode == 0, done.stderr
    messages = json.loads(done.stdout)["messages"]
    with GeminiStandIn([[text("Resumed.")]]) as api:
        run(api, "--resume", session_id, "-p", "and now?")
        sent = _sent_items(api.requests[0]["body"]["contents"])
    assert sent[-1] == ("text", "and now?")
    viewed = []
    for k, m in enumerate(messages):
        blocks = [{"type": "text", "text": m["content"]}] if isinstance(m["content"], str) else m["content"]
        for b in blocks:
            if b["type"] == "tool_use":
                viewed.append(("call", b["name"], b["input"]))
                answers = [r for r in messages[k + 1]["content"] if r["type"] == "tool_result"]
                assert [r["tool_use_id"] for r in answers].count(b["id"]) == 1
            elif b["type"] in ("text", "tool_result"):
                viewed.append(("text", b.get("text", b.get("content"))))
    assert sum(x[0] == "call" for x in sent) == 3 and len(sent) == 1 + 3 * 3 + 1 + 1
    assert viewed == sent[:-1]


def test_gemini_resumes_a_masked_session_sending_the_replacement_in_both_copies(tmp_path):
    """tool-result-budget and microcompact replace an output where the call's ``result`` keeps it and in the
    function-response record Gemini CLI 0.61 keeps besides it, which a resume sends too: the genuine CLI,
    resuming, sends the replacement in both places and the original in neither; expand gives the file back."""
    session, run = _recorded(tmp_path)
    before = session.read_bytes()
    session_id = json.loads(before.splitlines()[0])["sessionId"]
    done = _ctxkit("compact", "-p", "no-llm", "--store", str(tmp_path / "store"), "--now", "2099-01-01T00:00:00Z",
                   "--set", "stages.autocompact.enabled=false", "--set", "stages.microcompact.options.keep_recent=1",
                   "--set", "stages.tool-result-budget.options.max_result_chars=5000", str(session), "-o", str(session))
    assert done.returncode == 0, done.stderr
    assert "tool-result-budget: applied: persisted 3 result(s)" in done.stderr, done.stderr
    assert "microcompact: applied: cleared 2 old tool result(s)" in done.stderr, done.stderr
    with GeminiStandIn([[text("Resumed.")]]) as api:
        run(api, "--resume", session_id, "-p", "and now?")
        contents = api.requests[0]["body"]["contents"]
    outputs = [p["functionResponse"]["response"]["output"] for c in contents for p in c["parts"]
               if "functionResponse" in p]
    # each of the three outputs twice (the call's result, then the recorded batch, merged into one content)
    assert len(outputs) == 6 and outputs[0::2] == outputs[1::2]
    assert outputs[0:4] == ["[Old tool result content cleared]"] * 4
    assert outputs[4].startswith("<persisted-output>\nOutput too large") and outputs[5] == outputs[4]
    assert "\n2999\n3000" not in json.dumps(contents)  # no output's end: none of them sent whole
    back = _ctxkit("expand", "--store", str(tmp_path / "store"), str(session), "-o", str(tmp_path / "e.jsonl"))
    assert back.returncode == 0, back.stderr
    assert (tmp_path / "e.jsonl").read_bytes().startswith(before)
