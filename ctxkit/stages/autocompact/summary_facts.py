"""What a compaction's summarizer is told beyond the messages it summarizes (the offline summary uses it).

The messages handed to a summarizer are the view's, from the last compact boundary to the kept tail.
Two things the offline (extractive) summary must quote are not in them as the user wrote them:

* the prompts typed before the last boundary: the view opens with the earlier summary, but the
  transcript still holds every prompt (:func:`ctxkit.transcript.prompts.session_prompts`);
* the error of a failed call whose result microcompact cleared or the budget persisted, by this run
  or an earlier one: the view shows the placeholder, the store (or this run's input) the original.

A model summarizer is not given these: it summarizes what the model saw, as Claude Code's does.
Both are redacted here, as the messages are on their way to any summarizer (ctxkit.summarize.redact).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ...store.expand import original_of
from ...store.offload import content_text, decision_scope
from ...summarize import SessionFacts, redact
from ...summarize.retention import is_shell
from ...transcript.formats import handler
from ...transcript.model import Transcript
from ...transcript.prompts import session_prompts
from ...transcript.view import BlockRef, View
from ..base import Context


def session_facts(t: Transcript, view: View, keep_from: int, ctx: Context) -> SessionFacts:
    """The session's prompts up to the kept tail (Claude Code transcripts) and the originals of the
    failed calls' results and shell commands' outputs the summarized messages show replaced (the
    summary quotes their error lines)."""
    redactor = redact.redactor_for(ctx)
    prompts, typed = None, True
    if t.format == "claude-code":
        kept = {i for m in view.messages[keep_from:] for i in m.entries}
        found = [p for p in session_prompts(t) if p.entry not in kept]
        prompts = tuple(redactor.texts([p.text for p in found]))
        # a subagent's transcript (its lines are the sidechain's): the main agent wrote its prompt
        typed = not any(t.entry(p.entry).get("isSidechain") is True for p in found)
    originals = {tid: redactor.text(text) for tid, text in _error_originals(t, view, keep_from, ctx).items()}
    return SessionFacts(prompts=prompts, originals=originals, typed=typed)


def _error_originals(t: Transcript, view: View, keep_from: int, ctx: Context) -> dict[str, str]:
    originals: dict[str, str] = {}
    scope = decision_scope(t)
    path = ctx.inputs.transcript_path
    search_dirs = [Path(path).parent] if path else []
    names = view.tool_names()
    for m in view.messages[:keep_from]:
        for block, ref in zip(m.content, m.refs, strict=False):
            if block.get("type") != "tool_result" or ref is None:
                continue
            tid = str(block.get("tool_use_id") or "")
            if not (block.get("is_error") or is_shell(str(names.get(tid) or ""))):
                continue
            content = block.get("content")
            before = _input_content(t, ref, tid)  # replaced by this run: its input still has the words
            candidate = before if before is not None and before != content else content
            session = t.entry(ref.entry).get("sessionId")
            original = original_of(ctx.store, tid, candidate, scopes=[scope], search_dirs=search_dirs,
                                   sessions=[session] if isinstance(session, str) else [])
            if original is None and candidate is not content:
                original = candidate
            text = content_text(original) if original is not None else ""
            if text.strip() and text != content_text(content):
                originals[tid] = text
    return originals


def _input_content(t: Transcript, ref: BlockRef, tid: str) -> Any:
    """The content this run's input had for the tool result ``tid`` (None: no such input block)."""
    if ref.entry not in t.overrides:
        return None
    before = t.input_entry(ref.entry)
    if before is None:
        return None
    if t.format == "openai":
        return before.get("content")
    content: Any = before
    for key in handler(t.format).content_path:
        content = content.get(key) if isinstance(content, dict) else None
    if not isinstance(content, list):
        return None
    return next((b.get("content") for b in content if isinstance(b, dict) and b.get("type") == "tool_result"
                 and b.get("tool_use_id") == tid), None)
