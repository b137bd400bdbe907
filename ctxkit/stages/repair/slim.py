r"""slim: move what the agent reads on `--resume` and never sends again into the store.

A long Claude Code session is mostly bytes the model never sees again: the harness's own copy of each
tool's output (`toolUseResult`, often as large as the output itself: 35% of the largest public
session), `file-history-snapshot` lines, and the whole history behind the last compact boundary,
which the agent parses on every `--resume` (a 100 MB session takes minutes) and never sends. `slim`
(`ctxkit doctor --fix --slim`) moves them into the store, so the agent reads a file a fraction of the
size; the view, what the model is sent next, does not change by a byte:

- `toolUseResult` is left out of every line that has one;
- a `file-history-snapshot` line keeps its message id, its tracked files are moved (`/rewind` can no
  longer restore files from before the slim: run `ctxkit expand` first to get them back);
- a line behind the last compact boundary that the view does not use (a kept segment of a partial
  compaction stays) keeps its routing fields (`uuid`, `parentUuid`, `type`...) and a short note in place
  of its content. Lines under `min_bytes` are left as they are.

Outputs too large for the context are the `tool-result-budget` stage's (`ctxkit compact`): they are in
the view, and slim changes nothing the model sees.

## Nothing is lost

Every line slim rewrites is archived in the store, keyed by its line number, behind an `archive`
record: `ctxkit expand` gives the input back byte for byte. Claude Code transcripts only.
"""
from __future__ import annotations

from typing import Any, ClassVar

import orjson

from ...transcript.claude_code.chain import active_entries
from ...transcript.edits import archive_entries
from ...transcript.lineindex import BAD
from ...transcript.model import DROPPED, HARNESS_ONLY_KEYS, Transcript
from ..base import Context, Stage, StageResult

#: what a line behind the last compact boundary holds in place of its content
MOVED = "[moved to the store by ctxkit doctor --slim: the agent does not send it again; ctxkit expand puts it back]"
#: the fields a slimmed line keeps: what a reader of the file routes on
_ROUTING = ("parentUuid", "logicalParentUuid", "isSidechain", "userType", "cwd", "sessionId", "version", "gitBranch",
            "agentId", "slug", "type", "subtype", "uuid", "timestamp", "isMeta", "isCompactSummary", "requestId",
            "toolUseID", "parentToolUseID", "messageId", "isSnapshotUpdate")
_BEHIND_TYPES = ("user", "assistant", "progress", "attachment")
_HARNESS_MARKS = tuple(f'"{k}":'.encode() for k in HARNESS_ONLY_KEYS)


#: why slim rewrites a line (the keys of :func:`slim_plan`'s values)
BEHIND, SNAPSHOT, COPY = "behind-boundary", "file-history-snapshot", "tool-use-result"


def _selected(t: Transcript, min_bytes: int):
    """The lines slim rewrites: (entry index, why, the harness-only fields its line holds)."""
    if t.format != "claude-code":
        return
    order, facts = active_entries(t)
    used = set(order) | set(facts.get("segment") or [])
    boundary = facts.get("boundary")
    idx, flags = t.lines, t.lines.flags
    for i in range(t.n_lines):
        if flags[i] & BAD or i in t.overrides:
            continue
        typ = idx.type(i)
        if typ not in _BEHIND_TYPES and typ != "file-history-snapshot":
            continue
        start, size = idx.span(i)
        raw = t.source.read_at(start, size)
        harness = tuple(k for k, mark in zip(HARNESS_ONLY_KEYS, _HARNESS_MARKS, strict=True) if mark in raw)
        if boundary is not None and i < boundary and i not in used and typ in _BEHIND_TYPES:
            if size >= min_bytes:
                yield i, BEHIND, harness
        elif typ == "file-history-snapshot":
            if size >= min_bytes:
                yield i, SNAPSHOT, harness
        elif harness:
            yield i, COPY, harness


def slim_plan(t: Transcript, min_bytes: int = 512) -> dict[int, tuple[str, dict]]:
    """The lines ``slim`` rewrites: entry index -> (why: :data:`BEHIND`, :data:`SNAPSHOT` or :data:`COPY`,
    the entry as written: harness-only fields set to :data:`~ctxkit.transcript.model.DROPPED` are left
    out). Claude Code transcripts only."""
    out: dict[int, tuple[str, dict]] = {}
    for i, why, harness in _selected(t, min_bytes):
        d = t.peek(i)
        dropped = dict.fromkeys(harness, DROPPED)
        out[i] = why, ({**_stub(d), **dropped} if why == BEHIND else _snapshot_stub(d) if why == SNAPSHOT
                       else {**d, **dropped})
    return out


#: about what a line behind the boundary keeps besides its uuid, parent and type (its envelope and a note)
_STUB_REST = 400


def slim_estimate(t: Transcript, min_bytes: int = 512) -> dict[str, tuple[int, int, int | None]]:
    """What slim would save, without building what it writes for the history behind the boundary (most of
    a long session: its lines are not parsed, their stubs' size is estimated): why -> (lines, bytes about,
    first line index)."""
    idx = t.lines
    out: dict[str, list] = {}
    for i, why, harness in _selected(t, min_bytes):
        size = idx.span(i)[1]
        if why == BEHIND:
            kept = len(orjson.dumps({"parentUuid": idx.parents[i], "uuid": idx.uuids[i], "type": idx.type(i)}))
            saved = max(0, size - kept - _STUB_REST)
        else:
            d = t.peek(i)
            entry = _snapshot_stub(d) if why == SNAPSHOT else {**d, **dict.fromkeys(harness, DROPPED)}
            saved = saved_bytes(t, i, entry)
        row = out.setdefault(why, [0, 0, i])
        row[0] += 1
        row[1] += saved
    return {k: (v[0], v[1], v[2]) for k, v in out.items()}


def saved_bytes(t: Transcript, i: int, entry: dict) -> int:
    """How many bytes line ``i`` loses when written as ``entry`` (a :func:`slim_plan` value)."""
    written = len(orjson.dumps({k: v for k, v in entry.items() if v is not DROPPED})) + 1
    return max(0, t.lines.span(i)[1] - written)


def _stub(d: dict) -> dict:
    out = {k: d[k] for k in _ROUTING if k in d}
    msg = d.get("message")
    if isinstance(msg, dict):
        kept = {k: msg[k] for k in ("id", "type", "role", "model") if k in msg}
        out["message"] = {**kept, "content": [{"type": "text", "text": MOVED}]}
    data = d.get("data")
    if isinstance(data, dict):
        out["data"] = {k: data[k] for k in ("type",) if k in data}
    att = d.get("attachment")
    if isinstance(att, dict):
        out["attachment"] = {k: att[k] for k in ("type",) if k in att}
    return out


def _snapshot_stub(d: dict) -> dict:
    out = {k: d[k] for k in _ROUTING if k in d}
    snap = d.get("snapshot")
    if isinstance(snap, dict):
        out["snapshot"] = {**{k: snap[k] for k in ("messageId", "timestamp") if k in snap}, "trackedFileBackups": {}}
    return out


class Slim(Stage):
    name = "slim"
    summary = "Move what the agent never sends again (toolUseResult copies, snapshots, history behind the last " \
              "compact boundary) into the store (ctxkit doctor --fix --slim)."
    options_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "min_bytes": {"type": "integer", "minimum": 0, "default": 512,
                          "description": "Lines smaller than this are left as they are (not worth a record)."},
        },
        "additionalProperties": False,
    }

    def run(self, transcript: Transcript, ctx: Context) -> StageResult:
        if transcript.format != "claude-code":
            return StageResult(transcript, self.report(action="skipped", reason="slim needs a Claude Code transcript"))
        plan = slim_plan(transcript, self.options["min_bytes"])
        if not plan:
            return StageResult(transcript, self.report(action="nothing-to-do"))
        originals = {i: transcript.full_entry(i) for i in plan}
        new = transcript.with_edits(replace={i: entry for i, (_, entry) in plan.items()})
        new, _ = archive_entries(new, ctx.store, originals, ctx.timestamp(), "slim: what the agent never sends "
                                 "again, moved to the store", by_line=True)
        return StageResult(new, self.report(action="applied", reason=f"moved {len(plan)} line(s) to the store",
                                            details={"lines": len(plan)}))
