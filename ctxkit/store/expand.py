"""``ctxkit expand``: put back every tool output a stage moved to the store.

Walks every entry of the transcript (not just the view: output behind a
compaction boundary counts too) and restores each tool_result whose content is
a replacement ctxkit recorded in the store's ledger (persisted previews,
microcompact placeholders, empty-output notes). A ``<persisted-output>``
block is restored even without a ledger from the store blob it names. Claude
Code's own ``<persisted-output>`` previews (the agent, not ctxkit, moved those
outputs to the session's ``tool-results/`` folder) stay as they are: expand gives
back what ctxkit took, so its output is byte for byte the transcript compact
read. Asked to (``agent_outputs``, ``ctxkit expand --inline-agent-outputs``), it
inlines them too, from the file of that name in the session's ``tool-results/``
folder next to the transcript.

What expand reads is confined (:mod:`ctxkit.confined`): blobs of the store,
looked up by their content-addressed name, and regular files directly inside
the session's ``tool-results/``; never a path the transcript chose
(``/etc/passwd``, ``/proc/self/environ``), a link, a FIFO or a device. A
block or record naming anything else is left as it is and reported
(:attr:`ExpandReport.refused`).

Which record: a result is restored only when its current content equals the
recorded ``replacement`` exactly. The transcript's own scope
(:func:`ctxkit.store.offload.decision_scope`) is looked up first; when it holds no
matching record (a plain transcript whose first line a compaction rewrote, a
ledger from before scopes), the records of other scopes for that tool id whose
replacement equals the content are used, provided they all lead to the same
original: otherwise the result is ambiguous and left as it is. A restored
original that is itself a recorded replacement (cleared after being persisted,
under another scope) is restored in turn.

What could not be restored is listed in :attr:`ExpandReport.missing` with the
reason: a recorded original gone from the store, a ``<persisted-output>``
whose file is not found, an ambiguous match, or a microcompact placeholder
nothing in the store accounts for, a path expand refuses to read. An
``archive`` record (or a collapse summary line of a plain transcript) whose
blob is gone or refused stays in place and is listed in
:attr:`ExpandReport.records`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, NamedTuple, Sequence

from ..confined import BLOB_NAME, Refused, is_plain_name, read_under
from ..transcript import outputs as tool_outputs
from ..transcript.edits import restore_archived
from ..transcript.formats import handler
from ..transcript.model import HARNESS_ONLY_KEYS, RawLine, Transcript, deep_replace
from .disk import Store
from .offload import CLEARED_PLACEHOLDER, PERSISTED_OPEN, decision_scope, load_original, to_openai_content

#: One stage's undo step: (transcript, store, left) -> transcript.
Undo = Callable[[Transcript, Store, list], Transcript]

_SAVED_TO = re.compile(r"Full output saved to: (\S+)")
_GONE = object()  # load_original's answer when the blob is not in the store
_ABSENT = object()  # a restored original that had no ``content`` key at all
_MAX_CHAIN = 4  # replacements of replacements followed at most this deep

# reasons in ExpandReport.missing
NO_RECORD = "placeholder with no record in the store"
BLOB_GONE = "stored original not found in the store"
FILE_GONE = "<persisted-output> file not found"
REFUSED = "names a file expand does not read (outside the store and the session's tool-results/)"
TOOL_RESULTS = "tool-results"  # the folder Claude Code persists large tool outputs in
AMBIGUOUS = "ambiguous: records of other sessions with different originals"


@dataclass
class ExpandReport:
    restored: list[str] = field(default_factory=list)
    #: how many archived lines (entries a stage rewrote, e.g. ``doctor --fix``'s repairs) were put back
    lines: int = 0
    #: (tool_use_id, reason) of each tool output left unrestored, reasons as the constants above
    missing: list[tuple[str, str]] = field(default_factory=list)
    #: (what named it, path as written, why) of each path expand refused to read
    refused: list[tuple[str, str, str]] = field(default_factory=list)
    #: (record kind, blob as written, why) of each record left in place: its blob gone or refused
    records: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Whether everything a stage took out was put back (else ``ctxkit expand`` exits 1)."""
        return not (self.missing or self.records)

    def missing_by_reason(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for _, reason in self.missing:
            counts[reason] = counts.get(reason, 0) + 1
        return counts


def expand_all(t: Transcript, store: Store, *, search_dirs: list[Path] = (),
               undo: Sequence[Undo] = (), agent_outputs: bool = False) -> tuple[Transcript, ExpandReport]:
    """Undo every stage's removals: entries archived before a rewrite (e.g. thinking stripped), then
    each stage's own records (``undo``: the stages' :meth:`~ctxkit.stages.base.Stage.undo` steps, in
    stage order, which the caller passes in: the store knows no stages), then the tool outputs
    (``expand``). Each step is idempotent. ``agent_outputs``: see :func:`expand`."""
    given = decision_scope(t)
    left: list[tuple[str, str, str | None]] = []  # (record kind, blob, why refused or None: not in the store)
    lines: list[int] = []
    t = restore_archived(t, store, left, lines)
    for _ in range(_MAX_CHAIN):  # a step may bring back another's work (a compaction archived a collapse)
        before, undone = t, []
        for step in undo:
            t = step(t, store, undone)
        if t is before:
            break
    left += undone  # what stays undone is what the last round left
    t, report = expand(t, store, search_dirs=search_dirs, scopes=[given], agent_outputs=agent_outputs)
    # an entry put back exactly as it was read (archived when a run stripped it, then written as read
    # behind a compaction: edits.history_as_read) keeps its line's bytes; one that sets a harness-only
    # field is an edit of that field, kept
    n = t.n_lines
    t = t.without_edits([i for i in t.overrides if i < n and not any(k in t.overrides[i] for k in HARNESS_ONLY_KEYS)
                         and t.overrides[i] == t.input_entry(i)])
    report.lines = len(lines) + sum(isinstance(v, RawLine) for v in t.overrides.values())  # (lines a repair moved)
    report.records = [(kind, blob, why or BLOB_GONE) for kind, blob, why in left]
    report.refused[:0] = [(f"{kind} record", blob, why) for kind, blob, why in left if why]
    return t, report


def afresh(t: Transcript, store: Store, *, search_dirs: list[Path] = (),
           undo: Sequence[Undo] = ()) -> tuple[Transcript, ExpandReport, str | None]:
    """``t`` as ``ctxkit expand`` gives it back (every replacement a stage made put back), and the
    store's decisions about it set aside (:meth:`Store.set_aside`), so that a run on the result decides
    everything again from the original content under the current policy (``compact --fresh``). The
    decisions set aside still restore an output written under them. Returns (transcript, what was
    restored, the scope the decisions went to or None)."""
    scope = decision_scope(t)
    back, report = expand_all(t, store, search_dirs=search_dirs, undo=undo)
    aside = store.set_aside(scope)
    if decision_scope(back) != scope:  # a message list whose first line a compaction had rewritten
        aside = store.set_aside(decision_scope(back)) or aside
    return back, report, aside


def expand(t: Transcript, store: Store, *, search_dirs: list[Path] = (),
           scopes: list[str] = (), agent_outputs: bool = False) -> tuple[Transcript, ExpandReport]:
    """Restore the tool outputs recorded in the store's ledger (and ``<persisted-output>`` blocks that
    name a blob of the store).

    ``agent_outputs``: also inline the agent's own ``<persisted-output>`` previews, from the files of
    the session's ``tool-results/`` folder under one of ``search_dirs`` (the transcript's folder). Off,
    they stay as the agent wrote them: ctxkit did not take them out, so giving back what ctxkit took
    leaves them alone (the output is byte for byte the transcript compact read).

    ``scopes``: ledger scopes to prefer after the transcript's own (e.g. the scope of the transcript
    as it was before archived lines were put back)."""
    report = ExpandReport()
    own = list(dict.fromkeys([decision_scope(t), *scopes]))
    first_session = own[0] if t.format == "claude-code" else None
    h = handler(t.format)
    edits: dict[int, dict] = {}
    put_back: list[tuple[str, Any, Any]] = []  # (call id, output as it was, as restored): for their copies
    holders: list[int] = []  # the entries holding copies of outputs (Gemini CLI's function-response records)
    for i in t.live_indexes():
        # read once and let go: a parsed copy of every line would be kept (twice the file, and more)
        # while only the entries restored here are needed again (``ctxkit expand`` streams)
        entry = t.peek(i)
        if t.format == "openai":
            if entry.get("role") == "tool":
                where = _Where(store, search_dirs, (), agent_outputs)
                restored = _restore(entry.get("tool_call_id", ""), entry.get("content"), own, where, report)
                if restored is not _GONE:
                    edits[i] = _with_content(entry, restored, to_openai_content)
            continue
        if h.tool_outputs is not None:
            new_entry = entry
            for k, (tid, _, raw) in enumerate(tool_outputs.slots(t, i, entry)):
                restored = _restore(tid, tool_outputs.shown(t.format, raw), own, _Where(store, search_dirs, (),
                                                                                         agent_outputs), report)
                if restored is not _GONE and restored is not _ABSENT:
                    new_entry = tool_outputs.put_back(t, i, new_entry, k, restored)
                    put_back.append((tid, raw, restored))
            if new_entry is not entry:
                edits[i] = new_entry
            if tool_outputs.copies(t.format, entry):
                holders.append(i)
            continue
        container: Any = entry
        for key in h.content_path:
            container = container.get(key) if isinstance(container, dict) else None
        if not isinstance(container, list):
            continue
        # Claude Code keeps a session's persisted outputs in <its id>/tool-results/ beside the transcript
        where = _Where(store, search_dirs, tuple(dict.fromkeys(
            s for s in (entry.get("sessionId"), first_session) if isinstance(s, str) and is_plain_name(s))),
            agent_outputs)
        new_entry = entry
        for k, block in enumerate(container):
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                continue
            if not isinstance(block.get("tool_use_id", ""), str):
                continue  # (a line whose shape is not checked, a request record's blob: no id of a decision)
            restored = _restore(block.get("tool_use_id", ""), block.get("content"), own, where, report)
            if restored is not _GONE:
                new_entry = deep_replace(new_entry, [*h.content_path, k], _with_content(block, restored))
        if new_entry is not entry:
            edits[i] = new_entry
    _put_back_copies(t, edits, holders, put_back)
    return t.with_edits(replace=edits), report


def _put_back_copies(t: Transcript, edits: dict[int, dict], holders: list[int],
                     put_back: list[tuple[str, Any, Any]]) -> None:
    """Each copy of an output put back (a Gemini CLI function-response record), as it was: where the copy
    is what the output was before (ctxkit wrote the replacement in both places)."""
    if not put_back:
        return
    by_call: dict[str, list[tuple[Any, Any]]] = {}
    for tid, raw, restored in put_back:
        by_call.setdefault(tid, []).append((raw, restored))
    for j in holders:
        entry = edits.get(j) or t.peek(j)
        new = entry
        for cid in tool_outputs.copies(t.format, entry):
            for raw, restored in by_call.get(cid, ()):
                new = tool_outputs.mirrored(t.format, new, cid, raw, restored)
        if new is not entry:
            edits[j] = new


def original_of(store: Store, tool_use_id: str, content: Any, *, scopes: Sequence[str],
                search_dirs: Sequence[Path] = (), sessions: Sequence[str] = ()) -> Any:
    """The original of one tool result whose ``content`` is a replacement (a microcompact placeholder,
    a ``<persisted-output>`` preview), found as ``ctxkit expand`` finds it; None when ``content`` is
    not one or its original is gone. For readers that want the words the model no longer sees (the
    offline summary quotes a cleared error from here: the agent's own persisted outputs included)."""
    report = ExpandReport()
    where = _Where(store, list(search_dirs), tuple(s for s in sessions if is_plain_name(s)), True)
    restored = _restore(tool_use_id, content, list(scopes), where, report)
    return None if restored is _GONE or restored is _ABSENT else restored


def _with_content(container: dict, original: Any, convert=lambda c: c) -> dict:
    """``container`` (a tool_result block, an OpenAI ``tool`` message) with its original content back:
    in place of the replacement, or no ``content`` key at all when the original had none."""
    if original is _ABSENT:
        return {k: v for k, v in container.items() if k != "content"}
    return {**container, "content": convert(original)}


class _Where(NamedTuple):
    """Where a tool output may be read from: the store, and ``<dir>/<session>/tool-results/`` or
    ``<dir>/tool-results/`` for each of ``dirs`` (the transcript's folder)."""

    store: Store
    dirs: list[Path] | tuple[Path, ...]
    sessions: tuple[str, ...]
    #: whether the agent's own persisted outputs (``tool-results/``) are read, or left as previews
    agent_outputs: bool = False


def _restore(tid: str, content: Any, own: list[str], where: _Where, report: ExpandReport) -> Any:
    """The original of one tool result, or ``_GONE`` when there is nothing to restore (recording why
    in ``report.missing`` when the content is a replacement ctxkit wrote)."""
    store = where.store
    current, restored, problem = content, False, None
    for _ in range(_MAX_CHAIN):
        record, problem = _lookup(store, tid, current, own) if tid else (None, None)
        if record is None:
            break
        try:
            original = load_original(store, record, _GONE) if record.get("blob") else record.get("empty", "")
        except Refused as exc:
            report.refused.append((f"tool result {tid or '?'}", exc.path, exc.reason))
            problem = REFUSED
            break
        if original is _GONE:
            problem = BLOB_GONE
            break
        current, restored = (_ABSENT if record.get("absent") else original), True
    # not in the ledger: a <persisted-output> whose file we may read, or a placeholder nothing explains;
    # or, when asked, the agent's own preview a record gave back (ctxkit cleared it after the agent persisted it)
    text = current if isinstance(current, str) else None
    m = _SAVED_TO.search(text) if text and text.lstrip().startswith(PERSISTED_OPEN) else None
    agents = m is not None and not _is_blob_path(m.group(1))
    if not restored or (agents and where.agent_outputs):
        if agents and not where.agent_outputs:
            pass  # the agent's own: not ctxkit's to put back unless asked
        elif m:
            try:
                data = _read_persisted(m.group(1), where)
            except Refused as exc:
                report.refused.append((f"tool result {tid or '?'}", exc.path, exc.reason))
                problem = problem or REFUSED
            else:
                if data is not None:
                    current, restored = data.decode("utf-8", errors="replace"), True
                else:
                    problem = problem or FILE_GONE
        elif text == CLEARED_PLACEHOLDER:
            problem = problem or NO_RECORD
    if problem:
        report.missing.append((tid, problem))  # (after a partial restore too: the first step stays)
    if not restored:
        return _GONE
    report.restored.append(tid)
    return current


def _is_blob_path(path_text: str) -> bool:
    return bool(BLOB_NAME.fullmatch(path_text.replace("\\", "/").split("/")[-1]))


def _read_persisted(path_text: str, where: _Where) -> bytes | None:
    """The bytes of the file a ``<persisted-output>`` block names, None when it is not found.

    Two kinds of name are honoured, and only by their last component: a store blob (ctxkit's own
    previews), looked up in the store; and ``.../tool-results/NAME`` (Claude Code's), looked up as
    ``NAME`` in the session's own ``tool-results/`` folder. Anything else raises :class:`Refused`."""
    parts = path_text.replace("\\", "/").split("/")
    name = parts[-1]
    if BLOB_NAME.fullmatch(name):
        return where.store.fetch_blob(path_text)
    if len(parts) < 2 or parts[-2] != TOOL_RESULTS or ".." in parts or not is_plain_name(name):
        raise Refused(path_text, "neither a blob of the store nor a file of the session's tool-results/ folder")
    for folder in where.dirs:
        for sub in [*([sid, TOOL_RESULTS] for sid in where.sessions), [TOOL_RESULTS]]:
            data = read_under(Path(folder), [*sub, name], shown=path_text)
            if data is not None:
                return data
    return None


def _lookup(store: Store, tid: str, content: Any, own: list[str]) -> tuple[dict | None, str | None]:
    """The record whose replacement ``content`` is: (record, None), (None, None) when none is, or
    (None, reason) when records of other scopes match with different originals."""
    for scope in own:
        record = store.decision(tid, scope=scope)
        if _matches(record, content):
            return record, None
    others = [r for scope, r in store.decisions_for(tid) if scope not in own and _matches(r, content)]
    if not others:
        return None, None
    if len({_original_key(r) for r in others}) > 1:
        return None, AMBIGUOUS
    return others[0], None


def _matches(record: dict | None, content: Any) -> bool:
    return bool(record) and record.get("state") in ("replaced", "cleared") and content == record.get("replacement")


def _original_key(record: dict) -> tuple[str, str]:
    """What identifies a record's original: its blob's name (named by hash: the store may have moved),
    or the empty content a note stands for."""
    blob = record.get("blob") or ""
    return (Path(blob).name, "") if blob else ("", repr(record.get("empty", "")))
