"""The ``attachments`` stage: state the model must know, appended after the last message.

State that changes during a session (the date, files changed on disk, the
memory files of folders the session entered, plan mode, open tasks, queued
input, the deferred tools / agent types / MCP servers on offer) reaches the
model as attachment messages at the tail of the view, never written into the
prefix: the cached system prompt, tools and history stay byte-identical.
"""
from __future__ import annotations

from typing import Any

from ..attachments import ATTACHMENT_TYPES
from ..attachments.common import build_state
from ..quoting import quote
from ..transcript.edit import NewMessage, append_messages
from ..transcript.view import pairing_problems
from .base import Context, Stage, StageResult, register

NEVER_DEFERRED = ("queued_commands",)  # the user's own words: no budget drops them


@register
class Attachments(Stage):
    """Append dynamic state at the tail of the view, as Claude Code does after a turn's tool results.

    Which attachment types run is the policy's ``attachments:`` section (a type runs when it is
    listed and not ``enabled: false``); each type's options sit under its name. They run in
    Claude Code's order: ``queued_commands``, ``date_change``, ``deferred_tools_delta``,
    ``agent_listing_delta``, ``mcp_instructions_delta``, ``changed_files``, ``nested_memory``,
    ``plan_mode``, ``task_reminder``.

    Options:
      max_tokens (20000): most tokens appended per run. What does not fit waits for the next
        run (every type recomputes from the view, so a deferred item is simply announced
        later); queued user input is never held back.

    Claude Code transcripts get ``attachment`` entries chained on the leaf, with ``rendered``
    and ``renderedRole`` as Claude Code 2.1.x writes them; Anthropic/OpenAI transcripts get user
    messages holding ``<system-reminder>`` blocks. Nothing before the last message changes (the
    stage checks it and appends nothing otherwise). While the last assistant message still has
    tool calls without results the stage waits: a message there would break the pairing.

    Example (policy)::

        attachments:
          date_change: {}
          changed_files: {max_chars_per_file: 4000}
        stages:
          - id: attachments
            use: attachments

    Before: ``... user: [tool_result: 1 passed]`` (the session last announced 2026-11-29).
    After:  ``... user: [tool_result: 1 passed]`` then a system message ``The date has changed.
    Today's date is now 2026-11-30. DO NOT mention this to the user explicitly because they
    are already aware.``
    """

    name = "attachments"
    summary = "Append dynamic state (date change, changed files, nested memory, plan mode, deltas) at the tail."
    options_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "max_tokens": {"type": "integer", "minimum": 0, "default": 20000,
                           "description": "Most tokens appended per run (0: no limit); the rest waits for the next run."},
        },
    }

    def run(self, transcript, ctx: Context) -> StageResult:
        config = dict(ctx.policy.attachments or {})
        unknown = sorted(set(config) - set(ATTACHMENT_TYPES))
        enabled = [n for n in ATTACHMENT_TYPES if n in config and dict(config[n] or {}).get("enabled", True) is not False]
        warnings = [f"unknown attachment type {quote(n)} (known: {', '.join(ATTACHMENT_TYPES)})" for n in unknown]
        if not enabled:
            return self._done(transcript, ctx, "nothing-to-do", "no attachment type is enabled under attachments:",
                              {}, warnings)
        view = transcript.view()
        if not view.messages:
            return self._done(transcript, ctx, "nothing-to-do", "the view is empty", {}, warnings)
        last = view.messages[-1]
        if last.role == "assistant" and any(True for _ in last.tool_uses()):
            return self._done(transcript, ctx, "skipped", "a tool call is still waiting for its result", {}, warnings)

        state = build_state(transcript, view, ctx)
        budget = int(self.options["max_tokens"])
        used = 0
        appended: list[NewMessage] = []
        fired: dict[str, int] = {}
        for name in enabled:
            cls = ATTACHMENT_TYPES[name]
            options = cls.resolve(config[name])
            for msg in cls().compute(view, transcript, ctx, options, state):
                tokens = ctx.tokens.count_text("\n\n".join(msg.texts))
                if budget and name not in NEVER_DEFERRED and used + tokens > budget:
                    state.deferred.append(f"{name}: {tokens} tokens (max_tokens)")
                    continue
                used += tokens
                appended.append(msg)
                fired[name] = fired.get(name, 0) + 1
        warnings += state.warnings
        details: dict[str, Any] = {"fired": fired, "tokens_appended": 0, "deferred": state.deferred}
        if not appended:
            return self._done(transcript, ctx, "nothing-to-do", "nothing changed since the model was last told",
                              details, warnings)

        out = append_messages(transcript, appended, ctx.timestamp())
        before, after = view.api_messages(), out.view().api_messages()
        problems = pairing_problems(after)
        if problems or not prefix_intact(before, after):
            warnings.append("appending would have changed the earlier view" + (f" ({problems[0]})" if problems else "")
                            + "; nothing appended")
            return self._done(transcript, ctx, "failed", "the view could not take the attachments", details, warnings)
        details["tokens_appended"] = max(0, ctx.tokens.count_messages(after) - ctx.tokens.count_messages(before))
        reason = "appended " + ", ".join(f"{n}" + (f" x{k}" if k > 1 else "") for n, k in fired.items())
        return self._done(out, ctx, "applied", reason, details, warnings)

    def _done(self, t, ctx: Context, action: str, reason: str, details: dict, warnings: list[str]) -> StageResult:
        for w in warnings:
            ctx.warn(f"attachments: {w}")
        return StageResult(t, self.report(action=action, reason=reason, details=details, warnings=list(warnings)))


def _blocks(content: Any) -> list[dict]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])


def prefix_intact(before: list[dict], after: list[dict]) -> bool:
    """Whether ``after`` only adds at the end of ``before``: every earlier message identical, the
    last one at most extended (the API merges consecutive same-role messages, so an appended
    message may join it; a string content is the same as one text block)."""
    if len(after) < len(before):
        return False
    for k, old in enumerate(before):
        new = after[k]
        if old == new:
            continue
        if k != len(before) - 1 or old.get("role") != new.get("role"):
            return False
        a, b = old.get("content"), new.get("content")
        if isinstance(a, str) and isinstance(b, str):
            if not b.startswith(a):
                return False
        elif _blocks(b)[: len(_blocks(a))] != _blocks(a):
            return False
    return True
