"""Retention: how much of what a compaction replaced is still in the view after it.

A summary that loses the task is the most common complaint about compaction (one published
measurement over 43 compactions: 77% of decisions kept, but 9.8% of file paths and 0.2% of
commands). This module measures it for every compaction ctxkit makes. Probes are taken from the
history a compaction replaced, five kinds of them:

* ``user_prompts`` -- every prompt the user typed (system reminders, harness echoes and an earlier
  compaction's summary left out); a prompt counts as kept when its first :data:`PROBE_CHARS`
  characters are in the view, whitespace collapsed and case ignored (a summary that quotes the
  prompt keeps it; one that paraphrases it does not);
* ``file_paths`` -- every file path a tool call read or wrote (``file_path``, ``notebook_path``,
  a search's ``path``), kept when the path is in the view as written;
* ``commands`` -- every shell command run (the ``command`` of a Bash / Shell call), kept when its
  first :data:`PROBE_CHARS` characters are in the view, whitespace collapsed;
* ``errors`` -- every error line: the lines of a failed tool result (``is_error``) and of a shell
  command's output that name an error, an exception, a traceback or a failure (the first line of a
  failed result when none does), kept like commands;
* ``identifiers`` -- the identifiers and numbers in the user's prompts (``snake_case``,
  ``camelCase``, ``dotted.names``, ``` `code spans` ```, numbers of two digits or more), kept when
  the view has them as whole words, case counted.

"In the view" means anywhere in it: the summary, the kept tail, the re-injected files. Each kind's
fraction is ``kept / total``, rounded to 3 places, or ``None`` when the history had none of that
kind. :func:`measure` returns both, and the short line reports print.

The probes are the same whoever wrote the summary, so two summarizers (or two policies) are
compared on equal terms: ``ctxkit compact --report json`` gives each compaction's ``retention``,
and autocompact's ``min_retention`` option rejects a model summary that keeps too few user prompts
and file paths (see :mod:`ctxkit.stages.autocompact.stage`).
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from ..filenames import FILE_PATH_KEYS
from ..transcript.prompts import typed_words
from .prompt import CONTINUATION_PREFIX
from .render import content_blocks, tool_result_text

#: The kinds of probe, in the order reports list them.
KINDS = ("user_prompts", "file_paths", "commands", "errors", "identifiers")
#: What the short report line calls each kind.
SHORT_NAMES = {"user_prompts": "prompts", "file_paths": "paths", "commands": "commands", "errors": "errors",
               "identifiers": "identifiers"}
#: A long prompt, command or error line is probed by its opening: a summary may quote the start of a
#: 3,000-character prompt and still have kept it.
PROBE_CHARS = 200
#: Tools whose ``command`` input is a shell command.
SHELL_TOOLS = ("Bash", "Shell", "PowerShell")
#: Where a tool call names the file (or, for a search, the folder) it works on.
PATH_KEYS = (*FILE_PATH_KEYS, "path")
_ERROR_LINE = re.compile(r"(?:error|exception)s?\b|\b(?:traceback|fatal|failed|failure)\b|^\s*FAIL\b",
                         re.IGNORECASE)  # AssertionError, KeyError: the word may end a longer one
_MIN_ERROR_LINE = 8  # shorter lines ("Error:") say nothing a reader could look for
_CODE_SPAN = re.compile(r"`([^`\n]{2,80})`")
_WORD = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\.|::|->)[A-Za-z_$][\w$]*)*(?:\(\))?")
_NUMBER = re.compile(r"(?<![\w.])\d[\d_]*(?:[.,]\d+)*(?![\w])")
_CAMEL = re.compile(r"[a-z][A-Z]|[A-Z]{2,}[a-z]")


class Retention(NamedTuple):
    """The probes of one compaction's replaced history, and which of them the view still holds."""

    total: dict[str, int]
    kept: dict[str, int]

    @classmethod
    def from_counts(cls, counts: dict[str, dict[str, int]]) -> Retention:
        """Back from :meth:`counts` (what a report carries)."""
        return cls(total={k: int(counts[k]["total"]) for k in KINDS}, kept={k: int(counts[k]["kept"]) for k in KINDS})

    def fractions(self) -> dict[str, float | None]:
        """``{"user_prompts": 0.5, ..., "errors": None}``: kept / total per kind, None when total is 0."""
        return {k: (round(self.kept[k] / self.total[k], 3) if self.total[k] else None) for k in KINDS}

    def counts(self) -> dict[str, dict[str, int]]:
        """``{"user_prompts": {"kept": 1, "total": 2}, ...}``."""
        return {k: {"kept": self.kept[k], "total": self.total[k]} for k in KINDS}

    def short(self) -> str:
        """The report line's part: ``retained prompts 2/2, paths 3/5, commands 0/4`` (kinds with none left out)."""
        parts = [f"{SHORT_NAMES[k]} {self.kept[k]}/{self.total[k]}" for k in KINDS if self.total[k]]
        return "retained " + ", ".join(parts) if parts else "nothing to retain"

    def below(self, minimum: float, kinds: Iterable[str]) -> list[str]:
        """The kinds among ``kinds`` whose fraction is under ``minimum`` (a kind with no probes passes)."""
        return [k for k in kinds if self.total[k] and self.kept[k] / self.total[k] < minimum]


# -- probes -----------------------------------------------------------------------------------------
def _squash(text: str) -> str:
    return " ".join(text.split())


def _opening(text: str) -> str:
    return _squash(text)[:PROBE_CHARS]


def is_shell(name: str) -> bool:
    """Whether a tool of this name runs shell commands (``Bash``, ``Shell``, ``PowerShell``, ``bash_exec``...)."""
    lowered = name.lower()
    return name in SHELL_TOOLS or "bash" in lowered or "shell" in lowered


def identifiers(prompt: str) -> list[str]:
    """The identifiers and numbers of a prompt, in order, each once: code spans, names with ``_``,
    ``.``, ``::`` or a capital inside (``parse_args``, ``Order.total``, ``getUser``), names mixing
    letters and digits (``utf8``), and numbers of two digits or more."""
    found: list[str] = [m.group(1).strip() for m in _CODE_SPAN.finditer(prompt)]
    for m in _WORD.finditer(prompt):
        word = m.group(0)
        bare = word[:-2] if word.endswith("()") else word
        if len(bare) < 3 or max(len(part) for part in re.split(r"\.|::|->", bare)) < 2:  # "e.g"
            continue
        if ("_" in bare.strip("_") or "." in bare or "::" in bare or "->" in bare or _CAMEL.search(bare)
                or (any(c.isdigit() for c in bare) and any(c.isalpha() for c in bare))):
            found.append(bare)
    found += [m.group(0) for m in _NUMBER.finditer(prompt) if len(m.group(0)) >= 2]
    return list(dict.fromkeys(x for x in found if x))


def error_lines(text: str, failed: bool) -> list[str]:
    """The error lines of a tool result (each its opening, whitespace collapsed): lines naming an
    error, an exception, a traceback or a failure; the first line of a ``failed`` one when none does."""
    lines = [_opening(line) for line in text.splitlines() if line.strip()]
    hits = [line for line in lines if len(line) >= _MIN_ERROR_LINE and _ERROR_LINE.search(line)]
    if not hits and failed and lines:
        hits = [lines[0]]
    return hits


def probes(history: Sequence[dict], origins: dict[tuple[str, str], int] | None = None) -> dict[str, list[str]]:
    """The probes of ``history`` (Messages API messages), per kind, each once, in order. ``origins``, when
    given, is filled with the index of the message each ``(kind, probe)`` was first found in."""
    found: dict[str, list[str]] = {k: [] for k in KINDS}
    shell_calls: set[str] = set()
    at = [0]  # the message being read

    def add(kind: str, items: Iterable[str]) -> None:
        for item in items:
            found[kind].append(item)
            if origins is not None:
                origins.setdefault((kind, item), at[0])

    for at[0], message in enumerate(history):
        blocks = content_blocks(message.get("content"))
        if message.get("role") == "assistant":
            for block in blocks:
                if block.get("type") not in ("tool_use", "server_tool_use", "mcp_tool_use"):
                    continue
                tool_input = block.get("input") if isinstance(block.get("input"), dict) else {}
                for key in PATH_KEYS:
                    if isinstance(tool_input.get(key), str) and tool_input[key].strip():
                        add("file_paths", [tool_input[key].strip()])
                        break
                command = tool_input.get("command")
                if is_shell(str(block.get("name") or "")) and isinstance(command, str) and command.strip():
                    add("commands", [_opening(command)])
                    shell_calls.add(str(block.get("id")))
            continue
        if message.get("role") != "user":
            continue
        for block in blocks:
            if block.get("type") == "tool_result":
                failed = bool(block.get("is_error"))
                if failed or str(block.get("tool_use_id")) in shell_calls:
                    add("errors", error_lines(tool_result_text(block), failed))
        prompt = "\n\n".join(w for b in blocks if b.get("type") == "text"
                               for w in [typed_words(str(b.get("text") or ""))] if w)
        if prompt and not prompt.startswith(CONTINUATION_PREFIX):
            add("user_prompts", [_opening(prompt)])
            add("identifiers", identifiers(prompt))
    return {k: list(dict.fromkeys(v)) for k, v in found.items()}


def _probed_parts(history: Sequence[dict]) -> list[dict]:
    """``history`` with only the blocks :func:`probes` reads (the user's text, tool calls, the results of
    failed and shell calls): what is redacted before probing, not the file contents read meanwhile.
    The redactor already knows every secret the summarizer's copy held, so a value found in a block
    left out here is still redacted where a kept one quotes it."""
    shell_calls = {str(b.get("id")) for m in history if m.get("role") == "assistant"
                   for b in content_blocks(m.get("content")) if is_shell(str(b.get("name") or ""))}
    out = []
    for message in history:
        content = message.get("content")
        if message.get("role") not in ("user", "assistant"):
            continue  # (a system prompt: no probe is taken from it)
        if isinstance(content, str):
            if message.get("role") == "user":
                out.append(message)
            continue
        kept = [b for b in content_blocks(content)
                if (message.get("role") == "assistant" and b.get("type") in ("tool_use", "server_tool_use",
                                                                             "mcp_tool_use"))
                or (message.get("role") == "user" and (b.get("type") == "text" or (
                    b.get("type") == "tool_result"
                    and (b.get("is_error") or str(b.get("tool_use_id")) in shell_calls))))]
        out.append({**message, "content": kept})
    return out


# -- what the view holds ----------------------------------------------------------------------------
def _strings(value: Any) -> Iterable[str]:
    """Every string inside a tool call's input, as it is (not JSON-escaped: a path or command is found)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


def view_text(messages: Sequence[dict]) -> str:
    """All the text of ``messages``: text blocks, the strings of tool calls' inputs, tool results."""
    parts: list[str] = []
    for message in messages:
        for block in content_blocks(message.get("content")):
            kind = block.get("type")
            if kind == "text":
                parts.append(str(block.get("text") or ""))
            elif kind in ("tool_use", "server_tool_use", "mcp_tool_use"):
                parts.extend(_strings(block.get("input")))
            elif kind == "tool_result":
                parts.append(tool_result_text(block))
    return "\n".join(parts)


def measure(history: Sequence[dict], after: Sequence[dict], *, redactor: Any = None) -> Retention:
    """How much of ``history`` (the messages a compaction replaced) ``after`` (the view it left) keeps.

    ``redactor`` (:class:`ctxkit.summarize.redact.Redactor`): the run's, when the summary was written
    from the history with its secrets redacted. The probes are then taken from the history as the
    summarizer was allowed to see it: a prompt quoted with its secret redacted is kept, not lost (the
    summary could not have kept the secret, and must not).

    Linear in the size of both: each text is scanned a bounded number of times whatever the number of
    probes (a message list of 100,000 one-word prompts has 50,000 prompt probes and as many
    identifiers; one scan of the view per probe took minutes)."""
    if redactor is not None and redactor.enabled:
        history = redactor.messages(_probed_parts(history))
    found = probes(history)
    raw = view_text(after)
    squashed = _squash(raw)
    folded = [p.casefold() for p in found["user_prompts"]]
    kept = {
        "user_prompts": _count(folded, held_substrings(folded, squashed.casefold())),
        "file_paths": _count(found["file_paths"], held_substrings(found["file_paths"], raw)),
        "commands": _count(found["commands"], held_substrings(found["commands"], squashed)),
        "errors": _count(found["errors"], held_substrings(found["errors"], squashed)),
        "identifiers": _count(found["identifiers"], held_words(found["identifiers"], raw)),
    }
    return Retention(total={k: len(v) for k, v in found.items()}, kept=kept)


def _count(items: list[str], held: set[str]) -> int:
    return sum(1 for x in items if x in held)


# -- finding many probes in one text at once ------------------------------------------------------------
#: Up to this many characters compared (probes x text), each probe is looked for in the text on its
#: own (``in``: C speed, nothing to build); above it, the text is indexed once.
DIRECT_WORK = 50_000_000
#: The length of the pieces (anchors) a long probe is found by in the index.
ANCHOR_CHARS = 8
_RUN = re.compile(r"[\w$]+")  # what the identifier probes' word boundaries separate


def held_substrings(probes: Sequence[str], text: str, *, direct_work: int = DIRECT_WORK) -> set[str]:
    """The probes that occur in ``text`` (``probe in text`` for each), in time linear in the text and
    the probes: above ``direct_work`` the text is indexed once by the anchors the probes need (each
    probe's non-overlapping pieces of :data:`ANCHOR_CHARS` characters, the whole probe when shorter),
    and each probe is checked only where its rarest anchor occurs."""
    distinct = list(dict.fromkeys(probes))
    if len(distinct) * len(text) <= direct_work:
        return {p for p in distinct if p in text}
    pieces: dict[str, list[tuple[int, str]]] = {}  # probe -> (offset, anchor) of each of its pieces
    wanted: dict[int, set[str]] = {}  # anchor length -> the anchors of that length
    for p in distinct:
        k = min(ANCHOR_CHARS, len(p))
        pieces[p] = [(off, p[off:off + k]) for off in range(0, len(p) - k + 1, k)] if k else []
        wanted.setdefault(k, set()).update(a for _, a in pieces[p])
    where: dict[str, list[int]] = {}
    for k, anchors in wanted.items():
        if not k:
            continue
        for i in range(len(text) - k + 1):
            piece = text[i:i + k]
            if piece in anchors:
                where.setdefault(piece, []).append(i)
    held = set()
    for p in distinct:
        if not pieces[p]:
            held.add(p)  # the empty probe is in every text
            continue
        off, anchor = min(pieces[p], key=lambda x: len(where.get(x[1], ())))
        if any(text.startswith(p, q - off) for q in where.get(anchor, ()) if q >= off):
            held.add(p)
    return held


def held_words(probes: Sequence[str], text: str) -> set[str]:
    r"""The probes that occur in ``text`` as whole words: not preceded nor followed by a word character
    or ``$`` (``re.search(r"(?<![\w$])" + re.escape(probe) + r"(?![\w$])", text)`` for each), in time
    linear in the text and the probes. Each run of word characters in a probe is a whole run in the
    text where the probe occurs, so one pass indexes the text's runs and each probe is checked only
    where its rarest run starts. A probe with no word character is looked for on its own."""
    distinct = list(dict.fromkeys(probes))
    runs = {p: [(m.start(), m.group(0)) for m in _RUN.finditer(p)] for p in distinct}
    needed = {run for found in runs.values() for _, run in found}
    starts: dict[str, list[int]] = {}
    for m in _RUN.finditer(text):
        if m.group(0) in needed:
            starts.setdefault(m.group(0), []).append(m.start())
    held = set()
    for p in distinct:
        if not runs[p]:
            if _whole_at(text, p, _starts_of(text, p)):
                held.add(p)
        elif len(runs[p]) == 1 and runs[p][0][1] == p:
            if p in starts:
                held.add(p)
        else:
            off, run = min(runs[p], key=lambda x: len(starts.get(x[1], ())))
            if _whole_at(text, p, (q - off for q in starts.get(run, ()) if q >= off)):
                held.add(p)
    return held


def _starts_of(text: str, probe: str) -> Iterable[int]:
    at = text.find(probe)
    while at >= 0:
        yield at
        at = text.find(probe, at + 1)


def _whole_at(text: str, probe: str, candidates: Iterable[int]) -> bool:
    """Whether ``probe`` occurs as a whole word at one of ``candidates`` (positions in ``text``)."""
    end = len(probe)
    for at in candidates:
        if (text.startswith(probe, at) and not (at and _RUN.match(text, at - 1))
                and not _RUN.match(text, at + end)):
            return True
    return False
