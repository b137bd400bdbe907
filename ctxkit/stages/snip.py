r"""snip: remove whole user turns the model (or you) named by their short ids.

Some turns of a long session are finished and useless: a detour, files read to answer a question
that has been answered. No rule can tell which; the model can. `snip` gives it a way to say so:
every real user message has a short id, the model calls a `snip` tool with the ids of the turns it
wants gone, and the next `ctxkit compact` removes them. You can do the same by hand with
`ctxkit snip --ids`.

A **turn** is a real user message and everything after it up to the next one: the assistant's
replies, its tool calls and their results, harness reminders. A turn goes whole, so a tool call is
never separated from its result. The first user message (the task) and the turn in progress
cannot be snipped. The stage is off in `default`; `claude-code-full` turns it on with
`tag_ids: true`.

## Message ids

Each real user message's id is derived from its uuid the way Claude Code does it: the first 10
hex digits of the uuid, read as a number, written in base 36, first 6 characters
(`d5de957f-5b03-...` gives `bpzcbj`; see `ctxkit.transcript.snip_ids`). The same message always
has the same id; nothing is stored. Plain Anthropic/OpenAI message lists have no uuids: a hash of
the message's line stands in.

With `tag_ids: true`, `ctxkit view` and `ctxkit view --to anthropic-request` show the id at the
end of each real user message (`ctxkit view --tag-ids` shows them whatever the policy says), and
`--to anthropic-request` offers the snip tool in the request's `tools`. The tag is only shown:
the transcript on disk and the token counts are unchanged. Tool-result messages, reminders,
attachments and summaries get no id.

`ctxkit tools snip --json` prints the tool's definition, for an agent that builds its own
requests (`ids`: an array of strings matching `^[0-9a-z]{1,6}$`, at least one; optional
`reason`):

```
{"name": "snip", "description": "Remove earlier turns of this conversation that you no longer need ...",
 "input_schema": {"type": "object", "properties": {"ids": {...}, "reason": {...}}, "required": ["ids"]}}
```

Only snip calls of the current turn are carried out, once each (a Claude Code record remembers
which calls were done, so running `compact` again does not repeat one).

## Before and after

The `multi-prompt` session of the test corpus (four prompts, 32 tool calls; the corpus is not
shipped with ctxkit):

```
$ ctxkit view --tag-ids session.jsonl | grep '\[id:'
{"role":"user","content":"Do part 0 of the review\n[id:v14q8t]"}
{"role":"user","content":"Do part 1 of the review\n[id:6pu43e]"}
{"role":"user","content":"Do part 2 of the review\n[id:8khdxq]"}
{"role":"user","content":"Do part 3 of the review\n[id:bwdk1l]"}
$ ctxkit snip --ids 6pu43e session.jsonl -o snipped.jsonl
snip: applied: snipped 1 turn (6pu43e), freeing 15,885 tokens
```

```
before (70 messages)                                       after (53 messages)
assistant  "Part 0 is done."                               assistant  "Part 0 is done."
user       "Do part 1 of the review\n[id:6pu43e]"          user       "Do part 2 of the review\n[id:8khdxq]"
assistant  "Working on part 1." | tool_use Bash(seq ...)   assistant  "Working on part 2." | tool_use Bash(seq ...)
...        (14 more messages)                              ...
assistant  "Part 1 is done."
user       "Do part 2 of the review\n[id:8khdxq]"
...
```

Asking for the task or the turn in progress is refused (exit code 2, nothing written):

```
$ ctxkit snip --ids v14q8t,bwdk1l session.jsonl
ctxkit: error: cannot snip: [id:v14q8t] is the first user message (the task); it cannot be snipped; [id:bwdk1l] opens the turn in progress; it cannot be snipped
```

An unknown id is refused the same way (`no user message has id 'zzzzzz'`), and so is an id shared
by two messages (a collision of the short ids). When the *model* asks for something impossible the
stage does not fail: it carries out the valid ids and lists the refused ones in the report and as
a warning; if every id is refused the report says so.

## Where the removed messages go

* **Claude Code transcripts**: nothing is deleted. A record is appended:

  ```
  {"type": "ctxkit-record", "record": "snip", "removedUuids": ["7a916636-...", ...],
   "ids": ["6pu43e"], "toolUseIds": [], "timestamp": "..."}
  ```

  Every read of the transcript skips those entries. Surviving entries whose `parentUuid` pointed
  into the removed turn are relinked to their nearest surviving ancestor (a later local command of
  Claude Code 1.0, chained onto a removed caveat, to the line before it, where it was typed), so Claude Code itself,
  which knows nothing of ctxkit records, resumes into the snipped conversation. The entries as
  they were before the relinking are saved in the store behind an `archive` record, and
  `ctxkit expand` undoes the snip completely.
* **Codex rollouts, Gemini CLI recordings**: their history is rewritten as the agent records one (a
  `compacted` line, a `$rewindTo` and the messages kept), appended; `ctxkit expand` takes it out.
  No nudge is written there (they have no reminder message).
* **Anthropic / OpenAI message lists** (and JSON documents) have no room for records: the lines are
  removed, after being saved to the store as one JSON file (keyed by input line number); the report
  names it.
* **OpenCode exports, Gemini CLI checkpoints, Cursor transcripts**: skipped, the report saying why
  (docs/formats.md).

Thinking blocks of assistant turns after the removed range are dropped (their signatures covered
the removed messages) and archived the same way.

## The nudge

The model has to think of snipping. When the view has grown by `nudge_every_tokens` (10,000) since
the last snip, compaction or nudge, the stage appends a reminder at the tail (never in the middle,
so the cached prefix is untouched, and never while a tool call waits for its result). This is the
one case where the stage makes the view longer. On the same session, with
`ctxkit compact --policy claude-code-full`, the report says
`snip: applied: nudged: the context grew by 54,834 tokens [44,460 -> 44,549 tokens]` (the growth is
the estimator's; the count in brackets starts from the usage the API reported) and the tail
gets:

```
<system-reminder>
Context efficiency: the conversation has grown by about 54,834 tokens since the last cleanup. If some earlier turns are finished and no longer needed, call the snip tool with the [id:...] tags of the user messages that open them, to remove those turns (note first anything you will still need from them).
</system-reminder>
```

## Tokens freed, and when it does nothing

The tokens a snip frees count for later stages: the pipeline adds them to what autocompact's
threshold check sees as already freed. The report says `no snip requested` (no ids on the command
line, no snip call in the current turn, no nudge due) or `every requested id was refused` (see
the warnings).
"""
# Over 400 lines: about 130 are the docstring above (the stage's user documentation, printed by
# `ctxkit stages snip`); the code is one stage.
from __future__ import annotations

from typing import Any

from ..errors import UsageError
from ..quoting import quote
from ..transcript.claude_code import chain as claude_code_chain
from ..transcript.claude_code import entries as claude_code_entries
from ..transcript.claude_code import records as claude_code_records
from ..transcript.edits import NewMessage, append_messages, archive_entries, replace_plain_range, strip_thinking_after
from ..transcript.formats import handler
from ..transcript.model import Transcript
from ..transcript.snip_ids import message_ids, parse_ids
from ..transcript.view import PROMPT, SUMMARY, View, ViewMessage
from .base import Context, Stage, StageResult

RECORD_KIND = "snip"
NUDGE_HEAD = "Context efficiency:"
NUDGE_ATTACHMENT = "context_efficiency"


def is_turn_start(m: ViewMessage) -> bool:
    """A real user message (not tool results, not a harness message): where a user turn begins."""
    return m.role == "user" and m.kind == PROMPT and not any(b.get("type") == "tool_result" for b in m.content)


def turn_starts(view: View) -> list[int]:
    return [i for i, m in enumerate(view.messages) if is_turn_start(m)]


def resolve(view: View, ids: list[str]) -> tuple[dict[str, tuple[int, int]], dict[str, str]]:
    """Map ids to the view ranges ``[start, end)`` of their turns; the second dict says why others cannot go."""
    starts = turn_starts(view)
    known = message_ids(view)
    ranges: dict[str, tuple[int, int]] = {}
    refused: dict[str, str] = {}
    for sid in ids:
        where = known.get(sid, [])
        if not where:
            refused[sid] = f"no user message has id {quote(sid)}"
        elif len(where) > 1:
            refused[sid] = f"id {quote(sid)} names {len(where)} messages; snip them by another id"
        elif where[0] == starts[0]:
            refused[sid] = f"[id:{sid}] is the first user message (the task); it cannot be snipped"
        elif where[0] == starts[-1]:
            refused[sid] = f"[id:{sid}] opens the turn in progress; it cannot be snipped"
        else:
            k = starts.index(where[0])
            ranges[sid] = (starts[k], starts[k + 1])
    return ranges, refused


def snip_options(policy: Any) -> dict[str, Any] | None:
    """The options of the policy's enabled snip stage, defaults filled in; None when it has none."""
    spec = policy.stage(Snip.name) if policy is not None else None
    return None if spec is None else {**Snip.defaults(), **dict(spec.options)}


def tags_enabled(policy: Any) -> bool:
    """Whether the policy's snip stage asks for ``[id:...]`` tags (and the snip tool) in views."""
    options = snip_options(policy)
    return bool(options and options["tag_ids"])


def _rewrites_history(t: Transcript) -> bool:
    """Whether a snip of ``t`` is a rewritten history its format appends (Codex, a Gemini CLI recording),
    rather than lines removed (a message list, a JSON document)."""
    return handler(t.format).drop_turns is not None and t.source.document is None


def _records(t: Transcript, kind: str) -> list[tuple[int, dict]]:
    return claude_code_records.records(t, kind) if t.format == "claude-code" else []


class Snip(Stage):
    """The snip stage; its documentation is the module docstring (``ctxkit stages snip``)."""

    name = "snip"

    @staticmethod
    def undo(t: Transcript, store: Any, left: list) -> Transcript:
        """For ``ctxkit expand``: unsnip."""
        return unsnip(t)
    summary = "Remove whole user turns named by short message ids (snip tool or --ids); nudge the model to snip."
    options_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "tag_ids": {"type": "boolean", "default": False,
                        "description": "Show [id:xxxxxx] at the end of each real user message in 'ctxkit view' and "
                                       "'--to anthropic-request', and offer the snip tool there."},
            "tool_name": {"type": "string", "minLength": 1, "default": "snip",
                          "description": "The tool whose calls (in the current turn) are carried out."},
            "nudge": {"type": "boolean", "default": True,
                      "description": "Append a reminder suggesting the snip tool when the context has grown."},
            "nudge_every_tokens": {"type": "integer", "minimum": 1, "default": 10_000,
                                   "description": "Growth since the last snip, compaction or nudge that earns a "
                                                  "nudge."},
        },
    }

    def run(self, t: Transcript, ctx: Context) -> StageResult:
        view = t.view()
        details: dict[str, Any] = {}
        asked: list[str] = []
        cli_ids = parse_ids(list(ctx.inputs.snip_ids)) if ctx.inputs.snip_ids else []
        if cli_ids:
            _, refused = resolve(view, cli_ids)
            if refused:
                raise UsageError("cannot snip: " + "; ".join(refused.values()))
            asked = cli_ids
        calls = self._pending_calls(t, view)
        call_ids = [sid for _, ids in calls for sid in ids if sid not in asked]
        ranges, refused = resolve(view, asked + call_ids)
        if refused:
            details["refused"] = refused
        new = t
        if ranges:
            new, applied = self._apply(t, view, ranges, [tid for tid, _ in calls], ctx)
            details.update(applied)
        elif calls and t.format == "claude-code":
            # remember the calls, so that a refused request is not retried on the next run
            new = t.with_edits(append=[claude_code_entries.record_entry(t, RECORD_KIND, ctx.timestamp(), removedUuids=[],
                                                                ids=[], toolUseIds=[tid for tid, _ in calls])])
        if calls:
            details["tool_calls"] = [tid for tid, _ in calls]
        nudged = False
        if self.options["nudge"] and not ranges and not _rewrites_history(t):  # (no reminder message there)
            new, nudged = self._nudge(new, ctx, details)
        if ranges:
            n = len(ranges)
            reason = f"snipped {n} turn{'s' if n != 1 else ''} ({', '.join(sorted(ranges))}), " \
                     f"freeing {details['tokens_freed']:,} tokens"
            if t.format != "claude-code" and details.get("archive"):
                # a plain message list has no place for a pointer: say where the removed lines are
                reason += f"; the removed lines are in {details['archive']}"
            action = "applied"
        elif nudged:
            action, reason = "applied", f"nudged: the context grew by {details['grown_tokens']:,} tokens"
        elif refused:
            action, reason = "nothing-to-do", "every requested id was refused"
        else:
            action, reason = "nothing-to-do", "no snip requested"
        return StageResult(new, self.report(action=action, reason=reason, details=details,
                                            warnings=[f"snip: {why}" for why in refused.values()]))

    # -- which ids were asked for -----------------------------------------------------------------
    def _pending_calls(self, t: Transcript, view: View) -> list[tuple[str, list[str]]]:
        """Snip tool calls of the current turn not carried out before: (tool_use id, ids)."""
        starts = turn_starts(view)
        done = {tid for _, rec in _records(t, RECORD_KIND) for tid in rec.get("toolUseIds") or []}
        out = []
        for m in view.messages[(starts[-1] if starts else 0):]:
            if m.role != "assistant":
                continue
            for b in m.tool_uses():
                if b.get("name") == self.options["tool_name"] and b.get("id") not in done:
                    args = b.get("input") or {}
                    raw = args.get("ids", args.get("message_ids", [])) if isinstance(args, dict) else []
                    out.append((b.get("id", ""), parse_ids(raw if isinstance(raw, (list, str)) else [])))
        return out

    # -- removing turns ---------------------------------------------------------------------------
    def _apply(self, t: Transcript, view: View, ranges: dict[str, tuple[int, int]], call_ids: list[str],
               ctx: Context) -> tuple[Transcript, dict[str, Any]]:
        msgs = view.messages
        gone = sorted({k for s, e in ranges.values() for k in range(s, e)})
        before = ctx.tokens.count_messages(view.api_messages())
        first = min(s for s, _ in ranges.values())
        if t.format == "claude-code":
            new, originals, removed_uuids = self._apply_claude_code(t, view, ranges)
            new = new.with_edits(append=[claude_code_entries.record_entry(
                t, RECORD_KIND, ctx.timestamp(), removedUuids=removed_uuids, ids=sorted(ranges),
                toolUseIds=call_ids)])
            extra: dict[str, Any] = {"removed_uuids": len(removed_uuids)}
        elif _rewrites_history(t):  # (Codex, Gemini CLI: the history from here on, appended; expand takes it out)
            new, originals = handler(t.format).drop_turns(t, view, sorted(ranges.values()), ctx.timestamp()), {}
            extra = {"rewritten_history": True}
        else:
            entries = sorted({e for k in gone for e in msgs[k].entries})
            originals = {i: t.entry(i) for i in entries}
            new = replace_plain_range(t, entries, None)
            extra = {"removed_lines": [t.line_no(i) for i in entries]}
        new, thinking = strip_thinking_after(new, first)
        new, archive = archive_entries(new, ctx.store, {**thinking, **originals}, ctx.timestamp(),
                                       f"snip {', '.join(sorted(ranges))}")
        after = ctx.tokens.count_messages(new.view().api_messages())
        details = {"snipped": {sid: {"messages": e - s, "first_message": s} for sid, (s, e) in sorted(ranges.items())},
                   "tokens_freed": max(0, before - after), "thinking_stripped": len(thinking),
                   "threshold_crossed": True, **extra}
        if archive:
            details["archive"] = archive
        return new, details

    def _apply_claude_code(self, t: Transcript, view: View,
                           ranges: dict[str, tuple[int, int]]) -> tuple[Transcript, dict[int, dict], list[str]]:
        """Which entries go (whole turns, and the bookkeeping entries between them), relinked survivors."""
        msgs = view.messages
        order, facts = claude_code_chain.active_entries(t)
        pos = {e: k for k, e in enumerate(order)}
        remove: set[int] = set()
        for s, e in ranges.values():
            span = {x for m in msgs[s:e] for x in m.entries}
            lo = min(pos[x] for x in span)
            hi = min((pos[x] for x in msgs[e].entries), default=len(order)) if e < len(msgs) else len(order)
            remove |= span | set(order[lo:max(lo, hi)])
        keep = {x for k, m in enumerate(msgs) if not any(s <= k < e for s, e in ranges.values()) for x in m.entries}
        remove -= keep
        removed_uuids = [t.entry(i)["uuid"] for i in sorted(remove, key=pos.__getitem__) if t.entry(i).get("uuid")]
        gone = set(removed_uuids) | set(facts.get("removed") or ())
        by_uuid = claude_code_chain.uuid_index(t)
        edits: dict[int, dict] = {}
        relinks = facts.get("relinks") or {}
        for i in order:
            entry = t.entry(i)
            parent = entry.get("parentUuid")
            if i in remove or parent not in gone:
                continue
            if relinks.get(i) is not None:  # a later local command of Claude Code 1.0: where it was typed
                parent = t.entry(relinks[i]).get("uuid")
            hops = 0
            while parent in gone and parent in by_uuid and hops < len(by_uuid):
                parent = t.entry(by_uuid[parent]).get("parentUuid")
                hops += 1
            edits[i] = {**entry, "parentUuid": parent if parent not in gone else None}
        boundary = facts.get("boundary")
        if boundary is not None:
            fixed = self._fix_segment(t.entry(boundary), [i for i in facts.get("segment") or [] if i not in remove],
                                      t, gone)
            if fixed is not None:
                edits[boundary] = fixed
        originals = {i: t.entry(i) for i in edits}
        return t.with_edits(replace=edits), originals, removed_uuids

    @staticmethod
    def _fix_segment(boundary: dict, survivors: list[int], t: Transcript, gone: set[str]) -> dict | None:
        """Point a compaction's preserved segment at its surviving ends when a snip removed one of them."""
        meta = boundary.get("compactMetadata") or {}
        seg = meta.get("preservedSegment") or {}
        if not seg or (seg.get("headUuid") not in gone and seg.get("tailUuid") not in gone):
            return None
        new_meta = dict(meta)
        if survivors:
            new_meta["preservedSegment"] = {**seg, "headUuid": t.entry(survivors[0]).get("uuid"),
                                            "tailUuid": t.entry(survivors[-1]).get("uuid")}
        else:
            new_meta.pop("preservedSegment")
        return {**boundary, "compactMetadata": new_meta}

    # -- the nudge --------------------------------------------------------------------------------
    def _nudge(self, t: Transcript, ctx: Context, details: dict[str, Any]) -> tuple[Transcript, bool]:
        view = t.view()
        msgs = view.messages
        if not msgs:
            return t, False
        last = msgs[-1]
        if last.role == "assistant" and any(True for _ in last.tool_uses()):
            return t, False  # a tool call is waiting for its result: nothing may come between them
        grown = ctx.tokens.count_messages([m.api() for m in msgs[self._last_marker(t, view) + 1:]])
        details["grown_tokens"] = grown
        if grown < self.options["nudge_every_tokens"]:
            return t, False
        tool = self.options["tool_name"]
        text = (f"<system-reminder>\n{NUDGE_HEAD} the conversation has grown by about {grown:,} tokens since the "
                f"last cleanup. If some earlier turns are finished and no longer needed, call the {tool} tool with "
                "the [id:...] tags of the user messages that open them, to remove those turns (note first anything "
                "you will still need from them).\n</system-reminder>")
        new = append_messages(t, [NewMessage([text], role="user", attachment={
            "type": NUDGE_ATTACHMENT, "grownTokens": grown, "tool": tool})], ctx.timestamp())
        details["nudge_tokens"] = ctx.tokens.count_text(text)
        return new, True

    def _last_marker(self, t: Transcript, view: View) -> int:
        """Index of the last view message at or before which the context was last cleaned up or nudged."""
        marker = -1
        tool = self.options["tool_name"]
        for i, m in enumerate(view.messages):
            if m.kind == SUMMARY or any(b.get("type") == "text" and NUDGE_HEAD in b.get("text", "")[:80]
                                        for b in m.content):
                marker = i
            elif m.role == "assistant" and any(b.get("name") == tool for b in m.tool_uses()):
                marker = i
        for r, _ in _records(t, RECORD_KIND):
            before = [i for i, m in enumerate(view.messages) if m.entries and max(m.entries) < r]
            if before:
                marker = max(marker, before[-1])
        return marker


def unsnip(t: Transcript, store: Any = None, left: list | None = None) -> Transcript:
    """Undo every snip of a Claude Code transcript (for ``ctxkit expand``): drop the snip records.

    The ``parentUuid`` links a snip relinked come back with
    :func:`ctxkit.transcript.edits.restore_archived` (run it too). Plain formats keep no record: their
    removed lines are in the store file the report named. Idempotent.
    """
    return t.with_edits(remove=[i for i, _ in _records(t, RECORD_KIND)]) if t.format == "claude-code" else t
