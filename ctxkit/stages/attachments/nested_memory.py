r"""nested_memory: the memory files (CLAUDE.md, ...) of the folders the session went into.

The memory file at the project root is part of the prompt Claude Code sends from the start; the
ones deeper down apply only to their part of the tree and are loaded when the session touches a
path there. For every path a tool touched (`file_path`/`notebook_path` of the tools in `tools`),
each folder from just below the project root down to the path's folder is searched for the names
in `files` (globs allowed, matches in name order). A file found is appended once, as a user
message:

```
<system-reminder>
Contents of /repo/app/CLAUDE.md:

Models stay free of I/O.
</system-reminder>
```

unless the view already has it (an earlier `nested_memory` attachment, or a `Read` of that very
file). Earlier attachments are replayed from the view, so a later run does not repeat them; after
a compaction they are gone from the view and a file is injected again when a path below it is
touched again.

Paths outside the project root load nothing, and nothing above the root is ever read. Each file is
capped at `max_chars_per_file`; all of them together at `max_chars_total` per run (files that do
not fit wait for the next run). A file that cannot be read, or is not UTF-8, gives a warning.
Memory files are read only as regular files that resolve (symbolic links followed) to a path
inside the session's folder, and only up to 1 MB (or 4 bytes per character of
`max_chars_per_file`); a link pointing outside, a FIFO or a larger file is skipped with a warning.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from ...confined import Refused, skipped_note
from ...filenames import FILE_PATH_KEYS
from ...reminders import reminder
from ...transcript.edits import NewMessage
from .state import cap
from .types import AttachmentType, options_schema, register

_CONTENTS = re.compile(r"^Contents of (.+?):\n\n", re.S)


def _norm(p: str) -> str:
    return os.path.normpath(p)


#: Memory files up to this size are read (and cut to ``max_chars_per_file``); larger ones are skipped.
MEMORY_MAX_READ = 1024 * 1024


@register
class NestedMemory(AttachmentType):
    name = "nested_memory"
    summary = "Memory files of the folders between the project root and each path the session touched."
    replays = ("nested_memory",)
    cc_role = "user"
    options_schema = options_schema({
        "files": {"type": "array", "items": {"type": "string"}, "default": ["CLAUDE.md", "AGENTS.md", ".claude/rules/*.md"],
                  "description": "Memory file names looked for in each folder (globs allowed)."},
        "tools": {"type": "array", "items": {"type": "string"},
                  "default": ["Read", "Edit", "Write", "MultiEdit", "NotebookEdit"],
                  "description": "Tools whose file paths count as touched."},
        "include_root": {"type": "boolean", "default": False,
                         "description": "Also load the project root's own memory files (off: the prompt has them)."},
        "max_chars_per_file": {"type": "integer", "minimum": 100, "default": 40000,
                               "description": "Longest memory file appended (longer ones are cut with a note)."},
        "max_chars_total": {"type": "integer", "minimum": 100, "default": 60000,
                            "description": "Most characters appended per run; further files wait for the next run."},
    })

    @classmethod
    def parse_rendered(cls, text: str) -> dict | None:
        m = _CONTENTS.match(text)
        return {"type": "nested_memory", "path": m.group(1)} if m else None

    def compute(self, view, transcript, ctx, options, state):
        known = set()
        for ev in state.attachments("nested_memory"):
            p = ev.data.get("path") or (ev.data.get("content") or {}).get("path")
            if isinstance(p, str):
                known.add(_norm(p))
        touched: list[str] = []
        for ev in state.tools(options["tools"]):
            if ev.is_error:
                continue
            for key in FILE_PATH_KEYS:
                p = ev.input.get(key)
                if isinstance(p, str) and p and p not in touched:
                    touched.append(p)
            if ev.name == "Read" and isinstance(ev.input.get("file_path"), str):
                known.add(_norm(ev.input["file_path"]))
        root = state.root
        out: list[NewMessage] = []
        used, total = 0, int(options["max_chars_total"])
        role = self.role(options, state)
        for path in touched:
            for mem in self.memory_files(state.to_local(path), root, options):
                shown = state.to_recorded(mem)
                if _norm(shown) in known:
                    continue
                known.add(_norm(shown))
                try:  # inside the session's folder, a regular file; a larger one is cut below (cap), a huge one skipped
                    limit = max(4 * int(options["max_chars_per_file"]), MEMORY_MAX_READ)
                    raw = state.read_local(mem, limit=limit, shown=shown)
                    if raw is None:
                        continue
                    content = state.redact(raw.decode("utf-8"))
                except Refused as exc:
                    state.warn(f"nested_memory: {skipped_note(exc.kind, [shown])}")
                    continue
                except (OSError, UnicodeDecodeError) as exc:
                    state.warn(f"nested_memory: cannot read {shown}: {getattr(exc, 'strerror', None) or exc}")
                    continue
                content, _ = cap(content, int(options["max_chars_per_file"]), "memory file")
                if out and used + len(content) > total:
                    known.discard(_norm(shown))
                    state.deferred.append(f"nested_memory: {shown} (budget)")
                    continue
                used += len(content)
                rel = os.path.relpath(mem, root)
                record = {"type": "nested_memory", "path": shown,
                          "content": {"path": shown, "type": "Project", "content": content}, "displayPath": rel}
                out.append(NewMessage([reminder(f"Contents of {shown}:\n\n{content}")], role, attachment=record))
        return out

    @staticmethod
    def memory_files(target: Path, root: Path, options) -> list[Path]:
        """Memory files from just below ``root`` (or at it, with ``include_root``) down to ``target``'s folder."""
        target = Path(os.path.normpath(target))
        root = Path(os.path.normpath(root))
        folder = target if target.is_dir() else target.parent
        try:
            rel = folder.relative_to(root)
        except ValueError:
            return []  # outside the project: nothing is loaded, nothing above the root is read
        dirs = [root / Path(*rel.parts[:k]) for k in range(0 if options["include_root"] else 1, len(rel.parts) + 1)]
        found: list[Path] = []
        for d in dirs:
            for pattern in options["files"]:
                matches = sorted(d.glob(pattern)) if any(c in pattern for c in "*?[") else [d / pattern]
                for m in matches:
                    if m.is_file() and m != target and m not in found:
                        found.append(m)
        return found
