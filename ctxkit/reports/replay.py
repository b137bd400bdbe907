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
the prompt-cache model compares: two requests share a cached prefix as long as their pieces are
byte-identical, in order.
"""
from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from ..pipeline import PipelineResult, compile_pipeline
from ..policy.model import Policy
from ..run_context import build_context
from ..stages.base import Context
from ..store.disk import Store
from ..transcript import read_transcript
from ..transcript.claude_code_chain import leaf_uuid
from ..transcript.claude_code_requests import without_cache_control
from ..transcript.model import Transcript
from ..transcript.view import SUMMARY
from ..transcript.writer import write_transcript
from .request import build_request

#: A piece of a request: (digest of its bytes and position, its tokens).
Segment = tuple[bytes, int]


def _digest(*parts: Any) -> bytes:
    return hashlib.blake2b(orjson.dumps(parts, option=orjson.OPT_SORT_KEYS), digest_size=16).digest()


def request_segments(t: Transcript, policy: Policy, counter: Any, now: datetime | None) -> list[Segment]:
    """The request the view of ``t`` makes (:func:`ctxkit.reports.request.build_request`), in cache order:
    the tools, the system prompt, then every content block of every message."""
    # the cache matches content, not where a request put its breakpoints: a block marked in one request
    # and not in the next is the same piece
    body = without_cache_control(build_request(t, policy, now=now))
    out: list[Segment] = []
    if body.get("tools"):
        out.append((_digest("tools", body["tools"]), counter.count_text(orjson.dumps(body["tools"]).decode())))
    system = body.get("system")
    if system:
        text = system if isinstance(system, str) else "\n".join(
            b.get("text", "") for b in system if isinstance(b, dict))
        out.append((_digest("system", system), counter.count_text(text)))
    for mi, msg in enumerate(body["messages"]):
        content = msg["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
        for bi, block in enumerate(blocks):
            out.append((_digest(mi, bi, msg["role"], block), counter.count_message({"role": msg["role"],
                                                                                    "content": [block]})))
    return out


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
        self.input_path = workdir / "step.jsonl"
        self.context_window = context_window
        self.cwd = cwd
        self.transcript_path = transcript_path
        self.counter = counter
        self.output = b""
        self.alias: dict[str, str] = {}  # recorded leaf uuid -> the leaf new lines chain onto instead
        #: what the simulated previous request held (``cache_read`` / ``cache_creation`` tokens): the usage
        #: the answer to it would have reported. Set by the caller after each step's request is modelled.
        self.sent: dict[str, int] | None = None

    def _rewrite(self, line: bytes) -> bytes:
        """A recorded line as this policy's transcript would hold it.

        - Its parent: after a step that moved the leaf, a line naming the old leaf chains onto the new one.
        - An answer's usage: the recorded figures describe the context Claude Code sent, not the one this
          policy would have sent; thresholds count by usage (:mod:`ctxkit.tokens.view_count`), so the
          recorded figures would make every step compact again. The answer gets the simulated request's
          input figures instead, and keeps its recorded output tokens."""
        wants_parent = bool(self.alias) and b'"parentUuid"' in line
        wants_usage = self.sent is not None and b'"usage"' in line
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
        msg = entry.get("message")
        if wants_usage and entry.get("type") == "assistant" and not entry.get("isSidechain") \
                and isinstance(msg, dict) and isinstance(msg.get("usage"), dict):
            msg["usage"] = {**msg["usage"], "input_tokens": 0, "cache_creation_input_tokens": self.sent["write"],
                            "cache_read_input_tokens": self.sent["read"]}
            changed = True
        return orjson.dumps(entry) + b"\n" if changed else line

    def step(self, new_lines: list[bytes], now: datetime | None) -> Step:
        data = self.output + b"".join(self._rewrite(line) for line in new_lines)
        self.input_path.write_bytes(data)
        t = read_transcript(str(self.input_path), on_bad_line="skip")
        ctx = build_context(self.policy, Store(self.store_dir), now=now, transcript=t,
                            context_window=self.context_window, cwd=self.cwd, transcript_path=self.transcript_path)
        ctx.tokens = self.counter  # one counter for the whole replay: its cache makes each step cheap
        result = self.pipeline.run(t, ctx)
        ctx.store.flush()
        out = result.transcript
        if t.format == "claude-code":
            before, after = leaf_uuid(t), leaf_uuid(out)
            if before and after and before != after:
                self.alias[before] = after
        buf = io.BytesIO()
        write_transcript(out, buf)
        self.output = buf.getvalue()
        if self.output and not self.output.endswith(b"\n"):
            self.output += b"\n"
        return Step(out, result, ctx, self._summarizer_calls(result, out))

    def _summarizer_calls(self, result: PipelineResult, out: Transcript) -> list[dict[str, Any]]:
        """The model requests a compaction made: the history it summarized in, the summary out.

        Only a summarizer that calls a model makes one (the extractive summarizer is local and free)."""
        calls = []
        for r in result.reports:
            d = r.details
            if r.use != "autocompact" or r.action != "applied" or d.get("method") != "summary":
                continue
            if str(d.get("summarizer", "")).startswith("extractive"):
                continue
            summary = [m for m in out.view().messages if m.kind == SUMMARY]
            output = self.counter.count_message(summary[0].api()) if summary else 0
            calls.append({"input_tokens": max(0, r.tokens_before - int(d.get("kept_tokens") or 0)),
                          "output_tokens": output, "requests": int(d.get("summarizer_requests") or 1)})
        return calls
