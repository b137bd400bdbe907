"""The read-time projection of committed collapse runs (Claude Code transcripts).

Context collapse never rewrites the conversation entries of a Claude Code
transcript. When the ``collapse`` stage commits runs of read/search tool calls
it appends a record::

    {"type": "ctxkit-record", "record": "collapse", "timestamp": ...,
     "runs": [{"key": "toolu_1", "toolUseIds": ["toolu_1", "toolu_2"], "summary": "[Earlier tool calls,
               collapsed: Searched 1 pattern, read 1 file]\\n- Grep ...", "by": "rule"}]}

and every projection of the transcript replays those records: each committed
run (its assistant tool_use messages and their tool_result messages) is shown
as one short user message holding the summary. A later record for the same
``key`` replaces the summary (that is how LLM-written summaries supersede the
rule-based ones). Records before the last compact boundary are not replayed
(the projection only hands over records after it), and a run whose messages no
longer match the view exactly (snipped, edited) is simply shown in full.
Removing the records (``ctxkit expand``) brings every original message back.
"""
from __future__ import annotations

from dataclasses import replace

from .claude_code import records as claude_code_records
from .model import Transcript
from .view import META, View, ViewMessage, normalize

RECORD_KIND = "collapse"
SUMMARY_HEAD = "[Earlier tool calls, collapsed: "
_QUIET_BLOCKS = ("thinking", "redacted_thinking")


def committed_runs(records: list[dict]) -> list[dict]:
    """The committed runs, one per key, each with its latest summary, in order of first commit."""
    latest: dict[str, dict] = {}
    for rec in records:
        for run in rec.get("runs") or []:
            if isinstance(run, dict) and run.get("key") and run.get("toolUseIds"):
                latest[run["key"]] = run
    return list(latest.values())


def run_span(view: View, tool_use_ids: list[str], index: dict[str, tuple[int, int]] | None = None) -> tuple[int, int] | None:
    """The view messages ``[start, end)`` that hold exactly these calls and their results, or None.

    The span must be whole API rounds: assistant messages holding only these tool calls (thinking
    and whitespace aside), each followed by a user message holding only their results.
    """
    index = view.tool_use_index() if index is None else index
    if not tool_use_ids or tool_use_ids[0] not in index:
        return None
    msgs = view.messages
    wanted = set(tool_use_ids)
    start = pos = index[tool_use_ids[0]][0]
    while wanted and pos + 1 < len(msgs):
        calls = round_calls(msgs[pos], msgs[pos + 1])
        if calls is None or not set(calls) <= wanted:
            return None
        wanted -= set(calls)
        pos += 2
    return None if wanted else (start, pos)


def round_calls(assistant: ViewMessage, results: ViewMessage) -> list[str] | None:
    """The tool_use ids of an API round made only of tool calls and their results, else None."""
    if assistant.role != "assistant" or results.role != "user":
        return None
    ids = []
    for b in assistant.content:
        kind = b.get("type")
        if kind == "tool_use":
            ids.append(b.get("id"))
        elif kind == "text" and not b.get("text", "").strip():
            continue
        elif kind not in _QUIET_BLOCKS:
            return None
    if not ids or not all(b.get("type") == "tool_result" for b in results.content):
        return None
    if sorted(b.get("tool_use_id") for b in results.content) != sorted(ids):
        return None
    return ids


def summary_message(text: str, span: list[ViewMessage]) -> ViewMessage:
    """The one user message a collapsed run becomes (it points at every entry it stands for)."""
    entries = sorted({e for m in span for e in m.entries})
    return ViewMessage("user", [{"type": "text", "text": text}], META, [None], entries, None, span[-1].timestamp)


def apply_runs(view: View, runs: list[dict]) -> View:
    """The view with each run shown as its summary message."""
    index = view.tool_use_index()
    spans: list[tuple[int, int, dict]] = []
    notes = list(view.notes)
    for run in runs:
        span = run_span(view, list(run["toolUseIds"]), index)
        if span is None:
            if run["toolUseIds"][0] in index:
                notes.append(f"collapsed run {run['key']} no longer matches the view; shown in full")
            continue
        spans.append((span[0], span[1], run))
    if not spans:
        return view
    msgs = [replace(m, content=list(m.content), refs=list(m.refs), entries=list(m.entries)) for m in view.messages]
    taken: set[int] = set()
    for start, end, run in sorted(spans, key=lambda s: s[0], reverse=True):
        if taken & set(range(start, end)):
            continue
        taken.update(range(start, end))
        msgs[start:end] = [summary_message(str(run.get("summary", "")), msgs[start:end])]
    orphans = list(view.orphans)
    return View(normalize(msgs, notes, orphans), notes, orphans, list(view.unsent))


def project(view: View, records: list[dict], t: Transcript) -> View:
    """Record handler: replay the collapse commits recorded in a Claude Code transcript."""
    return apply_runs(view, committed_runs(records))


claude_code_records.register_record_handler(RECORD_KIND, project)
