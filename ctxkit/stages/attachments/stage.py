r"""The attachments stage: state the model must know, appended at the tail of the view.

Some facts change while a session runs: the date, files the user or a formatter edits, the memory
files of a folder the agent just entered, plan mode, the open task list, input typed while a turn
ran, the deferred tools, agent types and MCP servers on offer. Claude Code tells the model about
them with *attachment* messages appended after a turn's tool results, so the cached prefix (system
prompt, tools, old history) never changes for them.

The `attachments` stage does the same. Each attachment type (one module each in
`ctxkit/attachments/`; docs/stages/attachments.md documents them all) computes its message from
the transcript plus the current environment (files on disk, a `--state` file, a `--queued` file,
the clock), and the stage appends it after the last message:

* **Claude Code transcripts** get `attachment` entries chained on the leaf, with `attachment` (the
  data a later run replays), `rendered` (the `<system-reminder>` text) and `renderedRole`, exactly
  as Claude Code 2.1.x writes them. Types Claude Code renders as mid-conversation system messages
  (dates, deltas, reminders) become system messages when the transcript's own attachments are
  rendered that way (Claude Code 2.1.3xx), user reminders otherwise.
* **Anthropic / OpenAI messages** get user messages holding `<system-reminder>` blocks.

Nothing before the last message changes: the stage checks this and the Messages API pairing rules
after appending, and appends nothing if either would break. While the last assistant message still
has tool calls without results, the stage waits (`skipped`): a message there would separate the
calls from their results.

Every attachment is **replayed** on the next run: Claude Code transcripts from the earlier
`attachment` entries in the view, plain transcripts by reading the earlier reminder texts back.
So running `ctxkit compact` after every turn says each thing once. After a compaction the earlier
attachments are behind the boundary, and what still holds is announced again.

## Turning it on

The stage is off in `default` and on in `claude-code-full`. The policy's `attachments:` section
says which types run (a type runs when listed and not `enabled: false`); they run in Claude Code's
order: `queued_commands`, `date_change`, `deferred_tools_delta`, `agent_listing_delta`,
`mcp_instructions_delta`, `changed_files`, `nested_memory`, `plan_mode`, `task_reminder`.

```
attachments:
  date_change: {}
  changed_files: {max_chars_per_file: 4000}
  nested_memory: {}
  deferred_tools_delta: {}
stages:
  - id: attachments
    enabled: true
    options: {max_tokens: 20000}
```

Every type but `queued_commands` also takes `role` (`auto`: `system` when the transcript's own
attachments are rendered as system messages, else `user`). A misspelled type name is a policy
error (exit 2, `unknown key 'date_chnage' in attachments (did you mean 'date_change'?)`).

## Command-line inputs

* `--state FILE` (the three deltas and `task_reminder`) is JSON; an absent key means "unknown"
  (that delta stays quiet), an empty list means "none":

  ```
  {
    "deferred_tools": ["WebFetch", "WebSearch", {"name": "mcp__github__create_issue"}],
    "agents": [{"type": "Explore", "description": "Read-only search agent ...", "tools": "Read, Grep, Glob"},
               {"type": "Plan", "line": "- Plan: Software architect agent ... (Tools: Read)"}],
    "mcp_servers": [{"name": "github", "instructions": "Use the issue tools for ...", "status": "connected"}],
    "tasks": [{"id": "1", "subject": "Add the discount parameter", "status": "in_progress"}]
  }
  ```

* `--queued FILE` (`queued_commands`): what the user typed while the turn ran.
* `--plan-mode` / `--no-plan-mode` (`plan_mode`): without it, the transcript's latest permission
  mode decides.
* `--now TIME`: the clock for `date_change` and the timestamps of the appended entries.

## Example

The `explore-edit` session of the test corpus (2026-11-29; not shipped with ctxkit) read and
edited `app/models.py`. The next morning the user changes that file and adds `app/CLAUDE.md`, and
WebSearch is gone. From the project folder:

```
$ sed -i 's/return sum(i.price for i in items)/return sum(i.price * i.qty for i in items)/' app/models.py
$ echo 'Models stay free of I/O.' > app/CLAUDE.md
$ printf 'attachments:\n  date_change: {}\n  deferred_tools_delta: {}\n  changed_files: {}\n  nested_memory: {}\nstages:\n  - id: attachments\n    enabled: true\n' > ../attachments.yaml
$ echo '{"deferred_tools": ["CronCreate", "CronDelete", "CronList", "EnterWorktree", "ExitWorktree", "Monitor", "NotebookEdit", "SendMessage", "TaskStop", "WebFetch"]}' > ../state.json
$ ctxkit compact --policy ../attachments.yaml --state ../state.json --now 2026-11-30T09:00:00Z ../session.jsonl -o ../out.jsonl
tool-result-budget: nothing-to-do (every tool result is within budget)
microcompact: nothing-to-do (nothing old enough to clear)
autocompact: nothing-to-do (3,148 tokens, under the autocompact threshold (167,000))
attachments: applied: appended date_change, deferred_tools_delta, changed_files, nested_memory [3,148 -> 3,457 tokens]
view: 3,148 -> 3,457 tokens
```

The view ended with `assistant: I added a docstring to Order.total.`; now two messages follow,
and nothing above them changed (the session's recorded working directory does not exist here, so
its paths are looked up under the current directory):

```
system:  The date has changed. Today's date is now 2026-11-30. DO NOT mention this to the user explicitly because they are already aware.

         The following deferred tools are no longer available (their MCP server disconnected). Do not search for them — ToolSearch will return no match:
         WebSearch
user:    <system-reminder>Note: /tmp/cc-explore-edit-7gpmq8dg/app/models.py was modified, ... (the diff)</system-reminder>
         <system-reminder>Contents of /tmp/cc-explore-edit-7gpmq8dg/app/CLAUDE.md: Models stay free of I/O.</system-reminder>
```

The same command on `../out.jsonl` reports `attachments: nothing-to-do (nothing changed since the
model was last told)`.

## When something goes wrong

Nothing stops: an unreadable `--state` or `--queued` file, a file that cannot be read, a memory
file that is not UTF-8 each give a warning in the report (and on stderr) and the other types go
on, e.g. `ctxkit: warning: attachments: --state state.json: cannot read it (No such file or
directory); deltas skipped`. When none of the session's files is found, the project is most
likely not on this machine and a warning says so (`changed_files: 5 file(s) the session read are
not found under /tmp/snip-ex; run ctxkit from the project folder to check them`). What does not
fit a budget (`max_tokens`, a type's `max_chars_total` or `max_chars`) is listed under `deferred`
in the report (`--report json`) and appended by a later run; queued input is never held back.
"""
from __future__ import annotations

import copy
from typing import Any

from ...quoting import quote
from ...transcript.edits import NewMessage, append_messages
from ...transcript.view import pairing_problems
from ..base import Context, Stage, StageResult
from . import ATTACHMENT_TYPES, options_schemas
from .state import build_state

NEVER_DEFERRED = ("queued_commands",)  # the user's own words: no budget drops them


class Attachments(Stage):
    """The attachments stage; its documentation is the module docstring (``ctxkit stages attachments``)."""

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


    @classmethod
    def extend_policy_schema(cls, schema: dict[str, Any]) -> None:
        """Check each attachment type's options (``attachments.<type>`` of a policy) against the
        schema its module declares."""
        props = schema["properties"]["attachments"]["properties"]
        for name, options in options_schemas().items():
            described = props.get(name, {}).get("description")
            props[name] = {"$id": f"urn:ctxkit:attachment:{name}:options", **copy.deepcopy(dict(options))}
            if described:
                props[name]["description"] = described

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
