"""The extractive summarizer: a summary without a model.

Over 400 lines: it fills all nine sections of the compaction prompt, each from its own facts (prompts,
commands, errors said once with their count, files, the next step), and spends a bounded room on them.

It is what ``summarizer: {use: auto}`` picks when no API key is set, so that ``ctxkit compact`` always
works offline and in CI; the sections are the compaction prompt's (:mod:`ctxkit.summarize.prompt`).
What it must never lose is the task: every prompt the user typed in the session (:class:`SessionFacts`
carries those from before earlier compactions, which the messages no longer hold), and never a harness
message taken for one (:mod:`ctxkit.transcript.prompts`). How it quotes is
:mod:`ctxkit.summarize.extractive_text`.
"""
from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import LLMError
from ..transcript.prompts import typed_words
from .extractive_text import (
    LANGUAGES,
    PRIMARY_REQUEST_CHARS,
    TYPED_PROMPT_CHARS,
    TYPED_PROMPTS_SHARE,
    TYPED_PROMPTS_TOTAL_CHARS,
    LaterFixes,
    change_snippet,
    cut_opening,
    describe_call,
    error_quote,
    file_action,
    indented,
    opening,
    path_of,
    remark,
    shared_limit,
    shortened,
    split_sections,
    squash,
    whole_lines,
    without_repeats,
)
from .prompt import CONTINUATION_PREFIX, section_heading
from .render import content_blocks, text_chars, tool_result_text
from .retention import error_lines, is_shell

_FENCE_LANG = re.compile(r"^```([A-Za-z0-9_+#-]+)", re.MULTILINE)
_TODO_LINE = re.compile(r"^\s*(?:[-*]\s*)?(?:\[[ xX]\]\s*)?(TODO\b.*)$", re.MULTILINE)

_ACTION_ORDER = ("edited", "written", "read", "searched", "used")


@dataclass(frozen=True)
class SessionFacts:
    """What the run knows beyond the messages it hands the summarizer.

    ``prompts``: every prompt the user typed in the session up to the kept tail, oldest first, from
    the transcript (:func:`ctxkit.transcript.prompts.session_prompts`), earlier compactions included;
    None when the transcript cannot say (plain message lists), and the prompts are then read off the
    messages. ``originals``: tool_use id -> the original text of a failed call's result or of a shell
    command's output that the view shows replaced (cleared by microcompact, persisted by the budget),
    from the store: the summary quotes their error lines. ``typed``: whether a person typed the
    prompts (False in a subagent's transcript, whose prompt the main agent wrote): only a typed prompt
    is quoted up to :data:`~ctxkit.summarize.extractive_text.TYPED_PROMPT_CHARS`.
    """

    prompts: tuple[str, ...] | None = None
    originals: Mapping[str, str] = field(default_factory=dict)
    typed: bool = True


@dataclass
class _Call:
    """One tool call and, once seen, its result."""

    name: str
    input: dict
    position: int  # index of the assistant message that made it
    result: str | None = None
    is_error: bool = False
    answered: bool = False


class ExtractiveSummarizer:
    """A summary assembled from the messages themselves: no model, no network, deterministic.

    It fills the same nine sections a model would, from facts it can read off
    the transcript: every prompt the user typed in the session verbatim (each up
    to at least 2,000 characters, then cut with a marker; harness messages and
    local commands are not prompts), the tools used and every shell command run
    (each once, quoted by its first 200 characters; the most recent ones when
    they do not all fit), the files touched (edited first, with the last change
    made, in whole lines), each distinct error once (the calls that met it again
    counted and named) with its telling lines and the later call that retried the
    same thing successfully, the error lines of commands that ran, the assistant's
    remarks shortened, the to-do list, and where the work stopped. A line repeated
    three times or more in a quote is quoted once and counted: the room goes to
    commands and errors, not to boilerplate.
    Each section except the user messages is capped at ``section_chars``.
    The same messages always give the same bytes.

    It has no model, so :meth:`complete` raises :class:`LLMError`.
    """

    name = "extractive"

    def __init__(self, *, section_chars: int = 6000, user_message_chars: int = 2000, max_files: int = 60,
                 max_errors: int = 25, max_remarks: int = 40, facts: SessionFacts | None = None):
        self.facts = facts or SessionFacts()
        self.section_chars = max(500, int(section_chars))
        # Section 6 is the one a summary must never starve: each message keeps at least 2,000 characters.
        self.user_message_chars = max(2000, int(user_message_chars))
        self.max_files = max_files
        self.max_errors = max_errors
        self.max_remarks = max_remarks
        # the typed prompts up to this many characters quoted whole, however far past the cut (0: none;
        # ctxkit.stages.autocompact.whole_prompts); then, of the last summary, whether it quoted one past the
        # cut it would otherwise have made, the prompts longer than that cut and the cut
        self.whole_prompt_chars = 0
        self.quoted_past_cut = False
        self.past_cut: list[str] = []
        self.prompt_limit = 0

    def complete(self, messages: list[dict], *, system: str | None, max_tokens: int) -> str:
        raise LLMError("the extractive summarizer has no model to complete a prompt; call summarize() instead")

    def summarize(self, messages: list[dict], *, instructions: str | None = None) -> str:
        extraction = _Extraction(self, messages, self.facts)
        summary = extraction.render(instructions)
        self.quoted_past_cut = extraction.quoted_past_cut
        self.past_cut = list(extraction.past_cut)
        self.prompt_limit = extraction.prompt_limit or 0
        return summary


class _Extraction:
    """One extractive summary in the making: the facts read off the messages, then the nine sections."""

    def __init__(self, settings: ExtractiveSummarizer, messages: Sequence[dict], facts: SessionFacts):
        self.settings = settings
        self.facts = facts
        self.messages = list(messages)
        self.prompt_limit: int | None = None  # the cut of every typed prompt's quote (verbatim)
        self.quoted_past_cut = False  # a typed prompt quoted whole that the cut would have shortened
        self.past_cut: dict[str, None] = {}  # the typed prompts longer than the cut, in the order quoted
        self.user: list[tuple[int, str]] = []  # (message index, what the user typed in it)
        self.remarks: list[tuple[int, str]] = []  # (message index, assistant text)
        self.calls: list[_Call] = []
        self.carried: dict[int, str] = {}  # sections of an earlier compaction's summary
        self.fence_langs: dict[str, int] = {}
        self._read()

    # -- reading the history --------------------------------------------------------------

    def _read(self) -> None:
        by_id: dict[str, _Call] = {}
        for index, message in enumerate(self.messages):
            blocks = content_blocks(message.get("content"))
            if message.get("role") == "assistant":
                for block in blocks:
                    kind = block.get("type")
                    if kind == "text" and str(block.get("text") or "").strip():
                        self.remarks.append((index, str(block["text"]).strip()))
                    elif kind in ("tool_use", "server_tool_use", "mcp_tool_use"):
                        tool_input = block.get("input") if isinstance(block.get("input"), dict) else {}
                        call = _Call(name=str(block.get("name") or "?"), input=tool_input, position=index)
                        self.calls.append(call)
                        if block.get("id"):
                            by_id[str(block["id"])] = call
                continue
            texts = []
            for block in blocks:
                kind = block.get("type")
                if kind == "tool_result":
                    call = by_id.get(str(block.get("tool_use_id")))
                    if call is not None:
                        call.answered = True
                        call.is_error = bool(block.get("is_error"))
                        # the words the call failed with, from the store when the view shows them cleared
                        call.result = self.facts.originals.get(str(block.get("tool_use_id"))) or \
                            tool_result_text(block)
                elif kind == "text":
                    text = str(block.get("text") or "")
                    if text.lstrip().startswith(CONTINUATION_PREFIX):
                        # An earlier compaction's summary: carry its sections forward.
                        for number, body in split_sections(text).items():
                            self.carried.setdefault(number, body)
                        continue
                    words = typed_words(text)  # None for harness text (ctxkit.transcript.prompts)
                    if words:
                        texts.append(words)
            if texts:
                self.user.append((index, "\n\n".join(texts)))
        for _, text in self.remarks:
            for lang in _FENCE_LANG.findall(text):
                self.fence_langs[lang.lower()] = self.fence_langs.get(lang.lower(), 0) + 1

    @property
    def requests(self) -> list[str]:
        """The user's prompts, oldest first: the whole session's when the run knows them, else the
        ones in the summarized messages."""
        if self.facts.prompts is not None:
            return list(self.facts.prompts)
        return [text for _, text in self.user]

    def verbatim(self, text: str) -> str:
        """A prompt's quote: cut at the one limit every prompt shares, or whole (up to ``whole_prompt_chars``)."""
        floor = self.settings.user_message_chars
        if self.facts.prompts is None or not self.facts.typed:
            return shortened(text, floor)
        if self.prompt_limit is None:  # one cut for every prompt, worked out once
            share = int(TYPED_PROMPTS_SHARE * text_chars(self.messages))
            ceiling, total = (share, share) if share > TYPED_PROMPTS_TOTAL_CHARS else \
                (TYPED_PROMPT_CHARS, TYPED_PROMPTS_TOTAL_CHARS)
            self.prompt_limit = shared_limit([len(p) for p in self.requests], floor, ceiling, total)
        if len(text) > self.prompt_limit:
            self.past_cut[text] = None
            if len(text) <= self.settings.whole_prompt_chars:
                self.quoted_past_cut = True
                return text
        return shortened(text, self.prompt_limit)

    def opened(self, text: str) -> str:
        """A request as section 1 quotes it: as section 6 does when that is short, else its opening and
        where the rest is (:data:`PRIMARY_REQUEST_CHARS`)."""
        quote = self.verbatim(text)
        if len(quote) <= PRIMARY_REQUEST_CHARS:
            return quote
        return cut_opening(text, PRIMARY_REQUEST_CHARS, "[… continued in 6. All user messages]")

    # -- the sections ---------------------------------------------------------------------

    def primary_request(self) -> str:
        parts = []
        if self.carried.get(1):
            parts.append(f"From the earlier summary:\n{self.carried[1]}")
        requests = self.requests
        if requests:
            whole_session = self.facts.prompts is not None
            label = "First request since then" if parts and not whole_session else "The user's first request"
            parts.append(f"{label}:\n{self.opened(requests[0])}")
            if len(requests) > 1:
                parts.append(f"Most recent request:\n{self.opened(requests[-1])}")
        return "\n\n".join(parts) or "No user request was found in the summarized messages."

    def concepts(self) -> str:
        lines = []
        tools: dict[str, int] = {}
        for call in self.calls:
            tools[call.name] = tools.get(call.name, 0) + 1
        if tools:
            ranked = sorted(tools.items(), key=lambda item: (-item[1], item[0]))
            lines.append("- Tools used: " + ", ".join(f"{name} ({count})" for name, count in ranked))
        extensions: dict[str, int] = {}
        seen_paths: set[str] = set()
        for call in self.calls:
            path = path_of(call.input)
            if not path or path in seen_paths:
                continue
            seen_paths.add(path)
            ext = os.path.splitext(path)[1].lower()
            if ext:
                extensions[ext] = extensions.get(ext, 0) + 1
        if extensions:
            ranked = sorted(extensions.items(), key=lambda item: (-item[1], item[0]))
            described = []
            for ext, count in ranked:
                language = LANGUAGES.get(ext)
                files = f"{count} file" + ("s" if count != 1 else "")
                described.append(f"{ext} ({language}, {files})" if language else f"{ext} ({files})")
            lines.append("- File types: " + ", ".join(described))
        if self.fence_langs:
            ranked = sorted(self.fence_langs.items(), key=lambda item: (-item[1], item[0]))
            lines.append("- Code blocks in replies: " + ", ".join(lang for lang, _ in ranked))
        lines.extend(self.commands(self.settings.section_chars - sum(len(x) + 1 for x in lines)))
        return "\n".join(lines) or "None recorded."

    def commands(self, room: int) -> list[str]:
        """The shell commands run, each once, quoted by their opening; when they do not all fit in
        ``room`` characters, the most recent ones (what the work was doing last), saying how many
        earlier ones were left out."""
        seen = list(dict.fromkeys(opening(str(call.input["command"])) for call in self.calls
                                  if is_shell(call.name) and isinstance(call.input.get("command"), str)
                                  and call.input["command"].strip()))
        if not seen:
            return []
        kept: list[str] = []
        used = 80  # the heading line and the note on what was left out
        for command in reversed(seen):
            if kept and used + len(command) + 7 > room:
                break
            kept.insert(0, f"  - `{command}`")
            used += len(kept[0]) + 1
        left = len(seen) - len(kept)
        return [f"- Shell commands run ({len(seen)}, each once, oldest first):",
                *([f"  - … {left} earlier command(s) not listed"] if left else []), *kept]

    def files(self) -> str:
        files: dict[str, dict[str, Any]] = {}
        for call in self.calls:
            path = path_of(call.input)
            if not path:
                continue
            entry = files.setdefault(path, {"rank": len(_ACTION_ORDER), "tools": {}, "change": None})
            action = file_action(call.name, call.input)
            entry["rank"] = min(entry["rank"], _ACTION_ORDER.index(action))
            entry["tools"][call.name] = entry["tools"].get(call.name, 0) + 1
            if action in ("edited", "written"):
                snippet = change_snippet(call.input)
                if snippet:
                    entry["change"] = (call.name, snippet)
        if not files:
            return "No files were read or changed."
        # Edited files first, then written, read, searched; first-seen order within each (sort is stable).
        ordered = sorted(files.items(), key=lambda item: item[1]["rank"])
        limit = self.settings.max_files
        lines = []
        for path, entry in ordered[:limit]:
            tools = ", ".join(f"{name} ×{count}" for name, count in entry["tools"].items())
            lines.append(f"- {path} ({_ACTION_ORDER[entry['rank']]}; {tools})")
            if entry["change"]:
                name, snippet = entry["change"]
                lines.append(f"  last change ({name}):\n"
                             f"{indented(whole_lines(without_repeats(snippet.rstrip()), 400))}")
        if len(ordered) > limit:
            lines.append(f"- … and {len(ordered) - limit} more files")
        return "\n".join(lines)

    def errors(self) -> str:
        """Each distinct failure once (the same error again is counted, with the calls that met it),
        then the error lines of shell commands that did not fail (a test run's ``FAILED`` lines)."""
        lines = []
        failures = [i for i, call in enumerate(self.calls) if call.is_error]
        same: dict[str, list[int]] = {}  # the error as quoted -> the failed calls that met it
        for i in failures:
            same.setdefault(error_quote(without_repeats(self.calls[i].result or "(no error text)")), []).append(i)
        limit = self.settings.max_errors
        fixes = LaterFixes(self.calls)
        for quote, calls in list(same.items())[:limit]:
            i = calls[-1]  # the latest call that met it, and what fixed it after
            call = self.calls[i]
            times = f" ({len(calls)} times)" if len(calls) > 1 else ""
            if "\n" in quote:
                lines.append(f"- {describe_call(call.name, call.input)} failed{times}:\n{indented(quote)}")
            else:
                lines.append(f"- {describe_call(call.name, call.input)} failed{times}: {quote}")
            quoted = " ".join(quote.split())
            missed = [x for x in error_lines(call.result or "", True) if x not in quoted][:8]
            lines.extend(f"    {x}" for x in missed)  # its telling lines the quote's head and tail leave out
            others = list(dict.fromkeys(describe_call(self.calls[j].name, self.calls[j].input) for j in calls[:-1]))
            others = [x for x in others if x != describe_call(call.name, call.input)]
            if others:
                lines.append("  the same error from: " + "; ".join(others[:5])
                             + (f"; and {len(others) - 5} more" if len(others) > 5 else ""))
            fix = fixes.fix_of(i)
            if fix is not None:
                lines.append(f"  then succeeded: {describe_call(fix.name, fix.input)}")
        if len(same) > limit:
            lines.append(f"- … and {len(same) - limit} more distinct errors")
        lines.extend(self.output_errors())
        return "\n".join(lines) or "No tool errors were recorded."

    def output_errors(self) -> list[str]:
        """The error lines in the output of shell commands that did not fail, each once, newest last
        (at most ``max_errors``)."""
        found: dict[str, str] = {}  # error line -> the command that printed it
        for call in self.calls:
            if call.is_error or not call.result or not is_shell(call.name):
                continue
            for line in error_lines(call.result, False):
                found.setdefault(line, describe_call(call.name, call.input, 80))
        if not found:
            return []
        shown = list(found.items())[-self.settings.max_errors:]
        lines = ["- Error lines in the output of commands that ran:"]
        lines += [f"  - {line}  (from {where})" for line, where in shown]
        if len(found) > len(shown):
            lines.insert(1, f"  - … {len(found) - len(shown)} earlier error line(s) not listed")
        return lines

    def problem_solving(self) -> str:
        remarks = self.remarks[:-1]  # the last one is the current work (section 8)
        if not remarks:
            return "No earlier assistant remarks."
        lines = [f"- {remark(text, 300)}" for _, text in remarks]
        limit = self.settings.max_remarks
        if len(lines) > limit:
            head = limit // 4
            tail = limit - head
            omitted = len(lines) - head - tail
            lines = [*lines[:head], f"- … {omitted} more remarks …", *lines[-tail:]]
        return "\n".join(lines)

    def user_messages(self) -> str:
        parts = []
        if self.carried.get(6) and self.facts.prompts is None:
            # without the transcript's own record, the earlier summary's list stands for what came before
            parts.append(f"(Before the earlier summary:)\n{self.carried[6]}")
        parts.extend(f"- {self.verbatim(text)}" for text in self.requests)
        return "\n".join(parts) or "No user messages."

    def pending(self) -> list[tuple[str, str]]:
        """The open tasks, as ``(status, text)``: from the last to-do list if any, else TODO lines."""
        todos: list[dict[str, str]] | None = None
        for call in self.calls:
            lowered = call.name.lower()
            items = call.input.get("todos")
            if isinstance(items, list):  # TodoWrite: each call replaces the whole list
                todos = [
                    {"id": str(item.get("id", n + 1)), "status": str(item.get("status", "pending")),
                     "text": str(item.get("content") or item.get("subject") or item.get("activeForm") or "")}
                    for n, item in enumerate(items) if isinstance(item, dict)
                ]
            elif "task" in lowered and "create" in lowered:  # TaskCreate: one task per call
                todos = todos or []
                text = call.input.get("subject") or call.input.get("title") or call.input.get("description") or ""
                todos.append({"id": str(len(todos) + 1), "status": "pending", "text": str(text)})
            elif "task" in lowered and "update" in lowered and todos:
                target = str(call.input.get("taskId") or call.input.get("task_id") or call.input.get("id") or "")
                for todo in todos:
                    if todo["id"] == target and call.input.get("status"):
                        todo["status"] = str(call.input["status"])
        if todos is not None:
            return [(t["status"], t["text"]) for t in todos
                    if t["status"] not in ("completed", "deleted") and t["text"]]
        found: list[tuple[str, str]] = []
        for text in [t for _, t in self.user] + [t for _, t in self.remarks]:
            for line in _TODO_LINE.findall(text):
                item = ("todo", squash(line, 300))
                if item not in found:
                    found.append(item)
        return found[-20:]

    def current_work(self) -> str:
        parts = []
        if self.remarks:
            parts.append(f"Last assistant message:\n{whole_lines(self.remarks[-1][1], 1500)}")
        if self.calls:
            last = self.calls[-1].position
            recent = [call for call in self.calls if call.position == last][-8:]
            lines = []
            for call in recent:
                if not call.answered:
                    state = "no result yet"
                elif call.is_error:
                    state = f"error: {squash(call.result or '', 200)}"
                else:
                    state = "ok"
                lines.append(f"- {describe_call(call.name, call.input)} ({state})")
            parts.append("Last tool calls:\n" + "\n".join(lines))
        return "\n\n".join(parts) or "Nothing in progress was recorded."

    def next_step(self, pending: list[tuple[str, str]]) -> str:
        requests = self.requests
        if not requests:
            return "No user request to continue."
        latest = squash(requests[-1], 500)
        # unanswered: the latest request ends the last typed message here (a prompt merged after a notice
        # ends it), and no assistant message follows it
        index = self.user[-1][0] if self.user and self.user[-1][1].endswith(requests[-1]) else None
        if index is not None and not any(m.get("role") == "assistant" for m in self.messages[index + 1:]):
            return f'Respond to the user\'s most recent message, which has not been answered yet: "{latest}"'
        active = next((task for status, task in pending if status == "in_progress"), None)
        if active is None and pending:
            active = pending[0][1]
        if active:
            return f'Continue with "{squash(active, 300)}", in line with the user\'s most recent request: "{latest}"'
        return f'Continue the current work, in line with the user\'s most recent request: "{latest}"'

    def render(self, instructions: str | None) -> str:
        pending = self.pending()
        cap = self.settings.section_chars
        open_tasks = "\n".join(f"- [{status}] {task}" for status, task in pending) or "None recorded."
        bodies = {
            1: whole_lines(self.primary_request(), cap),
            2: whole_lines(self.concepts(), cap),
            3: whole_lines(self.files(), cap),
            4: whole_lines(self.errors(), cap),
            5: whole_lines(self.problem_solving(), cap),
            6: self.user_messages(),  # never capped as a whole
            7: whole_lines(open_tasks, cap),
            8: whole_lines(self.current_work(), cap),
            9: whole_lines(self.next_step(pending), cap),
        }
        header = "[Extractive summary: assembled by ctxkit from the transcript without a model; quotes are verbatim.]"
        if instructions and instructions.strip():
            header += f"\n[Focus requested: {squash(instructions, 500)}]"
        sections = [f"{section_heading(n)}\n{bodies[n]}" for n in range(1, 10)]
        return "\n\n".join([header, *sections])
