r"""autocompact: above the threshold, replace the history with a summary and keep a recent tail.

The last stage that shrinks the view, and the heaviest: when the context is still over the
**autocompact threshold** after the cheaper stages (what they freed is already taken off), it
replaces the history with a summary, keeps the most recent messages word for word, and re-attaches
the working state a summary cannot stand in for. After it, the agent still knows what the user
asked, what was done, which files matter and what comes next.

The threshold is Claude Code's: the context window, minus the summary reserve
(`thresholds.summary_reserve`, 20,000), minus `thresholds.autocompact_buffer` (13,000): 167,000 of
a 200,000-token window, 27,000 of `--context-window 60000` (see docs/policies.md). `--force`
compacts now (Claude Code's `/compact`); `--instructions TEXT` gives the summary a focus. A
compaction that would not make the view smaller (a conversation of a few short messages) is not
made: the report says `nothing-to-do (a compacted context (283 tokens) would not be smaller than
the 5 tokens it replaces ...)`. A window too small for the buffers (threshold not above zero) is a
usage error (exit 2) naming the smallest window that works.

## What it does, in order

1. **Session memory first** (with `--session-memory NOTES.md`): when the notes are not an empty
   template and the store knows the last message they cover (`ctxkit memory update` records it),
   the notes *are* the summary and no model is called. Every message after the covered one is
   kept, and the kept tail grows backwards to at least `session_memory.min_tokens` (10,000) tokens
   and `min_text_messages` (5) messages with text (at most `max_tokens`, 40,000; nothing else caps
   it, so on a small window a minimum tail that does not fit means a summary instead), never
   splitting a tool call from its result. Without a recorded covered message (notes written by
   hand, or another store: Claude Code's resumed session) it takes the seeds' conservative path:
   the notes are taken to cover everything and only the minimum tail is kept (the report says
   `conservative`). It falls back to a summary when the covered message is gone, the notes are
   unchanged since a compaction they do not cover (run `ctxkit memory update`), `--instructions`
   is given (a focus needs a fresh summary), or the result would still be over the threshold. A
   notes file that does not exist yet is the same as no notes: a warning says so.
2. **Otherwise a summary**: everything before a short kept tail (`keep_tail`; by default the last
   API round, as Claude Code keeps it) goes to the policy's summarizer in one text-only request
   without tools. The prompt asks for an `<analysis>` scratchpad (dropped) and nine sections:
   *Primary Request and Intent, Key Technical Concepts, Files and Code Sections, Errors and fixes,
   Problem Solving, All user messages, Pending Tasks, Current Work, Optional Next Step*, the last
   three tied to the user's most recent message, so the agent resumes the right task. The offline
   summary quotes every typed prompt whole when the result still comes in under its goal (smaller,
   and under the threshold for `--force`, under half of it when automatic), else cut
   (`ctxkit.stages.autocompact.whole_prompts`).
3. **Prompt too long?** If the summarizing request itself is too long for the model, the oldest
   API rounds (an assistant message with its tool results, never one without the other) are
   dropped: enough to cover the overflow when the error says by how much (`prompt is too long:
   210000 tokens > 200000 maximum`), else `ptl_drop_fraction` (a fifth) of them, behind a
   `[earlier conversation truncated for compaction retry]` marker when what is left starts with
   the assistant; up to `ptl_max_retries` (3) retries. What was dropped is missing from the
   summary, not from the transcript. `--report json` gives `ptl_retries` and `dropped_rounds`.
4. **Re-injection** (`reinject`, see `ctxkit.stages.autocompact.reinject`) after the summary and the kept tail,
   rendered as Claude Code renders them: the most recently read or edited files re-read from disk
   (with the Read tool's line numbers; missing files and files the kept tail reads anyway are
   skipped; a file over `file_max_tokens`, or past the files' total, is dropped and the next most
   recent file takes its slot, as the seeds say), the plan file
   and, in plan mode, the plan-mode reminder, the invoked skills (most recent first), and the
   deferred tools, agent types and MCP instructions the model knew about (from `--state FILE`
   when given, else from the transcript). The re-read files and skills (and, after a summary, the
   kept tail) take at most half of the threshold with the kept tail, so a small window is not
   refilled by the compaction. While the last
   assistant message waits for tool results nothing is appended after it.
   Unlike Claude Code, which re-reads only files it opened itself, ctxkit takes the paths from
   the transcript, so it reads only regular files inside the session's folder (the transcript's
   `cwd`, with `..` and symbolic links resolved first; a plan file also from `~/.claude/plans`),
   never a FIFO, device, `/proc` or `/sys` file, and at most 8 bytes per token of
   `file_max_tokens` (a larger file is dropped). Others are skipped and reported in the
   details (`files_skipped`, `plan_file_skipped`) and as a warning; see docs/security.md.

The summarizer is the policy's `summarizer:` (`anthropic`, `command`, `extractive`, or `auto`:
`anthropic` when `ANTHROPIC_API_KEY` is set, else the offline extractive one); see
docs/policies.md.
**Failure.** A failed compaction (the summarizer errs, times out, or answers with no summary) changes
nothing: the transcript passes through unchanged, the report says ``failed`` and the CLI exits 1. Failures
in a row are counted in the store; after ``max_consecutive_failures`` autocompact stops trying
(``breaker-open``, exit 1, a warning) until a compaction succeeds — with ``--force``, which always tries.
A compaction that succeeds but leaves the view (after every stage) still over the threshold is not a
summarizer failure and is not counted; ``ctxkit compact`` reports it, naming the system prompt and tools
the session's usage holds, and exits 1 — after ``--force``, which asked for it, a warning and exit 0
(:func:`ctxkit.reports.outcome.over_threshold_message`; docs/policies.md). More: [summarizer.md](../summarizer.md).

## Retention, and `min_retention`

Every compaction is measured: probes are taken from the history it replaced (every user prompt,
file path read or written, shell command, error line, and the identifiers and numbers of the
prompts) and the report says how many are still in the view after it, the summary, the kept tail
and the re-injected files together (`retained prompts 4/4, paths 6/6, commands 8/8` on the report
line; `retention` with each kind's fraction, null when there was none, and `retention_counts` in
`--report json`). See docs/retention.md.

`min_retention` (a number from 0 to 1; null, the default, accepts any summary) holds a summary
written by a model or a command to it: one that keeps a smaller share of the replaced user prompts,
or of the replaced file paths, is rejected, and the extractive summary (which quotes every prompt
and lists every file) is written instead. The report says so, `rejected_summary` in
`--report json` gives the rejected summary's retention, a warning is printed, and the rejection
counts as a summarizer failure for the circuit breaker:

```
ctxkit: warning: autocompact: the anthropic summary was rejected: it kept 0 of 3 user prompts (min_retention 0.8); the extractive summary is used instead (1 of 3 failures in a row)
autocompact: applied: auto compaction (summary by extractive; the anthropic summary was rejected: it kept 0 of 3 user prompts (min_retention 0.8)): ...
```

## What the output looks like

**Claude Code sessions** get exactly what Claude Code writes when it compacts, appended to the
file (nothing earlier is rewritten or removed): a `system` entry with `subtype: compact_boundary`
and `compactMetadata` (`trigger`, `preTokens`, `postTokens`, and `preservedSegment`, which links
the kept tail in after the summary), a `user` entry with `isCompactSummary: true`, a
`ctxkit-record` (`"record": "compaction"`), and `attachment` entries for the re-injected files and
deltas:

```
{"type":"system","subtype":"compact_boundary","parentUuid":null,"logicalParentUuid":"<old leaf>",
 "content":"Conversation compacted","level":"info",
 "compactMetadata":{"trigger":"auto","preTokens":54834,"postTokens":1504,
   "preservedSegment":{"headUuid":"<first kept entry>","anchorUuid":"<summary>","tailUuid":"<old leaf>"}, ...}}
{"type":"user","parentUuid":"<boundary>","isCompactSummary":true,"isVisibleInTranscriptOnly":true,
 "message":{"role":"user","content":"This session is being continued from a previous conversation ..."}}
{"type":"ctxkit-record","record":"compaction","method":"summary","summarizer":"extractive", ...}
{"type":"attachment","attachment":{"type":"file","filename":"/repo/app/models.py",...},
 "rendered":[{"content":"<system-reminder>\nCalled the Read tool ..."}],"renderedRole":"user", ...}
```

**Claude Code resumes it**: put the file back where Claude Code keeps the session
(`~/.claude/projects/<project folder, non-alphanumerics as ->/<session id>.jsonl`) and run
`claude --resume <session id>`; its first request opens with ctxkit's summary, then the kept tail,
then the re-injected files (checked against the real Claude Code 2.1.328 CLI by
`tests/test_compaction_resume.py`).

**Anthropic / OpenAI message lists** get one user message with the summary (naming where the
summarized lines were archived in the store), then the kept tail; a leading system prompt stays
first. `ctxkit expand` puts the archived lines back in the summary's place and takes out the re-injected ones: the list comes back byte for byte.

## A worked example

On `examples/session.jsonl`, `--force` at 13:00 and no `ANTHROPIC_API_KEY` (the README's worked
example) gives `autocompact: applied: manual compaction (summary by extractive):
11,827 -> 11,579 tokens, 21 messages summarized, 1 kept` (after a compaction the count is the
estimate of the new view plus the system prompt and tools the last reported usage implied, 10,878
here: see docs/tokens.md). On a larger session, the `multi-prompt` session of the test corpus
(44,460 tokens by the usage its last response reported, four prompts, 32 tool calls; not shipped
with ctxkit),
offline, with a 60,000-token window (threshold 27,000), run from the project folder so that the
files it read are found and re-injected:

```
$ ctxkit compact ../session.jsonl --context-window 60000 --now 2026-11-29T23:30:00Z -o ../compacted.jsonl
tool-result-budget: nothing-to-do (every tool result is within budget)
microcompact: nothing-to-do (the prompt cache is warm)
autocompact: applied: auto compaction (summary by extractive): 44,460 -> 12,671 tokens, 69 messages summarized, 1 kept; retained prompts 4/4, paths 6/6, commands 8/8 [44,460 -> 12,671 tokens]
view: 44,460 -> 12,671 tokens
```

The view the model gets next (`ctxkit view ../compacted.jsonl`, abridged):

```
user:      This session is being continued from a previous conversation that ran out of context. ...
           Summary:
           [Extractive summary: assembled by ctxkit from the transcript without a model; quotes are verbatim.]
           1. Primary Request and Intent:
           The user's first request:
           Do part 0 of the review
           ...
assistant: Part 3 is done.                                              <- the kept tail
user:      <system-reminder>Called the Read tool with the following input: {"file_path":"/tmp/cc-multi-prompt-6qd3hl4c/notes/part3.md"}</system-reminder>
           <system-reminder>Result of calling the Read tool:
           1	# Part 3 ...</system-reminder>                             <- re-read from disk, most recent first
           ... (app/models.py, notes/part2.md, part1.md, part0.md)
system:    The following deferred tools are now available via ToolSearch. ...
           Available agent types for the Agent tool: ...
```

Running it again on `../compacted.jsonl` changes nothing (12,671 tokens is under the threshold),
so `ctxkit compact` can run after every turn. With a model instead, set the key (`auto` then picks
`anthropic`) or name the summarizer (`--set summarizer.use=anthropic`, or
`--set summarizer.use=command --set 'summarizer.command=llm -m claude-4-sonnet'`); the report then
says `summary by anthropic` (or `command`), and the model writes the nine sections in its own
words.

## Session memory: `ctxkit memory update`

Keep notes and compact from them without a model call (`overhead_tokens=0`: the corpus's stand-in
API reported usage without a system prompt, so the view after the notes is counted without one too):

```
$ ctxkit memory update ../session.jsonl --session-memory notes.md --now 2026-11-29T23:30:00Z
memory: written notes.md (70 messages, up to e3560dd0-4de6-4401-a984-d23eb919c8bb) by extractive
$ ctxkit compact ../session.jsonl --session-memory notes.md --context-window 60000 --now 2026-11-29T23:30:00Z --set overhead_tokens=0 -o ../compacted-sm.jsonl
tool-result-budget: nothing-to-do (every tool result is within budget)
microcompact: nothing-to-do (the prompt cache is warm)
autocompact: applied: auto compaction (session memory): 44,460 -> 25,317 tokens, 37 messages summarized, 33 kept; retained prompts 3/3, paths 4/4, commands 0/4 [44,460 -> 25,317 tokens]
view: 44,460 -> 25,317 tokens
```

`memory update` writes or refreshes the markdown notes with the policy's summarizer (the earlier
notes plus only the messages since the last update) and records in the store the last message they
cover; an HTML comment at the top says which (`<!-- ctxkit session memory: covers the conversation
up to message ... -->`), and is dropped when the notes become the summary. The notes are ordinary
markdown you may edit. After any compaction the recorded message is behind the boundary, so the
next session-memory compaction waits for a fresh `memory update`.

## When it fails

A compaction happens completely or not at all. When the summarizer fails (an API error after its
retries, a timeout, a prompt still too long after the retries, an answer with no summary),
autocompact passes the transcript through unchanged, reports `failed`, and `ctxkit compact` exits
1. With the `command` summarizer and no `llm` installed:

```
ctxkit: warning: autocompact failed (1 of 3 in a row): the summarizer command 'llm -m claude-4-sonnet' exited with status 127:
/bin/sh: 1: llm: not found; autocompact changed nothing
...
autocompact: failed: the summarizer command 'llm -m claude-4-sonnet' exited with status 127:
/bin/sh: 1: llm: not found
view: 44,460 -> 44,460 tokens
ctxkit: error: autocompact failed; the output was written with no change (no stage changed the transcript)
```

Failures in a row are counted per session in the store (`.ctxkit/state.json`). After
`max_consecutive_failures` (3) the **circuit breaker** opens: autocompact stops trying (each
attempt costs a request likely to fail the same way), the transcript still passes through
unchanged, and the exit code stays 1 while the context is over the threshold:

```
ctxkit: warning: autocompact skipped: it failed 3 times in a row (limit 3); the context is 44,460 tokens, over the threshold (27,000). Fix the summarizer, then run `ctxkit compact --force`.
...
autocompact: breaker-open: circuit breaker open after 3 failures
```

`--force` always tries, and any successful compaction closes the breaker. Without a key,
`use: anthropic` fails the same way: `the anthropic summarizer needs an API key: set
ANTHROPIC_API_KEY in the environment (or set summarizer.use to 'extractive' or 'command' in the
policy)`.
"""
# Over 400 lines: about 200 are the docstring above (the stage's user documentation, printed by
# `ctxkit stages autocompact`); its options, compaction, session memory, re-injection, min_retention and the
# PTL retry are siblings.
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...errors import LLMError
from ...policy.defaults import schema_defaults
from ...store.sessions import session_key
from ...tokens import budget_for, require_autocompact_room
from ...transcript.model import Transcript
from ...transcript.view import View
from ..base import Context, Stage, StageResult
from .options import OPTIONS_SCHEMA

if TYPE_CHECKING:
    from .compaction import Compaction, Written
# the modules that make a compaction are imported when one is made (most runs end under the threshold)

#: The kept tail plus the re-read files and skills may fill at most this share of the threshold.
POST_COMPACT_SHARE = 0.5
STATE_KEY = "autocompact"


class Autocompact(Stage):
    name = "autocompact"
    summary = ("Above the threshold: session-memory compact or an LLM summary, PTL retry, circuit breaker, "
               "post-compact re-injection.")
    options_schema = OPTIONS_SCHEMA

    def uses_summarizer(self) -> bool:
        return True

    @staticmethod
    def undo(t: Transcript, store: Any, left: list) -> Transcript:
        """For ``ctxkit expand``: a message list's compactions give way to the history they replaced."""
        from .compaction import uncompact_plain

        return uncompact_plain(t, store, left)

    @classmethod
    def leaves_behind(cls, options: dict[str, Any], threshold: int) -> int | None:
        """The kept tail and the re-read files and skills, at their budgets' maximum, within the share of
        the threshold they may fill (:data:`POST_COMPACT_SHARE`)."""
        tail, again = (schema_defaults(OPTIONS_SCHEMA["properties"][key]) | dict(options.get(key) or {})
                       for key in ("keep_tail", "reinject"))
        most = (int(tail["max_tokens"]) + (int(again["files_max_tokens"]) if again["files"] else 0)
                + (int(again["skills_max_tokens"]) if again["skills"] else 0))
        return min(most, int(max(0, threshold) * POST_COMPACT_SHARE))

    def _opt(self, key: str) -> dict[str, Any]:
        return {**schema_defaults(self.options_schema["properties"][key]), **dict(self.options.get(key) or {})}

    def run(self, t: Transcript, ctx: Context) -> StageResult:
        view = t.view()
        budget = budget_for(ctx.policy, ctx.inputs.context_window)
        require_autocompact_room(budget, ctx.policy)
        threshold = budget.autocompact_threshold
        tokens = ctx.view_tokens(t).total
        force = bool(ctx.inputs.force)
        key = session_key(t)
        failures = int((ctx.store.session_state(key).get(STATE_KEY) or {}).get("consecutive_failures", 0))
        limit = int(self.options["max_consecutive_failures"])
        details: dict[str, Any] = {"tokens": tokens, "threshold": threshold, "context_window": budget.context_window,
                                   "freed_by_earlier_stages": ctx.tokens_freed, "forced": force}
        if not force:
            if ctx.policy.proactive == "collapse" and ctx.policy.stage("collapse") is not None:
                # collapse compacts ahead of time; autocompact stays the reactive last resort: it acts only
                # when the view would not fit at all (Claude Code's reactive compact after prompt-too-long)
                if tokens < budget.blocking_limit:
                    return self._result(t, "skipped", "the policy lets collapse compact proactively "
                                        f"({tokens:,} tokens, under the blocking limit {budget.blocking_limit:,})",
                                        details)
                details["reactive"] = True
            if tokens < threshold:
                return self._result(t, "nothing-to-do",
                                    f"{tokens:,} tokens, under the autocompact threshold ({threshold:,})", details)
            if failures >= limit:
                details["consecutive_failures"] = failures
                ctx.warn(f"autocompact skipped: it failed {failures} times in a row (limit {limit}); the context is "
                         f"{tokens:,} tokens, over the threshold ({threshold:,}). Fix the summarizer, then run "
                         "`ctxkit compact --force`.")
                return self._result(t, "breaker-open", f"circuit breaker open after {failures} failures", details)
        from . import min_retention
        from .compaction import CompactionError, floor_index
        from .session_memory import forget
        from .whole_prompts import report_note
        floor = floor_index(t, view)
        if floor >= len(view.messages):
            return self._result(t, "nothing-to-do", "nothing new since the last compaction", details)
        trigger = "manual" if force else "auto"
        try:
            written = None
            if ctx.inputs.session_memory is not None and self._opt("session_memory")["enabled"]:
                if ctx.inputs.instructions:
                    details["session_memory"] = "skipped: --instructions asks for a fresh summary"
                else:
                    written, why = self._session_memory(t, view, ctx, tokens, threshold, floor, trigger, details)
                    if written is None:
                        details["session_memory"] = f"not used: {why}"
            if written is None:
                written = self._summarize(t, view, ctx, tokens, threshold, floor, trigger, details)
        except (LLMError, CompactionError) as exc:
            failures += 1
            ctx.store.update_session_state(key, **{STATE_KEY: {
                "consecutive_failures": failures, "last_error": exc.message[:500], "last_failure_at": ctx.timestamp()}})
            details["consecutive_failures"] = failures
            details["error"] = exc.message
            note = ("; autocompact is now off for this session until a compaction succeeds "
                    "(`ctxkit compact --force` tries again)" if failures >= limit else "")
            # what the stage did, not what is written: earlier stages may have changed the transcript, and
            # compact says at the end what its output holds (ctxkit.reports.outcome.failure_message)
            ctx.warn(f"autocompact failed ({failures} of {limit} in a row): {exc.message}; autocompact changed "
                     f"nothing{note}")
            return self._result(t, "failed", exc.message, details)
        if written.post_tokens >= tokens:
            # e.g. /compact on a conversation of a few short messages: the summary is the longer text
            details["post_tokens"] = written.post_tokens
            for key in ("retention", "retention_counts", "prompts_quoted"):  # no compaction: nothing replaced or quoted
                details.pop(key, None)
            return self._result(t, "nothing-to-do", f"a compacted context ({written.post_tokens:,} tokens) would "
                                f"not be smaller than the {tokens:,} tokens it replaces; left as it is", details)
        rejected = details.get("rejected_summary")
        if rejected is not None:  # the model's summary failed min_retention: a failure, like any other
            failures += 1
            ctx.store.update_session_state(key, **{STATE_KEY: {
                "consecutive_failures": failures, "last_error": rejected["why"], "last_failure_at": ctx.timestamp()}})
            details["consecutive_failures"] = failures
            ctx.warn(f"autocompact: {rejected['why']}; the extractive summary is used instead ({failures} of "
                     f"{limit} failures in a row)")
        elif STATE_KEY in ctx.store.session_state(key):
            ctx.store.update_session_state(key, **{STATE_KEY: None})  # a success closes the breaker
        forget(ctx.store, t, written.transcript, notes_path=ctx.inputs.session_memory)
        details["post_tokens"] = written.post_tokens
        details.update(written.details)
        how = "session memory" if details.get("method") == "session-memory" else f"summary by {details['summarizer']}"
        if rejected is not None:
            how += f"; {rejected['why']}"
        reason = (f"{trigger} compaction ({how}): {tokens:,} -> {written.post_tokens:,} tokens, "
                  f"{details['summarized_messages']} messages summarized, {details['kept_messages']} kept; "
                  f"{min_retention.short(details)}{report_note(details)}")
        return StageResult(written.transcript, self.report(action="applied", reason=reason, details=details))

    def _result(self, t: Transcript, action: str, reason: str, details: dict[str, Any]) -> StageResult:
        return StageResult(t, self.report(action=action, reason=reason, details=details))

    # -- the two ways ------------------------------------------------------------------------------
    def _session_memory(self, t: Transcript, view: View, ctx: Context, tokens: int, threshold: int, floor: int,
                        trigger: str, details: dict[str, Any]) -> tuple[Written | None, str]:
        from .compaction import Compaction, choose_tail_start, feasible_keep_from
        from .session_memory import plan_session_memory
        plan, why = plan_session_memory(t, view, ctx.store, ctx.inputs.session_memory)
        if plan is None:
            return None, why
        opts = self._opt("session_memory")
        share = int(max(0, threshold) * POST_COMPACT_SHARE)
        start = plan.last_index + 1
        # only max_tokens caps the minimum tail (Claude Code's calculateMessagesToKeepIndex); a tail too big
        # for a small window is caught below (still over the threshold: summarize instead)
        keep_from = choose_tail_start(view, ctx.tokens.count_messages, start, floor, min_tokens=int(opts["min_tokens"]),
                                      min_text_messages=int(opts["min_text_messages"]),
                                      max_tokens=int(opts["max_tokens"]))
        keep_from = feasible_keep_from(t, view, keep_from)
        if keep_from > start:
            return None, "the messages after the notes cannot be kept as a tail"
        if keep_from <= floor:
            return None, "the notes cover no message before the kept tail"
        # the notes become the summary: written by `ctxkit memory update` (redacted then) or by hand
        from ...summarize.redact import redactor_for  # the secret rules: loaded when a summary is written

        written = self._write(t, view, ctx, Compaction(
            summary=redactor_for(ctx).text(plan.summary), keep_from=keep_from, trigger=trigger, pre_tokens=tokens, method="session-memory",
            record={"notes": str(plan.notes_path), "lastSummarizedId": plan.last_id}), share, details)
        if written.post_tokens >= threshold:
            return None, f"still over the threshold after it ({written.post_tokens:,} >= {threshold:,} tokens)"
        details.update(method="session-memory", notes=str(plan.notes_path), last_summarized_id=plan.last_id)
        if plan.last_id is None:
            details["session_memory"] = "conservative: no last-summarized message recorded, the notes taken to " \
                                        "cover the whole view; the minimum tail kept"
        return written, ""

    def _summarize(self, t: Transcript, view: View, ctx: Context, tokens: int, threshold: int, floor: int,
                   trigger: str, details: dict[str, Any]) -> Written:
        from . import min_retention
        from .compaction import Compaction, CompactionError, choose_tail_start, feasible_keep_from
        from .ptl_retry import summarize_with_retry
        from .whole_prompts import whole_prompts_first
        opts = self._opt("keep_tail")
        share = int(max(0, threshold) * POST_COMPACT_SHARE)
        n = len(view.messages)
        keep_from = choose_tail_start(view, ctx.tokens.count_messages, n, min(floor + 1, n),
                                      min_tokens=int(opts["min_tokens"]),
                                      min_text_messages=int(opts["min_text_messages"]),
                                      min_rounds=int(opts["min_rounds"]),
                                      max_tokens=min(int(opts["max_tokens"]), share))
        keep_from = feasible_keep_from(t, view, keep_from)
        history = [m.api() for m in view.messages[:keep_from] if m.role != "system"]
        if not history:
            raise CompactionError("there is nothing to summarize before the kept tail")
        # when a summary is asked for, not at start-up: the summarizers, the secret rules, the session facts
        from ...summarize import summarizer_for_run
        from .summary_facts import session_facts

        known = session_facts(t, view, keep_from, ctx)  # every prompt of the session, the stored originals
        summarizer = summarizer_for_run(ctx, known)
        details["summarizer"] = getattr(summarizer, "name", type(summarizer).__name__)

        def written_summary(chosen: Any, **record: Any) -> Written:  # twice when whole prompts are too big
            try:
                summary, facts = summarize_with_retry(
                    chosen, history, instructions=ctx.inputs.instructions, count=ctx.tokens.count_messages,
                    max_retries=int(self.options["ptl_max_retries"]),
                    drop_fraction=float(self.options["ptl_drop_fraction"]))
            finally:
                stats = getattr(chosen, "stats", None)
                if stats is not None:
                    details["summarizer_requests"] = stats.requests
                    details["summarizer_retries"] = stats.retries
            if chosen is summarizer:  # a fallback keeps the retries of the summary it replaces
                details.update(facts)
            return self._write(t, view, ctx, Compaction(
                summary=summary, keep_from=keep_from, trigger=trigger, pre_tokens=tokens, method="summary",
                record={"summarizer": details["summarizer"], **record, **{k: v for k, v in facts.items() if v}}),
                share, details)

        if ctx.inputs.instructions:
            details["instructions"] = ctx.inputs.instructions
        details["method"] = "summary"
        # what a compaction quoting every typed prompt whole must come in under: /compact, smaller and under
        # the threshold; an automatic one, the post-compact share too, or the next turn compacts again
        goal = min(tokens, threshold if trigger == "manual" else share)
        written = whole_prompts_first(summarizer, lambda: written_summary(summarizer), goal, details,
                                      ctx.tokens.count_text)
        from ...summarize import ExtractiveSummarizer, redact

        if details["summarizer"] == ExtractiveSummarizer.name:
            return written
        rejected = min_retention.rejection(details, self.options.get("min_retention"))
        if rejected is None:
            return written
        # a model summary that lost the user's prompts or files: the extractive one quotes them
        details["rejected_summary"] = rejected
        fallback = redact.guard(ExtractiveSummarizer(facts=known), ctx)
        details["summarizer"] = fallback.name
        return whole_prompts_first(fallback, lambda: written_summary(
            fallback, rejectedSummarizer=rejected["summarizer"]), goal, details, ctx.tokens.count_text)

    def _write(self, t: Transcript, view: View, ctx: Context, c: Compaction, share: int,
               details: dict[str, Any]) -> Written:
        from .written import written_with_reinjection
        return written_with_reinjection(t, view, ctx, c, share, details, self.options.get("reinject"))
