"""What in a session would make the agent's next request fail, or its resume fail: each problem at its line,
with what a repair needs to mend it.

Over 400 lines: one check per kind of problem the API or the agent refuses, in one pass over the view and
one over the chain, so that doctor and the repair stage find the same problems the same way.

Found on the view (the messages the agent sends next, :meth:`ctxkit.transcript.model.Transcript.view`):
what the projection answered the way Claude Code does on resume (an unanswered tool_use, a result
answering nothing), and what neither repairs (images and PDFs over the limits, empty text, thinking
blocks that will not verify, duplicate tool_use ids); and on the file (Claude Code sessions): lines the
agent cannot read, ``parentUuid`` links to no line or in a loop, branches a rewind left (a note).

The rules and limits are the rows of :mod:`ctxkit.api_rules`: a limit on a quantity measured here
(:data:`ctxkit.api_rules.MEASURES`) is a row of the table, not code. ``ctxkit doctor`` reports these
(:mod:`ctxkit.reports.doctor`); the ``repair`` stage (:mod:`.stage`) mends them.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ...api_rules import limits, rule
from ...errors import TranscriptError
from ...media import decode_base64, image_size, pdf_pages
from ...quoting import bare_id
from ...transcript.claude_code.chain import CONVERSATION_TYPES, active_entries, uuid_index
from ...transcript.claude_code.metas import Metas
from ...transcript.jsonl import parse_line
from ...transcript.lineindex import BAD, SIDECHAIN
from ...transcript.model import Transcript
from ...transcript.prompts import typed_words
from ...transcript.shapes import problem as shape_problem
from ...transcript.view import BlockRef, View, ViewMessage

#: the placeholder the people who shared a session put in place of a signature (public corpora): not a
#: signature that was cut short, and not one ctxkit can verify either way (docs/doctor.md)
REDACTED_PREFIX = "[REDACTED"
THINKING = ("thinking", "redacted_thinking")


@dataclass
class Problem:
    """One problem: its rule (a row of :mod:`ctxkit.api_rules`, or ``interrupted-turn``), the 1-based line
    where it is (0: the session as a whole), the values its texts name, and what a repair edits
    (``entry``: entry index; ``block``/``inner``: content block, and block of a tool_result's content...)."""

    rule: str
    line: int
    values: dict[str, Any] = field(default_factory=dict)
    target: dict[str, Any] = field(default_factory=dict)

    @property
    def severity(self) -> str:
        return "note" if self.rule == "interrupted-turn" else rule(self.rule).severity


#: agents whose next request always adds the user's next input after the view (none sends a session that
#: ends with its own answer as a prefill): a final answer's trailing whitespace is no problem of theirs
PROMPTED_NEXT = frozenset({"aider", "codex", "gemini", "opencode", "cline", "cursor"})


def find_problems(t: Transcript) -> list[Problem]:
    """Every problem of transcript ``t`` (read with ``check_pairing=False``, ``on_bad_line="skip"``), in line order."""
    view = t.view()
    found = [*_bad_lines(t), *_pairing(t, view), *_blocks(t, view), *_limits(t, view)]
    if t.format == "claude-code":
        found += _chain(t)
    found.sort(key=lambda p: p.line)
    return found


def convo(view: View) -> list[ViewMessage]:
    """The messages as the API numbers them (``messages.N``): mid-conversation system ones folded away."""
    return [m for m in view.messages if m.role != "system"]


def line_of(t: Transcript, ref: BlockRef | None, m: ViewMessage | None = None) -> int:
    """The 1-based line of a view block (``ref``), else of the first entry of its message ``m`` (0: none)."""
    if ref is not None:
        return t.line_no(ref.entry)
    if m is not None and m.entries:
        return t.line_no(m.entries[0])
    return 0


# -- lines the agent cannot read ---------------------------------------------------------------------
def _bad_lines(t: Transcript) -> Iterator[Problem]:
    flags = t.lines.flags
    for i in range(t.n_lines):
        if not flags[i] & BAD or i in t.overrides:  # (an edit: the repair moved the line to the store)
            continue
        raw, had_newline = t.raw_line(i)
        if not raw.strip():
            continue  # a blank line: every reader skips it
        try:
            why = shape_problem(t.format, parse_line(t.source.name, i + 1, raw, had_newline)) or "unreadable"
        except TranscriptError as exc:
            why = exc.message.split(": ", 2)[-1] if exc.message.startswith(t.source.name) else exc.message
        yield Problem("unparseable-line", i + 1, {"why": why}, {"entry": i})


# -- tool_use / tool_result pairing --------------------------------------------------------------------
def _pairing(t: Transcript, view: View) -> Iterator[Problem]:
    msgs = convo(view)
    uses: dict[str, tuple[int, BlockRef | None]] = {}  # tool_use id -> (message, ref)
    first_line: dict[str, int] = {}
    for k, m in enumerate(msgs):
        if m.role != "assistant":
            continue
        for bi, (b, ref) in enumerate(zip(m.content, m.refs, strict=False)):
            if b.get("type") != "tool_use":
                continue
            tid = b.get("id")
            uses.setdefault(tid, (k, ref))
            line = line_of(t, ref, m)
            # (a second call of the id in the same message, on the same line too: the API refuses it as well)
            again = sum(1 for x in m.content[:bi] if x.get("type") == "tool_use" and x.get("id") == tid)
            if tid in first_line and (first_line[tid] != line or again):
                result = _result_after(msgs, k, tid, again)
                yield Problem("duplicate-tool-use-id", line, {"ids": bare_id(tid), "first": first_line[tid], "message": k,
                                                              "block": bi},
                              {"use": ref, "result": result, "tool_id": tid})
            first_line.setdefault(tid, line)
    # what the projection answered for an unanswered call, the way Claude Code does on resume: a result
    # with no line of its own behind it (a Codex rollout's: Codex answers every such call ``aborted``
    # before each request, so it is no problem of the file; so do OpenCode, whose results live in the
    # call's own part, and Cline when it resumes a task)
    # (nor a call whose real result the file holds but Claude Code does not send, its answer split by a line
    # between its fragments: answering it again would give it two results; .claude_code.split_answers)
    unsent = {tid for _, tid in view.unsent}
    for m in msgs if t.format not in ("codex", "opencode", "cline") else ():
        if m.role != "user":
            continue
        for b, ref in zip(m.content, m.refs, strict=False):
            if b.get("type") == "tool_result" and ref is None and b.get("tool_use_id") in uses \
                    and b.get("tool_use_id") not in unsent:
                tid = b["tool_use_id"]
                at, use_ref = uses[tid]
                nxt = next((r.entry for r in m.refs if r is not None), None)
                yield Problem("orphan-tool-use", line_of(t, use_ref, msgs[at]), {"ids": bare_id(tid), "message": at},
                              {"tool_id": tid, "next": nxt})
    # an assistant message followed by another: its calls are not answered (the API merges the two)
    for k, m in enumerate(msgs[:-1]):
        ids = [b.get("id") for b in m.content if b.get("type") == "tool_use"]
        if m.role == "assistant" and msgs[k + 1].role == "assistant" and ids:
            calls = [r for b, r in zip(m.content, m.refs, strict=False) if b.get("type") == "tool_use"]
            yield Problem("consecutive-assistant", line_of(t, None, msgs[k + 1]), {"ids": ", ".join(map(bare_id, ids)), "message": k},
                          {"refs": calls})
    # a turn cut off at the very end: the agent answers it as interrupted when it resumes (a note)
    if msgs and msgs[-1].role == "assistant":
        tail = msgs[-1]
        ids = [b.get("id") for b in tail.tool_uses()]
        if ids:
            ref = next((r for b, r in zip(tail.content, tail.refs, strict=False) if b.get("type") == "tool_use"), None)
            yield Problem("interrupted-turn", line_of(t, ref, tail), {"ids": ", ".join(map(bare_id, ids))})
    seen: set[tuple[int, str]] = set()
    for entry, tid in view.orphans:
        if (entry, tid) not in seen:
            seen.add((entry, tid))
            at, block = _where_sent(t, msgs, entry, tid)
            yield Problem("orphan-tool-result", t.line_no(entry), {"ids": bare_id(tid), "message": at, "block": block},
                          {"entry": entry, "tool_id": tid})
    if t.format == "claude-code":
        yield from _misplaced_results(t, view)


def _where_sent(t: Transcript, msgs: list[ViewMessage], entry: int, tid: str) -> tuple[int, int]:
    """Where a block of entry ``entry`` the view left out (a result answering nothing, ``tid``) is in the
    request a client sends the file as it is: ``(message, block)``, the indexes of the API's ``messages.N.content.M``.
    Its entry's message if the view kept one, else the user message before it (consecutive user messages are
    merged), else a message of its own where it stands."""
    content = (t.entry(entry).get("message") or {}).get("content") if entry < t.n_lines else None
    own = next((j for j, b in enumerate(content) if isinstance(b, dict) and b.get("tool_use_id") == tid), 0) \
        if isinstance(content, list) else 0
    for k, m in enumerate(msgs):
        if entry in m.entries:
            first = next((j for j, r in enumerate(m.refs) if r is not None and r.entry == entry), 0)
            return k, first + own
    k = next((k for k, m in enumerate(msgs) if m.entries and min(m.entries) > entry), len(msgs))
    if k > 0 and msgs[k - 1].role == "user":
        return k - 1, len(msgs[k - 1].content) + own
    return k, own


def _result_after(msgs: list[ViewMessage], k: int, tid: str, nth: int = 0) -> BlockRef | None:
    """Where the result of the call ``tid`` of message ``k`` is: the next message's result of that id (its
    ``nth`` after the first, for the ``nth`` call after the first of that id in message ``k``)."""
    if k + 1 < len(msgs):
        m = msgs[k + 1]
        found = [ref for b, ref in zip(m.content, m.refs, strict=False)
                 if b.get("type") == "tool_result" and b.get("tool_use_id") == tid]
        return found[nth] if nth < len(found) else None
    return None


def _misplaced_results(t: Transcript, view: View) -> Iterator[Problem]:
    """A user entry whose tool_result comes after its text (the projection moves results first)."""
    for at, m in enumerate(convo(view)):
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
                        yield Problem("misplaced-tool-result", i + 1, {"ids": bare_id(b.get("tool_use_id")),
                                                                       "message": max(0, at - 1)}, {"entry": i})
                        break
                else:
                    other = True


# -- content blocks ----------------------------------------------------------------------------------
def inner_blocks(b: dict) -> Iterator[tuple[int | None, dict]]:
    """A block (index None), and the blocks of a tool_result's content (with their index in it)."""
    yield None, b
    if b.get("type") == "tool_result" and isinstance(b.get("content"), list):
        for j, inner in enumerate(b["content"]):
            if isinstance(inner, dict):
                yield j, inner


def _turn_start(msgs: list[ViewMessage]) -> int:
    """The index of the last user message that holds a prompt (no tool result in it, or words a person
    typed after the results: the view merges a prompt typed after an interrupted call into their
    message): where the turn in progress starts. The API strips earlier turns' thinking blocks
    (Anthropic's extended-thinking documentation: thinking blocks need returning only with the tool
    results of their turn)."""
    def prompt(m: ViewMessage) -> bool:
        return not any(b.get("type") == "tool_result" for b in m.content) or any(
            b.get("type") == "text" and typed_words(str(b.get("text") or "")) for b in m.content)

    return max((k for k, m in enumerate(msgs) if m.role == "user" and prompt(m)), default=-1)


def _blocks(t: Transcript, view: View) -> Iterator[Problem]:
    msgs = convo(view)
    current = _current_model(t, msgs)
    turn = _turn_start(msgs)
    for k, m in enumerate(msgs):
        for bi, (b, ref) in enumerate(zip(m.content, m.refs, strict=False)):
            line = line_of(t, ref, m)
            for j, inner in inner_blocks(b):
                typ = inner.get("type")
                target = {"ref": ref, "inner": j}
                if typ == "text" and m.role != "assistant":
                    text = inner.get("text")
                    if text == "":
                        yield Problem("empty-text", line, {"message": k, "block": bi}, target)
                    elif isinstance(text, str) and not text.strip():
                        yield Problem("whitespace-text", line, {"message": k, "block": bi}, target)
                elif typ in THINKING and m.role != "assistant":
                    yield Problem("thinking-out-of-place", line, {"type": typ, "role": m.role, "message": k,
                                                                  "block": bi}, target)
            if m.role == "assistant" and b.get("type") == "thinking":
                sig = b.get("signature")
                model = _model_of(t, ref)
                if not isinstance(sig, str) or not sig:
                    if signed_by_anthropic(model):
                        yield Problem("thinking-signature-missing", line, {"message": k, "block": bi}, {"ref": ref})
                    continue
                # another model's thinking of an earlier turn is stripped unread: real sessions went on
                # after a switch (Claude Code 1.0 falling back from Opus 4.1 to Sonnet 4 sent it as it was)
                if current and model and model != current and not model.startswith("<") and k > turn:
                    yield Problem("thinking-model-changed", line, {"model": model, "current": current, "message": k,
                                                                   "block": bi}, {"ref": ref})
    yield from _assistant_blank_text(t, msgs)
    if msgs and msgs[-1].role == "assistant" and t.format not in PROMPTED_NEXT:
        last = msgs[-1]
        if last.content and last.content[-1].get("type") == "text":
            text = last.content[-1].get("text")
            if isinstance(text, str) and text != text.rstrip():
                yield Problem("final-trailing-whitespace", line_of(t, last.refs[-1], last), {}, {"ref": last.refs[-1]})


def _assistant_blank_text(t: Transcript, msgs: list[ViewMessage]) -> Iterator[Problem]:
    """Empty or whitespace-only text blocks of the assistant's lines (Claude Code sessions). The view leaves
    them out, as Claude Code's resume does (a message left with nothing goes, and the user messages around it
    merge), so they are found on the file, as notes (the agent's next request is valid): the API rejects them
    in any message, and other clients of the file send them."""
    if t.format != "claude-code":
        return
    order, _ = active_entries(t)
    for i in order:
        if i >= t.n_lines or t.lines.flags[i] & BAD:
            continue
        d = t.entry(i)
        msg = d.get("message")
        content = msg.get("content") if d.get("type") == "assistant" and isinstance(msg, dict) else None
        if not isinstance(content, list):
            continue
        at = next((k for k, m in enumerate(msgs) if i in m.entries), None)
        if at is None:  # the whole message was left out: the API numbers it before the next one
            at = next((k for k, m in enumerate(msgs) if m.entries and min(m.entries) > i), len(msgs))
        for bi, b in enumerate(content):
            if not isinstance(b, dict) or b.get("type") != "text" or not isinstance(b.get("text"), str) \
                    or b["text"].strip():
                continue
            yield Problem("assistant-empty-text" if b["text"] == "" else "assistant-whitespace-text", i + 1, {"message": at, "block": bi},
                          {"ref": BlockRef(i, bi), "inner": None})


def _model_of(t: Transcript, ref: BlockRef | None) -> str | None:
    if ref is None or t.format != "claude-code":
        return None
    msg = t.entry(ref.entry).get("message")
    model = msg.get("model") if isinstance(msg, dict) else None
    return model if isinstance(model, str) else None


def signed_by_anthropic(model: str | None) -> bool:
    """Whether a thinking block's signature is one Anthropic's API checks: a Claude model wrote it (or the
    transcript does not say which model did). Another provider's model behind an Anthropic-style API signs
    its own way, and its API takes its blocks back: DeepSeek's signature is a 36-character UUID, MiniMax's
    is empty, and the sessions that held them (LeoDChen/claude-config, adrianstanca1/vps-config, Claude
    Code 2.1.81-2.1.144) went on with them."""
    return model is None or model.startswith("<") or "claude" in model.lower()


def _current_model(t: Transcript, msgs: list[ViewMessage]) -> str | None:
    """The model the session goes on with: the last assistant message's."""
    for m in reversed(msgs):
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
    target: dict[str, Any]


def _measure(t: Transcript, view: View) -> tuple[list[_Measured], dict[str, int]]:
    """Every image, document and thinking block of the view, measured; and the whole request's counts."""
    out: list[_Measured] = []
    images = 0
    for k, m in enumerate(convo(view)):
        for bi, (b, ref) in enumerate(zip(m.content, m.refs, strict=False)):
            line = line_of(t, ref, m)
            for j, inner in inner_blocks(b):
                typ = inner.get("type")
                target = {"ref": ref, "inner": j}
                if typ == "image":
                    images += 1
                    out.append(_Measured(line, k, bi, "image", media_values(inner, image=True), target))
                elif typ == "document":
                    out.append(_Measured(line, k, bi, "document", media_values(inner, image=False), target))
                elif typ == "thinking" and m.role == "assistant":
                    sig = inner.get("signature")
                    if isinstance(sig, str) and sig and not sig.startswith(REDACTED_PREFIX) \
                            and signed_by_anthropic(_model_of(t, ref)):
                        out.append(_Measured(line, k, bi, "thinking", {"signature_chars": len(sig)}, target))
    return out, {"images_in_request": images}


def media_values(block: dict, *, image: bool) -> dict[str, Any]:
    """What the limits measure of an image or document block: its base64 length, pixels or pages."""
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


def _limits(t: Transcript, view: View) -> Iterator[Problem]:
    measured, request = _measure(t, view)
    for lim in limits():
        if lim.when is not None and not request.get(lim.when["measure"], 0) > lim.when["over"]:
            continue
        if lim.measure in request:
            value = request[lim.measure]
            if lim.exceeded(value) and lim.once:
                of_kind = [x for x in measured if x.kind == lim.block]
                over = of_kind[:max(0, len(of_kind) - (lim.max or 0))]  # the oldest, beyond the limit
                last = of_kind[-1] if of_kind else None
                yield Problem(lim.id, last.line if last else 0, {"value": value, "message": last.message if last else "?"},
                              {"refs": [x.target for x in over]})
            continue
        for x in measured:
            if x.kind != lim.block or lim.measure not in x.values:
                continue
            value = x.values[lim.measure]
            if lim.exceeded(value):
                yield Problem(lim.id, x.line, {"value": value, "message": x.message, "block": x.block,
                                               "images": request["images_in_request"],
                                               **{k: v for k, v in x.values.items() if k in ("width", "height")}},
                              dict(x.target, kind=x.kind, measured=x.values))


# -- the parentUuid chain (Claude Code) --------------------------------------------------------------
def _chain(t: Transcript) -> Iterator[Problem]:
    order, facts = active_entries(t)
    path = facts.get("path") or []
    if not path:
        return
    idx = t.lines
    flags = idx.flags
    root = path[0]
    metas = Metas.of(t)  # an edited line's own routing fields (a repaired link), else the index's
    parent = metas.parent(root)
    # a subagent's transcript (every line on the sidechain) starts from a line of its parent session's file
    if parent and metas.type(root) != "system" and not metas.sidechain(root):
        j = uuid_index(t).get(parent)
        relink = previous_conversation_line(t, root)
        if j is None:
            yield Problem("parent-missing", root + 1, {"parent": parent}, {"entry": root, "relink": relink})
        elif j in set(path):
            yield Problem("parent-cycle", root + 1, {"loop": j + 1}, {"entry": root, "relink": relink})
    # Claude Code 1.0's later local commands, chained onto the session's first caveat (reused_caveat)
    for i, j in sorted((facts.get("relinks") or {}).items()):
        if j is not None:
            caveat = uuid_index(t).get(metas.parent(i) or "")
            yield Problem("local-command-parent", t.line_no(i),
                          {"caveat": t.line_no(caveat) if caveat is not None else "?"},
                          {"entry": i, "relink": metas.uuid(j)})
    # branches: conversation lines no line names as its parent, off the view (a rewind leaves one), after the
    # last compact boundary
    parents = {p for p in idx.parents if p}
    members = set(order)
    after = (facts.get("boundary") or -1) + 1  # behind the last compact boundary, no branch is resumed
    leaves = [i for i in range(after, t.n_lines)
              if not flags[i] & (BAD | SIDECHAIN) and idx.type(i) in CONVERSATION_TYPES and idx.uuids[i]
              and idx.uuids[i] not in parents and i not in members and _ends_a_rewind(t, i)]
    if leaves:
        yield Problem("forked-chain", leaves[-1] + 1, {"leaves": len(leaves) + 1, "leaf": t.line_no(facts["leaf"])})


def previous_conversation_line(t: Transcript, i: int) -> str | None:
    """The uuid of the last conversation line before line index ``i`` on the main chain (None: there is none)."""
    idx, flags = t.lines, t.lines.flags
    for j in range(i - 1, -1, -1):
        if not flags[j] & (BAD | SIDECHAIN) and idx.type(j) in CONVERSATION_TYPES and idx.uuids[j]:
            return idx.uuids[j]
    return None


def _ends_a_rewind(t: Transcript, i: int) -> bool:
    """Whether a line that ends a branch ends one a person made (a rewind: the conversation went on
    elsewhere after an answer), rather than a dead-end sibling of parallel tool calls or a progress line."""
    d = t.entry(i)
    if d.get("type") != "assistant":
        return False
    msg = d.get("message") or {}
    return msg.get("model") != "<synthetic>" and not any(
        isinstance(b, dict) and b.get("type") == "tool_use" for b in (msg.get("content") or []))
