r"""microcompact: clear old tool results once the prompt cache has gone cold.

Most of a long session's context is tool output the model read once: a file, a `grep`, a
directory listing. While the provider's prompt cache is warm, sending those bytes again is cheap,
and changing them would throw the cache away. After a long pause it is the other way round: the
cache has expired, the next request pays for the whole prefix anyway, and every old result it
still carries is paid for in full.

`microcompact` waits for that moment. When more than `gap_minutes` (60, the extended cache's
lifetime) have passed since the model last answered (the newest assistant message's timestamp,
against `--now` or the clock), it replaces the content of old results of *compactable* tools with
`[Old tool result content cleared]`, keeping the `keep_recent` (5) most recent compactable results
as they are. Compactable tools are the policy's `tools.compactable` (default: Read, Bash, Shell,
Grep, Glob, WebSearch, WebFetch, Edit, Write, and the same tools under Codex CLI's, Gemini CLI's and
OpenCode's names: docs/formats.md): tools whose output can be had again by calling them. The calls stay, each still followed by its (now short) result, so the conversation remains
valid for the API. Results no longer than the placeholder, in characters or estimated tokens, are left
alone; a cleared result never grows the view. `--force` does not clear a warm cache: like Claude Code's `/compact` it
makes autocompact summarize whatever the thresholds say, and a manual compaction on a warm cache
summarizes the original results, not placeholders. Anthropic and OpenAI message lists carry no
timestamps, so the cache's state is unknown: there `--force` is how you say it is cold.

## Nothing is lost, and the decision is frozen

Claude Code's own microcompact throws the cleared output away. ctxkit first saves each one in the
store (for OpenAI `tool` messages, the line's own content, images included) and records the
decision in the ledger (`.ctxkit/ledger.json`, state `cleared`, per session, keyed by tool_use id,
see `ctxkit.store.offload.decision_scope`), so `ctxkit expand` brings it back. A result the tool-result
budget had already persisted keeps pointing at the full original, not at the preview.

Once cleared, a result stays cleared: every later run replays the same placeholder, even when the
cache is warm again, so the view the model saw does not change under it. The replay happens at the
stage's own place in the pipeline (`tool-result-budget` replays only its own previews), so a second
run on the same input shows every stage the view it saw the first time and gives the same bytes;
the thinking dropped after a result this run clears is dropped again. While the cache is warm
and nothing was cleared before, the stage does not touch a single byte.

A policy change does not undo a clearing: with `keep_recent` raised from 5 to 40, the results
cleared before stay cleared, and the report says so (`4 result(s) stay cleared by an earlier run
that this policy would keep (keep_recent 40): decisions are frozen, ...`; `--report json`:
`frozen_unlike_policy`). `ctxkit compact --fresh` decides everything again from the original
content, at the price of one cold prompt cache (docs/policies.md).

Thinking blocks of the assistant turns from the first cleared result on are dropped (their
signatures covered the bytes that changed) and, on Claude Code transcripts, archived in the store
behind an `archive` record, so `ctxkit expand` restores them too.

## Before and after

On `examples/session.jsonl` at 13:00 (`--now 2026-11-20T13:00:00Z`), when the last reply
(11:00:50) is almost two hours old, the report says
`microcompact: applied: cleared 3 old tool result(s) [12,425 -> 11,827 tokens]`:

```
before (the view after tool-result-budget)
assistant  "I'll look at the models and the tests first." | tool_use Read(/home/dev/shop/shop/models.py) | tool_use Grep(total\()
user       tool_result "shop/models.py:11:    def total(self):\ntests/test_models..." | tool_result "     1\tclass Item:\n..."
assistant  tool_use Bash(python -m pytest -vv 2>&1 | tee test.log)
user       tool_result "<persisted-output>\nOutput too large (172.9KB). ..."
assistant  tool_use Bash(git status --porcelain)
user       tool_result ""
assistant  tool_use Edit(/home/dev/shop/shop/models.py)
user       tool_result "The file /home/dev/shop/shop/models.py has been updated."
...        (5 more tool results: Bash, Write, Bash, Read, Edit)

after
assistant  "I'll look at the models and the tests first." | tool_use Read(/home/dev/shop/shop/models.py) | tool_use Grep(total\()
user       tool_result "[Old tool result content cleared]" | tool_result "[Old tool result content cleared]"
assistant  tool_use Bash(python -m pytest -vv 2>&1 | tee test.log)
user       tool_result "[Old tool result content cleared]"
assistant  tool_use Bash(git status --porcelain)
user       tool_result ""
assistant  tool_use Edit(/home/dev/shop/shop/models.py)
user       tool_result "The file /home/dev/shop/shop/models.py has been updated."
...        (the 5 most recent compactable results unchanged)
```

The empty `git status` result and the edit's note (fewer estimated tokens than the placeholder) stay; the test log's ledger
entry keeps pointing at the full original, so `ctxkit expand` restores the log itself. With
`--now 2026-11-20T12:00:00Z` (59 minutes after) nothing is cleared: the cache is still warm.

## API-native edits

Claude Code asks the API itself to manage thinking blocks: every request it sends carries
`"context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]}` with its
`thinking` settings and the `context-management-2025-06-27` beta (see the recorded requests in
the test corpus). `ctxkit view --to anthropic-request` does the same in every mode: for a Claude
Code transcript it sends the `thinking` settings Claude Code recorded (its `api-request` entries)
and that edit (once the cache is cold, `"keep":{"type":"thinking_turns","value":1}`, as Claude
Code does after an hour idle), and names on stderr the beta header it needs. A request without
`thinking` (a plain message list, an older transcript) gets no edit: the API manages thinking
blocks only when thinking is on. `api_native.clear_thinking.enabled=false` leaves it out.

`mode: api-native` leaves the transcript alone and has the API clear tool results server-side,
with the edits the policy enables (`mode: both` also rewrites the transcript). Claude Code never
sends `clear_tool_uses`, so it is off until a policy asks for it:

```
$ ctxkit view session.jsonl --to anthropic-request --set stages.microcompact.options.mode=api-native \
    --set stages.microcompact.options.api_native.clear_tool_uses.enabled=true > request.json
ctxkit: note: send the header anthropic-beta: context-management-2025-06-27
$ jq -c .context_management request.json
{"edits":[{"type":"clear_tool_uses_20250919","trigger":{"type":"input_tokens","value":180000},"clear_at_least":{"type":"input_tokens","value":140000}}]}
```

With `api_native.compact.enabled=true` the edits also hold
`{"type":"compact_20260112","trigger":{"type":"input_tokens","value":150000}}`, and the header
becomes `context-management-2025-06-27,compact-2026-01-12`. With the Python SDK:
`client.beta.messages.create(**body, betas=[...])`. In this mode `ctxkit compact` reports
`nothing-to-do (api-native: the API clears server-side (see --to anthropic-request))`.

## Cached mode: cache edits instead of a rewrite

`mode: cached` is Claude Code's cached microcompact as the seeds describe it: while the cache is
warm, the transcript is left alone and `ctxkit view --to anthropic-request` deletes old results
server-side. Each tool result before the last message carries `"cache_reference": "<tool_use_id>"`,
the last block carries `cache_control`, and once the request holds `cached.trigger` (10) results of
compactable tools not yet deleted, all but the `keep_recent` newest are deleted by a block in the
last user message, after its tool results:

```
{"type":"cache_edits","edits":[{"type":"delete","cache_reference":"toolu_01"}, ...]}
```

The block is pinned (in the store): every later request sends it again in the same message, so
the cached prefix never changes; a compaction (or anything else that changes the messages up to
it) drops it. `ctxkit compact` reports `nothing-to-do (cached: the cache is warm, ...)`; once the
cache is cold it clears old results in the transcript as `time-based` does. Details:
`ctxkit.reports.cache_edits`.

## When it does nothing, and why

The report says which: `the prompt cache is warm` (the gap is below `gap_minutes`), `nothing old
enough to clear` (no more compactable results than `keep_recent`, or only short ones), or `the
transcript has no timestamps (use --force to clear anyway)`. If the store cannot be written the
command stops before any output is written: a result is never cleared without its copy.
Two results that answer one tool id (an agent that used a call id twice) are left whole: the store
keeps one decision per tool id, so clearing both would keep only one of the two originals.
"""
# Over 400 lines: about 120 are the docstring above (the stage's user documentation) and 70 the
# options schema of its two modes (rewrite, API-native edits); the code is one stage.
from __future__ import annotations

from datetime import datetime
from typing import Any

from ..clock import parse_instant
from ..policy.defaults import schema_defaults
from ..store.offload import (
    CLEARED_PLACEHOLDER,
    content_digest,
    decision_applies,
    decision_scope,
    has_media,
    original_content,
    shrinks,
    store_original,
)
from ..transcript import outputs as tool_outputs
from ..transcript.edits import archive_entries, replace_blocks, strip_thinking_after, written_results
from ..transcript.model import Transcript
from ..transcript.view import BlockRef, View
from .base import Context, Stage, StageResult

PLACEHOLDER = CLEARED_PLACEHOLDER
MODES = ("time-based", "api-native", "both", "cached")
CONTEXT_MANAGEMENT_BETA = "context-management-2025-06-27"
COMPACT_BETA = "compact-2026-01-12"

_INPUT_TOKENS = {"type": "integer", "minimum": 1}
_API_NATIVE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "description": "The context_management edits 'ctxkit view --to anthropic-request' sends: clear_thinking in every "
                   "mode (as Claude Code sends it), the others in modes api-native and both.",
    "properties": {
        "clear_tool_uses": {
            "type": "object",
            "additionalProperties": False,
            "description": "clear_tool_uses_20250919: the API clears old tool results above a size.",
            "properties": {
                "enabled": {"type": "boolean", "default": False,
                    "description": "Emit the clear_tool_uses_20250919 edit (Claude Code does not send it)."},
                "trigger": {**_INPUT_TOKENS, "default": 180_000,
                            "description": "Input tokens at which the API starts clearing."},
                "keep": {"type": ["integer", "null"], "minimum": 0, "default": None,
                         "description": "Most recent tool uses kept (null: the API's default, 3)."},
                "clear_at_least": {"type": ["integer", "null"], "minimum": 1, "default": 140_000,
                                   "description": "Clear only if at least this many tokens go (Claude Code keeps "
                                                  "about 40,000 of 180,000)."},
                "exclude_tools": {"type": "array", "items": {"type": "string"}, "uniqueItems": True, "default": [],
                                  "description": "Tools whose results are never cleared."},
                "clear_tool_inputs": {"anyOf": [{"type": "boolean"},
                                                {"type": "array", "items": {"type": "string"}, "uniqueItems": True}],
                                      "default": False,
                                      "description": "Also clear the inputs of the calls (all, or these tools')."},
            },
        },
        "clear_thinking": {
            "type": "object",
            "additionalProperties": False,
            "description": "clear_thinking_20251015: the API drops thinking of older turns (needs extended "
                           "thinking on).",
            "properties": {
                "enabled": {"type": "boolean", "default": True,
                    "description": "Emit the clear_thinking_20251015 edit, in any mode, when the request has thinking "
                                   "on (Claude Code sends keep: all on every request)."},
                "keep": {"anyOf": [{"const": "all"}, {"type": "integer", "minimum": 1}], "default": "all",
                         "description": "Assistant turns whose thinking is kept: 'all' or a number."},
                "keep_when_cold": {"anyOf": [{"const": "all"}, {"type": "integer", "minimum": 1}, {"type": "null"}],
                                   "default": 1,
                                   "description": "What 'keep' becomes once the cache is cold (gap_minutes passed); "
                                                  "null: no change."},
            },
        },
        "compact": {
            "type": "object",
            "additionalProperties": False,
            "description": "compact_20260112: the API summarizes older context itself.",
            "properties": {
                "enabled": {"type": "boolean", "default": False,
                    "description": "Emit the server-side compact_20260112 edit."},
                "trigger": {**_INPUT_TOKENS, "default": 150_000,
                            "description": "Input tokens at which the API compacts."},
                "instructions": {"type": ["string", "null"], "default": None,
                                 "description": "Extra instructions for the server's summary."},
                "pause_after_compaction": {"type": "boolean", "default": False,
                    "description": "Return the compaction block and stop before continuing the response."},
            },
        },
    },
}


def api_native_options(options: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The ``api_native`` options with every default filled in."""
    given = options.get("api_native") or {}
    props = _API_NATIVE_SCHEMA["properties"]
    return {name: {**schema_defaults(props[name]), **(given.get(name) or {})} for name in props}


def last_assistant_time(view: View) -> datetime | None:
    """When the model last answered (the newest assistant message's timestamp), if the transcript says."""
    for m in reversed(view.messages):
        if m.role == "assistant" and m.timestamp:
            try:
                return parse_instant(m.timestamp)
            except ValueError:
                return None
    return None


def cache_gap_minutes(view: View, now: datetime) -> float | None:
    """Minutes since the model last answered, or None when the transcript has no timestamps."""
    last = last_assistant_time(view)
    return None if last is None else (now - last).total_seconds() / 60


def context_management(options: dict[str, Any], *, cold: bool = False, thinking: bool = True) -> dict[str, Any] | None:
    """The Messages API ``context_management`` body for the stage's options, or None when it asks for none.

    ``clear_thinking`` is what Claude Code sends on every request (``keep: all``, recorded in the
    corpus's requests), so it is sent in every mode, whenever the request has ``thinking`` on (the
    API manages thinking blocks only then); it comes first (the API requires it before other
    edits), and once the cache is cold its ``keep`` becomes ``keep_when_cold`` (Claude Code keeps
    only the last thinking turn after an hour idle). ``clear_tool_uses`` and ``compact`` are sent
    only in modes ``api-native`` and ``both``, when the policy enables them.
    """
    api = api_native_options(options)
    edits: list[dict[str, Any]] = []
    th = api["clear_thinking"]
    if th["enabled"] and thinking:
        keep = th["keep_when_cold"] if cold and th["keep_when_cold"] is not None else th["keep"]
        edits.append({"type": "clear_thinking_20251015",
                      "keep": "all" if keep == "all" else {"type": "thinking_turns", "value": int(keep)}})
    server_side = options.get("mode", "time-based") in ("api-native", "both")
    tu = api["clear_tool_uses"]
    if tu["enabled"] and server_side:
        edit: dict[str, Any] = {"type": "clear_tool_uses_20250919",
                                "trigger": {"type": "input_tokens", "value": tu["trigger"]}}
        if tu["keep"] is not None:
            edit["keep"] = {"type": "tool_uses", "value": tu["keep"]}
        if tu["clear_at_least"] is not None:
            edit["clear_at_least"] = {"type": "input_tokens", "value": tu["clear_at_least"]}
        if tu["exclude_tools"]:
            edit["exclude_tools"] = list(tu["exclude_tools"])
        if tu["clear_tool_inputs"]:
            edit["clear_tool_inputs"] = tu["clear_tool_inputs"] if isinstance(tu["clear_tool_inputs"], bool) \
                else list(tu["clear_tool_inputs"])
        edits.append(edit)
    cp = api["compact"]
    if cp["enabled"] and server_side:
        edit = {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": cp["trigger"]}}
        if cp["instructions"]:
            edit["instructions"] = cp["instructions"]
        if cp["pause_after_compaction"]:
            edit["pause_after_compaction"] = True
        edits.append(edit)
    return {"edits": edits} if edits else None


def betas_for(context_management_body: dict[str, Any] | None) -> list[str]:
    """The ``anthropic-beta`` values a request with this ``context_management`` needs."""
    kinds = {e.get("type") for e in (context_management_body or {}).get("edits", [])}
    out = []
    if kinds & {"clear_tool_uses_20250919", "clear_thinking_20251015"}:
        out.append(CONTEXT_MANAGEMENT_BETA)
    if "compact_20260112" in kinds:
        out.append(COMPACT_BETA)
    return out


class Microcompact(Stage):
    """The microcompact stage; its documentation is the module docstring (``ctxkit stages microcompact``)."""

    name = "microcompact"
    summary = "When the prompt cache is cold, clear old compactable tool results (kept in the store); " \
              "or emit API-native context_management edits."
    options_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "mode": {"enum": list(MODES), "default": "time-based",
                     "description": "time-based: rewrite old results when the cache is cold; api-native: leave the "
                                    "transcript and send context_management edits; both; cached: time-based when "
                                    "cold, else the request deletes old results by cache edits."},
            "gap_minutes": {"type": "number", "exclusiveMinimum": 0, "default": 60,
                            "description": "Minutes since the last assistant message after which the cache is cold."},
            "keep_recent": {"type": "integer", "minimum": 0, "default": 5,
                            "description": "The most recent compactable tool results never cleared."},
            "placeholder": {"type": "string", "minLength": 1, "default": PLACEHOLDER,
                            "description": "What a cleared result's content becomes."},
            "api_native": _API_NATIVE_SCHEMA,
            "cached": {
                "type": "object", "additionalProperties": False,
                "description": "mode cached: the cache edits 'ctxkit view --to anthropic-request' sends "
                               "(see ctxkit.reports.cache_edits).",
                "properties": {
                    "trigger": {"type": "integer", "minimum": 1, "default": 10,
                                "description": "Results of compactable tools, not yet deleted, in the request at "
                                               "which all but the keep_recent newest are deleted server-side."},
                },
            },
        },
    }

    def run(self, t: Transcript, ctx: Context) -> StageResult:
        view = t.view()
        details: dict[str, Any] = {"mode": self.options["mode"]}
        gap = cache_gap_minutes(view, ctx.clock.now())
        # --force is /compact: it never clears a warm cache; only where the transcript cannot tell (no
        # timestamps: a plain message list) does it say that the cache is cold
        cold = gap > self.options["gap_minutes"] if gap is not None else bool(ctx.inputs.force)
        details["gap_minutes"] = None if gap is None else round(gap, 1)
        if self.options["mode"] != "time-based":
            body = context_management(self.options, cold=cold)
            if body:
                details["context_management"] = body
        changes, cleared, replayed, first, unlike = self._plan(t, view, ctx,
                                                                cold and self.options["mode"] != "api-native")
        frozen = self._unlike_note(unlike, details)
        if first is None:
            if self.options["mode"] == "api-native":
                return StageResult(t, self.report(action="nothing-to-do", reason="api-native: the API clears "
                                                  "server-side (see --to anthropic-request)", details=details))
            if self.options["mode"] == "cached" and not cold:
                reason = "cached: the cache is warm, the request deletes old results by cache edits (see --to " \
                         "anthropic-request)"
            elif gap is None and not ctx.inputs.force:
                reason = "the transcript has no timestamps (use --force to clear anyway)"
            elif not cold:
                reason = "the prompt cache is warm"
            else:
                reason = "nothing old enough to clear"
            return StageResult(t, self.report(action="nothing-to-do", reason=reason + frozen, details=details))
        new = replace_blocks(t, changes)
        new, thinking = strip_thinking_after(new, first)
        if not changes and not thinking:  # an earlier stage replayed the clearing; no thinking after it
            return StageResult(t, self.report(action="nothing-to-do", reason="earlier clearing already replayed"
                                              + frozen, details=details))
        new, archive = archive_entries(new, ctx.store, thinking, ctx.timestamp(), "microcompact: thinking after "
                                       "cleared tool results")
        details.update(cleared=cleared, replayed=replayed, thinking_stripped=len(thinking), store=str(ctx.store.root))
        if archive:
            details["thinking_archive"] = archive
        # a threshold crossed at this step: earlier bytes of the view changed on purpose
        details["threshold_crossed"] = bool(cleared)
        reason = f"cleared {len(cleared)} old tool result(s)" if cleared else "replayed earlier clearing"
        if replayed and cleared:
            reason += f", replayed {len(replayed)}"
        return StageResult(new, self.report(action="applied", reason=reason + frozen, details=details))

    def _unlike_note(self, unlike: list[str], details: dict[str, Any]) -> str:
        """The report's note on clearings frozen by earlier runs that this policy would not make (a
        larger ``keep_recent``, a tool no longer compactable): they stay, and ``--fresh`` is the way out."""
        if not unlike:
            return ""
        details["frozen_unlike_policy"] = unlike
        return (f"; {len(unlike)} result(s) stay cleared by an earlier run that this policy would keep "
                f"(keep_recent {self.options['keep_recent']}): decisions are frozen, `compact --fresh` makes "
                "them again")

    def _plan(self, t: Transcript, view: View, ctx: Context, clear_now: bool):
        """Which results to clear now and which earlier clearings to replay: (changes, cleared, replayed, first,
        unlike), ``first`` the view index of the first message whose result this run clears or replays (None:
        none), from which on thinking is dropped; ``unlike`` the results an earlier run cleared (replayed or
        shown cleared in the input) that this policy would keep: among the ``keep_recent`` most recent
        compactable results, or of a tool that is not compactable.

        What counts is the input of the run, not of this stage: a result the input showed in full is
        cleared by this run even when an earlier stage already put the placeholder back, so a second run
        on the same input drops the same thinking as the first one did."""
        scope = decision_scope(t)
        if not clear_now and ctx.store.used and not any(
                isinstance(d, dict) and d.get("state") == "cleared" for d in ctx.store.sessions.get(scope or "default", {}).values()):
            # nothing to clear now and no clearing to replay: the walk below would find nothing (a simulate replay
            # runs this at every request, over every result of the view; the walk's one side effect, marking the
            # store used, is done already)
            return {}, [], [], None, []
        names = view.tool_names()
        shared = view.shared_result_ids()  # (left whole: their originals could not be told apart in the store)
        compactable = ctx.policy.tools.compactable
        placeholder = self.options["placeholder"]
        candidates: list[tuple[int, BlockRef, dict]] = []
        changes: dict[BlockRef, dict] = {}
        cleared: list[str] = []
        replayed: list[str] = []
        first: int | None = None
        order: list[str] = []  # the compactable results in view order, cleared before or not
        frozen: list[tuple[str, bool]] = []  # (tool id, compactable) of each result an earlier run cleared
        for mi, m in enumerate(view.messages):
            for block, ref in zip(written_results(t, m), m.refs, strict=True):
                if block.get("type") != "tool_result" or ref is None:
                    continue
                tid = block.get("tool_use_id", "")
                if tid in shared:
                    continue
                decision = ctx.store.decision(tid, scope=scope) or {}
                if not decision_applies(decision, block.get("content"), ctx.store.digests):
                    decision = {}  # the same tool id in another conversation: not this result's decision
                if decision.get("state") == "cleared":
                    frozen.append((tid, names.get(tid) in compactable))
                    if frozen[-1][1]:
                        order.append(tid)
                    if block.get("content") != decision.get("replacement"):
                        changes[ref] = {**block, "content": decision["replacement"]}
                    elif _shown_in_input(t, ref, block, decision.get("replacement")):
                        continue  # cleared before this run: the turns after it were made with the placeholder
                    # cleared by this run (here, or put back by an earlier step of it): the turns after it
                    # were made with the original bytes
                    replayed.append(tid)
                    first = mi if first is None else min(first, mi)
                    continue
                if names.get(tid) in compactable:
                    candidates.append((mi, ref, block))
                    order.append(tid)
        if clear_now:
            old = candidates[:max(0, len(candidates) - self.options["keep_recent"])]
            for mi, ref, block in old:
                content = block.get("content")
                if content == placeholder or not (has_media(content) or shrinks(content, placeholder)):
                    continue
                tid = block.get("tool_use_id", "")
                with ctx.store.held_for(ref.entry):  # not stored if the line ends up behind a boundary
                    self._record(ctx, scope, tid, original_content(t, ref, block), placeholder, content)
                changes[ref] = {**block, "content": placeholder}
                cleared.append(tid)
                first = mi if first is None else min(first, mi)
        recent = set(order[len(order) - self.options["keep_recent"]:]) if self.options["keep_recent"] else set()
        unlike = [tid for tid, can in frozen if not can or tid in recent]
        return changes, cleared, replayed, first, unlike

    def _record(self, ctx: Context, scope: str, tid: str, content: Any, placeholder: str, seen: Any) -> None:
        """Save the original to the store and freeze the decision in the ledger (``ctxkit expand`` reads it)."""
        earlier = ctx.store.decision(tid, scope=scope) or {}
        if earlier.get("state") == "replaced" and earlier.get("blob"):
            blob, kind = earlier["blob"], earlier.get("original", "text")  # the true original, not the preview
        elif earlier.get("state") == "replaced":
            blob, kind = store_original(ctx.store, earlier.get("empty", ""))
        else:
            blob, kind = store_original(ctx.store, content)
        # the decision is about the true original and about what the model saw before (a preview)
        accepts = sorted(set(earlier.get("accepts") or []) | {content_digest(seen, ctx.store.digests)})
        record = {"state": "cleared", "replacement": placeholder, "blob": blob, "original": kind, "by": self.id,
                  "accepts": accepts}
        if earlier.get("state") == "replaced":
            record["earlier"] = earlier  # tool-result-budget's preview, which it replays at its own place
            if earlier.get("absent"):
                record["absent"] = True  # the original had no content key: still none when restored
        ctx.store.record_decision(tid, record, scope=scope)


def _shown_in_input(t: Transcript, ref: BlockRef, block: dict, replacement: Any) -> bool:
    """Whether the transcript as read (before any stage of this run) already showed ``replacement`` as
    this tool result's content, i.e. the clearing was made by an earlier run."""
    if ref.entry not in t.overrides:
        return True  # the entry is as read (or appended by this run: nothing before it to protect)
    before = t.input_entry(ref.entry)
    if before is None:
        return True
    return tool_outputs.shows_result(t, ref.entry, before, block.get("tool_use_id"), replacement)
