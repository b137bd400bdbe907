"""The genuine Claude Code CLI resumes a transcript ctxkit compacted.

With ../shared/tools/cc-harness: record a session with the real ``claude``
CLI (against a scripted Messages API on loopback), compact it with ctxkit,
put the result where the CLI looks for it, ``claude --resume ID -p Continue``,
and read the request the CLI sent: it must open with ctxkit's summary, then
the kept tail (same tool_use ids), then what ctxkit re-injected.

Runs when the harness can run the CLI (cached under ``$CC_HARNESS_CACHE`` or
fetched once with npm from the npm registry); skips with the reason otherwise.
"""
from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import CC_CORPUS, SHARED, cc_sessions

from ctxkit.stages.autocompact.stage import Autocompact
from ctxkit.summarize.prompt import CONTINUATION_PREFIX
from ctxkit.transcript import pairing_problems, read_transcript
from ctxkit.transcript.view import SUMMARY

HARNESS = SHARED / "tools" / "cc-harness"
RUN = HARNESS / "run-claude.sh"
VERSION = os.environ.get("CC_VERSION", "2.1.328")
CACHE = Path(os.environ.get("CC_HARNESS_CACHE", Path.home() / ".cache" / "cc-harness")) / VERSION / "package" / "claude"
# the stand-in API's usage leaves the system prompt and tools out: no overhead beside the view
EXTRACTIVE = {"summarizer": {"use": "extractive"}, "overhead_tokens": 0}

MODELS = "class User:\n    def __init__(self, name):\n        self.name = name\n\n\nclass Order:\n    def total(self, items):\n        return sum(i.price for i in items)\n"


def slug(path: Path) -> str:
    """Claude Code's project folder name for a working directory: every non-alphanumeric becomes '-'."""
    return "".join(c if c.isalnum() else "-" for c in str(path))


class Harness:
    def __init__(self, root: Path):
        self.root = root
        self.work = root / "work"
        (self.work / "app").mkdir(parents=True)
        (self.work / "app" / "__init__.py").write_text("")
        (self.work / "app" / "models.py").write_text(MODELS)
        self.work = self.work.resolve()
        self.runs = 0

    def claude(self, outdir: Path, prompt: str, steps: list[dict], *args: str, summary: str | None = None,
               work: Path | None = None) -> str:
        """One ``claude -p`` run (in ``work``, default the fixture project); returns the session id."""
        self.runs += 1
        scenario = self.root / f"scenario{self.runs}.json"
        doc: dict = {"steps": steps}
        if summary:
            doc["summary"] = summary
        scenario.write_text(json.dumps(doc))
        done = subprocess.run([str(RUN), str(scenario), str(work or self.work), str(outdir), prompt, *args],
                              capture_output=True, text=True, timeout=600)
        if done.returncode != 0 or not done.stdout.split():
            raise RuntimeError(f"run-claude.sh exited {done.returncode}: {(done.stderr or done.stdout)[-1500:]}")
        return done.stdout.split()[0]

    def transcript_path(self, outdir: Path, sid: str, work: Path | None = None) -> Path:
        return outdir / "home" / ".claude" / "projects" / slug(work or self.work) / f"{sid}.jsonl"

    def requests(self, outdir: Path) -> list[dict]:
        return [json.loads(x)["body"] for x in (outdir / "requests.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    if not RUN.exists():
        pytest.skip(f"cc-harness not found at {HARNESS}")
    if not CACHE.exists() and shutil.which("npm") is None:
        pytest.skip(f"the Claude Code CLI is not cached at {CACHE} and npm is not installed to fetch it")
    h = Harness(tmp_path_factory.mktemp("cc"))
    try:  # the first run fetches the CLI if needed; any failure here means the harness cannot run
        h.claude(h.root / "probe", "Say hi", [{"blocks": [{"type": "text", "text": "hi"}]}])
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"the cc-harness cannot run the Claude Code CLI here: {exc}")
    return h


def tool(name: str, **tool_input) -> dict:
    return {"blocks": [{"type": "tool_use", "name": name, "input": tool_input}]}


def text(s: str) -> dict:
    return {"blocks": [{"type": "text", "text": s}]}


def compact(path: Path, store: Path, options: dict, cwd: Path, **inputs):
    """ctxkit compaction of the transcript at ``path``, written back in place (as `ctxkit compact -i` would)."""
    from datetime import datetime, timezone

    from ctxkit.clock import Clock
    from ctxkit.policy.model import Policy
    from ctxkit.stages.base import Context, RunInputs
    from ctxkit.store.disk import Store
    from ctxkit.tokens import make_counter

    t = read_transcript(path)
    policy = Policy.from_mapping(EXTRACTIVE)
    ctx = Context(policy=policy, tokens=make_counter("rough"), store=Store(store),
                  clock=Clock(datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)),
                  inputs=RunInputs(cwd=cwd, transcript_path=str(path), **inputs))
    result = Autocompact("autocompact", options).run(t, ctx)
    assert result.report.action == "applied", result.report.reason
    buf = io.BytesIO()
    result.transcript.write(buf)
    ctx.store.flush()
    return t, result, buf.getvalue()


def resume(h: Harness, sid: str, compacted: bytes, name: str, work: Path | None = None) -> tuple[Path, list[dict]]:
    """Put the compacted transcript where a fresh CLI home finds it, resume it, return its requests."""
    out = h.root / name
    target = h.transcript_path(out, sid, work)
    target.parent.mkdir(parents=True)
    target.write_bytes(compacted)
    h.claude(out, "Continue", [text("Continuing.")], "--resume", sid, work=work)
    return target, [b for b in h.requests(out) if b.get("tools")]


def blocks(message: dict) -> list[dict]:
    c = message["content"]
    return [{"type": "text", "text": c}] if isinstance(c, str) else c


def tool_use_ids(messages: list[dict]) -> list[str]:
    return [b["id"] for m in messages if m["role"] == "assistant" for b in blocks(m) if b.get("type") == "tool_use"]


def all_text(messages: list[dict]) -> str:
    out = []
    for m in messages:
        for b in blocks(m):
            if b.get("type") == "text":
                out.append(b["text"])
    return "\n".join(out)


def check_resumed_request(request: dict, t, result, compacted: bytes, *, tools_kept: bool = True):
    """The CLI's first request after --resume: ctxkit's summary, then the kept tail, then re-injected state."""
    summary_entry = [json.loads(x) for x in compacted.splitlines() if b'"isCompactSummary"' in x][-1]
    messages = [m for m in request["messages"] if m["role"] != "system"]
    first = blocks(messages[0])[0]
    assert first["type"] == "text" and first["text"] == summary_entry["message"]["content"]
    assert first["text"].startswith(CONTINUATION_PREFIX)
    view = t.view()
    keep_from = result.report.details["summarized_messages"]
    kept = [m.api() for m in view.messages[keep_from:]]
    kept_ids = tool_use_ids(kept)
    assert kept_ids or not tools_kept, "the test needs a kept tail with tool calls"
    kept_replies = [b["text"] for m in kept if m["role"] == "assistant" for b in blocks(m) if b.get("type") == "text"]
    sent_replies = [b["text"] for m in messages if m["role"] == "assistant" for b in blocks(m) if b.get("type") == "text"]
    assert sent_replies[:len(kept_replies)] == kept_replies
    sent_ids = tool_use_ids(messages)
    assert sent_ids[:len(kept_ids)] == kept_ids  # the kept tail follows the summary, tool calls intact
    summarized_ids = set(tool_use_ids([m.api() for m in view.messages[:keep_from]]))
    assert not summarized_ids & set(sent_ids)  # and nothing the summary replaced comes back
    assert pairing_problems(request["messages"]) == []
    return messages


def test_claude_code_resumes_a_ctxkit_compaction(harness, tmp_path):
    h = harness
    out = h.root / "session1"
    models = h.work / "app" / "models.py"
    sid = h.claude(out, "Add a discount parameter to Order.total", [
        tool("Read", file_path=str(models)),
        tool("Edit", file_path=str(models), old_string="def total(self, items):",
             new_string="def total(self, items, discount=0):"),
        tool("Bash", command="grep -n discount app/models.py", description="Check the edit"),
        text("Order.total now takes a discount."),
    ])
    path = h.transcript_path(out, sid)
    t, result, compacted = compact(path, tmp_path / "store", {"keep_tail": {"min_rounds": 2}}, h.work, force=True)
    details = result.report.details
    assert details["reinjected"]["files"] == [str(models)]
    _, requests = resume(h, sid, compacted, "resume1")
    messages = check_resumed_request(requests[0], t, result, compacted)
    sent = all_text(messages)
    assert "1\tclass User:" in sent and "def total(self, items, discount=0):" in sent  # models.py, as on disk
    assert "- Add a discount parameter to Order.total" in blocks(messages[0])[0]["text"]  # the user's words
    assert all_text(messages[-1:]).endswith("Continue")
    # and ctxkit reads back what the CLI appended after our compaction
    resumed = read_transcript(h.transcript_path(h.root / "resume1", sid))
    view = resumed.view()
    assert pairing_problems(view.api_messages()) == []
    assert next(m for m in view.messages if m.role != "system").kind == SUMMARY
    assert view.messages[-1].role == "assistant" and view.messages[-1].text() == "Continuing."


def test_claude_code_resumes_a_ctxkit_compaction_on_top_of_its_own(harness, tmp_path):
    """A session Claude Code compacted itself (/compact), continued, then auto-compacted by ctxkit."""
    h = harness
    out = h.root / "session2"
    models = h.work / "app" / "models.py"
    sid = h.claude(out, "Explain the models", [tool("Read", file_path=str(models)),
                                               text("User holds a name; Order.total sums prices.")])
    h.claude(out, "/compact", [], "--resume", sid,
             summary="<analysis>notes</analysis>\n<summary>\n1. Primary Request and Intent:\n   Explain the models.\n</summary>")
    h.claude(out, "Now list the files", [tool("Bash", command="ls app", description="List"),
                                          tool("Grep", pattern="class", path=str(h.work), output_mode="content"),
                                          text("Two modules.")], "--resume", sid)
    path = h.transcript_path(out, sid)
    tokens = _tokens(path)
    t, result, compacted = compact(path, tmp_path / "store", {"keep_tail": {"min_rounds": 3}}, h.work,
                                   context_window=33_000 + tokens // 2)  # over the threshold: an auto compaction
    assert json.loads(compacted[len(path.read_bytes()):].decode().splitlines()[0])["compactMetadata"]["trigger"] == "auto"
    _, requests = resume(h, sid, compacted, "resume2")
    messages = check_resumed_request(requests[0], t, result, compacted)
    assert "Explain the models" in blocks(messages[0])[0]["text"]  # Claude Code's summary carried into ours


def _tokens(path: Path) -> int:
    """The count autocompact decides on (the reported usage plus the estimate of what follows)."""
    from ctxkit.tokens import make_counter
    from ctxkit.tokens.view_count import count_view

    return count_view(read_transcript(path), make_counter("rough"), EXTRACTIVE["overhead_tokens"]).total


@pytest.mark.parametrize("name", [p.name for p in cc_sessions()])
def test_claude_code_resumes_compacted_corpus_sessions(name, harness, tmp_path):
    """Each recorded corpus session, auto-compacted with a small window, resumes in the real CLI.

    The CLI finds a session by its recorded working directory, so that folder is created for the
    run (a copy of the session's workdir) when it does not exist, and removed afterwards.
    """
    src = CC_CORPUS / name / "session.jsonl"
    t = read_transcript(src)
    first = next(t.entry(i) for i in t.live_indexes() if t.entry(i).get("cwd") and t.entry(i).get("sessionId"))
    cwd, sid = Path(first["cwd"]), first["sessionId"]
    created = not cwd.exists()
    if created:
        shutil.copytree(CC_CORPUS / name / "workdir", cwd)
    try:
        local = tmp_path / f"{sid}.jsonl"
        shutil.copy(src, local)
        t, result, compacted = compact(local, tmp_path / "store", {"keep_tail": {"min_rounds": 2}}, cwd,
                                       context_window=33_000 + _tokens(local) // 2)
        _, requests = resume(harness, sid, compacted, f"corpus-{name}", work=cwd)
        # (a kept round may not fit the small window: then only the last reply is kept)
        check_resumed_request(requests[0], t, result, compacted, tools_kept=False)
    finally:
        if created:
            shutil.rmtree(cwd, ignore_errors=True)
