"""What ctxkit answers when Claude Code runs its hooks around a compaction.

Claude Code does not let a hook rewrite the history it sends, but it lets one steer its compaction
(docs/hooks.md):

* **PreCompact**: what the hook prints (exit 0) is appended to the compaction's custom
  instructions. :func:`pre_compact` prints ctxkit's summary instructions (the nine sections its own
  summarizer is asked for, :func:`ctxkit.summarize.prompt.section_guidance`) and what the summary
  must keep, taken from the conversation about to be replaced by the same probes ctxkit measures
  every compaction with (:mod:`ctxkit.summarize.retention`): the user's prompts, the files read or
  changed, the errors still open.
* **SessionStart** with source ``compact``: the hook's ``hookSpecificOutput.additionalContext`` is
  added to the context after the summary. :func:`session_start` reads the transcript (Claude Code
  keeps the replaced history before the compact boundary), takes the probes of that history and
  names those the context after the compaction no longer holds, each with how to get it back: the
  file to read again, or the transcript line that holds it.

Both print what the summarizer's input may hold: the history is redacted first with the policy's
redactor, as it is before ctxkit sends it to a summarizer. Both are bounded (:data:`MAX_CHARS`:
Claude Code caps ``additionalContext`` at 10,000 characters). The library part only: no typer or
rich here (the command, ``ctxkit hooks``, is :mod:`ctxkit.cli.hooks_cmd`).
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..quoting import clip
from ..summarize import retention
from ..summarize.prompt import section_guidance
from ..summarize.render import content_blocks, tool_result_text
from ..summarize.retention import error_lines, is_shell
from .claude_code_settings import PRE_COMPACT_COMMAND

#: The most either hook prints, in characters (Claude Code's cap on a hook's ``additionalContext``).
MAX_CHARS = 10_000
#: The kinds of probe the hooks list, and how each is named (identifiers are left out: a lost word
#: names nothing the model could get back).
LISTED = {"user_prompts": "The user's prompts", "file_paths": "Files read or changed",
          "commands": "Shell commands run", "errors": "Errors still open"}


class HookInputError(UsageError):
    """The JSON Claude Code sent on stdin is not a hook's input."""


@dataclass
class HookInput:
    """The fields of a hook's JSON input that ctxkit reads (Claude Code sends more)."""

    event: str
    transcript_path: Path | None
    cwd: Path
    trigger: str | None = None  # PreCompact: manual or auto
    source: str | None = None  # SessionStart: startup, resume, clear, compact...
    custom_instructions: str | None = None  # PreCompact: what the user typed after /compact

    @classmethod
    def parse(cls, data: bytes, default_cwd: Path) -> HookInput:
        try:
            doc = json.loads(data.decode("utf-8") or "null")
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise HookInputError(f"the hook's input on stdin is not JSON: {exc}") from None
        if not isinstance(doc, Mapping):
            raise HookInputError("the hook's input on stdin is not a JSON object")
        path = doc.get("transcript_path")
        cwd = doc.get("cwd")
        return cls(event=str(doc.get("hook_event_name") or ""),
                   transcript_path=Path(path) if isinstance(path, str) and path else None,
                   cwd=Path(cwd) if isinstance(cwd, str) and cwd else default_cwd,
                   trigger=_text(doc.get("trigger")), source=_text(doc.get("source")),
                   custom_instructions=_text(doc.get("custom_instructions")))


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


# -- the history and what is left of it -------------------------------------------------------------
@dataclass
class Probed:
    """One probe of the history: its kind, its text (redacted) and the transcript line it came from."""

    kind: str
    text: str
    line: int


def _redactor(policy: Any) -> Any:
    """The policy's redactor; the default one when a repository policy not trusted sets ``redact`` (a
    hook cannot ask for trust: it keeps redacting as ctxkit does out of the box)."""
    from ..summarize.redact import Redactor

    if any(getattr(s, "setting", "") == "redact" for s in policy.untrusted):
        return Redactor()
    settings = policy.redact
    return Redactor(enabled=settings.enabled, patterns=settings.patterns, allowlist=settings.allowlist)


def _read(path: Path) -> Any:
    """The transcript at ``path``, unreadable lines skipped (Claude Code may be writing the last one)."""
    from ..transcript import read_transcript

    return read_transcript(str(path), on_bad_line="skip", check_pairing=False)


def _written_compaction(t: Any, path: Path) -> tuple[Any, int] | None:
    """When the transcript ``t`` (read from ``path``) ends with a compaction the model has not answered
    since: the transcript as it was before it (the lines up to its compact boundary, read on their own),
    and the boundary's entry index. None otherwise (no compaction, or one the session went on after:
    an earlier one, this one not written yet)."""
    import io

    from ..transcript import read_transcript

    boundaries = [i for i in t.live_indexes() if t.entry(i).get("type") == "system"
                  and t.entry(i).get("subtype") == "compact_boundary" and not t.entry(i).get("isSidechain")]
    if not boundaries or not t.line_no(boundaries[-1]):
        return None
    if any(t.entry(i).get("type") == "assistant" and not t.entry(i).get("isSidechain")
           for i in t.live_indexes() if i > boundaries[-1]):
        return None
    with open(path, "rb") as f:
        lines = f.read().split(b"\n")
    prefix = b"\n".join(lines[:t.line_no(boundaries[-1]) - 1]) + b"\n"
    before = read_transcript("-", stdin=io.BytesIO(prefix), fmt=t.format, on_bad_line="skip", check_pairing=False)
    return before, boundaries[-1]


def _reinjected_files(t: Any, boundary: int) -> list[str]:
    """The files Claude Code attached again after the compact boundary (its ``file`` attachments: the
    recent files it re-reads for the model), which ctxkit's view does not render."""
    out = []
    for i in t.live_indexes():
        if i > boundary and t.entry(i).get("type") == "attachment":
            name = (t.entry(i).get("attachment") or {}).get("filename")
            if isinstance(name, str):
                out.append(name)
    return out


def probed(t: Any, messages: Sequence[Any], redactor: Any) -> list[Probed]:
    """The probes of ``messages`` (the view of ``t``) that the hooks list, taken from the messages
    redacted as a summarizer's input is, each with the transcript line it came from."""
    api = [m.api() for m in messages]
    if redactor.enabled:
        api = redactor.messages(api)
    origins: dict[tuple[str, str], int] = {}
    found = retention.probes(api, origins)
    open_errors = set(_open_errors(api))
    out = []
    for kind in LISTED:
        for text in found[kind]:
            if kind == "errors" and text not in open_errors:
                continue
            m = messages[origins[(kind, text)]]
            out.append(Probed(kind, text, t.line_no(m.entries[0]) if m.entries else 0))
    return out


def _open_errors(messages: Sequence[dict]) -> list[str]:
    """The error lines of the last result of each call that failed and was not run again with success:
    a call is the same when it runs the same shell command, or the same tool on the same input."""
    calls: dict[str, tuple[str, bool]] = {}  # tool_use id -> (what it ran, whether it is a shell's)
    latest: dict[str, list[str]] = {}
    for message in messages:
        for block in content_blocks(message.get("content")):
            if block.get("type") in ("tool_use", "server_tool_use", "mcp_tool_use"):
                name = str(block.get("name") or "")
                key = json.dumps([name, block.get("input")], sort_keys=True, default=str)
                calls[str(block.get("id"))] = (key, is_shell(name))
            elif block.get("type") == "tool_result" and str(block.get("tool_use_id")) in calls:
                key, shell = calls[str(block.get("tool_use_id"))]
                failed = bool(block.get("is_error"))
                latest.pop(key, None)  # the latest run of a call goes last
                latest[key] = error_lines(tool_result_text(block), failed) if failed or shell else []
    return list(dict.fromkeys(line for lines in latest.values() for line in lines))


def _echoes_pre_compact(message: Any) -> bool:
    """Whether a view message is Claude Code's echo of ``/compact``'s output with this PreCompact hook's:
    the list of what to keep, shown to the user, is not the summary keeping it."""
    text = message.text()
    return "<local-command-stdout>" in text and f"[{PRE_COMPACT_COMMAND}]" in text


# -- what the hooks print ---------------------------------------------------------------------------
def _listing(items: Sequence[Probed], budget: int, describe: Any) -> str:
    """``items`` by kind, one line each (``describe(item)``), within ``budget`` characters: when they do
    not all fit, the most recent of each kind are kept and the rest counted."""
    parts = []
    for kind, title in LISTED.items():
        of_kind = [p for p in items if p.kind == kind]
        if not of_kind:
            continue
        lines = [f"- {describe(p)}" for p in of_kind]
        share = max(200, budget // len(LISTED))
        kept: list[str] = []
        used = 0
        for line in reversed(lines):
            if used + len(line) + 1 > share:
                break
            kept.append(line)
            used += len(line) + 1
        kept.reverse()
        head = f"{title} ({len(of_kind)}):"
        if len(kept) < len(lines):
            head = f"{title} ({len(of_kind)}; the {len(lines) - len(kept)} oldest left out here):"
        parts.append("\n".join([head, *kept]))
    return "\n\n".join(parts)


def _quoted(p: Probed) -> str:
    text = clip(p.text, 300)
    return f"`{text}`" if p.kind in ("file_paths", "commands") else json.dumps(text, ensure_ascii=False)


def _fit(text: str) -> str:
    return text if len(text) <= MAX_CHARS else text[:MAX_CHARS - 1] + "…"


def pre_compact(hook: HookInput, policy: Any) -> str:
    """The custom instructions PreCompact prints: ctxkit's summary sections, then what to keep."""
    head = ("ctxkit: the summary replaces this conversation. Write it in these nine sections:\n"
            + section_guidance())
    if hook.transcript_path is None:
        return _fit(head)
    t = _read(hook.transcript_path)
    items = probed(t, t.view().messages, _redactor(policy))
    if not items:
        return _fit(head)
    keep = ("The summary must keep each of these, as written (ctxkit checks after the compaction which of "
            "them it lost):\n\n")
    return _fit(head + "\n\n" + keep + _listing(items, MAX_CHARS - len(head) - len(keep) - 200, _quoted))


def session_start(hook: HookInput, policy: Any) -> dict[str, Any] | None:
    """SessionStart's JSON output after a compaction (None: nothing to add): what the compaction dropped
    that only the history still holds, and where to get each back.

    When the transcript already holds this compaction (its boundary, with no answer of the model after
    it), what is lost is measured against the context after it. Claude Code 2.1 runs the hook before it
    writes the compaction (and before PostCompact, the only hook shown the summary): then the whole
    history is the one the compaction replaced, the summary cannot be read yet, and every probe of that
    history is named, as what the summary may have dropped (docs/hooks.md)."""
    if hook.source != "compact" or hook.transcript_path is None:
        return None
    t = _read(hook.transcript_path)
    redactor = _redactor(policy)
    written = _written_compaction(t, hook.transcript_path)
    if written is None:
        items = probed(t, t.view().messages, redactor)
        lost = items
        head = (f"ctxkit: Claude Code just compacted this conversation. Its summary may not keep what follows, "
                f"{len(lost)} thing{'s' if len(lost) != 1 else ''} the conversation held (ctxkit's retention probes, docs/retention.md); here they are, "
                "with where to get each back if the work needs it: read the file again, or read the "
                "transcript at the line given.\n\n")
    else:
        before, boundary = written
        items = probed(before, before.view().messages, redactor)
        lost = _not_held(items, t, boundary, redactor)
        head = (f"ctxkit: the compaction dropped {len(lost)} of the {len(items)} things the conversation before it "
                "held that ctxkit's retention probes look for (docs/retention.md). Get back what the work still "
                "needs: read the file again, or read the transcript at the line given.\n\n")
    if not lost:
        return None
    where = str(hook.transcript_path)

    def describe(p: Probed) -> str:
        if p.kind == "file_paths":
            path = Path(p.text) if Path(p.text).is_absolute() else hook.cwd / p.text
            return f"{_quoted(p)}: read it again" + ("" if path.exists() else " (no longer on disk)")
        return f"{_quoted(p)}: line {p.line} of {where}" if p.line else _quoted(p)

    tail = ""
    from ..store.disk import MARKER, default_store_dir

    store = default_store_dir(where)
    if (store / MARKER).exists():
        tail = (f"\n\nOutputs ctxkit moved to its store ({store}) are put back by: "
                f"ctxkit expand {where} -o FILE")
    body = _listing(lost, MAX_CHARS - len(head) - len(tail) - 200, describe)
    return {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": _fit(head + body + tail)}}


def _not_held(items: list[Probed], t: Any, boundary: int, redactor: Any) -> list[Probed]:
    """The probes the context after the compaction at ``boundary`` no longer holds (as
    :func:`ctxkit.summarize.retention.measure` counts them)."""
    raw = "\n".join([retention.view_text([m.api() for m in t.view().messages if not _echoes_pre_compact(m)]),
                     *_reinjected_files(t, boundary)])
    if redactor.enabled:
        raw = redactor.text(raw)
    squashed = " ".join(raw.split())
    held = (retention.held_substrings([p.text.casefold() for p in items if p.kind == "user_prompts"],
                                      squashed.casefold())
            | retention.held_substrings([p.text for p in items if p.kind == "file_paths"], raw)
            | retention.held_substrings([p.text for p in items if p.kind in ("commands", "errors")], squashed))
    return [p for p in items if (p.text.casefold() if p.kind == "user_prompts" else p.text) not in held]


#: The hooks ctxkit answers: the ``ctxkit hooks`` subcommand, and Claude Code's event it is installed for.
EVENTS = {"pre-compact": "PreCompact", "session-start": "SessionStart"}


def answer(command: str, data: bytes, *, policy: str | None, cwd: Path) -> str:
    """What ``ctxkit hooks COMMAND`` prints on stdout for the hook input ``data`` (empty: nothing to add).

    The policy is the one every command uses (:func:`ctxkit.load_policy`: ``policy``, else the
    repository's ``.ctxkit.yaml`` found from the session's working folder, the user's file, the
    built-in default). Raises :class:`ctxkit.errors.CtxkitError` (or anything else) on failure: the
    command turns every failure into a message and the exit code Claude Code does not act on."""
    from .. import load_policy
    from ..policy.layers import CLI_LABELS

    hook = HookInput.parse(data, cwd)
    pol = load_policy(policy, [], cwd=hook.cwd, labels=CLI_LABELS)
    if command == "pre-compact":
        return pre_compact(hook, pol)
    out = session_start(hook, pol)
    return json.dumps(out, ensure_ascii=False) if out is not None else ""
