"""Post-compact re-injection: the working state a summary cannot stand in for.

A summary can say "we read app/models.py and changed Order.total"; it cannot
give the model the file as it is now, the plan it is following, the rules of
a skill it invoked, or the tools it can call. After a compaction Claude Code
therefore appends attachments that rebuild that state (``compact.ts``:
``createPostCompactFileAttachments``, plan, plan mode, invoked skills, then the
deferred-tools / agent-listing / MCP deltas); ctxkit appends the same ones,
rendered the way Claude Code 2.1.x writes them, in this order:

1. **Recent files**, re-read from disk (never from the transcript: the model
   must see the file as it is now). The most recently read or edited files
   first, at most ``max_files``; a file whose rendering exceeds
   ``file_max_tokens``, or that does not fit the ``files_max_tokens`` total,
   is dropped, as the seeds say (not cut, not named), and leaves its slot to
   the next file; files that no longer exist are skipped; files read in the
   kept tail are already in the view and skipped.
2. **The plan file** (``plan_file_reference``), when the session has one on disk.
3. **Plan mode** (``plan_mode``), when the session is in plan mode.
4. **Invoked skills** (``invoked_skills``): the skill bodies the session
   loaded, most recent first, each cut to ``skill_max_tokens``, all within
   ``skills_max_tokens``.
5. **Deltas**: the deferred tools, agent types and MCP instructions the model
   had been told about, announced afresh (the earlier announcements are
   behind the boundary now). Rendered by :mod:`ctxkit.stages.attachments`; the
   current state is the ``--state`` file when given, else what the
   pre-compaction view had announced.

Budgets are in tokens, counted with the run's token counter.

Over 400 lines: the five kinds of re-injection (files, plan, plan mode, skills,
deltas) share the budget and the bookkeeping of what was already said.
"""
from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from ...confined import TOO_LARGE, Refused, read_in_folder, skipped_note
from ...filenames import FILE_PATH_KEYS, is_file
from ...policy.defaults import schema_defaults
from ...reminders import reminder
from ...transcript.edits import NewMessage
from ...transcript.view import View, ViewMessage
from .options import REINJECT_SCHEMA

if TYPE_CHECKING:
    from ...transcript.model import Transcript
    from ..attachments.state import AttachmentState
    from ..base import Context

SKILL_MARKER = "Base directory for this skill:"
DELTA_KINDS = ("deferred_tools_delta", "agent_listing_delta", "mcp_instructions_delta")
_SKILL_CUT_NOTE = "\n\n[... skill text shortened after compaction; Read the skill's file for the rest]"
_BINARY_SUFFIXES = {".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".ico", ".pdf", ".zip", ".gz", ".tar", ".so",
                    ".o", ".a", ".pyc", ".class", ".jar", ".woff", ".woff2", ".ttf", ".mp3", ".mp4", ".wav"}

# the options' schema: options.REINJECT_SCHEMA (the stage's schema loads without this module)


#: The options' defaults: Claude Code's numbers.
DEFAULTS: dict[str, Any] = schema_defaults(REINJECT_SCHEMA)


@dataclass
class Reinjection:
    messages: list[NewMessage] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    tokens: int = 0


# -- the session's facts ------------------------------------------------------------------------------
def _attachment_types() -> dict[str, Any]:
    """The attachment types, imported when a compaction re-injects: not when autocompact is loaded for a
    run that compacts nothing (start-up time, docs/benchmarks.md)."""
    from ..attachments import ATTACHMENT_TYPES

    return ATTACHMENT_TYPES


def attachment_state(t: Transcript, view: View, ctx: Context) -> AttachmentState:
    """What :mod:`ctxkit.stages.attachments` knows of the session: events, paths, modes, the ``--state`` file
    (plain formats: earlier reminders parsed back)."""
    from ..attachments.state import build_state

    parsers = [cls.parse_rendered for cls in _attachment_types().values()]
    return build_state(t, view, ctx, parsers)


def _display(s: AttachmentState, recorded: str) -> str:
    """A path as Claude Code shows it: relative to the session's working directory when inside it."""
    if s.recorded_root:
        try:
            return PurePosixPath(recorded).relative_to(s.recorded_root).as_posix()
        except ValueError:
            pass
    return recorded


# -- 1. recent files ----------------------------------------------------------------------------------
def _tool_calls(messages: list[ViewMessage]) -> list[dict]:
    return [b for m in messages if m.role == "assistant" for b in m.tool_uses()]


def _path_of(block: dict) -> str | None:
    inp = block.get("input") if isinstance(block.get("input"), dict) else {}
    for key in FILE_PATH_KEYS:
        if isinstance(inp.get(key), str) and inp[key]:
            return inp[key]
    return None


def _touched(s: AttachmentState, tools: list[str]) -> list[str]:
    """Every path the model read or edited, in view order: tool calls, and files an earlier
    compaction re-injected (they count as read, as in Claude Code's read-file state)."""
    wanted = set(tools)
    out = []
    for ev in s.events:
        if ev.kind == "tool" and ev.name in wanted:
            path = next((ev.input[k] for k in FILE_PATH_KEYS if isinstance(ev.input.get(k), str) and ev.input[k]), None)
        elif ev.kind == "attachment" and ev.name == "file":
            path = ev.data.get("filename") if isinstance(ev.data.get("filename"), str) else None
        else:
            path = None
        if path:
            out.append(path)
    return out


def recent_files(view: View, keep_from: int, tools: list[str], s: AttachmentState) -> list[str]:
    """Paths the model read or edited, most recent first, minus those read again in the kept tail."""
    order: list[str] = []
    for path in _touched(s, tools):
        if path in order:
            order.remove(path)
        order.append(path)
    in_tail = {_path_of(b) for b in _tool_calls(view.messages[keep_from:]) if b.get("name") == "Read"}
    return [p for p in reversed(order) if p not in in_tail]


#: Bytes read per token of ``file_max_tokens`` at most: a file larger than this cannot fit its budget
#: (code runs 3-4 bytes a token), so it is dropped without reading it into memory.
BYTES_PER_TOKEN = 8


def read_text_file(s: AttachmentState, path: Path, limit: int, roots: list[Path] | None = None) -> str | None:
    """The file's text, its secrets redacted (:meth:`AttachmentState.redact`), or None when it is missing
    or binary.

    Read through :meth:`AttachmentState.read_local` (or within ``roots``): raises
    :class:`~ctxkit.confined.Refused` for a file outside the session's folder, anything but a
    regular file, or one over ``limit`` bytes.
    """
    if path.suffix.lower() in _BINARY_SUFFIXES:
        return None
    try:
        data = read_in_folder(roots, path, limit=limit) if roots else s.read_local(path, limit=limit)
    except OSError:
        return None
    if data is None or b"\x00" in data[:8192]:
        return None
    return s.redact(data.decode("utf-8", errors="replace"))


def numbered(text: str) -> str:
    """The Read tool's rendering: each line prefixed with its number and a tab."""
    return "\n".join(f"{n}\t{line}" for n, line in enumerate(text.split("\n"), start=1))


def file_attachment(recorded: str, display: str, text: str) -> NewMessage:
    """A ``file`` attachment as Claude Code 2.1.x writes it after a compaction (a replayed Read call)."""
    lines = text.split("\n")
    record = {"type": "file", "filename": recorded,
              "content": {"type": "text", "file": {"filePath": recorded, "content": text, "numLines": len(lines),
                                                   "startLine": 1, "totalLines": len(lines)}},
              "displayPath": display}
    call = reminder("Called the Read tool with the following input: "
                    + json.dumps({"file_path": recorded}, separators=(",", ":"), ensure_ascii=False))
    result = reminder(f"Result of calling the Read tool:\n{numbered(text)}")
    return NewMessage([call, result], "user", attachment=record)


def _files(view: View, keep_from: int, ctx: Context, s: AttachmentState, opts: Mapping[str, Any], budget: int,
           out: Reinjection, skip: set[str]) -> None:
    """Re-read the most recent files, at most ``max_files`` of them. A file over ``file_max_tokens``, or
    one that no longer fits the ``files_max_tokens`` total, is dropped (the seeds: "超出预算的直接丢弃",
    not cut and not named) and takes no slot: the next most recent file may still come in."""
    total = min(int(opts["files_max_tokens"]), max(0, budget))
    used = 0
    done: list[str] = []
    over: list[str] = []
    missing: list[str] = []
    skipped: dict[str, list[str]] = {}  # refused by the confined reader, by kind
    limit = max(1, int(opts["file_max_tokens"])) * BYTES_PER_TOKEN
    for recorded in recent_files(view, keep_from, list(opts["file_tools"]), s):
        if len(done) >= int(opts["max_files"]):
            break
        local = s.to_local(recorded)
        if str(local) in skip or recorded in skip:
            continue
        try:
            text = read_text_file(s, local, limit)
        except Refused as exc:
            if exc.kind != TOO_LARGE:
                skipped.setdefault(exc.kind, []).append(recorded)
            else:
                over.append(recorded)  # too large to read, so too large to re-inject
            continue
        if text is None:
            missing.append(recorded)
            continue
        msg = file_attachment(recorded, _display(s, recorded), text)
        tokens = sum(ctx.tokens.count_text(x) for x in msg.texts)
        if tokens > int(opts["file_max_tokens"]) or used + tokens > total:
            over.append(recorded)
            continue
        done.append(recorded)
        used += tokens
        out.messages.append(msg)
    out.tokens += used
    out.details["files"] = done
    if over:
        out.details["files_over_budget"] = over
    if missing:
        out.details["files_missing"] = missing
    if skipped:
        out.details["files_skipped"] = [skipped_note(kind, paths) for kind, paths in skipped.items()]


# -- 2-3. plan file and plan mode ------------------------------------------------------------------
def find_plan_file(view: View, ctx: Context, s: AttachmentState) -> str | None:
    """The session's plan file as the model knows it: given on the command line, named by an earlier
    plan attachment, written under a ``.claude/plans`` folder, or ``~/.claude/plans/<slug>.md``."""
    given = ctx.inputs.plan_file
    if given:
        return str(given)
    found = None
    for ev in s.attachments("plan_file_reference", "plan_mode", "plan_mode_reentry"):
        if isinstance(ev.data.get("planFilePath"), str) and ev.data["planFilePath"]:
            found = ev.data["planFilePath"]
    for block in _tool_calls(view.messages):
        path = _path_of(block)
        if path and "/.claude/plans/" in path.replace("\\", "/"):
            found = path
    if found:
        return found
    candidate = os.path.expanduser(_plan_path_pattern(ctx, s))  # unchanged when there is no home folder
    return candidate if is_file(candidate) else None


#: The largest plan file re-injected (Claude Code's plans are a few kilobytes).
PLAN_MAX_BYTES = 256 * 1024


def _plan_roots(ctx: Context, s: AttachmentState) -> list[Path]:
    """Where a plan file may be read from: the folder of ``--plan-file`` when the user gave one, else
    the session's working directory and Claude Code's plan folder (``~/.claude/plans``)."""
    given = ctx.inputs.plan_file
    if given:
        return [Path(os.path.expanduser(str(given))).parent]
    return [*filter(None, [s.readable]), Path(os.path.expanduser(_plan_path_pattern(ctx, s))).parent]


def _plan_mode_options(ctx: Context) -> dict[str, Any]:
    return _attachment_types()["plan_mode"].resolve(ctx.policy.attachments.get("plan_mode"))


def _plan_path_pattern(ctx: Context, s: AttachmentState) -> str:
    """Where Claude Code keeps this session's plan (``~/.claude/plans/<slug>.md``; the plan_mode option)."""
    return _attachment_types()["plan_mode"].plan_path(_plan_mode_options(ctx), s)


def plan_reference(recorded: str, text: str) -> NewMessage:
    record = {"type": "plan_file_reference", "planFilePath": recorded, "planContent": text}
    body = (f"A plan file exists from plan mode at: {recorded}\n\nPlan contents:\n\n{text}\n\n"
            "If this plan is relevant to the current work and not already complete, continue working on it.")
    return NewMessage([reminder(body)], "user", attachment=record)


def plan_mode_reminder(ctx: Context, s: AttachmentState, plan_path: str | None, exists: bool) -> NewMessage:
    """The full plan-mode reminder (the earlier one went with the history), in the attachments stage's words."""
    from ..attachments import plan_mode as plan_mode_type

    path = plan_path or _plan_path_pattern(ctx, s)
    info = (plan_mode_type.HAS_PLAN if exists else plan_mode_type.NO_PLAN).format(path=path)
    record = {"type": "plan_mode", "reminderType": "full", "isSubAgent": False, "planFilePath": path,
              "planExists": bool(exists)}
    role = _attachment_types()["plan_mode"].role(_plan_mode_options(ctx), s)
    return NewMessage([reminder(plan_mode_type.FULL.format(plan_info=info))], role, attachment=record)


def in_plan_mode(ctx: Context, s: AttachmentState) -> bool:
    from ..attachments import plan_mode as plan_mode_type

    return plan_mode_type.in_plan_mode(s, ctx.inputs.plan_mode)


# -- 4. invoked skills ----------------------------------------------------------------------------------
def invoked_skills(view: View, s: AttachmentState) -> list[dict]:
    """Skills the session loaded, most recent first: ``{"name", "path", "content"}``."""
    found: dict[str, dict] = {}
    order: list[str] = []

    def add(skill: dict) -> None:
        name = skill["name"]
        if name in order:
            order.remove(name)
        order.append(name)
        found[name] = skill

    for ev in s.attachments("invoked_skills"):  # re-injected by an earlier compaction: still invoked
        for sk in ev.data.get("skills") or []:
            if isinstance(sk, dict) and sk.get("name") and isinstance(sk.get("content"), str):
                add({"name": sk["name"], "path": sk.get("path", ""), "content": sk["content"]})
    pending: list[str] = []  # names from Skill tool calls, matched with the body that follows
    for m in view.messages:
        if m.role == "assistant":
            pending.extend(str((b.get("input") or {}).get("skill") or (b.get("input") or {}).get("command") or "")
                           for b in m.tool_uses() if b.get("name") == "Skill")
            continue
        for b in m.content:
            text = b.get("text", "") if b.get("type") == "text" else ""
            if not text.startswith(SKILL_MARKER):
                continue
            first, _, body = text.partition("\n")
            base = first[len(SKILL_MARKER):].strip()
            name = pending.pop(0) if pending else PurePosixPath(base).name
            add({"name": name.lstrip("/") or PurePosixPath(base).name, "path": str(PurePosixPath(base) / "SKILL.md"),
                 "content": body.strip("\n")})
    return [found[n] for n in reversed(order)]


def skills_attachment(skills: list[dict]) -> NewMessage:
    body = "\n\n---\n\n".join(f"### Skill: {sk['name']}\nPath: {sk['path']}\n\n{sk['content']}" for sk in skills)
    text = f"The following skills were invoked in this session. Continue to follow these guidelines:\n\n{body}"
    return NewMessage([reminder(text)], "user", attachment={"type": "invoked_skills", "skills": skills})


def _cut_to_tokens(text: str, limit: int, count) -> str:
    tokens = count(text)
    if tokens <= limit:
        return text
    keep = max(0, int(len(text) * limit / max(tokens, 1) * 0.95) - len(_SKILL_CUT_NOTE))
    head = text[:keep]
    cut = head.rfind("\n")
    if cut > keep // 2:
        head = head[:cut]
    return head.rstrip() + _SKILL_CUT_NOTE


def _skills(view: View, ctx: Context, s: AttachmentState, opts: Mapping[str, Any], budget: int, out: Reinjection) -> None:
    total = min(int(opts["skills_max_tokens"]), max(0, budget))
    chosen: list[dict] = []
    used = 0
    dropped: list[str] = []
    for sk in invoked_skills(view, s):
        content = _cut_to_tokens(sk["content"], int(opts["skill_max_tokens"]), ctx.tokens.count_text)
        tokens = ctx.tokens.count_text(content) + 20
        if used + tokens > total:
            dropped.append(sk["name"])
            continue
        chosen.append({**sk, "content": content})
        used += tokens
    if chosen:
        msg = skills_attachment(chosen)
        out.messages.append(msg)
        out.tokens += sum(ctx.tokens.count_text(x) for x in msg.texts)
    out.details["skills"] = [sk["name"] for sk in chosen]
    if dropped:
        out.details["skills_over_budget"] = dropped


# -- 5. deltas --------------------------------------------------------------------------------------------
def delta_attachments(before: Transcript, before_view: View, after: Transcript, ctx: Context
                      ) -> tuple[list[NewMessage], dict[str, Any]]:
    """The deferred tools, agent types and MCP instructions the compacted view no longer announces.

    The current state is the ``--state`` file when it describes a kind, else
    what the pre-compaction view had announced (replayed). What the compacted
    view still announces (in its kept tail) is not repeated. Rendering and
    replay are :mod:`ctxkit.stages.attachments`' own (the ``attachments`` stage,
    running later, then finds nothing left to announce).
    """
    was = attachment_state(before, before_view, ctx)
    now = attachment_state(after, after.view(), ctx)
    out: list[NewMessage] = []
    for kind in DELTA_KINDS:
        cls = _attachment_types().get(kind)
        if cls is None:
            continue
        from_file = was.env is not None and cls.current(was.env) is not None
        if from_file:
            current = dict(cls.current(was.env))
        else:
            announced, _ = cls.replay(was)
            current = {n: (line if line is not None else n) for n, line in announced.items()}
        still, _ = cls.replay(now)
        added = [n for n in current if n not in still
                 or (cls.compare_content and still[n] is not None and still[n] != current[n])]
        removed = sorted(n for n in still if n not in current) if from_file else []
        if from_file:
            added.sort()
        if not added and not removed:
            continue
        role = cls.role(cls.defaults(), was)
        msg = cls.render(added, removed, current, role=role, initial=not still, options=cls.defaults())
        if msg is not None:
            out.append(msg)
    details: dict[str, Any] = {"deltas": [m.attachment.get("type") for m in out if m.attachment]}
    if was.warnings:
        details["warnings"] = list(was.warnings)
    return out, details


# -- all of it ------------------------------------------------------------------------------------------
def build(t: Transcript, view: View, keep_from: int, ctx: Context, options: Mapping[str, Any] | None,
          budget_tokens: int) -> Reinjection:
    """The attachments to append after a compaction of ``view`` keeping ``view.messages[keep_from:]``
    (all but the deltas: :func:`delta_attachments` needs the compacted transcript).

    ``budget_tokens`` bounds the re-read files and skills together (on top of
    their own budgets), so a small context window is not refilled at once.
    """
    opts = {**DEFAULTS, **dict(options or {})}
    out = Reinjection()
    s = attachment_state(t, view, ctx)
    plan_path = find_plan_file(view, ctx, s) if (opts["plan"] or opts["plan_mode"]) else None
    plan_local = s.to_local(plan_path) if plan_path else None
    skip = {str(plan_local)} if plan_local else set()
    if opts["files"]:
        _files(view, keep_from, ctx, s, opts, budget_tokens, out, skip)
    if opts["plan"] and plan_path and plan_local is not None:
        try:
            text = read_text_file(s, plan_local, PLAN_MAX_BYTES, _plan_roots(ctx, s))
        except Refused as exc:
            text = None
            out.details["plan_file_skipped"] = skipped_note(exc.kind, [plan_path])
        if text is not None and text.strip():
            out.messages.append(plan_reference(plan_path, text))
            out.details["plan_file"] = plan_path
    if opts["plan_mode"] and in_plan_mode(ctx, s):
        exists = bool(plan_local and is_file(plan_local))
        out.messages.append(plan_mode_reminder(ctx, s, plan_path, exists))
        out.details["plan_mode"] = True
    if opts["skills"]:
        _skills(view, ctx, s, opts, budget_tokens - out.tokens, out)
    for note in [*out.details.get("files_skipped", []), *filter(None, [out.details.get("plan_file_skipped")])]:
        ctx.warn(f"compact: re-injection {note}")  # said on stderr too: the user may wonder where a file went
    from ..attachments.state import NO_FOLDER_NOTE

    for note in s.warnings:
        if note.startswith(NO_FOLDER_NOTE):  # why every file was skipped: ctxkit runs from / or the home folder
            ctx.warn(f"compact: {note}")
    return out


def option(options: Mapping[str, Any] | None, key: str) -> Any:
    """One re-injection option, defaulted."""
    return {**DEFAULTS, **dict(options or {})}[key]
