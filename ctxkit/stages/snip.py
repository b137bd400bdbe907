"""The snip stage: remove whole user turns named by their short ids (see the class docstring)."""
from __future__ import annotations

from typing import Any

from ..errors import UsageError
from ..quoting import quote
from ..transcript import claude_code
from ..transcript.edit import NewMessage, append_messages, archive_entries, replace_plain_range, strip_thinking_after
from ..transcript.model import Transcript
from ..transcript.snip_ids import message_ids, parse_ids
from ..transcript.view import PROMPT, SUMMARY, View, ViewMessage
from .base import Context, Stage, StageResult, register

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


def _records(t: Transcript, kind: str) -> list[tuple[int, dict]]:
    return claude_code.records(t, kind) if t.format == "claude-code" else []


@register
class Snip(Stage):
    """snip: remove whole user turns the model (or you) named by their short ids.

    Some turns of a long session are finished and useless (a detour, files read
    for a question already answered), but only the model knows which. Snip lets it
    say so. Every real user message has a short id derived from its uuid (shown as
    ``[id:k8f3z1]`` at the end of the message when ``tag_ids`` is on, see
    :mod:`ctxkit.transcript.snip_ids`); the model calls the ``snip`` tool
    (``ctxkit tools snip --json`` prints its definition) with the ids of the turns
    it no longer needs, or you run ``ctxkit snip --ids k8f3z1,aa1bb2``. Each id
    removes its user message and everything after it up to the next real user
    message: assistant replies, tool calls and their results, reminders. Turns go
    whole, so no tool call is ever separated from its result. The first user
    message (the task) and the turn in progress cannot be snipped; asking for them
    (or for an id that does not exist) is a usage error from the command line, and
    a refusal listed in the report when the model asked.

    Where the removed messages go:

    * **Claude Code**: nothing is deleted. A ``snip`` record lists the removed
      uuids; the projection skips them on every read; and surviving entries whose
      ``parentUuid`` pointed into a removed turn are relinked to their nearest
      surviving ancestor, so that Claude Code itself resumes into the snipped view.
      The originals of relinked entries are archived in the store behind an
      ``archive`` record; ``ctxkit expand`` undoes the snip.
    * **anthropic / openai** message lists: the lines are removed after being saved
      to the store as one JSON file; the report gives its path.

    Only snip calls of the current turn are carried out (a Claude Code record
    remembers which calls were done, so running ``compact`` again does not repeat
    one). Thinking blocks of later assistant turns are dropped, since their
    signatures covered the removed messages.

    **Nudge**: when the view has grown by ``nudge_every_tokens`` since the last
    snip, compaction or nudge, a short ``<system-reminder>`` is appended at the
    tail suggesting the snip tool (never while a tool call is waiting for its
    result). This is the one case where the stage makes the view longer.

    Options: ``tag_ids`` (false) show ``[id:...]`` tags in ``ctxkit view`` and
    ``--to anthropic-request`` and offer the snip tool there; ``tool_name``
    (``snip``) the tool whose calls are carried out; ``nudge`` (true);
    ``nudge_every_tokens`` (10000).

    Before (``--ids 1e4kq2``)::

        user       "Fix the failing test"            [id:0k2b8x]
        assistant  tool_use Bash(pytest)  ...  "Fixed."
        user       "Why is the CI slow?"             [id:1e4kq2]
        assistant  tool_use Read(ci.yml)  ...  "It runs twice."
        user       "Now add a docstring"             [id:2m9xz4]
        assistant  ...

    After::

        user       "Fix the failing test"            [id:0k2b8x]
        assistant  tool_use Bash(pytest)  ...  "Fixed."
        user       "Now add a docstring"             [id:2m9xz4]
        assistant  ...
"""

    name = "snip"
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
            new = t.with_edits(append=[claude_code.record_entry(t, RECORD_KIND, ctx.timestamp(), removedUuids=[],
                                                                ids=[], toolUseIds=[tid for tid, _ in calls])])
        if calls:
            details["tool_calls"] = [tid for tid, _ in calls]
        nudged = False
        if self.options["nudge"] and not ranges:
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
            new = new.with_edits(append=[claude_code.record_entry(
                t, RECORD_KIND, ctx.timestamp(), removedUuids=removed_uuids, ids=sorted(ranges),
                toolUseIds=call_ids)])
            extra: dict[str, Any] = {"removed_uuids": len(removed_uuids)}
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
        order, facts = claude_code.active_entries(t)
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
        by_uuid = claude_code.uuid_index(t)
        edits: dict[int, dict] = {}
        for i in order:
            entry = t.entry(i)
            parent = entry.get("parentUuid")
            if i in remove or parent not in gone:
                continue
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


def unsnip(t: Transcript) -> Transcript:
    """Undo every snip of a Claude Code transcript (for ``ctxkit expand``): drop the snip records.

    The ``parentUuid`` links a snip relinked come back with
    :func:`ctxkit.transcript.edit.restore_archived` (run it too). Plain formats keep no record: their
    removed lines are in the store file the report named. Idempotent.
    """
    return t.with_edits(remove=[i for i, _ in _records(t, RECORD_KIND)]) if t.format == "claude-code" else t
