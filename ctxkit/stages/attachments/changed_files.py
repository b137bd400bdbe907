r'''changed_files: a file the session read has changed on disk since; the model gets the diff.

What the model last saw of each file is rebuilt from the view, in order: a full `Read` result
(Claude Code's `toolUseResult` holds the raw text; plain formats are parsed from the numbered
lines), a `Write`'s content, an `Edit`/`MultiEdit` applied to what was seen, Claude Code's
post-compact `file` attachments and earlier `changed_files` reports. Partial reads
(`offset`/`limit`) are not tracked, as in Claude Code.

Then, per file: when its modification time is not after the moment it was seen (`trust_mtime`),
nothing is read; otherwise the content is compared and, when it differs, a unified diff is
appended (a user message):

```
<system-reminder>
Note: /repo/app/models.py was modified, either by the user or by a linter. This change was intentional, so make sure to take it into account as you proceed (ie. don't revert it unless the user asks you to). Don't tell the user this, since they are already aware. Here are the relevant changes (a unified diff against the version you last saw):
--- /repo/app/models.py	(as you last saw it)
+++ /repo/app/models.py	(now on disk, sha256:1435e724...)
@@ -6,4 +6,4 @@
 class Order:
     def total(self, items):
         """Sum of item prices."""
-        return sum(i.price for i in items)
+        return sum(i.price * i.qty for i in items)
</system-reminder>
```

A file changed twice is diffed against what the last report showed. A file that no longer exists
is reported once as deleted (`Note: /repo/app/views.py was deleted after you last read it, either
by the user or by another process. ...`); when the session's files are not on this machine at
all, or the file's folder is gone too, a warning says so instead. Each diff is capped at
`max_chars_per_file` and all of them together at `max_chars_total`; files that do not fit wait
for the next run (their diff is then taken against the same base, so nothing is skipped). A file
that cannot be read gives a warning; binary files are not reported. Paths the transcript recorded
under a working directory that does not exist on this machine are looked up under the current
directory (a moved project). Only regular files inside the session's folder are read (`..` and
symbolic links resolved first), at most 4 bytes per character of `max_file_chars`; a file outside
it, a FIFO or device, or a larger file is skipped with a warning (`skipped 1 file outside the
session's folder: ...`). Claude Code checks only files it read itself; ctxkit takes the paths
from the transcript, hence the rule (docs/security.md).

The new content is kept so that the next change is diffed against it: inline in the Claude Code
attachment record (up to `inline_content_chars`) and in the store (plain formats find it there by
the sha256 in the `+++` line).
'''
from __future__ import annotations

import difflib
import hashlib
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from ...confined import Refused, skipped_note
from ...reminders import reminder
from ...transcript.edits import NewMessage
from .types import AttachmentType, options_schema, register

MODIFIED = ("Note: {path} was modified, either by the user or by a linter. This change was intentional, so make sure "
            "to take it into account as you proceed (ie. don't revert it unless the user asks you to). Don't tell the "
            "user this, since they are already aware. Here are the relevant changes (a unified diff against the "
            "version you last saw):\n{snippet}")
DELETED = ("Note: {path} was deleted after you last read it, either by the user or by another process. Don't tell the "
           "user this, since they are already aware. If the task still needs this file, check with the user before "
           "recreating it.")
UNKNOWN_BASE = "(The version you last saw is not available here; the file now reads:)\n"

_MODIFIED_RE = re.compile(r"^Note: (.+?) was modified, either by the user or by a linter\.")
_DELETED_RE = re.compile(r"^Note: (.+?) was deleted after you last read it")
_SHA_RE = re.compile(r"^\+\+\+ .*sha256:([0-9a-f]{64})\)$", re.M)
_NUMBERED = re.compile(r"^\s*(\d+)[\t\u2192](.*)$")


@dataclass
class Seen:
    """What the model last saw of one file."""

    content: str | None = None  # None: seen, but the text is not known here
    sha: str | None = None
    at: datetime | None = None  # when (transcript time); None in plain formats
    partial: bool = False
    deleted: bool = False


@register
class ChangedFiles(AttachmentType):
    name = "changed_files"
    summary = "Diffs of files the session read that changed on disk since."
    replays = ("edited_text_file", "file")
    cc_role = "user"
    options_schema = options_schema({
        "max_chars_per_file": {"type": "integer", "minimum": 200, "default": 8000,
                               "description": "Longest diff shown for one file (longer ones are cut with a note)."},
        "max_chars_total": {"type": "integer", "minimum": 200, "default": 20000,
                            "description": "Most diff characters appended per run; further files wait for the next run."},
        "context_lines": {"type": "integer", "minimum": 0, "default": 3, "description": "Unchanged lines around each change."},
        "trust_mtime": {"type": "boolean", "default": True,
                        "description": "Skip files whose modification time is not after the moment they were seen."},
        "max_file_chars": {"type": "integer", "minimum": 1, "default": 1000000,
                           "description": "Larger files are reported as changed without a diff."},
        "inline_content_chars": {"type": "integer", "minimum": 0, "default": 100000,
                                 "description": "Claude Code: keep the new content in the attachment record up to this size "
                                                "(larger content is kept in the store only)."},
    })

    @classmethod
    def parse_rendered(cls, text: str) -> dict | None:
        m = _DELETED_RE.match(text)
        if m:
            return {"type": "edited_text_file", "filename": m.group(1), "deleted": True}
        m = _MODIFIED_RE.match(text)
        if not m:
            return None
        sha = _SHA_RE.search(text)
        return {"type": "edited_text_file", "filename": m.group(1), "contentSha256": sha.group(1) if sha else None}

    # -- what the model saw ----------------------------------------------------------------------
    def seen_files(self, state, store) -> dict[str, Seen]:
        seen: dict[str, Seen] = {}
        for ev in state.events:
            if ev.kind == "tool" and not ev.is_error:
                path = ev.input.get("file_path")
                if not isinstance(path, str) or not path:
                    continue
                if ev.name == "Read":
                    if any(ev.input.get(k) not in (None, "", 0) for k in ("offset", "limit", "pages")):
                        seen[path] = Seen(at=ev.timestamp, partial=True)
                        continue
                    content = _read_content(ev)
                    if content is _UNCHANGED:
                        continue
                    if content is _PARTIAL:
                        seen[path] = Seen(at=ev.timestamp, partial=True)
                    else:
                        seen[path] = Seen(content=content, at=ev.timestamp)
                elif ev.name == "Write" and isinstance(ev.input.get("content"), str):
                    seen[path] = Seen(content=ev.input["content"], at=ev.timestamp)
                elif ev.name in ("Edit", "MultiEdit"):
                    prev = seen.get(path, Seen())
                    base = ev.meta.get("originalFile") if isinstance(ev.meta, dict) else None
                    base = base if isinstance(base, str) else prev.content
                    edits = ev.input.get("edits") if ev.name == "MultiEdit" else [ev.input]
                    seen[path] = Seen(content=_apply_edits(base, edits), at=ev.timestamp)
            elif ev.kind == "attachment" and ev.name == "edited_text_file":
                path = ev.data.get("filename")
                if not isinstance(path, str):
                    continue
                if ev.data.get("deleted"):
                    seen[path] = Seen(at=ev.timestamp, deleted=True)
                    continue
                sha = ev.data.get("contentSha256") if isinstance(ev.data.get("contentSha256"), str) else None
                content = ev.data.get("content") if isinstance(ev.data.get("content"), str) else None
                if content is None and sha:
                    raw = store.read_blob(f"{sha}.txt")
                    content = raw.decode("utf-8") if raw is not None else None
                seen[path] = Seen(content=content, sha=sha, at=ev.timestamp)
            elif ev.kind == "attachment" and ev.name == "file":
                path = ev.data.get("filename")
                f = ((ev.data.get("content") or {}).get("file") or {}) if isinstance(ev.data.get("content"), dict) else {}
                if isinstance(path, str) and isinstance(f.get("content"), str) and _full(f):
                    seen[path] = Seen(content=f["content"], at=ev.timestamp)
        return seen

    # -- the check -------------------------------------------------------------------------------
    def compute(self, view, transcript, ctx, options, state):
        out: list[NewMessage] = []
        used = 0
        total = int(options["max_chars_total"])
        role = self.role(options, state)
        tracked = [(p, s) for p, s in self.seen_files(state, ctx.store).items()
                   if not s.partial and not (s.content is None and s.sha is None and s.at is None and not s.deleted)]
        # A missing file is a deleted file only when the session's files are on this machine: its
        # recorded folder exists, or some file it read is found. Otherwise it is most likely a
        # transcript from elsewhere, and "deleted" would be a false alarm.
        here = (state.recorded_root is None or Path(state.recorded_root).is_dir()
                or any(state.to_local(p).exists() for p, _ in tracked))
        missing = 0
        skipped: dict[str, list[str]] = {}  # refused by the confined reader, by kind
        for path, seen in tracked:
            local = state.to_local(path)
            try:
                st = local.stat()
            except FileNotFoundError:
                if not here or not local.parent.is_dir():
                    missing += 1
                elif not seen.deleted:
                    out.append(NewMessage([reminder(DELETED.format(path=path))], role, attachment={
                        "type": "edited_text_file", "filename": path, "snippet": "(file deleted)", "deleted": True}))
                continue
            except OSError as exc:
                state.warn(f"changed_files: cannot check {path}: {exc.strerror or exc}")
                continue
            if not local.is_file():
                continue
            if (not seen.deleted and options["trust_mtime"] and seen.at is not None
                    and st.st_mtime <= seen.at.timestamp()):
                continue
            try:  # inside the session's folder, a regular file, at most 4 bytes per character of max_file_chars
                raw = state.read_local(local, limit=4 * int(options["max_file_chars"]), shown=path)
            except Refused as exc:
                skipped.setdefault(exc.kind, []).append(path)
                continue
            except OSError as exc:
                state.warn(f"changed_files: cannot read {path}: {exc.strerror or exc}")
                continue
            if raw is None:
                continue
            sha = hashlib.sha256(raw).hexdigest()
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                continue  # binary now: nothing a text diff can say
            base = "" if seen.deleted else seen.content
            if base is not None and base == text:
                continue
            if base is None and (seen.sha == sha or seen.at is None):
                continue  # unchanged, or no way to tell
            room = min(int(options["max_chars_per_file"]), total - used)
            if room < 200:
                state.deferred.append(f"changed_files: {path} (budget)")
                continue
            # the diff's secrets redacted, both sides alike (what the model saw and what is on disk now)
            snippet = state.redact(self.snippet(path, base, text, sha, options))
            if len(snippet) > room:
                snippet = _cap_diff(snippet, room)
            used += len(snippet)
            ctx.store.put_text(text)
            record = {"type": "edited_text_file", "filename": path, "snippet": snippet, "contentSha256": sha}
            if len(text) <= int(options["inline_content_chars"]) and state.redact(text) == text:
                record["content"] = text  # (one holding a secret is found again by its sha in the store)
            out.append(NewMessage([reminder(MODIFIED.format(path=path, snippet=snippet))], role, attachment=record))
        for kind, paths in skipped.items():
            state.warn(f"changed_files: {skipped_note(kind, paths)}")
        if missing:
            state.warn(f"changed_files: {missing} file(s) the session read are not found under {state.root}; "
                       "run ctxkit from the project folder to check them")
        return out

    @staticmethod
    def snippet(path: str, base: str | None, text: str, sha: str, options) -> str:
        head = f"--- {path}\t(as you last saw it)\n+++ {path}\t(now on disk, sha256:{sha})\n"
        if len(text) > int(options["max_file_chars"]) or (base is not None and len(base) > int(options["max_file_chars"])):
            return head + "(the file is too large to show a diff; Read it if the task needs it)"
        if base is None:
            return head + UNKNOWN_BASE + "\n".join(f"{n}\t{line}" for n, line in enumerate(text.split("\n"), 1))
        lines = difflib.unified_diff(base.splitlines(keepends=True), text.splitlines(keepends=True),
                                     n=int(options["context_lines"]))
        body = []
        for line in list(lines)[2:]:  # our own header replaces difflib's
            body.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
        return head + "".join(body).rstrip("\n")


_UNCHANGED = object()
_PARTIAL = object()


def _full(f: dict) -> bool:
    start, num, total = f.get("startLine", 1), f.get("numLines"), f.get("totalLines")
    return start in (None, 1) and (num is None or total is None or num >= total)


def _read_content(ev):
    """The text a Read showed (raw from Claude Code's record, else parsed from the numbered lines)."""
    meta = ev.meta if isinstance(ev.meta, dict) else None
    if meta is not None:
        if meta.get("type") == "file_unchanged":
            return _UNCHANGED
        f = meta.get("file")
        if meta.get("type") == "text" and isinstance(f, dict) and isinstance(f.get("content"), str):
            return f["content"] if _full(f) else _PARTIAL
    text = ev.result_text()
    if "File unchanged since last read" in text:
        return _UNCHANGED
    if "the file exists but the contents are empty" in text:
        return ""
    return _parse_numbered(text)


def _parse_numbered(text: str) -> str | None:
    out: list[str] = []
    rows = text.split("\n")
    for k, row in enumerate(rows):
        m = _NUMBERED.match(row)
        if m and int(m.group(1)) == len(out) + 1:
            out.append(m.group(2))
            continue
        rest = "\n".join(rows[k:]).strip()
        if out and (not rest or rest.startswith("<system-reminder>")):
            break
        return None
    return "\n".join(out) if out else None


def _apply_edits(base: str | None, edits) -> str | None:
    if base is None or not isinstance(edits, list):
        return None
    for e in edits:
        if not isinstance(e, dict):
            return None
        old, new = e.get("old_string"), e.get("new_string")
        if not isinstance(old, str) or not isinstance(new, str) or (old and old not in base) or (not old and base):
            return None
        if not old:
            base = new  # an Edit with an empty old_string fills an empty file
        else:
            base = base.replace(old, new) if e.get("replace_all") else base.replace(old, new, 1)
    return base


def _cap_diff(snippet: str, room: int) -> str:
    head = snippet[:room]
    cut = head.rfind("\n")
    head = head[:cut] if cut > 0 else head
    more = snippet[len(head):].count("\n")
    return f"{head}\n... [diff truncated: {more} more line{'s' if more != 1 else ''}; Read the file to see all of it]"
