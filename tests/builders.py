"""The one builder of test transcripts: Claude Code entries (uuid/parentUuid chains, timestamps,
sessionId, one block per assistant fragment like Claude Code 2.1 writes them) or Anthropic messages.

Tests describe a conversation as :class:`Turn` s of :class:`Call` s and get the entries from
:func:`conversation`; :func:`write` puts them on disk, :func:`load` reads them back as a Transcript.
Every test module builds its transcripts here, so a change to the format is made once.
"""
from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from ctxkit.reminders import reminder
from ctxkit.transcript import read_transcript
from ctxkit.transcript.claude_code.entries import new_uuid

START = datetime(2026, 11, 29, 9, 0, tzinfo=timezone.utc)


# -- one line ---------------------------------------------------------------------------------------
def entry(kind: str, message: dict | None = None, *, uuid: str | None, parent: str | None = None,
          session: str = "s-1", timestamp: str = "2026-11-30T10:00:00.000Z", cwd: str | None = "/w",
          version: str | None = "2.1.328", **extra) -> dict:
    """One Claude Code transcript line with the routing fields Claude Code 2.1 writes (``cwd`` or
    ``version`` None: left out, as older or hand-made lines do). Every builder below makes its lines here."""
    line = {"parentUuid": parent, "isSidechain": False, "type": kind}
    if message is not None:
        line["message"] = message
    line.update({"uuid": uuid, "timestamp": timestamp, "sessionId": session})
    if cwd is not None:
        line["cwd"] = cwd
    if version is not None:
        line["version"] = version
    line.update(extra)
    return line


def user_message(content) -> dict:
    return {"role": "user", "content": content}


def assistant_message(content: list, msg_id: str = "msg_1", model: str = "claude-opus-4-6", **extra) -> dict:
    return {"id": msg_id, "type": "message", "role": "assistant", "model": model, "content": content, **extra}


# -- building conversations ---------------------------------------------------------------------------
@dataclass
class Call:
    name: str
    input: dict
    result: str | list = ""
    is_error: bool = False


@dataclass
class Turn:
    prompt: str
    rounds: list[list[Call]] = field(default_factory=list)  # each round: the calls of one assistant message
    answer: str | None = "Done."
    thinking: bool = False  # assistant messages open with a thinking block
    open_call: Call | None = None  # a last call still waiting for its result (turn in progress)


def _ts(k: int, start: datetime) -> str:
    return (start + timedelta(seconds=5 * k)).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def conversation(turns: list[Turn], fmt: str = "claude-code", *, start: datetime = START,
                 session: str = "s-1", after: list[dict] | None = None) -> list[dict]:
    """The entries of a transcript holding these turns: Claude Code lines (one block per assistant
    fragment, one result per user line, like Claude Code 2.1 writes them) or Anthropic messages.
    ``after``: Claude Code entries these continue (the chain goes on from their last entry)."""
    out: list[dict] = []
    clock = [0]
    parent = [next((e["uuid"] for e in reversed(after or []) if e.get("uuid")), None)]
    serial = [0]

    def ids(kind: str) -> str:
        serial[0] += 1
        return f"{kind}_{session}_{serial[0]:04d}"

    def cc(kind: str, message: dict, **extra) -> dict:
        clock[0] += 1
        uid = new_uuid(session, str(serial[0]), str(clock[0]))
        serial[0] += 1
        line = entry(kind, message, uuid=uid, parent=parent[0], timestamp=_ts(clock[0], start), session=session,
                     cwd="/work", **extra)
        parent[0] = uid
        out.append(line)
        return line

    def assistant(blocks: list[dict]) -> str:
        msg_id = ids("msg")
        last = None
        if fmt != "claude-code":
            out.append({"role": "assistant", "content": blocks})
            return ""
        for b in blocks:
            last = cc("assistant", {"id": msg_id, "type": "message", "role": "assistant", "model": "claude-x",
                                    "content": [b]}, requestId=ids("req"))
        return last["uuid"] if last else ""

    def results(calls: list[tuple[str, Call]], source: str) -> None:
        blocks = [{"type": "tool_result", "tool_use_id": tid, "content": c.result, **({"is_error": True}
                                                                                       if c.is_error else {})}
                  for tid, c in calls]
        if fmt != "claude-code":
            out.append({"role": "user", "content": blocks})
            return
        for b in blocks:
            cc("user", {"role": "user", "content": [b]}, sourceToolAssistantUUID=source)

    def think(k: int) -> list[dict]:
        return [{"type": "thinking", "thinking": f"considering step {k}", "signature": f"sig{k}"}]

    for n, turn in enumerate(turns):
        if fmt == "claude-code":
            cc("user", {"role": "user", "content": turn.prompt})
        else:
            out.append({"role": "user", "content": turn.prompt})
        for r, rnd in enumerate(turn.rounds):
            calls = [(ids("toolu"), c) for c in rnd]
            blocks = (think(n * 10 + r) if turn.thinking else []) + [
                {"type": "tool_use", "id": tid, "name": c.name, "input": c.input} for tid, c in calls]
            source = assistant(blocks)
            results(calls, source)
        if turn.open_call is not None:
            assistant([{"type": "tool_use", "id": ids("toolu"), "name": turn.open_call.name,
                        "input": turn.open_call.input}])
        elif turn.answer is not None:
            assistant((think(n * 10 + 9) if turn.thinking else []) + [{"type": "text", "text": turn.answer}])
    return out


def write(path: Path, entries: list[dict]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    return path


def load(tmp_path: Path, turns: list[Turn], fmt: str = "claude-code", name: str = "t.jsonl", **kw):
    return read_transcript(write(tmp_path / name, conversation(turns, fmt, **kw)))


def written(t) -> bytes:
    buf = io.BytesIO()
    t.write(buf)
    return buf.getvalue()


def last_time(entries: list[dict]) -> datetime:
    stamps = [e["timestamp"] for e in entries if "timestamp" in e]
    return datetime.fromisoformat(stamps[-1].replace("Z", "+00:00")) if stamps else START


def session(path: Path, rounds: int = 8, size: int = 1_500) -> Path:
    """An Anthropic-format session over the 7,000-token threshold: a prompt, tool rounds, a reply."""
    lines: list[dict] = [{"role": "user", "content": "Refactor the billing module"}]
    for k in range(rounds):
        tid = f"toolu_{k:02d}"
        lines.append({"role": "assistant", "content": [
            {"type": "text", "text": f"Step {k}."},
            {"type": "tool_use", "id": tid, "name": "Bash", "input": {"command": f"step {k}"}}]})
        lines.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid,
                                                   "content": " ".join(f"r{k}_{i}" for i in range(size))}]})
    lines.append({"role": "assistant", "content": [{"type": "text", "text": "Done refactoring."}]})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


# -- entry by entry: attachments, meta lines, compact boundaries ----------------------------------
T0 = datetime(2026, 11, 29, 10, 0, tzinfo=timezone.utc)


def iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


class Session:
    """A small synthetic Claude Code 2.1.x transcript, one entry a minute from 2026-11-29 10:00 UTC."""

    def __init__(self, cwd, slug="calm-river"):
        self.cwd, self.slug = str(cwd), slug
        self.entries: list[dict] = []
        self.parent: str | None = None
        self.n = 0
        self.clock = T0

    def _next(self):
        self.n += 1
        self.clock += timedelta(minutes=1)
        return f"00000000-0000-4000-8000-{self.n:012d}", iso(self.clock)

    def _chain(self, typ, **fields):
        uid, ts = self._next()
        e = entry(typ, fields.pop("message", None), uuid=uid, parent=self.parent, timestamp=ts, cwd=self.cwd,
                  session="sess-1", slug=self.slug, **fields)
        self.entries.append(e)
        self.parent = uid
        return e

    def prompt(self, text, **fields):
        return self._chain("user", message={"role": "user", "content": text}, **fields)

    def say(self, text):
        return self._chain("assistant", message={"id": f"msg_{self.n + 1}", "role": "assistant", "model": "m",
                                                  "content": [{"type": "text", "text": text}]})

    def tool(self, name, inp, result, meta=None, is_error=False):
        call = f"toolu_{self.n + 1}"
        self._chain("assistant", message={"id": f"msg_{self.n + 1}", "role": "assistant", "model": "m",
                                          "content": [{"type": "tool_use", "id": call, "name": name, "input": inp}]})
        block = {"type": "tool_result", "tool_use_id": call, "content": result}
        if is_error:
            block["is_error"] = True
        extra = {"toolUseResult": meta} if meta is not None else {}
        return self._chain("user", message={"role": "user", "content": [block]}, **extra)

    def read(self, path, content):
        """A full Read, as Claude Code records it (numbered lines in the result, raw text in toolUseResult)."""
        numbered = "\n".join(f"{k}\t{line}" for k, line in enumerate(content.split("\n"), 1))
        lines = content.split("\n")
        meta = {"type": "text", "file": {"filePath": str(path), "content": content, "numLines": len(lines),
                                         "startLine": 1, "totalLines": len(lines)}}
        return self.tool("Read", {"file_path": str(path)}, numbered, meta)

    def attach(self, attachment, text, role="system"):
        return self._chain("attachment", attachment=attachment, rendered=[{"content": reminder(text)}],
                           renderedRole=role)

    def hook_context(self, text, hook="PostToolUse:Bash"):
        """A hook's added context after the tool result just written, as Claude Code 2.1.150 records it: the
        hook's ``hook_success`` line, then a ``hook_additional_context`` one, neither with ``rendered``."""
        call = self.entries[-1]["message"]["content"][0]["tool_use_id"]
        out = json.dumps({"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": text}})
        common = {"hookName": hook, "toolUseID": call, "hookEvent": hook.split(":")[0]}
        self._chain("attachment", attachment={"type": "hook_success", **common, "content": "", "stdout": out + "\n",
                                              "stderr": "", "exitCode": 0, "command": f"echo '{out}'"})
        return self._chain("attachment", attachment={"type": "hook_additional_context", "content": [text], **common})

    def parallel_with_hooks(self, commands, hook="PostToolUse:Bash"):
        """Bash calls made in one answer, each with a PostToolUse hook that adds context (``Context for
        COMMAND``), as Claude Code 2.1.150 records them: one fragment line per call, chained; the calls
        finish last first, each result line hanging off its own call's fragment (the last call's a dead
        end of the chain) with its hook's lines chained onto it; the chain goes on from the first call's."""
        mid, calls, fragments = f"msg_{self.n + 1}", [], []
        for command in commands:
            calls.append(f"toolu_{self.n + 1}")
            fragments.append(self._chain("assistant", message={"id": mid, "role": "assistant", "model": "m", "content": [
                {"type": "tool_use", "id": calls[-1], "name": "Bash", "input": {"command": command}}]})["uuid"])
        for command, call, fragment in reversed(list(zip(commands, calls, fragments, strict=True))):
            self.parent = fragment
            self._chain("user", message={"role": "user", "content": [{"type": "tool_result", "tool_use_id": call,
                                                                      "content": command.split()[-1] + "\n"}]},
                        sourceToolAssistantUUID=fragment)
            self.hook_context(f"Context for {command}", hook)
        return calls

    def meta(self, typ, **fields):
        _, ts = self._next()
        self.entries.append({"type": typ, "timestamp": ts, "sessionId": "sess-1", **fields})

    def boundary(self, summary="Summary: earlier work."):
        uid, ts = self._next()
        self.entries.append({"parentUuid": None, "logicalParentUuid": self.parent, "isSidechain": False,
                             "type": "system", "subtype": "compact_boundary", "content": "Conversation compacted",
                             "uuid": uid, "timestamp": ts, "compactMetadata": {"trigger": "auto"}})
        self.parent = uid
        return self._chain("user", message={"role": "user", "content": summary}, isCompactSummary=True)

    def write(self, path):
        Path(path).write_text("".join(json.dumps(e) + "\n" for e in self.entries))
        return read_transcript(path)
