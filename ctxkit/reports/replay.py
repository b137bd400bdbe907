"""Replaying a recorded session request by request, as if ctxkit had run after every turn.

At each request the recorded session made (:func:`ctxkit.reports.usage.recorded_requests`), the
context a model would have been sent is the view, under the policy, of everything written before
that request. :class:`PolicyReplay` builds it the way a user running ``ctxkit compact`` after every
turn would: the previous step's *output* transcript, plus the lines the session wrote since, is the
next step's input; one store (in a temporary folder) keeps the decisions across steps, so they stay
frozen, and compactions happen when a threshold is crossed. The clock of each step is the time of
the request (the transcript's timestamps), so microcompact sees the real pauses.

Claude Code chains each new line onto the conversation's leaf. After a step that moved the leaf (a
compaction writes a boundary, a summary and re-injected attachments; the attachments stage appends
at the tail), the recorded lines still name the old leaf as their parent: they are re-parented onto
the new one, as Claude Code would have written them had ctxkit compacted its transcript.

:func:`request_segments` cuts a request body (tools, system, each content block) into the pieces
the prompt-cache model compares (:mod:`ctxkit.reports.cache_model`): two requests share a cached
prefix as long as their pieces are byte-identical, in order.

Over 400 lines: the steps and the pieces of each step's request are one replay, carried from request to
request through one memo (what the request before sent, cut and calibrated: a step works on what it adds);
kept together so that what the memo holds is read where it is written.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from datetime import datetime
from itertools import takewhile
from operator import attrgetter, is_
from pathlib import Path
from typing import Any

import orjson

from ..pipeline import PipelineResult, compile_pipeline
from ..policy.model import Policy
from ..run_context import build_context
from ..stages.base import Context
from ..store.checkpoint import output_index
from ..store.disk import Store
from ..summarize.prompt import build_compact_prompt
from ..transcript import read_transcript
from ..transcript.claude_code.chain import leaf_uuid
from ..transcript.interface import RequestUsage, UsageWriter, handler
from ..transcript.model import Transcript
from ..transcript.prompts import EARLIER
from ..transcript.reader import Resume
from ..transcript.view import SUMMARY
from ..transcript.writer import write_transcript
from .cache_model import Piece, remade, same_leading
from .request import build_request
from .stripped_thinking import without_earlier_thinking


def _digest(*parts: Any) -> bytes:
    return hashlib.blake2b(orjson.dumps(parts, option=orjson.OPT_SORT_KEYS), digest_size=16).digest()


def _unmarked(block: Any) -> Any:
    """A block without its ``cache_control``: the cache matches content, not where a request put its
    breakpoints (a block marked in one request and not in the next is the same piece)."""
    if isinstance(block, dict) and "cache_control" in block:
        return {k: v for k, v in block.items() if k != "cache_control"}
    return block


def _marked(block: Any) -> bool:
    return isinstance(block, dict) and bool(block.get("cache_control"))


def request_segments(t: Transcript, policy: Policy, counter: Any, now: datetime | None,
                     memo: dict | None = None, strip_thinking: bool = False) -> list[Piece]:
    """The request the view of ``t`` makes (:func:`ctxkit.reports.request.build_request`), in cache order:
    the tools, the system prompt, then every content block of every message, each with its estimated
    tokens and whether it carries a ``cache_control`` breakpoint. A body that marks none (a session that
    records no requests) is marked where Claude Code marks it: the system prompt (the overhead piece
    :func:`calibrated` puts first stands for it when the session recorded none) and the last block of
    each of the last two messages (so that the answer's blocks, a burst of parallel tool calls, are
    within the API's 20-block lookback of the previous request's end), the mark on the result of a round
    written last. Every body's round of tool results is taken in the order of the calls, as the API caches
    them, each mark kept on its block (:func:`_in_call_order`). ``memo``:
    kept across a replay's requests (a replay sends the same blocks at every request): the tokens of
    each piece counted before, by digest, so that each is counted once, and what the request before
    sent at each place, so that a message sent again is not looked at again; after the call, where
    the request's last turn begins (``memo["turn"]``: :mod:`ctxkit.reports.stripped_thinking`).
    ``strip_thinking``: the pieces as an API that strips the thinking of earlier turns counts them."""
    memo = {} if memo is None else memo
    body = build_request(t, policy, now=now, memo=memo)
    out: list[Piece] = []
    tools = body.get("tools")
    if tools:
        out.append(Piece(_digest("tools", [_unmarked(x) for x in tools]),
                         counter.count_text(orjson.dumps(tools).decode()), any(map(_marked, tools)), lead=True))
    system = body.get("system")
    if isinstance(system, str) and system:
        out.append(Piece(_digest("system", system), counter.count_text(system), lead=True))
    elif system:
        for k, b in enumerate(system):
            text = b.get("text", "") if isinstance(b, dict) else ""
            out.append(Piece(_digest("system", k, _unmarked(b)), counter.count_text(text), _marked(b), lead=True))
    lead = len(out)
    if memo.get("lead") == out:  # the tools and system of the request before: its pieces (the same objects)
        out = list(memo["lead"])
    else:
        memo["lead"] = list(out)
    pieces, ends, marked, turn = _messages_pieces(body["messages"], counter, memo)
    out.extend(pieces)
    if not (marked or any(p.breakpoint for p in out[:lead])):  # (the pieces are shared with earlier requests:
        if lead:                                                   # replaced, not changed)
            out[lead - 1] = remade(memo.setdefault("marked", {}), out[lead - 1], True,
                                   lambda p: replace(p, breakpoint=True))
        for k in ends[-2:]:  # Claude Code marks the last line of each of the last two messages
            out[lead + k] = replace(out[lead + k], breakpoint=True)
    memo["turn"] = lead + turn
    return without_earlier_thinking(out, lead + turn) if strip_thinking else out


def _messages_pieces(messages: list[dict], counter: Any, memo: dict) -> tuple[list[Piece], list[int], bool, int]:
    """The pieces of a request's messages, in order; the index among them of each message's piece Claude
    Code marks (that of its last line); whether one carries a breakpoint; where the last turn begins
    (:func:`_opens_turn`). The messages the request before
    sent first (the same objects: :func:`ctxkit.reports.request.api_messages` keeps them) have the pieces
    they had there, taken whole, not message by message: only what the request adds is gone through."""
    pieces: list[Piece] = []
    ends: list[int] = []
    stood: list[tuple[int, int, bool, int]] = []  # after each message: len(pieces), len(ends), marked, turn
    start, marked, calls, turn = 0, False, (), 0
    before = memo.get("request-messages")
    if before is not None:
        start = same_leading(before[0], messages)
        if start:
            stood = before[3][:start]
            size, n_ends, marked, turn = stood[-1]
            pieces, ends = before[1][:size], before[2][:n_ends]
            calls = _call_ids(messages[start - 1])
    for mi in range(start, len(messages)):
        msg = messages[mi]
        own, has_mark, last = _message_pieces(mi, msg, counter, memo, calls)
        calls = _call_ids(msg)
        if _opens_turn(msg):
            turn = len(pieces)
        pieces.extend(own)
        marked = marked or has_mark
        if own:
            ends.append(len(pieces) - len(own) + last)
        stood.append((len(pieces), len(ends), marked, turn))
    memo["request-messages"] = (messages, pieces, ends, stood)
    return pieces, ends, marked, turn


def _opens_turn(msg: dict) -> bool:
    """Whether a message opens a turn, for the API: a user message with no tool result in it (a prompt;
    results with a reminder beside them continue the turn their calls are in)."""
    if msg["role"] != "user":
        return False
    content = msg["content"]
    return isinstance(content, str) or not any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


def _call_ids(msg: dict) -> tuple:
    """The ids of an assistant message's tool calls, in order."""
    content = msg["content"] if msg["role"] == "assistant" else None
    return tuple(b.get("id") for b in content if isinstance(b, dict) and b.get("type") == "tool_use") \
        if isinstance(content, list) else ()


def _in_call_order(pieces: list[Piece], blocks: list, calls: tuple) -> tuple[list[Piece], int]:
    """A round's tool results as the API caches them: in the order of the calls they answer, and where the
    one written last is now. Claude Code sends them as the transcript has them (as each call finished)
    with its mark on the last; the usage shows the API counts the results after that one in the order
    of the calls as plain input (erk: 325 of 346 rounds whose last result to finish was not the last
    call). Every Claude Code version sends the same order (docs/simulate.md: the genuine CLI, 1.0 to
    2.1.328), so this holds for every session, whatever its version."""
    rank = {c: k for k, c in enumerate(calls)}
    keys = [rank.get(b.get("tool_use_id"), len(rank)) if isinstance(b, dict) and b.get("type") == "tool_result"
            else len(rank) for b in blocks]
    order = sorted(range(len(pieces)), key=lambda k: (keys[k], k))
    return [pieces[k] for k in order], order.index(len(pieces) - 1)


def _message_pieces(mi: int, msg: dict, counter: Any, memo: dict,
                    calls: tuple = ()) -> tuple[list[Piece], bool, int]:
    """The pieces of message ``mi`` of a request, whether one carries a breakpoint, and which piece is that
    of its last block (:func:`_in_call_order`: ``calls``, the previous message's tool calls). A message whose
    blocks are the objects the message at that place had in the request before (a growing view sends the
    same blocks again) has that message's pieces; a block sent before at the same place has its digest,
    a block of the same bytes its tokens."""
    content, role = msg["content"], msg["role"]
    kept = memo.get(("message", mi))
    if kept is not None and kept[0] == role and (kept[1] is content or not isinstance(content, str) and (
            isinstance(kept[1], list) and len(kept[1]) == len(content) and all(map(is_, kept[1], content)))):
        return kept[2], kept[3], kept[4]
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    out = []
    for bi, block in enumerate(blocks):
        bare = _unmarked(block)
        # a block object sent before at the same place: its digest is known (the entry keeps the block
        # alive, so its id is not another block's)
        seen = memo.get((mi, bi, role, id(block)))
        if seen is not None and seen[0] is block:
            digest = seen[1]
        else:
            digest = _digest(mi, bi, role, bare)
            memo[(mi, bi, role, id(block))] = (block, digest)
        tokens = memo.get(digest)
        if tokens is None:
            tokens = memo[digest] = counter.count_message({"role": role, "content": [bare]})
        out.append(Piece(digest, tokens, _marked(block), thinking=isinstance(block, dict) and role == "assistant"
                         and block.get("type") in ("thinking", "redacted_thinking")))
    marked = any(p.breakpoint for p in out)
    last = len(out) - 1
    if len(calls) > 1 and role == "user":  # (a recorded mark stays on its block)
        out, last = _in_call_order(out, blocks, calls)
    memo[("message", mi)] = (role, content, out, marked, last)  # (a request's messages are not changed once built)
    return out, marked, last


_lead = attrgetter("lead")

#: The identity of the overhead piece: the same in every request of a replay
OVERHEAD = _digest("overhead")


def calibrated(pieces: list[Piece], overhead: float, scale: float, memo: dict | None = None) -> list[Piece]:
    """``pieces`` as the API counts them: each estimate times ``scale``, after an overhead piece (the
    system prompt and tools the request body does not hold, and the estimator's constant error: see
    :mod:`ctxkit.reports.calibration`). The overhead carries a breakpoint unless a system block does.
    ``memo``: kept across a replay's requests, which send the same pieces again: each piece scaled by the
    same factor is the same calibrated piece (made once, not once per request)."""
    # (the lead pieces come first: what follows them is not looked at)
    head = Piece(OVERHEAD, max(0.0, overhead), not any(p.breakpoint for p in takewhile(_lead, pieces)), lead=True)
    if memo is None:
        return [head, *(replace(p, tokens=p.tokens * scale) for p in pieces)]
    # the pieces the call before scaled by the same factor, first (the same objects), are scaled as there
    before = memo.get(("calibrated", scale))
    start = same_leading(before[0], pieces) if before is not None else 0
    out = [head, *before[1][1:start + 1]] if start else [head]
    out.extend(remade(memo, p, scale, lambda p: replace(p, tokens=p.tokens * scale))
               for p in pieces[start:])
    memo[("calibrated", scale)] = (pieces, out)
    return out


#: what a line index's memo keeps for a file that grew by whole lines (see :meth:`GrowingRead._resume`)
_KEPT_AS_FILE_GROWS = frozenset({"input-line-facts", EARLIER})


def resumable(t: Transcript) -> bool:
    """Whether a read of ``t``'s file grown by whole lines may start from ``t``'s line index: every line
    read, ending with a newline, the format decided from lines the longer file has too, and lines (not a
    document read whole)."""
    return (not t.info.bad_lines.count and t.info.settled and bool(t.n_lines) and t.ends_with_newline()
            and t.source.document is None and not t.source.compressed and t.source.encoding is None)


class GrowingRead:
    """A file that grows by whole lines and is read after each growth, reading only the lines added:
    the previous read's line index is where the next one resumes (as a run resumes from one of
    compact's checkpoints), so a replay of N requests reads each line once, not N times.

    Every line added ends with a newline; a read that met an unreadable line (or whose format a longer
    file might not have: :attr:`ctxkit.transcript.model.ReadInfo.settled`) is not resumed from: the
    next one reads in full. Any line-based format resumes so (Claude Code's, Codex's rollouts, Gemini
    CLI's recordings, ...); what the view carries over from the read before is the format's own
    (:mod:`ctxkit.transcript.claude_code.grown`, :mod:`ctxkit.transcript.carried`)."""

    def __init__(self, path: Path):
        self.path = path
        self.previous: Transcript | None = None
        path.write_bytes(b"")

    def add(self, lines: list[bytes]) -> Transcript:
        """The transcript once ``lines`` are added (an earlier transcript's line index grows with it: read
        only the newest)."""
        with open(self.path, "ab") as f:
            f.write(b"".join(lines))
        start = self._resume()
        t = read_transcript(str(self.path), on_bad_line="skip", resume=lambda source: start)
        self.previous = t
        return t

    def _resume(self) -> Resume | None:
        t = self.previous
        if t is None or not resumable(t):
            return None
        # maps over the lines read so far are built again for the longer file; what is kept per line (its
        # facts) and the earlier prompts (checked against the file when used, as a checkpoint's are) still hold
        t.lines.memo = {k: v for k, v in t.lines.memo.items() if k in _KEPT_AS_FILE_GROWS}
        # (its chain and view go on from this read's)
        return Resume(t.lines, t.lines.end, True, parsed=t.parsed_input_lines(), grown_from=t, fmt=t.format)


@dataclass
class Step:
    """One request point of a policy's replay: the transcript after the pipeline and what it did."""

    transcript: Transcript
    result: PipelineResult
    ctx: Context
    summarizer_calls: list[dict[str, Any]] = field(default_factory=list)  # {"input_tokens", "output_tokens"}


class PolicyReplay:
    """Runs ``policy``'s pipeline at each request point, feeding each output back with the new lines."""

    def __init__(self, policy: Policy, workdir: Path, *, context_window: int | None, cwd: Path,
                 transcript_path: str | None, counter: Any):
        self.policy = policy
        self.pipeline = compile_pipeline(policy)
        self.workdir = workdir
        self.store_dir = workdir / "store"
        #: one store for every step, its ledger and state in memory (as a ContextManager keeps one across its
        #: calls): loaded once and saved once (:meth:`finish`), not read and written whole at every step
        self.store = Store(self.store_dir)
        #: each step reads one of these and writes its output to the other (the output's unchanged lines
        #: are copied from the file read, so that one is not written over)
        self.files = (workdir / "step-a.jsonl", workdir / "step-b.jsonl")
        for f in self.files:
            f.write_bytes(b"")
        self.turn = 0
        self.context_window = context_window
        self.cwd = cwd
        self.transcript_path = transcript_path
        self.counter = counter
        self.output_size = 0  # the bytes of the previous step's output, at the start of the file read next
        self.kept = 0  # the bytes at the start of the previous step's output that were its input's
        self.alias: dict[str, str] = {}  # recorded leaf uuid -> the leaf new lines chain onto instead
        self.resume: Resume | None = None  # the line index of ``output``, where the next read resumes
        #: what the simulated previous request held (its input, cache reads and cache writes): the usage the
        #: answer to it would have reported. Set by the caller after each step's request is modelled.
        self.sent: RequestUsage | None = None
        #: where the session's format records usage (known once the first step has read the session)
        self.usage_writer: UsageWriter | None = None

    def _rewrite(self, line: bytes) -> bytes:
        """A recorded line as this policy's transcript would hold it.

        - Its parent: after a step that moved the leaf, a line naming the old leaf chains onto the new one.
        - An answer's usage: the recorded figures describe the context the agent sent, not the one this
          policy would have sent; thresholds count by usage (:mod:`ctxkit.tokens.view_count`), so the
          recorded figures would make every step after a compaction compact again. The answer gets the
          simulated request's input figures instead, and keeps its recorded output tokens, wherever the
          session's format records usage (its :attr:`ctxkit.transcript.interface.Format.usage_writer`:
          Claude Code's ``message.usage``, Codex's ``token_count`` events, Gemini's ``tokens``, ...)."""
        wants_parent = bool(self.alias) and b'"parentUuid"' in line
        writer = self.usage_writer
        wants_usage = self.sent is not None and writer is not None and writer.marker in line
        if not (wants_parent or wants_usage):
            return line
        try:
            entry = orjson.loads(line)
        except orjson.JSONDecodeError:
            return line
        if not isinstance(entry, dict):
            return line
        changed = False
        parent = entry.get("parentUuid")
        if wants_parent and parent in self.alias:
            seen = set()
            while parent in self.alias and parent not in seen:
                seen.add(parent)
                parent = self.alias[parent]
            entry["parentUuid"], changed = parent, True
        if wants_usage and writer.write(entry, self.sent):
            changed = True
        return orjson.dumps(entry) + b"\n" if changed else line

    def step(self, new_lines: list[bytes], now: datetime | None) -> Step:
        path = self.files[self.turn]  # the previous step's output: the new lines go after it
        with open(path, "ab") as f:
            f.write(b"".join(self._rewrite(line) for line in new_lines))
        start = self.resume  # the previous output's lines are not read again
        t = read_transcript(str(path), on_bad_line="skip", resume=lambda source: start)
        if t.format is not None:
            self.usage_writer = handler(t.format).usage_writer
        ctx = build_context(self.policy, self.store, now=now, transcript=t,
                            context_window=self.context_window, cwd=self.cwd, transcript_path=self.transcript_path)
        ctx.tokens = self.counter  # one counter for the whole replay: its cache makes each step cheap
        result = self.pipeline.run(t, ctx)  # (it writes the blobs the step before held, first)
        out = result.transcript
        if t.format == "claude-code":
            before, after = leaf_uuid(t), leaf_uuid(out)
            if before and after and before != after:
                self.alias[before] = after
        self.turn = 1 - self.turn
        with open(self.files[self.turn], "r+b") as f:
            self._write_output(out, f)
            self.output_size = f.tell()
            if self.output_size:
                f.seek(self.output_size - 1)
                if f.read(1) != b"\n":
                    f.seek(self.output_size)
                    f.write(b"\n")
                    self.output_size += 1
            f.truncate(self.output_size)
        self.resume = self._output_resume(t, out)
        return Step(out, result, ctx, self._summarizer_calls(result, out))

    def _write_output(self, out: Transcript, f: Any) -> None:
        """Write ``out`` over the file's old bytes, from the first one that may differ (the rest is cut after).

        The file holds the input of the step before (the two files alternate): that step's output kept its
        first ``self.kept`` bytes as they were, and this output keeps the first bytes of its own input (that
        output, then the new lines): the bytes both kept are in the file already, so a step writes about what
        changed, not the whole session again. (Truncating the file and writing it whole, as before, also gave
        the file system a whole file's blocks to free and take again at every step.)"""
        plan = out.write_plan()
        first = plan[0] if plan else ()
        kept = first[3] if len(first) == 4 and first[0] == 0 and first[2] == 0 else 0
        skip, self.kept = min(self.kept, kept), kept
        if skip and not out.source.compressed and out.source.document is None and out.source.encoding is None:
            f.seek(skip)
            out.write(f, start=skip)
        else:
            write_transcript(out, f)

    def finish(self) -> None:
        """Save the store (what the steps decided and stored): after the last step."""
        self.store.flush()

    def _output_resume(self, read: Transcript, out: Transcript) -> Resume | None:
        """Where the next step's read resumes: the line index of this step's output, told from the edits
        without reading it back (None: the next step reads in full)."""
        if not resumable(read):
            return None
        lines = output_index(read, out)
        if lines is None or lines.end != self.output_size:
            return None
        # the lines no stage edited are the input's, parsed already
        parsed = {i: d for i, d in out.parsed_input_lines().items() if i not in out.overrides}
        return Resume(lines, lines.end, True, parsed=parsed, grown_from=out, fmt=out.format)

    def _summarizer_calls(self, result: PipelineResult, out: Transcript) -> list[dict[str, Any]]:
        """The summaries a compaction made: the history it summarized in, the compact prompt, the summary out;
        ``offline`` when the summarizer is local (the extractive one: no request, unless ``simulate
        --price-summaries-as`` prices it as if a model had written it)."""
        calls = []
        for r in result.reports:
            d = r.details
            if r.use != "autocompact" or r.action != "applied" or d.get("method") != "summary":
                continue
            summary = [m for m in out.view().messages if m.kind == SUMMARY]
            output = self.counter.count_message(summary[0].api()) if summary else 0
            calls.append({"input_tokens": max(0, r.tokens_before - int(d.get("kept_tokens") or 0)),
                          "output_tokens": output, "requests": int(d.get("summarizer_requests") or 1),
                          "prompt_tokens": self.counter.count_text(build_compact_prompt()),
                          "offline": str(d.get("summarizer", "")).startswith("extractive")})
        return calls
