"""How the extractive summary quotes: whole lines of code, errors by their telling lines, prose shortened
with a visible marker; and what it reads off a tool call (its file, its action, its target).

Kept apart from :mod:`ctxkit.summarize.extractive` (which builds the nine sections) because these
rules are what a reader of the summary relies on: a quote is the transcript's own text, cut only
between lines (never mid-statement), and every cut says how much it left out.
"""
from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from typing import Any

from ..filenames import FILE_PATH_KEYS
from .prompt import SECTION_TITLES
from .render import json_text
from .secret_values import MARKER_RE

#: A line longer than this is never quoted whole: it is named instead (minified code, a data dump).
LONGEST_QUOTED_LINE = 2_000

_PATH_KEYS = (FILE_PATH_KEYS[0], "path", *FILE_PATH_KEYS[1:])  # a search's folder too
_FENCE = re.compile(r"^[ \t]*(```|~~~)")
_FENCED_BLOCK = re.compile(r"^[ \t]*```([^\n`]*)\n(.*?)(?:^[ \t]*```[ \t]*$|\Z)", re.DOTALL | re.MULTILINE)
# A section heading of a summary in our format ("6. All user messages:"), tolerating markdown decoration;
# only the nine known titles count, so numbered lists inside a section are not mistaken for headings.
# Claude Code's own summaries put the text on the heading's line ("1. Primary Request and Intent: ...").
_SECTION_LINE = re.compile(
    r"^[#*\t ]*([1-9])\.[\t ]*(?:" + "|".join(re.escape(t) for t in SECTION_TITLES) + r")[\t ]*:?[*\t ]*",
    re.MULTILINE | re.IGNORECASE,
)

#: The language a file extension names, for the summary's *Key technical concepts*
LANGUAGES = {
    ".py": "Python", ".pyi": "Python", ".ipynb": "Jupyter notebook", ".js": "JavaScript", ".mjs": "JavaScript",
    ".cjs": "JavaScript", ".jsx": "JavaScript (JSX)", ".ts": "TypeScript", ".tsx": "TypeScript (TSX)",
    ".go": "Go", ".rs": "Rust", ".java": "Java", ".kt": "Kotlin", ".swift": "Swift", ".c": "C", ".h": "C/C++ header",
    ".cc": "C++", ".cpp": "C++", ".hpp": "C++", ".cs": "C#", ".rb": "Ruby", ".php": "PHP", ".scala": "Scala",
    ".sh": "shell", ".bash": "shell", ".zsh": "shell", ".sql": "SQL", ".html": "HTML", ".css": "CSS",
    ".scss": "SCSS", ".vue": "Vue", ".svelte": "Svelte", ".md": "Markdown", ".rst": "reStructuredText",
    ".json": "JSON", ".jsonl": "JSON Lines", ".yaml": "YAML", ".yml": "YAML", ".toml": "TOML", ".ini": "INI",
    ".xml": "XML", ".proto": "Protocol Buffers", ".tf": "Terraform", ".lua": "Lua", ".r": "R", ".dart": "Dart",
    ".ex": "Elixir", ".exs": "Elixir", ".erl": "Erlang", ".hs": "Haskell", ".ml": "OCaml", ".zig": "Zig",
}


#: How much of each prompt the transcript says was typed (``SessionFacts.prompts``) the summary quotes
#: verbatim: a prompt of a few pages (a spec, instructions with examples) is the user's request word for
#: word; beyond, a paste is cut with a marker. A 2,800-character prompt recorded with Claude Code 2.1.328
#: was cut at 2,000 before (bench/cc_scenarios/unicode-long.json). The user messages of a plain message
#: list keep ``user_message_chars``: there a tool's output may be a user text (Cline's results).
TYPED_PROMPT_CHARS = 10_000
#: What the typed prompts' quotes may take together: past it, every prompt is cut at one shorter length,
#: never below ``user_message_chars`` (thirty 9,000-character logs quoted whole: no compaction at all).
TYPED_PROMPTS_TOTAL_CHARS = 20_000
#: ... or this share of the characters the summarized messages hold, when that is more: then every prompt
#: is quoted whole up to it, however long (an 11,092-character plan, "Implement the following plan: ...", was
#: cut at 10,000 characters on held-out ``01a88240``, its last steps gone from the context; quoted whole, the
#: prompts take at most a fifth of what the summary replaces)
TYPED_PROMPTS_SHARE = 0.2
#: How much of the first and the most recent request *1. Primary Request and Intent* quotes: a longer one is
#: quoted in *6. All user messages* (whole, or at the shared cut) and only opened here. Quoted twice (up to
#: the section's 6,000 characters), a pasted spec took the summary past what it replaced: five held-out
#: claude-mem observer sessions, whose prompts are most of the history, could not be compacted with every
#: prompt whole; opened in 1,000 characters, all five are.
PRIMARY_REQUEST_CHARS = 1_000


def squash(text: str, limit: int) -> str:
    """One line, whitespace collapsed, at most ``limit`` characters (cut at a word, marked ``…``)."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip() + "…"


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def whole_lines(text: str, limit: int) -> str:
    """``text`` cut to whole lines that fit in ``limit`` characters, saying what was left out.

    Never cuts inside a line, so code is quoted statement by statement; a single line longer than
    :data:`LONGEST_QUOTED_LINE` is named, not quoted. A code fence the cut leaves open is closed, so
    the rest of the summary does not read as code."""
    if len(text) <= limit:
        return text
    lines = text.split("\n")
    kept: list[str] = []
    used = 0
    for line in lines:
        if kept and used + len(line) + 1 > limit:
            break
        if not kept and len(line) > max(limit, LONGEST_QUOTED_LINE):
            kept.append(f"[a line of {len(line):,} characters, not quoted]")
        else:
            kept.append(line)
        used += len(kept[-1]) + 1
    left = len(lines) - len(kept)
    if sum(1 for line in kept if _FENCE.match(line)) % 2:
        kept.append("```")
    if left:
        kept.append(f"[… {_plural(left, 'more line')} omitted]")
    return "\n".join(kept)


def without_repeats(text: str, at_least: int = 3) -> str:
    """``text`` with each run of ``at_least`` or more identical lines quoted once and counted
    (``[… the same line 32 more times]``): boilerplate output (``result line`` x33) costs one line,
    and the room goes to what differs."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        j = i
        while j + 1 < len(lines) and lines[j + 1] == lines[i]:
            j += 1
        out.append(lines[i])
        if j - i + 1 >= at_least:
            out.append(f"[… the same line {_plural(j - i, 'more time')}]")
        else:
            out.extend(lines[i + 1:j + 1])
        i = j + 1
    return "\n".join(out)


def opening(text: str, limit: int = 200) -> str:
    """A command quoted by its first ``limit`` characters, whitespace collapsed, marked ``…`` when cut:
    the form a reader (and the retention probes, :mod:`ctxkit.summarize.retention`) looks it up by."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


def shortened(text: str, limit: int) -> str:
    """A user's message verbatim up to ``limit`` characters (up to a ``[REDACTED:kind]`` marker the limit
    falls in), then a marker saying how much more there was; a code fence the cut leaves open is closed
    first (:func:`_fences_closed`)."""
    if len(text) <= limit:
        return text
    cut = text[:_outside_marker(text, limit)]
    closed = _fences_closed(cut)
    between = " " if closed is cut else "\n"
    return f"{closed}{between}[… {len(text) - len(cut):,} more characters omitted]"


def _outside_marker(text: str, at: int) -> int:
    """``at``, or where the ``[REDACTED:kind]`` marker ``at`` falls inside starts: half a marker reads as text."""
    split = next((m for m in MARKER_RE.finditer(text, max(0, at - 200)) if m.end() > at), None)
    return split.start() if split is not None and split.start() < at else at


def _fences_closed(cut: str) -> str:
    """``cut``, with a code fence it leaves open closed: else the rest of the summary reads as code (a cut
    paste of a function swallowed the sections after it, and a later quote's fence opened prose)."""
    return cut + "\n```" if sum(1 for line in cut.split("\n") if _FENCE.match(line)) % 2 else cut


def cut_opening(text: str, limit: int, pointer: str) -> str:
    """The opening of ``text`` in at most ``limit`` characters, then ``pointer`` (where the rest is), cut as a
    quote is: at the last line end when that keeps half of it, else at the last space, never inside a
    ``[REDACTED:kind]`` marker. A code fence the cut leaves open is closed, the pointer after it: else the
    rest of the summary reads as code, and the pointer as one more line of it."""
    cut = text[:_outside_marker(text, limit)]
    for where in ("\n", " "):
        at = cut.rfind(where)
        if at > limit // 2:
            cut = cut[:at]
            break
    closed = _fences_closed(cut)
    own_line = closed.endswith("```") or text.startswith(cut + "\n")
    return closed + ("\n" if own_line else " ") + pointer


def shared_limit(lengths: Sequence[int], floor: int, ceiling: int, total: int) -> int:
    """The one cut, between ``floor`` and ``ceiling`` characters, that quotes texts of ``lengths`` in at most
    ``total`` characters together: the largest that fits, ``floor`` when even that does not (each text
    keeps ``floor`` whatever the total). The same lengths always give the same cut."""
    def used(limit: int) -> int:
        return sum(min(n, limit) for n in lengths)
    if used(ceiling) <= total or ceiling <= floor:
        return max(ceiling, floor)
    low, high = floor, ceiling
    while low < high:  # the largest limit whose quotes fit in the total
        mid = (low + high + 1) // 2
        low, high = (mid, high) if used(mid) <= total else (low, mid - 1)
    return low


def error_quote(text: str, limit: int = 600, tail_lines: int = 6) -> str:
    """An error as it was written, in whole lines: all of it when short, else its first line (``Exit
    code 1``, the exception) and its last lines (where tracebacks and test runs say what failed)."""
    lines = [line.rstrip() for line in text.strip("\n").split("\n")] or [""]
    if len(lines) <= tail_lines + 1 and len(text) <= limit:
        return "\n".join(lines)
    head = whole_lines(lines[0], limit // 3).split("\n")[0]
    tail: list[str] = []
    used = len(head)
    for line in reversed(lines[1:]):
        if len(tail) >= tail_lines or (tail and used + len(line) > limit):
            break
        tail.insert(0, line if len(line) <= limit else f"[a line of {len(line):,} characters, not quoted]")
        used += len(line)
    skipped = len(lines) - 1 - len(tail)
    middle = [f"[… {_plural(skipped, 'line')} omitted]"] if skipped else []
    return "\n".join([head, *middle, *tail])


def remark(text: str, limit: int) -> str:
    """An assistant remark in one line: its prose shortened, each code block named (``[python code, 12
    lines]``) rather than squashed into the line and cut mid-statement."""
    def name(match: re.Match) -> str:
        lang = match.group(1).strip().split(" ")[0]
        n = len(match.group(2).rstrip("\n").split("\n"))
        return f" [{lang + ' ' if lang else ''}code, {_plural(n, 'line')}] "

    return squash(_FENCED_BLOCK.sub(name, text), limit)


def indented(text: str, prefix: str = "    ") -> str:
    return prefix + text.replace("\n", "\n" + prefix)


def path_of(tool_input: dict) -> str | None:
    for key in _PATH_KEYS:
        value = tool_input.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _target(tool_input: dict) -> tuple[str, tuple[str, ...]]:
    """What a call worked on: ``("path", (path,))``, ``("command", words)`` or ``("input", (its JSON,))``."""
    path = path_of(tool_input)
    if path:
        return "path", (path,)
    command = tool_input.get("command")
    if isinstance(command, str) and command.strip():
        return "command", tuple(command.split())
    return "input", (json_text(tool_input),)


def _contains(longer: tuple[str, ...], shorter: tuple[str, ...]) -> bool:
    """Whether ``shorter`` is a run of consecutive words of ``longer``. (Asked for thousands of pairs of
    commands: only the places where its first word is are compared.)"""
    n = len(shorter)
    if n == 0:
        return True
    if n > len(longer):
        return False
    first = shorter[0]
    return any(w == first and longer[i:i + n] == shorter for i, w in enumerate(longer[:len(longer) - n + 1]))


def _retries(failed: tuple[str, tuple[str, ...]], later: tuple[str, tuple[str, ...]]) -> bool:
    """Whether a later call (its :func:`_target`) retried what a failed call tried: the same file; or the
    same command, also run with something around it (``PYTHONPATH=. pytest -x`` retries ``pytest -x``);
    else the same input. A later success on another file or command did not fix this failure."""
    kind, words = failed
    other_kind, other_words = later
    if kind != other_kind:
        return False
    if kind == "command":
        return _contains(other_words, words) or _contains(words, other_words)
    return words == other_words


class LaterFixes:
    """Which later call fixed each failed call of a session: the first later one of the same tool,
    answered and not an error, on the same target (:func:`_retries`; not any later success).

    A session has thousands of calls: each call's target is worked out once, a failure is compared
    only with the later successes of its own tool, and a failure on a file or an input (which only the
    same file or input retries) looks its fix up among the successes of that tool on that target."""

    def __init__(self, calls: Sequence[Any]):
        self.calls = calls
        self.successes: dict[str, list[int]] = {}  # tool name -> indexes of its answered, successful calls
        for j, call in enumerate(calls):
            if call.answered and not call.is_error:
                self.successes.setdefault(call.name, []).append(j)
        self.targets: dict[int, tuple[str, tuple[str, ...]]] = {}
        self._by_target: dict[str, dict[tuple, list[int]]] = {}  # tool name -> target -> its successes

    def target(self, k: int) -> tuple[str, tuple[str, ...]]:
        if k not in self.targets:
            self.targets[k] = _target(self.calls[k].input)
        return self.targets[k]

    def fix_of(self, i: int) -> Any:
        """The call that fixed ``calls[i]``, or None."""
        name = self.calls[i].name
        later = self.successes.get(name, [])
        failed = self.target(i)
        if failed[0] != "command":  # retried only by the same target: an exact lookup
            same = self._successes_by_target(name).get(failed, [])
            k = bisect.bisect_right(same, i)
            return self.calls[same[k]] if k < len(same) else None
        return next((self.calls[j] for j in later[bisect.bisect_right(later, i):]
                     if _retries(failed, self.target(j))), None)

    def _successes_by_target(self, name: str) -> dict[tuple, list[int]]:
        found = self._by_target.get(name)
        if found is None:
            found = self._by_target[name] = {}
            for j in self.successes.get(name, []):
                found.setdefault(self.target(j), []).append(j)
        return found


def file_action(name: str, tool_input: dict) -> str:
    """What a tool call did to the file it names: edited, written, read, searched or used."""
    lowered = name.lower()
    command = tool_input.get("command")
    if isinstance(command, str) and ("editor" in lowered or "edit_tool" in lowered):
        # The text-editor tool family: one tool, the action in ``command``.
        return {"view": "read", "create": "written"}.get(command, "edited")
    if any(word in lowered for word in ("edit", "patch", "replace")):
        return "edited"
    if any(word in lowered for word in ("write", "create", "save")):
        return "written"
    if any(word in lowered for word in ("read", "view", "cat", "open")):
        return "read"
    if any(word in lowered for word in ("grep", "glob", "search", "find")) or lowered in ("ls", "list"):
        return "searched"
    return "used"


def change_snippet(tool_input: dict) -> str | None:
    """The new text an edit or write put in a file, if the call says."""
    for key in ("new_string", "new_str", "content", "file_text", "new_source"):
        value = tool_input.get(key)
        if isinstance(value, str) and value.strip():
            return value
    edits = tool_input.get("edits")
    if isinstance(edits, list) and edits and isinstance(edits[-1], dict):
        return change_snippet(edits[-1])
    return None


def describe_call(name: str, tool_input: dict, limit: int = 160) -> str:
    """A tool call in one short line: its name and the argument that identifies it."""
    for key in (*_PATH_KEYS, "command", "pattern", "query", "url", "description", "prompt"):
        value = tool_input.get(key)
        if isinstance(value, str) and value.strip():
            return f"{name} `{squash(value, limit)}`"
    if tool_input:
        return f"{name} {squash(json_text(tool_input), limit)}"
    return name


def split_sections(summary: str) -> dict[int, str]:
    """The numbered sections of an earlier summary (our format), keyed by number."""
    sections: dict[int, str] = {}
    matches = list(_SECTION_LINE.finditer(summary))
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(summary)
        number = int(match.group(1))
        body = summary[match.end():end].strip("\n")
        if 1 <= number <= 9 and number not in sections:
            sections[number] = body.strip()
    return sections
