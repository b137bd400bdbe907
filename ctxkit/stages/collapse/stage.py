r"""collapse: fold finished runs of read/search tool calls into one short summary each.

Agents read a lot. A dozen `Read`, `Grep` and `Glob` calls whose output mattered for a moment stay
in the context for the rest of the session. `collapse` folds each finished *run* of such calls
into one short summary when the context gets full, without touching the conversation text around
them. The read-time projection lives in `ctxkit.transcript.collapse_view`.

A **run** is a sequence of consecutive API rounds in which the model only called collapsible
tools:

* the policy's `tools.collapsible` (default Read, Grep, Glob, LS, WebSearch, WebFetch,
  NotebookRead); add MCP tools there by name or `fnmatch` pattern (`mcp__*__search`);
* shell calls (`shell_tools`, default Bash and Shell) whose command only reads or searches: `ls`,
  `cat`, `grep`, `rg`, `find`, `git log`, pipelines of them, `cd` into a directory first. A
  redirection into a file, `sed -i`, `find -delete`, command substitution or anything else makes
  it a normal call.

A run ends at assistant text, at any other tool (Edit, Write, a test run...), at a new user
message or a harness message. A run still open at the end of the view (the model is still
reading) is left alone.

## When

Two thresholds, as shares of the effective window (the context window minus the summary reserve;
180,000 tokens for a 200,000 window):

* at `commit_ratio` (0.90, 162,000 tokens) every finished run is **committed** with a rule-based
  summary, immediately and without a model: `Searched 2 patterns, read 3 files` and one line per
  call;
* at `llm_ratio` (0.95, 171,000) the policy's summarizer (the one autocompact uses) writes the
  summaries instead, also of runs committed earlier. With `summarizer.use: extractive` (no model)
  or when the model fails, the rule-based summaries stand and the report says so.

A run whose summary would not be shorter stays as it is. `--force` commits regardless of the
thresholds.

## Collapse or autocompact

Collapse is off in `default`. Its thresholds are close to autocompact's: both running proactively
would fight, collapse freeing space and autocompact then summarizing away what collapse kept. A
policy that enables both must say which compacts ahead of time: `proactive: collapse` (autocompact
then acts only when the view is over the blocking limit, or with `--force`; this is
`claude-code-full`) or `proactive: autocompact` (collapse stays passive: committed runs are still
shown collapsed, nothing new is committed). Without it the policy is rejected:

```
$ ctxkit compact session.jsonl --set stages.collapse.enabled=true -o out.jsonl
--set:1:1: error: stages 'collapse' and 'autocompact' are both enabled; set 'proactive' to collapse or autocompact to choose which one compacts proactively (reactive compaction stays available either way)
ctxkit: 1 problem in the policy
```

## Before and after

The `explore-edit` session of the test corpus (not shipped with ctxkit), with
`ctxkit compact explore-edit.jsonl --stage collapse --force -o collapsed.jsonl`; the report says
`collapse: applied: collapsed 1 run(s) of read/search calls (rule summaries); retained paths 2/2
[3,148 -> 3,020 tokens]` (what the view still names of the folded calls' paths: docs/retention.md)
(before, the usage the session's last response reported; after, the estimate of the collapsed view
plus what that usage counted besides the view, the calibrated overhead: one basis, so the count
falls by what the collapse took out; see docs/tokens.md):

```
before
assistant  "Let me look around." | tool_use Bash(ls -la /tmp/cc-explore-edit-7gpmq8dg/app)
user       tool_result "total 16\ndrwxr-xr-x 2 root root 4096 Nov 29 23:06 .\n..."
assistant  tool_use Read(/tmp/cc-explore-edit-7gpmq8dg/app/models.py)
user       tool_result "1\tclass User:\n2\t    def __init__(self, name):\n..."
assistant  tool_use Grep("def ")
user       tool_result "app/models.py:2:    def __init__(self, name):\n..."
assistant  tool_use Edit(/tmp/cc-explore-edit-7gpmq8dg/app/models.py)

after
assistant  "Let me look around." | tool_use Bash(ls -la /tmp/cc-explore-edit-7gpmq8dg/app)
user       tool_result "total 16\ndrwxr-xr-x 2 root root 4096 Nov 29 23:06 .\n..."
           | "[Earlier tool calls, collapsed: Searched 1 pattern, read 1 file]
              - Read /tmp/cc-explore-edit-7gpmq8dg/app/models.py (9 lines)
              - Grep 'def ' in /tmp/cc-explore-edit-7gpmq8dg (4 lines)"
assistant  tool_use Edit(/tmp/cc-explore-edit-7gpmq8dg/app/models.py)
```

The `ls` is not part of the run (assistant text ends a run); the summary joins the user message
just before the run, so every call left in the view still has its result right after it. With a
model, the lines after the headline are the model's summary instead. On `multi-prompt` (44,460
tokens, 32 calls) the thresholds decide: nothing happens in a 200,000 window (`below the commit
threshold 162,000`); with `--context-window 67000` (commit at 42,300) 12 runs are committed (the
estimate of the view goes from 54,834 to 53,054 tokens); with `--context-window 60000` (summarizer
at 38,000) and no model the report adds `the summarizer has no model (use: extractive); rule-based
summaries stand`.

## Nothing is rewritten (Claude Code), nothing is lost (plain formats)

On **Claude Code transcripts** the entries stay as they are. A record lists the committed runs:

```
{"type": "ctxkit-record", "record": "collapse", "timestamp": "...",
 "runs": [{"key": "toolu_0a0a...", "toolUseIds": ["toolu_0a0a...", "toolu_1961..."],
           "summary": "[Earlier tool calls, collapsed: Searched 1 pattern, read 1 file]\n- Read ...", "by": "rule"}]}
```

and every read of the transcript shows those runs collapsed (a later record for the same run
replaces its summary; records before a compaction boundary no longer count). `ctxkit expand`
drops the records and every call is back. If a run no longer matches the conversation (for
instance part of it was snipped), it is shown in full and `ctxkit view` notes it.

**Anthropic / OpenAI message lists** have nowhere to keep records: the run's lines are replaced by
one user line holding the summary, after being saved to the store. The summary's last line points
at the saved file (`Original calls and results: /work/.ctxkit/blobs/3c/3c91...e2.json`), so the
model can read it back and `ctxkit expand` puts the lines back.

Thinking blocks of the assistant turns after a collapsed run are dropped (their signatures covered
the collapsed bytes) and archived in the store.

## When it does nothing

`below the commit threshold` (with the numbers), `no finished run of read/search calls to
collapse`, or `skipped (proactive: autocompact ...)`. A summarizer that is unavailable or fails
never stops the stage: the rule-based summaries are committed and the report carries a warning
(`the summarizer failed for 12 run(s); their rule-based summaries stand`).
"""
# Over 400 lines: about 120 are the docstring above (the stage's user documentation); the rule-based
# part is in rules.py.
from __future__ import annotations

import fnmatch
import re
from typing import Any

import orjson

from ...confined import Refused
from ...errors import LLMError
from ...summarize import redact, retention, summarizer_for_run
from ...summarize.render import render_transcript
from ...tokens import budget_for
from ...transcript.claude_code import chain as claude_code_chain
from ...transcript.claude_code import entries as claude_code_entries
from ...transcript.claude_code import projection as claude_code
from ...transcript.claude_code import records as claude_code_records
from ...transcript.collapse_view import RECORD_KIND, SUMMARY_HEAD, committed_runs, round_calls, run_span
from ...transcript.edits import archive_entries, plain_message, replace_plain_range, strip_thinking_after
from ...transcript.model import Transcript
from ...transcript.shapes import problem
from ...transcript.view import View, ViewMessage
from ..base import Context, Stage, StageResult
from .rules import (
    is_search_command,
    rule_summary,
)

ARCHIVE_LINE = "Original calls and results: "
_ARCHIVE_RE = re.compile(r"^" + re.escape(ARCHIVE_LINE) + r"(\S+)$", re.MULTILINE)

# Shell commands that only read or search (a pipeline of them is a search).
LLM_SYSTEM = ("You condense an AI coding agent's earlier read/search tool calls and their results into a short note "
              "the agent will read instead of them. Keep what it may still need: file paths, names, line numbers, "
              "facts found, what was not found. At most 120 words, no preamble.")


class Collapse(Stage):
    """The collapse stage; its documentation is the module docstring (``ctxkit stages collapse``)."""

    name = "collapse"

    @staticmethod
    def undo(t: Transcript, store: Any, left: list) -> Transcript:
        """For ``ctxkit expand``: uncollapse."""
        return uncollapse(t, store, left)
    summary = "Fold finished runs of read/search tool calls into short summaries (rule-based, then LLM)."
    options_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "commit_ratio": {"type": "number", "exclusiveMinimum": 0, "maximum": 1, "default": 0.90,
                             "description": "Share of the effective window at which staged runs are committed."},
            "llm_ratio": {"type": "number", "exclusiveMinimum": 0, "maximum": 1, "default": 0.95,
                          "description": "Share of the effective window at which summaries are written by the "
                                         "summarizer."},
            "llm": {"type": "boolean", "default": True,
                    "description": "Use the summarizer above llm_ratio (false: rule-based summaries only)."},
            "shell_tools": {"type": "array", "items": {"type": "string"}, "uniqueItems": True,
                            "default": ["Bash", "Shell"],
                            "description": "Shell tools whose read/search-only commands are collapsible."},
            "min_calls": {"type": "integer", "minimum": 1, "default": 1,
                          "description": "Runs with fewer tool calls are left alone."},
        },
    }

    # -- staging ----------------------------------------------------------------------------------
    def collapsible(self, call: dict, ctx: Context) -> bool:
        name = call.get("name", "")
        if name in ctx.policy.tools.state_changing:
            return False
        if name in self.options["shell_tools"]:
            command = (call.get("input") or {}).get("command")
            return isinstance(command, str) and is_search_command(command)
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in ctx.policy.tools.collapsible)

    def staged_runs(self, view: View, ctx: Context) -> list[tuple[int, int]]:
        """The finished runs of collapsible calls in the view, as ``[start, end)`` message ranges."""
        msgs = view.messages
        runs: list[tuple[int, int]] = []
        i = 0
        while i + 1 < len(msgs):
            start = i
            while i + 1 < len(msgs) and self._collapsible_round(msgs[i], msgs[i + 1], ctx):
                i += 2
            if i > start:
                n_calls = sum(1 for m in msgs[start:i] for _ in m.tool_uses())
                finished = any(m.role != "system" for m in msgs[i:])
                if finished and n_calls >= self.options["min_calls"]:
                    runs.append((start, i))
            else:
                i += 1
        return runs

    def _collapsible_round(self, assistant: ViewMessage, results: ViewMessage, ctx: Context) -> bool:
        if round_calls(assistant, results) is None:
            return False
        if any(r is None for r in results.refs):  # a synthesized result is not something to summarize
            return False
        return all(self.collapsible(call, ctx) for call in assistant.tool_uses())

    # -- running ----------------------------------------------------------------------------------
    def run(self, t: Transcript, ctx: Context) -> StageResult:
        if ctx.policy.proactive == "autocompact":
            return StageResult(t, self.report(action="skipped", reason="proactive: autocompact (collapse stays "
                                              "passive; committed runs are still shown collapsed)"))
        view = t.view()
        tokens = ctx.view_tokens(t).total
        window = budget_for(ctx.policy, ctx.inputs.context_window).effective_window
        commit_at = int(window * self.options["commit_ratio"])
        llm_at = int(window * self.options["llm_ratio"])
        details: dict[str, Any] = {"tokens": tokens, "commit_at": commit_at, "llm_at": llm_at}
        if tokens < commit_at and not ctx.inputs.force:
            details["staged"] = len(self.staged_runs(view, ctx))
            return StageResult(t, self.report(action="nothing-to-do", reason=f"{tokens:,} tokens, below the commit "
                                              f"threshold {commit_at:,}", details=details))
        runs = self._commits(view, self.staged_runs(view, ctx), ctx, plain=t.format != "claude-code")
        upgrades: list[dict] = []
        note = None
        if self.options["llm"] and tokens >= llm_at:
            upgrades = self._rule_summaries(t, view, ctx)
            note = self._write_llm_summaries([*runs, *upgrades], ctx)
            upgrades = [u for u in upgrades if u["by"] == "llm"]
            if note:
                details["llm"] = note
        if not runs and not upgrades:
            return StageResult(t, self.report(action="nothing-to-do", reason="no finished run of read/search "
                                              "calls to collapse", details=details))
        if t.format == "claude-code":
            public = [{k: r[k] for k in ("key", "toolUseIds", "summary", "by")} for r in [*runs, *upgrades]]
            new = t.with_edits(append=[claude_code_entries.record_entry(t, RECORD_KIND, ctx.timestamp(), runs=public)])
        else:
            new = self._commit_plain(t, view, runs, upgrades, ctx, details)
        first = min(r["start"] for r in [*runs, *upgrades])
        new, thinking = strip_thinking_after(new, first)
        new, archive = archive_entries(new, ctx.store, thinking, ctx.timestamp(), "collapse: thinking after a "
                                       "collapsed run")
        if archive:
            details["thinking_archive"] = archive
        details.update(committed=[{"key": r["key"], "calls": len(r["toolUseIds"]), "by": r["by"]} for r in runs],
                       upgraded=[u["key"] for u in upgrades], threshold_crossed=True)
        by = sorted({r["by"] for r in runs})
        reason = f"collapsed {len(runs)} run(s) of read/search calls" + (f" ({'/'.join(by)} summaries)" if by else "")
        if upgrades:
            reason += f", rewrote {len(upgrades)} summary(ies) with the summarizer"
        # what of the folded calls the view still names (ctxkit.summarize.retention): the paths and commands
        kept = retention.measure([m for r in [*runs, *upgrades] for m in r["messages"]], new.view().api_messages(),
                                 redactor=redact.redactor_for(ctx))
        details.update(retention=kept.fractions(), retention_counts=kept.counts())
        reason += f"; {kept.short()}"
        if note:
            reason += f"; {note}"
        return StageResult(new, self.report(action="applied", reason=reason, details=details,
                                            warnings=[note] if note and "failed" in note else []))

    def _commits(self, view: View, spans: list[tuple[int, int]], ctx: Context, *, plain: bool = False) -> list[dict]:
        """A commit for each staged span whose rule-based summary is shorter than the span (in a plain message
        list the summary line also names the archive: a path in the store, counted too)."""
        out = []
        pointer = ctx.tokens.count_text(f"\n{ARCHIVE_LINE}{ctx.store.root.resolve()}/blobs/00/{'0' * 64}.json") \
            if plain else 0
        for start, end in spans:
            span = view.messages[start:end]
            calls = [b for m in span for b in m.tool_uses()]
            results = {b.get("tool_use_id", ""): b for m in span for b in m.tool_results()}
            text = redact.redactor_for(ctx).text(rule_summary(calls, results))  # quotes commands and URLs
            messages = [m.api() for m in span]
            tokens = ctx.tokens.count_messages(messages)
            if ctx.tokens.count_text(text) + _SUMMARY_OVERHEAD + pointer >= tokens:
                continue
            out.append({"key": calls[0]["id"], "toolUseIds": [c["id"] for c in calls], "summary": text,
                        "by": "rule", "start": start, "end": end, "tokens": tokens, "messages": messages})
        return out

    def _rule_summaries(self, t: Transcript, view: View, ctx: Context) -> list[dict]:
        """Committed runs whose summary is still the rule-based one, with their original messages."""
        out = []
        if t.format == "claude-code":
            raw = _uncollapsed_view(t)
            for run in committed_runs([r for _, r in claude_code_records.records(t, RECORD_KIND)]):
                span = run_span(raw, list(run["toolUseIds"]))
                shown = _message_with_text(view, run["summary"])
                if run.get("by") != "rule" or span is None or shown is None:
                    continue
                messages = [m.api() for m in raw.messages[span[0]:span[1]]]
                out.append({**run, "start": shown, "messages": messages,
                            "tokens": ctx.tokens.count_messages(messages)})
            return out
        for mi, m in enumerate(view.messages):
            for block, ref in zip(m.content, m.refs, strict=True):
                text = block.get("text", "") if block.get("type") == "text" else ""
                found = _ARCHIVE_RE.search(text) if ref is not None and text.startswith(SUMMARY_HEAD) else None
                data = ctx.store.read_blob(found.group(1)) if found else None
                if data is None:
                    continue
                lines, wrong = _archived_lines(data, t.format)
                archived = orjson.loads(data) if wrong is None else {}  # parsed fine just above
                summary = archived.get("summary")
                if archived.get("by") != "rule" or not isinstance(summary, str) or \
                        text != _plain_summary(summary, found.group(1)):
                    continue
                messages = _plain_api_messages(t, lines)
                out.append({"key": found.group(1), "summary": archived["summary"], "by": "rule", "start": mi,
                            "entry": ref.entry, "toolUseIds": archived.get("toolUseIds", []), "messages": messages,
                            "tokens": ctx.tokens.count_messages(messages)})
        return out

    def uses_summarizer(self) -> bool:
        return bool(self.options.get("llm"))

    def _write_llm_summaries(self, items: list[dict], ctx: Context) -> str | None:
        """Give each item a summary written by the policy's summarizer; a note for the report when it cannot."""
        if not items:
            return None
        try:
            summarizer = summarizer_for_run(ctx)
        except Exception as exc:  # a bad summarizer configuration must not stop the cheap path
            return f"summarizer unavailable ({exc}); rule-based summaries stand"
        if getattr(summarizer, "name", "") == "extractive":
            return "the summarizer has no model (use: extractive); rule-based summaries stand"
        failures = 0
        for item in items:
            try:
                text = summarizer.complete([{"role": "user", "content": render_transcript(item["messages"])}],
                                           system=LLM_SYSTEM, max_tokens=LLM_MAX_TOKENS).strip()
            except LLMError:
                failures += 1
                continue
            summary = f"{item['summary'].partition(NEWLINE)[0]}\n{text}"
            if text and ctx.tokens.count_text(summary) + _SUMMARY_OVERHEAD < item["tokens"]:
                item.update(summary=summary, by="llm")
        if failures:
            return f"the summarizer failed for {failures} run(s); their rule-based summaries stand"
        return None

    # -- plain formats: materialize -------------------------------------------------------------
    def _commit_plain(self, t: Transcript, view: View, runs: list[dict], upgrades: list[dict], ctx: Context,
                      details: dict[str, Any]) -> Transcript:
        """Replace each run's lines by its summary line (lines archived first); rewrite upgraded lines."""
        new = t.with_edits(replace={u["entry"]: plain_message(t, "user", _plain_summary(u["summary"], u["key"]))
                                    for u in upgrades})
        archives = []
        for r in sorted(runs, key=lambda r: r["start"], reverse=True):
            entries = sorted({e for m in view.messages[r["start"]:r["end"]] for e in m.entries})
            archive = str(ctx.store.put_json({"lines": [{"line": t.line_no(i), "entry": t.entry(i)} for i in entries],
                                              "toolUseIds": r["toolUseIds"], "summary": r["summary"],
                                              "by": r["by"]}))
            archives.append(archive)
            new = replace_plain_range(new, entries, plain_message(t, "user", _plain_summary(r["summary"], archive)))
        if archives:
            details["archives"] = archives[::-1]
        return new


NEWLINE = "\n"
_SUMMARY_OVERHEAD = 8  # tokens a message costs beyond its text
LLM_MAX_TOKENS = 400


def _plain_summary(summary: str, archive: str) -> str:
    return f"{summary}\n{ARCHIVE_LINE}{archive}"


def _message_with_text(view: View, text: str) -> int | None:
    for i, m in enumerate(view.messages):
        if any(b.get("type") == "text" and b.get("text") == text for b in m.content):
            return i
    return None


def _uncollapsed_view(t: Transcript) -> View:
    """The view without the collapse projection (to read a committed run's original messages)."""
    order, _ = claude_code_chain.active_entries(t)
    return claude_code.build_messages(t, order)


def _plain_api_messages(t: Transcript, entries: list[dict]) -> list[dict]:
    """Archived plain lines as messages the summarizer can render (OpenAI lines shown as their JSON)."""
    if t.format in ("anthropic", "cline"):  # (Cline's messages are Anthropic's)
        return [{"role": e.get("role", "user"), "content": e.get("content")} for e in entries]
    return [{"role": "assistant" if e.get("role") == "assistant" else "user",
             "content": orjson.dumps(e).decode()} for e in entries]


def uncollapse(t: Transcript, store: Any, left: list | None = None) -> Transcript:
    """Undo every collapse (for ``ctxkit expand``). Claude Code: drop the collapse records (the
    projection then shows every run again). Plain formats: put each summary line's archived lines
    back in its place, read only from a blob of the store (``store.fetch_blob``); a summary line
    whose archive is gone or names another file stays, and is appended to ``left`` as
    ``("collapse", path, why refused or None)``. Idempotent."""
    if t.format == "claude-code":
        return t.with_edits(remove=[i for i, _ in claude_code_records.records(t, RECORD_KIND)])
    restore: dict[int, list[dict]] = {}
    for i in t.live_indexes():
        content = t.entry(i).get("content")
        text = content if isinstance(content, str) else "".join(
            b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text")
        found = _ARCHIVE_RE.search(text) if text.startswith(SUMMARY_HEAD) else None
        if not found:
            continue
        try:
            data, why = store.fetch_blob(found.group(1)), None
        except Refused as exc:
            data, why = None, exc.reason
        lines, wrong = _archived_lines(data, t.format) if data is not None else ([], None)
        why = why or wrong
        if lines:
            restore[i] = lines
        elif left is not None:
            left.append((RECORD_KIND, found.group(1), why))
    if not restore:
        return t
    # plain lines have no insert edit: write the whole list again, archived lines in place of each summary
    live = list(t.live_indexes())
    out = [e for i in live for e in restore.get(i, [t.entry(i)])]
    return t.with_edits(remove=live, append=out)


def _archived_lines(data: bytes, fmt: str) -> tuple[list[dict], str | None]:
    """The lines a collapse archive holds, or none and why the blob is not one (damaged, or not
    ctxkit's): the summary then stays as it is rather than putting foreign content into the transcript."""
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        return [], "is not JSON"
    items = doc.get("lines") if isinstance(doc, dict) else None
    if not isinstance(items, list) or not all(isinstance(x, dict) and isinstance(x.get("entry"), dict)
                                              and problem(fmt, x["entry"]) is None for x in items):
        return [], "is not a collapse archive"
    return [x["entry"] for x in items], None
