"""What every attachment type needs: the session's events, earlier attachments, paths, rendering.

An attachment type decides from three things: what happened in the view (tool
calls and their results, human prompts, assistant turns), what earlier
attachments already told the model (replayed from the view, so a later run
does not repeat them), and the current environment (files on disk, the
``--state`` file, the clock). :class:`AttachmentState` gathers all of it once
per run; the types read it and never touch the transcript's internals. (Over 400 lines: it is the
one place every type reads the session from, including the confined reads of workspace files.)

Replay, per format:

* Claude Code: earlier ``attachment`` entries on the active chain (after the
  last compact boundary, plus a preserved tail), read from their
  ``attachment`` field: the same data Claude Code itself replays.
* Anthropic / OpenAI messages: there is no place for data, so each type parses
  its own earlier reminder texts back (``parse_rendered``). What a type cannot
  read back from its text is said in that type's docstring.
"""
from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from ...confined import read_in_folder
from ...reminders import REMINDER_OPEN, unwrap
from ...side_files import MISSING, UNREADABLE, SideFileError, parse_json, read_side_text
from ...transcript.claude_code import chain as claude_code_chain
from ...transcript.claude_code import projection as claude_code
from ...transcript.claude_code import session as claude_code_session
from ...transcript.view import PROMPT, View
from .types import ATTACHMENT_TYPES

if TYPE_CHECKING:
    from ...transcript.model import Transcript
    from ..base import Context


# Where the tools Claude Code ships keep the path they act on.


class AttachmentInputError(Exception):
    """An input file (``--state``, ``--queued``) that cannot be read or parsed."""


# -- rendering --------------------------------------------------------------------------------------
# -- time -------------------------------------------------------------------------------------------
def parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        t = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


_OFFSET = re.compile(r"^(?:UTC)?([+-])(\d{2}):?(\d{2})$")


def local_today(ctx: Context, tz_name: str = "local") -> date:
    """Today's date where the user is: the date Claude Code writes ("Today's date is ...").

    The dates in a transcript are local dates written by the agent's machine. Rule, first that
    applies: the ``timezone`` option when it is not ``local`` (an IANA name such as
    ``Europe/Paris``, ``UTC``, or an offset ``+09:00``); the offset ``--now`` was written with
    (``2026-11-30T00:30:00+09:00`` is the 30th, ``...Z`` is a UTC date); else the machine's
    local time zone (``TZ``) applied to the instant (a ``--now`` without an offset is a UTC
    instant, as everywhere in ctxkit). The CLI says whether ``--now`` carried an offset in
    ``RunInputs.now_has_offset``; an aware ``now`` is taken to carry one unless it says no.
    """
    given = ctx.inputs.now
    if isinstance(given, str):
        given = datetime.fromisoformat(given.replace("Z", "+00:00"))
    now = given if isinstance(given, datetime) else ctx.clock.now()
    if now.tzinfo is None:
        now = now.replace(tzinfo=timezone.utc)
    if tz_name and tz_name != "local":
        return now.astimezone(_timezone(tz_name)).date()
    offset_given = (isinstance(given, datetime) and given.tzinfo is not None
                    and ctx.inputs.now_has_offset)
    return now.date() if offset_given else now.astimezone().date()


def _timezone(name: str):
    if name.upper() in ("UTC", "Z"):
        return timezone.utc
    m = _OFFSET.match(name)
    if m:
        delta = timedelta(hours=int(m.group(2)), minutes=int(m.group(3)))
        return timezone(delta if m.group(1) == "+" else -delta)
    from zoneinfo import ZoneInfo

    return ZoneInfo(name)


# -- events -----------------------------------------------------------------------------------------
@dataclass
class Event:
    """One thing that happened in the view, in view order."""

    kind: str  # "prompt" | "assistant" | "tool" | "attachment"
    timestamp: datetime | None = None
    name: str = ""  # tool name, or attachment type
    input: dict = field(default_factory=dict)  # tool input
    result: dict | None = None  # the tool_result block
    text: str = ""  # prompt text, or an attachment's rendered text
    #: how to read Claude Code's structured ``toolUseResult`` of this result (see :attr:`meta`)
    load_meta: Callable[[], Any] | None = field(default=None, repr=False, compare=False)
    #: the attachment's data, or how to read it (see :attr:`data`)
    load_data: dict | Callable[[], Any] | None = field(default=None, repr=False, compare=False)

    @functools.cached_property
    def meta(self) -> Any:
        """Claude Code's structured ``toolUseResult`` for this result (None when absent). Read from the
        line when first asked for: only a few tools' records are ever used (Read, Edit), and reading
        them means parsing the whole line again (the copy kept in memory leaves it out)."""
        return self.load_meta() if self.load_meta is not None else None

    @functools.cached_property
    def data(self) -> dict:
        """The attachment's data (``{}`` for other events). A large one is read from its line when first
        asked for: most (a prompt snapshot) are never looked at."""
        value = self.load_data() if callable(self.load_data) else self.load_data
        return value if isinstance(value, dict) else {}

    @property
    def is_error(self) -> bool:
        return bool(self.result and self.result.get("is_error"))

    def result_text(self) -> str:
        c = (self.result or {}).get("content")
        if isinstance(c, str):
            return c
        if isinstance(c, list):
            return "\n".join(b.get("text", "") for b in c if isinstance(b, dict) and b.get("type") == "text")
        return ""


Parser = Callable[[str], "dict | None"]

_COMMAND_PREFIXES = ("<command-name>", "<command-message>", "<local-command-", "<bash-input>", "<bash-stdout>",
                     "<bash-stderr>", REMINDER_OPEN)


def iter_events(t: Transcript, view: View, parsers: Iterable[Parser] = ()) -> Iterator[Event]:
    """The view's events. ``parsers`` read earlier reminders back in plain formats."""
    if t.format == "claude-code":
        yield from _claude_code_events(t)
    else:
        yield from _plain_events(view, list(parsers))


def _claude_code_events(t: Transcript) -> Iterator[Event]:
    """The events of a Claude Code transcript's active chain: computed once per transcript version (a
    compaction asks for them several times; the list must not be changed)."""
    events = t.memo.get("attachment_events")
    if events is None:
        events = t.memo["attachment_events"] = list(_read_claude_code_events(t))
    return iter(events)


def _read_claude_code_events(t: Transcript) -> Iterator[Event]:
    order, _facts = claude_code_chain.active_entries(t)
    uses: dict[str, tuple[str, dict]] = {}
    seen_rounds: set[str] = set()
    entry_type = claude_code_chain.entry_type
    for i in order:
        if entry_type(t, i) == "attachment":  # not parsed again for each version
            a = t.extract(i, claude_code.attachment_summary)
            if a.kind is not None:
                data = a.data if a.data is not None else t.field_reader(i, "attachment")
                yield Event("attachment", parse_time(a.timestamp), a.kind, text="\n".join(a.texts), load_data=data)
            continue
        d = t.peek(i)  # parsed copies are kept for the view's own entries only
        typ = d.get("type")
        ts = parse_time(d.get("timestamp"))
        if typ == "assistant":
            msg = d.get("message") if isinstance(d.get("message"), dict) else {}
            if msg.get("model") == "<synthetic>" or d.get("isApiErrorMessage"):
                continue
            round_id = msg.get("id") or d.get("requestId") or d.get("uuid") or str(i)
            if round_id not in seen_rounds:
                seen_rounds.add(round_id)
                yield Event("assistant", ts)
            for b in _blocks(msg.get("content")):
                if b.get("type") == "tool_use":
                    uses[b.get("id", "")] = (b.get("name", ""), b.get("input") if isinstance(b.get("input"), dict) else {})
        elif typ == "user":
            msg = d.get("message") if isinstance(d.get("message"), dict) else {}
            blocks = _blocks(msg.get("content"))
            results = [b for b in blocks if b.get("type") == "tool_result"]
            for b in results:
                use = uses.get(b.get("tool_use_id", ""))
                if use is not None:
                    load = t.field_reader(i, "toolUseResult") if len(results) == 1 else None
                    yield Event("tool", ts, use[0], use[1], result=b, load_meta=load)
            if not results and _is_prompt(d, blocks):
                yield Event("prompt", ts, text="\n".join(b.get("text", "") for b in blocks if b.get("type") == "text"))


def _is_prompt(d: dict, blocks: list[dict]) -> bool:
    if d.get("isMeta") or d.get("isCompactSummary") or not blocks:
        return False
    texts = [b.get("text", "") for b in blocks if b.get("type") == "text"]
    return not (texts and all(x.lstrip().startswith(_COMMAND_PREFIXES) for x in texts))


def _plain_events(view: View, parsers: list[Parser]) -> Iterator[Event]:
    uses: dict[str, tuple[str, dict]] = {}
    for m in view.messages:
        if m.role == "assistant":
            yield Event("assistant")
            for b in m.content:
                if b.get("type") == "tool_use":
                    uses[b.get("id", "")] = (b.get("name", ""), b.get("input") if isinstance(b.get("input"), dict) else {})
        elif m.role == "user":
            for b in m.content:
                if b.get("type") == "tool_result" and b.get("tool_use_id") in uses:
                    name, inp = uses[b["tool_use_id"]]
                    yield Event("tool", None, name, inp, result=b)
            prompted = False
            for b in m.content:
                if b.get("type") != "text":
                    continue
                inner = unwrap(b.get("text", ""))
                if inner is not None:
                    for parse in parsers:
                        data = parse(inner)
                        if data is not None:
                            yield Event("attachment", None, data.get("type", ""), text=b["text"], load_data=data)
                            break
                elif m.kind == PROMPT and not prompted:
                    prompted = True
                    yield Event("prompt", None, text=b.get("text", ""))


def _blocks(content: Any) -> list[dict]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


# -- the run's shared state -------------------------------------------------------------------------
#: how the warning begins when the session's folder is one files are never re-read from (:func:`session_folder`)
NO_FOLDER_NOTE = "re-reads no file"


@dataclass
class AttachmentState:
    """Everything the attachment types share in one run (built once by the stage)."""

    events: list[Event]
    env: dict | None  # the --state file, parsed (None when not given or unreadable)
    queued: list[dict] | None  # the --queued file, parsed
    root: Path  # the project root on this machine
    recorded_root: str | None  # the session's working directory as the transcript records it
    system_role: str  # "system" when the transcript's harness renders state as system messages, else "user"
    fmt: str
    session: dict[str, Any] = field(default_factory=dict)  # slug, session id, live metadata entries
    warnings: list[str] = field(default_factory=list)
    deferred: list[str] = field(default_factory=list)  # what did not fit a budget and waits for the next run
    #: the folder files may be re-read from (:func:`session_folder`): :attr:`root`, unless that is ``/``
    #: or the home folder (then None: nothing is re-read)
    readable: Path | None = None
    #: replaces the secrets in what is re-injected (:func:`ctxkit.summarize.redact.redactor_for`); None: kept
    redactor: Any = None

    @functools.cached_property
    def moved(self) -> bool:
        """Whether the project moved: the recorded folder is not on this machine, so the paths under it
        are looked up under :attr:`root` instead. (A recorded folder that is here but not the session's
        folder, ``/`` say, is not a move: its paths stay as they are, outside the session's folder.)"""
        return bool(self.recorded_root) and not Path(self.recorded_root).is_dir()

    # -- replay --
    def attachments(self, *types: str) -> list[Event]:
        """Earlier attachments of these types, in view order."""
        return [e for e in self.events if e.kind == "attachment" and e.name in types]

    def tools(self, names: Iterable[str] | None = None) -> list[Event]:
        wanted = set(names) if names is not None else None
        return [e for e in self.events if e.kind == "tool" and (wanted is None or e.name in wanted)]

    # -- paths --
    def to_local(self, recorded: str) -> Path:
        """Where a path the transcript names lives on this machine (a moved project is rebased)."""
        p = Path(recorded)
        if not p.is_absolute():
            return self.root / p
        if self.moved:
            base = Path(self.recorded_root)
            if base != self.root and _is_within(p, base):
                return self.root / p.relative_to(base)
        return p

    def to_recorded(self, local: Path) -> str:
        """The inverse of :meth:`to_local`: a local path as the model knows it."""
        if self.moved:
            base = Path(self.recorded_root)
            if base != self.root and _is_within(local, self.root):
                return str(PurePosixPath(self.recorded_root) / local.relative_to(self.root).as_posix())
        return str(local)

    def read_local(self, local: Path, *, limit: int, shown: str | None = None) -> bytes | None:
        """The bytes of a file the transcript names (already :meth:`to_local`), or None when it is gone.

        The one way the attachment types and re-injection read such a file: it must resolve to a
        regular file inside :attr:`root` (the session's working directory) of at most ``limit``
        bytes; otherwise :class:`ctxkit.confined.Refused` (see :func:`ctxkit.confined.read_in_folder`).
        """
        if self.readable is None:
            self.warn(f"{NO_FOLDER_NOTE}: the session's folder would be {self.root}, {_too_wide(self.root)}; "
                      "run ctxkit from the project's folder")
        return read_in_folder([self.readable] if self.readable is not None else [], local, limit=limit, shown=shown)

    def redact(self, text: str) -> str:
        """``text`` read from disk, with its secrets replaced as in what goes to a summarizer: what is
        re-injected goes to the model provider with the next request (docs/security.md)."""
        return self.redactor.text(text) if self.redactor is not None and text else text

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)


def _is_within(p: Path, base: Path) -> bool:
    try:
        p.relative_to(base)
    except ValueError:
        return False
    return True


def build_state(t: Transcript, view: View, ctx: Context, parsers: Iterable[Parser] | None = None) -> AttachmentState:
    """Gather the run's events and inputs; unreadable input files become warnings.

    ``parsers`` read earlier reminders back in plain formats; by default every registered type's
    ``parse_rendered``.
    """
    if parsers is None:
        parsers = [cls.parse_rendered for cls in ATTACHMENT_TYPES.values()]
    warnings: list[str] = []
    env = queued = None
    if ctx.inputs.state_file is not None:
        try:
            env = load_state_file(ctx.inputs.state_file)
        except AttachmentInputError as exc:
            warnings.append(str(exc))
    if ctx.inputs.queued_file is not None:
        try:
            queued = load_queued_file(ctx.inputs.queued_file)
        except AttachmentInputError as exc:
            warnings.append(str(exc))
    session = claude_code_session.session_facts(t) if t.format == "claude-code" else {"modes": [], "queue_ops": []}
    recorded_root = session.get("cwd")
    root = session_folder(recorded_root if isinstance(recorded_root, str) else None, Path(ctx.inputs.cwd))
    system_role = "system" if session.get("system_rendered") else "user"
    from ...summarize.redact import redactor_for

    return AttachmentState(list(iter_events(t, view, parsers)), env, queued, root, recorded_root, system_role,
                           t.format, session, warnings, readable=None if _too_wide(root) else root,
                           redactor=redactor_for(ctx))


def session_folder(recorded: str | None, run_folder: Path) -> Path:
    """The session's folder on this machine: the transcript's working directory (``cwd``) when it is
    the folder ctxkit runs from or a folder inside it, else the folder ctxkit runs from.

    Why: the transcript is data; by its word alone (``"cwd": "/"``) it would choose which of the
    user's files compact re-reads and writes into the output. The folder the user runs ctxkit from
    (a hook runs in the project's) vouches for itself and what is below it. Files are re-read only
    below this folder, and not at all when it is ``/`` or the home folder (:func:`_too_wide`)."""
    if recorded:
        try:
            real, base = Path(os.path.realpath(recorded)), Path(os.path.realpath(run_folder))
        except (OSError, ValueError):
            return run_folder
        if real.is_dir() and (real == base or base in real.parents):
            return Path(recorded)
    return run_folder


def _too_wide(folder: Path) -> str | None:
    """Why ``folder`` is no project's folder to re-read files from (``/``, the home folder or a folder
    above it: every file of the user is below), or None."""
    try:
        real = Path(os.path.realpath(folder))
        home = os.path.expanduser("~")
        home_real = Path(os.path.realpath(home)) if home != "~" else None
    except (OSError, ValueError):
        return "which cannot be resolved"
    if real == Path(real.anchor):
        return "the root folder"
    if home_real is not None and (real == home_real or real in home_real.parents):
        return "your home folder" if real == home_real else "a folder above your home folder"
    return None


# -- input files ------------------------------------------------------------------------------------
def _read_input(path: str | Path, option: str, consequence: str = "") -> str:
    """The text of a file named by a command-line option, read within its bound (:mod:`ctxkit.side_files`),
    or an error that names the option and the file."""
    try:
        return read_side_text(path, option) or ""
    except SideFileError as exc:
        # a file not there (yet) or not readable is worth a warning; a device, FIFO, folder or a file
        # over the bound is a mistake on the command line: it stops the run (exit 2)
        if exc.kind not in (MISSING, UNREADABLE):
            raise
        why = exc.reason if exc.kind == UNREADABLE else f"cannot read it ({exc.reason})"
        raise AttachmentInputError(f"{option} {path}: {why}{consequence}") from exc


def load_state_file(path: str | Path) -> dict:
    """The ``--state`` file: JSON describing what the harness offers now.

    ``{"deferred_tools": [...], "agents": [...], "mcp_servers": [...], "tasks": [...]}``; a key that
    is absent means "unknown" (that delta stays quiet), an empty list means "none".
    """
    text = _read_input(path, "--state", "; deltas skipped")
    try:
        value = parse_json(text)
    except json.JSONDecodeError as exc:
        raise AttachmentInputError(f"--state {path}:{exc.lineno}:{exc.colno}: not JSON ({exc.msg}); deltas skipped") from exc
    except ValueError as exc:
        raise AttachmentInputError(f"--state {path}: {exc}; deltas skipped") from exc
    if not isinstance(value, dict):
        raise AttachmentInputError(f"--state {path}: expected a JSON object, got {type(value).__name__}; deltas skipped")
    return value


def load_queued_file(path: str | Path) -> list[dict]:
    """The ``--queued`` file: inputs typed while the turn ran.

    A JSON list (strings, or objects with ``prompt`` and optional ``mode``/``origin``) or one JSON
    object; anything else is text, one message per non-empty line.
    """
    text = _read_input(path, "--queued")
    try:
        value = parse_json(text)
    except ValueError:
        value = None
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        return [{"prompt": line} for line in text.splitlines() if line.strip()]
    out = []
    for item in value:
        if isinstance(item, str):
            out.append({"prompt": item})
        elif isinstance(item, dict) and isinstance(item.get("prompt", item.get("value")), str):
            out.append({**item, "prompt": item.get("prompt", item.get("value"))})
    return out


# -- budgets ----------------------------------------------------------------------------------------
def cap(text: str, limit: int, what: str = "content") -> tuple[str, bool]:
    """``text`` cut at a line end within ``limit`` characters, with a note saying how much is left out."""
    if limit <= 0 or len(text) <= limit:
        return text, False
    head = text[:limit]
    cut = head.rfind("\n")
    if cut > limit // 2:
        head = head[:cut + 1]
    rest = text[len(head):]
    more = rest.count("\n") + (0 if rest.endswith("\n") else 1)
    return f"{head.rstrip(chr(10))}\n... [{what} truncated: {more} more line{'s' if more != 1 else ''}]", True
