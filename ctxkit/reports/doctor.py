"""``ctxkit doctor``: what in a session would make the agent's next request fail, or its resume fail or crawl.

Each finding names the 1-based line where the breakage is, the problem, what the API (or the agent)
would answer, and the fix ``doctor --fix`` makes. The rules and limits, with the API's own texts,
are rows of one table (:mod:`ctxkit.api_rules`); this module finds what breaks them:

- on the view (the messages the agent sends next, :meth:`ctxkit.transcript.model.Transcript.view`):
  what the projection had to repair the way Claude Code does on resume (an unanswered tool_use, a
  result answering nothing), and what neither repairs (images and PDFs over the limits, empty text,
  thinking blocks that will not verify, duplicate tool_use ids, a view too long to compact);
- on the file (Claude Code sessions): lines the agent cannot read, ``parentUuid`` links to no line or
  in a loop, branches left by a rewind (a note), and bloat: bytes the agent reads on ``--resume`` and
  never sends (harness-only ``toolUseResult`` copies, ``file-history-snapshot`` lines, history behind
  the last compact boundary; what ``--slim`` would move to the store).

Severity ``error`` findings make ``ctxkit doctor`` exit 1; notes are reported only. Nothing here changes
the transcript: the repairs are stages (:mod:`ctxkit.stages.repair`).
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..api_rules import Rule, limits, rule
from ..errors import TranscriptError
from ..media import decode_base64, image_size, pdf_pages
from ..transcript.jsonl import parse_line
from ..transcript.lineindex import BAD
from ..transcript.model import HARNESS_ONLY_KEYS, Transcript
from ..transcript.shapes import problem as shape_problem
from ..transcript.view import BlockRef, View, ViewMessage

#: the placeholder the people who shared a session put in place of a signature (public corpora): not a
#: signature that was cut short, and not one ctxkit can verify either way (docs/doctor.md)
_REDACTED_PREFIX = "[REDACTED"
_THINKING = ("thinking", "redacted_thinking")


@dataclass(frozen=True)
class Finding:
    """One problem, at the 1-based line where it is (0: the session as a whole)."""

    line: int
    rule: str
    severity: str  # "error" (the next request or the resume fails) | "note"
    problem: str
    api_error: str
    fix: str

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "problem": self.problem, "api_error": self.api_error, "fix": self.fix,
                "rule": self.rule, "severity": self.severity}


@dataclass
class Diagnosis:
    """Every finding of one session, in line order, and the bytes ``--slim`` would move to the store."""

    findings: list[Finding]
    size: int
    slim_bytes: int = 0
    tool_ids: dict[str, list[str]] = field(default_factory=dict)  # rule id -> tool ids it named (for --fix)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    def to_json(self) -> dict[str, Any]:
        return {"findings": [f.to_json() for f in self.findings], "bytes": self.size,
                "slim_would_save": self.slim_bytes}


def _finding(r: Rule, line: int, **values: Any) -> Finding:
    return Finding(line, r.id, r.severity, r.render("problem", **values), r.render("api_error", **values),
                   r.render("fix", **values))


def diagnose(t: Transcript, *, view_tokens: int | None = None, context_window: int | None = None,
             effective_window: int | None = None) -> Diagnosis:
    """Every finding of transcript ``t`` (read with ``check_pairing=False``, ``on_bad_line="skip"``).

    ``view_tokens`` and the windows, when given, check that the agent can still send or compact the view."""
    found: list[Finding] = []
    view = t.view()
    found += _bad_lines(t)
    found += _pairing(t, view)
    found += _blocks(t, view)
    found += _limits(t, view)
    if view_tokens is not None and context_window is not None and effective_window is not None \
            and view_tokens > effective_window:
        last = _last_line(t, view)
        found.append(_finding(rule("prompt-too-long"), last, tokens=f"{view_tokens:,}", limit=f"{effective_window:,}",
                              window=f"{context_window:,}"))
    slim = 0
    if t.format == "claude-code":
        found += _chain(t, view)
        bloat, slim = _bloat(t, view)
        found += bloat
    found.sort(key=lambda f: (f.line, f.severity != "error"))
    return Diagnosis(found, t.lines.end, slim)


def _last_line(t: Transcript, view: View) -> int:
    for m in reversed(view.messages):
        for i in reversed(m.entries):
            if t.line_no(i):
                return t.line_no(i)
    return t.n_lines


def _line(t: Transcript, ref: BlockRef | None, m: ViewMessage | None = None) -> int:
    if ref is not None:
        return t.line_no(ref.entry)
    if m is not None and m.entries:
        return t.line_no(m.entries[0])
    return 0


# -- lines the agent cannot read ---------------------------------------------------------------------
def _bad_lines(t: Transcript) -> Iterator[Finding]:
    flags = t.lines.flags
    r = rule("unparseable-line")
    for i in range(t.n_lines):
        if not flags[i] & BAD:
            continue
        raw, had_newline = t.raw_line(i)
        if not raw.strip():
            continue  # a blank line: every reader skips it
        try:
            why = shape_problem(t.format, parse_line(t.source.name, i + 1, raw, had_newline)) or "unreadable"
        except TranscriptError as exc:
            why = exc.message.split(": ", 2)[-1] if exc.message.startswith(t.source.name) else exc.message
        yield _finding(r, i + 1, why=why)


# -- tool_use / tool_result pairing --------------------------------------------------------------------
def _convo(view: View) -> list[ViewMessage]:
    """The messages as the API numbers them (``messages.N``): mid-conversation system ones folded away."""
    return [m for m in view.messages if m.role != "system"]


def _pairing(t: Transcript, view: View) -> Iterator[Finding]:
    convo = _convo(view)
    uses: dict[str, tuple[int, BlockRef | None]] = {}  # tool_use id -> (message, ref)
    first_line: dict[str, int] = {}
    for k, m in enumerate(convo):
        if m.role != "assistant":
            continue
        for b, ref in zip(m.content, m.refs, strict=False):
            if b.get("type") != "tool_use":
                continue
            tid = b.get("id")
            uses.setdefault(tid, (k, ref))
            line = _line(t, ref, m)
            if tid in first_line and first_line[tid] != line:
                yield _finding(rule("duplicate-tool-use-id"), line, ids=tid, first=first_line[tid], message=k,
                               block=m.content.index(b))
            first_line.setdefault(tid, line)
    # what the projection answered for an unanswered call, the way Claude Code does on resume: a result
    # with no line of its own behind it
    for m in convo:
        if m.role != "user":
            continue
        for b, ref in zip(m.content, m.refs, strict=False):
            if b.get("type") == "tool_result" and ref is None and b.get("tool_use_id") in uses:
                tid = b["tool_use_id"]
                at, use_ref = uses[tid]
                yield _finding(rule("orphan-tool-use"), _line(t, use_ref, convo[at]), ids=tid, message=at)
    # an assistant message followed by another: its calls are not answered (the API merges the two)
    for k, m in enumerate(convo[:-1]):
        nxt = convo[k + 1]
        ids = [b.get("id") for b in m.content if b.get("type") == "tool_use"]
        if m.role == "assistant" and nxt.role == "assistant" and ids:
            yield _finding(rule("consecutive-assistant"), _line(t, None, nxt), ids=", ".join(ids), message=k)
    # a turn cut off at the very end: the agent answers it as interrupted when it resumes (a note)
    if convo and convo[-1].role == "assistant":
        ids = [b.get("id") for b in convo[-1].tool_uses()]
        if ids:
            tail = convo[-1]
            line = _line(t, next((r for b, r in zip(tail.content, tail.refs, strict=False)
                                  if b.get("type") == "tool_use"), None), tail)
            yield Finding(line, "interrupted-turn", "note",
                          f"the session ends with tool_use {', '.join(ids)} unanswered (a turn in progress, or cut "
                          "off at the end)", "", "none needed: the agent answers it as interrupted when it resumes")
    seen_lines: set[tuple[int, str]] = set()
    for entry, tid in view.orphans:
        key = (entry, tid)
        if key in seen_lines:
            continue
        seen_lines.add(key)
        yield _finding(rule("orphan-tool-result"), t.line_no(entry), ids=tid, message="?", block="?")
    if t.format == "claude-code":
        yield from _misplaced_results(t, view)


def _misplaced_results(t: Transcript, view: View) -> Iterator[Finding]:
    """A user entry whose tool_result comes after its text (the projection moves results first)."""
    for m in view.messages:
        if m.role != "user":
            continue
        for i in dict.fromkeys(m.entries):
            if i >= t.n_lines:
                continue
            content = (t.entry(i).get("message") or {}).get("content")
            if not isinstance(content, list):
                continue
            other = False
            for b in content:
                if not isinstance(b, dict):
                    continue
                if b.get("type") == "tool_result":
                    if other:
                        yield _finding(rule("misplaced-tool-result"), i + 1, ids=b.get("tool_use_id"), message="?")
                        break
                else:
                    other = True


# -- content blocks ----------------------------------------------------------------------------------
def _inner_blocks(b: dict) -> Iterator[tuple[int | None, dict]]:
    """A block, and the blocks of a tool_result's content (with their index in it)."""
    yield None, b
    if b.get("type") == "tool_result" and isinstance(b.get("content"), list):
        for j, inner in enumerate(b["content"]):
            if isinstance(inner, dict):
                yield j, inner


def _blocks(t: Transcript, view: View) -> Iterator[Finding]:
    convo = _convo(view)
    current = _current_model(t, convo)
    for k, m in enumerate(convo):
        for bi, (b, ref) in enumerate(zip(m.content, m.refs, strict=False)):
            line = _line(t, ref, m)
            for _, inner in _inner_blocks(b):
                typ = inner.get("type")
                if typ == "text" and not (m.role == "assistant"):
                    text = inner.get("text")
                    if text == "":
                        yield _finding(rule("empty-text"), line, message=k, block=bi)
                    elif isinstance(text, str) and not text.strip():
                        yield _finding(rule("whitespace-text"), line, message=k, block=bi)
                elif typ in _THINKING and m.role != "assistant":
                    yield _finding(rule("thinking-out-of-place"), line, type=typ, role=m.role, message=k, block=bi)
            if m.role == "assistant" and b.get("type") == "thinking":
                sig = b.get("signature")
                if not isinstance(sig, str) or not sig:
                    yield _finding(rule("thinking-signature-missing"), line, message=k, block=bi)
                    continue
                model = _model_of(t, ref)
                if current and model and model != current and not model.startswith("<"):
                    yield _finding(rule("thinking-model-changed"), line, model=model, current=current, message=k,
                                   block=bi)
    if convo and convo[-1].role == "assistant":
        texts = [(b, r) for b, r in zip(convo[-1].content, convo[-1].refs, strict=False) if b.get("type") == "text"]
        if texts and isinstance(texts[-1][0].get("text"), str) and texts[-1][0]["text"] != texts[-1][0]["text"].rstrip() \
                and convo[-1].content[-1] is texts[-1][0]:
            yield _finding(rule("final-trailing-whitespace"), _line(t, texts[-1][1], convo[-1]))


def _model_of(t: Transcript, ref: BlockRef | None) -> str | None:
    if ref is None or t.format != "claude-code":
        return None
    msg = t.entry(ref.entry).get("message")
    model = msg.get("model") if isinstance(msg, dict) else None
    return model if isinstance(model, str) else None


def _current_model(t: Transcript, convo: list[ViewMessage]) -> str | None:
    """The model the session goes on with: the last assistant message's."""
    for m in reversed(convo):
        if m.role == "assistant":
            for ref in m.refs:
                model = _model_of(t, ref)
                if model and not model.startswith("<"):
                    return model
    return None


# -- the limits of the table -------------------------------------------------------------------------
@dataclass
class _Measured:
    line: int
    message: int
    block: int
    kind: str  # the block type measured: image, document, thinking
    values: dict[str, Any]


def _measure(t: Transcript, view: View) -> tuple[list[_Measured], dict[str, int]]:
    """Every image, document and thinking block of the view, measured; and the whole request's counts."""
    out: list[_Measured] = []
    images = 0
    for k, m in enumerate(_convo(view)):
        for bi, (b, ref) in enumerate(zip(m.content, m.refs, strict=False)):
            line = _line(t, ref, m)
            for _, inner in _inner_blocks(b):
                typ = inner.get("type")
                if typ == "image":
                    images += 1
                    out.append(_Measured(line, k, bi, "image", _media_values(inner, image=True)))
                elif typ == "document":
                    out.append(_Measured(line, k, bi, "document", _media_values(inner, image=False)))
                elif typ == "thinking" and m.role == "assistant":
                    sig = inner.get("signature")
                    if isinstance(sig, str) and sig and not sig.startswith(_REDACTED_PREFIX):
                        out.append(_Measured(line, k, bi, "thinking", {"signature_chars": len(sig)}))
    return out, {"images_in_request": images}


def _media_values(block: dict, *, image: bool) -> dict[str, Any]:
    source = block.get("source")
    if not isinstance(source, dict) or source.get("type") != "base64" or not isinstance(source.get("data"), str):
        return {}  # a URL or a file id: the API fetches it, ctxkit cannot measure it
    data = source["data"]
    values: dict[str, Any] = {"base64_bytes": len(data)}
    raw = decode_base64(data)
    if raw is None:
        return values
    if image:
        size = image_size(raw)
        if size is not None:
            values.update(width=size[0], height=size[1], max_side=max(size))
    elif source.get("media_type") == "application/pdf":
        pages = pdf_pages(raw)
        if pages is not None:
            values["pdf_pages"] = pages
    return values


def _limits(t: Transcript, view: View) -> Iterator[Finding]:
    measured, request = _measure(t, view)
    for lim in limits():
        if lim.when is not None and not request.get(lim.when["measure"], 0) > lim.when["over"]:
            continue
        if lim.measure in request:
            value = request[lim.measure]
            if lim.exceeded(value) and lim.once:
                last = next((x for x in reversed(measured) if x.kind == lim.block), None)
                yield _finding(lim, last.line if last else 0, value=value, message=last.message if last else "?")
            continue
        for x in measured:
            if x.kind != lim.block or lim.measure not in x.values:
                continue
            value = x.values[lim.measure]
            if lim.exceeded(value):
                yield _finding(lim, x.line, value=value, message=x.message, block=x.block,
                               images=request["images_in_request"], **{k: v for k, v in x.values.items()
                                                                       if k in ("width", "height")})


# -- the parentUuid chain (Claude Code) --------------------------------------------------------------
def _chain(t: Transcript, view: View) -> Iterator[Finding]:
    from ..transcript.claude_code_chain import CONVERSATION_TYPES, active_entries

    order, facts = active_entries(t)
    path = facts.get("path") or []
    if not path:
        return
    idx = t.lines
    flags = idx.flags
    by_uuid: dict[str, int] = {}
    for i, u in enumerate(idx.uuids):
        if u and not flags[i] & BAD and u not in by_uuid:
            by_uuid[u] = i
    root = path[0]
    parent = idx.parents[root] if root < t.n_lines else None
    # a subagent's transcript (every line on the sidechain) starts from a line of its parent session's file
    if parent and idx.type(root) != "system" and not idx.sidechain(root):
        j = by_uuid.get(parent)
        if j is None:
            yield _finding(rule("parent-missing"), root + 1, parent=parent)
        elif j in set(path):
            yield _finding(rule("parent-cycle"), root + 1, loop=j + 1)
    # branches: conversation lines no line names as its parent, off the view (a rewind leaves one)
    parents = set(p for p in idx.parents if p)
    members = set(order)
    leaves = [i for i in range(t.n_lines)
              if not flags[i] & (BAD | 1) and idx.type(i) in CONVERSATION_TYPES and idx.uuids[i]
              and idx.uuids[i] not in parents and i not in members and _is_prompt_branch(t, i)]
    if leaves:
        yield _finding(rule("forked-chain"), leaves[-1] + 1, leaves=len(leaves) + 1, leaf=t.line_no(facts["leaf"]))


def _is_prompt_branch(t: Transcript, i: int) -> bool:
    """Whether a line that ends a branch ends one a person made (a rewind: the conversation went on
    elsewhere after a message), rather than a dead-end sibling of parallel tool calls or a progress line."""
    d = t.entry(i)
    if d.get("type") != "assistant":
        return False
    msg = d.get("message") or {}
    return msg.get("model") != "<synthetic>" and not any(
        isinstance(b, dict) and b.get("type") == "tool_use" for b in (msg.get("content") or []))


# -- bloat ----------------------------------------------------------------------------------------------
_TOOL_USE_RESULT = b'"toolUseResult":'


def _bloat(t: Transcript, view: View) -> tuple[list[Finding], int]:
    """Bytes the agent reads on --resume and never sends: the notes, and what --slim would move."""
    from ..transcript.claude_code_chain import active_entries

    idx = t.lines
    total = max(1, idx.end)
    copies = 0
    snapshots, snapshot_lines = 0, 0
    for i in range(t.n_lines):
        typ = idx.type(i)
        if typ == "file-history-snapshot":
            snapshots += idx.span(i)[1]
            snapshot_lines += 1
        elif typ == "user":
            copies += _harness_bytes(t, i)
    _, facts = active_entries(t)
    boundary = facts.get("boundary")
    behind = 0
    if boundary is not None:
        start = idx.starts[boundary] if boundary < t.n_lines else 0
        behind = start  # every byte before the last boundary the view starts from
    out = []

    def share(n: int) -> str:
        return f"{100 * n / total:.0f}%"

    if copies:
        out.append(_finding(rule("bloat-tool-use-result"), 0, bytes=f"{copies:,}", share=share(copies)))
    if snapshots:
        out.append(_finding(rule("bloat-file-history-snapshot"), 0, bytes=f"{snapshots:,}", lines=snapshot_lines,
                            share=share(snapshots)))
    if behind:
        out.append(_finding(rule("bloat-behind-boundary"), boundary + 1, bytes=f"{behind:,}", share=share(behind)))
    big = rule("bloat-oversized-output")
    for m in view.messages:
        for b, ref in zip(m.content, m.refs, strict=False):
            if b.get("type") == "tool_result":
                chars = _chars(b.get("content"))
                if big.max is not None and chars > big.max:
                    out.append(_finding(big, _line(t, ref, m), chars=f"{chars:,}"))
    return out, copies + snapshots + behind


def _harness_bytes(t: Transcript, i: int) -> int:
    """The bytes of line ``i``'s harness-only fields (``toolUseResult``), as written."""
    start, length = t.lines.span(i)
    raw = t.source.read_at(start, length)
    if _TOOL_USE_RESULT not in raw:
        return 0
    d = orjson.loads(raw)
    return sum(len(orjson.dumps(d[k])) + len(k) + 4 for k in HARNESS_ONLY_KEYS if k in d)


def _chars(content: Any) -> int:
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        return sum(len(b.get("text", "")) for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))
    return 0
