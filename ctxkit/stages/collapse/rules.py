"""Rule-based collapsing: which tool calls are reads and searches (a shell command too, when
every segment of it only reads), and the one-line summaries of a run of them."""
from __future__ import annotations

import re
import shlex

import orjson

from ...filenames import FILE_PATH_KEYS
from ...store.offload import content_text
from ...transcript.collapse_view import SUMMARY_HEAD

SEARCH_COMMANDS = frozenset({
    "ls", "cat", "head", "tail", "less", "more", "grep", "egrep", "fgrep", "rg", "ag", "ack", "find", "fd", "tree",
    "wc", "stat", "file", "du", "pwd", "which", "whereis", "type", "realpath", "readlink", "basename", "dirname",
    "sort", "uniq", "cut", "nl", "diff", "cmp", "jq", "yq", "awk", "sed", "echo", "printf", "true", "locate",
})
GIT_READ_COMMANDS = frozenset({"status", "log", "diff", "show", "blame", "grep", "ls-files", "ls-tree", "rev-parse",
                               "branch", "describe", "shortlog", "cat-file"})
_MUTATING_FLAGS = {"sed": ("-i", "--in-place"), "find": ("-delete", "-exec", "-execdir", "-ok", "-fprint"),
                   "sort": ("-o", "--output"), "awk": ("-i",)}
_SEPARATORS = {"|", "||", "&&", ";", "&"}


def is_search_command(command: str) -> bool:
    """Whether a shell command only reads or searches: every command of it is a known reader, no output
    is redirected into a file, and no reader is given a flag that writes."""
    if not command.strip() or "`" in command or "$(" in command:
        return False
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|<>")
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:
        return False
    segment: list[str] = []
    for tok in [*tokens, ";"]:
        if tok in _SEPARATORS:
            if segment and not _is_search_segment(segment):
                return False
            segment = []
        else:
            segment.append(tok)
    return True


def _is_search_segment(words: list[str]) -> bool:
    for k, w in enumerate(words):
        if w in (">", ">>", "<>") or w.startswith(">"):
            target = words[k + 1] if k + 1 < len(words) else ""
            prev = words[k - 1] if k else ""
            if not (target == "/dev/null" or target.startswith("&") or (prev.isdigit() and prev == "2"
                                                                        and target == "/dev/null")):
                return False
    while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
        words = words[1:]  # VAR=value prefixes
    if not words:
        return True
    cmd = words[0].rsplit("/", 1)[-1]
    if cmd == "cd":
        return True
    if cmd == "git":
        sub = next((w for w in words[1:] if not w.startswith("-")), "")
        return sub in GIT_READ_COMMANDS
    if cmd not in SEARCH_COMMANDS:
        return False
    bad = _MUTATING_FLAGS.get(cmd, ())
    return not any(w == f or w.startswith(f) for w in words[1:] for f in bad)


# -- rule-based summaries ----------------------------------------------------------------------------
_CATEGORY = {"Read": "read", "NotebookRead": "read", "Grep": "search", "Glob": "search", "LS": "list",
             "WebSearch": "web", "WebFetch": "fetch"}
_PHRASES = {"search": ("Searched {n} pattern", "searched {n} pattern"), "read": ("Read {n} file", "read {n} file"),
            "list": ("Listed {n} director", "listed {n} director"), "web": ("Ran {n} web search", "ran {n} web search"),
            "fetch": ("Fetched {n} page", "fetched {n} page"), "command": ("Ran {n} command", "ran {n} command"),
            "other": ("Called {n} tool", "called {n} tool")}


def _category(name: str, args: dict) -> str:
    if name in _CATEGORY:
        return _CATEGORY[name]
    command = args.get("command")
    if isinstance(command, str):
        words = command.split()
        head = words[0].rsplit("/", 1)[-1] if words else ""
        if head in ("cat", "head", "tail", "less", "more", "nl"):
            return "read"
        if head in ("ls", "tree", "du"):
            return "list"
        if head in ("grep", "egrep", "rg", "ag", "ack", "find", "fd", "locate") or "grep" in command:
            return "search"
        return "command"
    return "other"


def _plural(phrase: str, n: int) -> str:
    text = phrase.format(n=n)
    if text.endswith("director"):
        return text + ("ies" if n != 1 else "y")
    if text.endswith("search"):
        return text + ("es" if n != 1 else "")
    return text + ("s" if n != 1 else "")


def _describe(name: str, args: dict, limit: int = 120) -> str:
    if any(k in args for k in FILE_PATH_KEYS):  # a call on one file: named by its path
        what = str(next((args[k] for k in FILE_PATH_KEYS if args.get(k)), args.get(FILE_PATH_KEYS[-1])))
    elif "pattern" in args:
        what = repr(str(args["pattern"])) + (f" in {args['path']}" if args.get("path") else "")
    elif "command" in args:
        what = str(args["command"])
    elif "query" in args:
        what = repr(str(args["query"]))
    elif "url" in args:
        what = str(args["url"])
    elif "path" in args:
        what = str(args["path"])
    else:
        what = orjson.dumps(args).decode() if args else ""
    text = f"{name} {what}".strip().replace("\n", " ")
    return text if len(text) <= limit else text[:limit - 1] + "…"


def run_headline(calls: list[dict]) -> str:
    """"Searched 2 patterns, read 3 files" — what a run did, counted by kind of call."""
    counts: dict[str, int] = {}
    for call in calls:
        kind = _category(call.get("name", ""), call.get("input") or {})
        counts[kind] = counts.get(kind, 0) + 1
    order = [k for k in _PHRASES if k in counts]
    parts = [_plural(_PHRASES[k][0 if i == 0 else 1], counts[k]) for i, k in enumerate(order)]
    return ", ".join(parts)


def rule_summary(calls: list[dict], results: dict[str, dict]) -> str:
    """The rule-based summary of a run: a headline and one line per call (with its result's size)."""
    lines = [f"{SUMMARY_HEAD}{run_headline(calls)}]"]
    for call in calls:
        res = results.get(call.get("id", ""), {})
        text = content_text(res.get("content"))
        n_lines = len(text.splitlines())
        size = (f"{n_lines} line" + ("s" if n_lines != 1 else "")) if text else "no output"
        flag = ", error" if res.get("is_error") else ""
        lines.append(f"- {_describe(call.get('name', ''), call.get('input') or {})} ({size}{flag})")
    return "\n".join(lines)
