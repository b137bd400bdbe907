r"""plan_mode: while the session is in plan mode, remind the model that only planning is allowed.

The session is in plan mode when `--plan-mode` says so (`--no-plan-mode` says it is not), or
(Claude Code transcripts, without the flag) when the latest permission mode the transcript records
(`permissionMode` of user entries, `permission-mode` and `mode` entries) is `plan`. As in Claude
Code, the first reminder is the full one; after that a reminder is appended only every
`turns_between` human turns, and every `full_every`-th of them is full again, the others sparse.
System messages:

```
Plan mode is active. The user indicated that they do not want you to execute yet -- you MUST NOT make any edits (with the exception of the plan file mentioned below), run any non-readonly tools (including changing configs or making commits), or otherwise make any changes to the system. This supersedes any other instructions you have received.

## Plan File Info:
No plan file exists yet. You should create your plan at ~/.claude/plans/calm-river.md using the Write tool.
You should build your plan incrementally by writing to or editing this file. NOTE that this is the only file you are allowed to edit - other than this you are only allowed to take READ-ONLY actions.

Explore the code with read-only tools, use AskUserQuestion when you need the user to decide something, and end your turn with ExitPlanMode once the plan is ready for approval. Never ask about plan approval via text.
```

```
Plan mode still active (see full instructions earlier in conversation). Read-only except plan file (~/.claude/plans/calm-river.md). End turns with AskUserQuestion (for clarifications) or ExitPlanMode (for plan approval). Never ask about plan approval via text or AskUserQuestion.
```

When the session has left plan mode and the view's last plan reminder is still standing, one exit
note is appended (`## Exited Plan Mode` ... `You can now make edits, run tools, and take
actions.`), which also restarts the full/sparse cycle.
"""
from __future__ import annotations

import os

from ...filenames import file_name_part
from ...reminders import reminder
from ...transcript.edits import NewMessage
from .types import AttachmentType, options_schema, register

FULL = """Plan mode is active. The user indicated that they do not want you to execute yet -- you MUST NOT make any edits (with the exception of the plan file mentioned below), run any non-readonly tools (including changing configs or making commits), or otherwise make any changes to the system. This supersedes any other instructions you have received.

## Plan File Info:
{plan_info}
You should build your plan incrementally by writing to or editing this file. NOTE that this is the only file you are allowed to edit - other than this you are only allowed to take READ-ONLY actions.

Explore the code with read-only tools, use AskUserQuestion when you need the user to decide something, and end your turn with ExitPlanMode once the plan is ready for approval. Never ask about plan approval via text."""
NO_PLAN = "No plan file exists yet. You should create your plan at {path} using the Write tool."
HAS_PLAN = "A plan file already exists at {path}. You can read it and make incremental edits using the Edit tool."
SPARSE = ("Plan mode still active (see full instructions earlier in conversation). Read-only except plan file "
          "({path}). End turns with AskUserQuestion (for clarifications) or ExitPlanMode (for plan approval). "
          "Never ask about plan approval via text or AskUserQuestion.")
EXIT = "## Exited Plan Mode\n\nYou have exited plan mode. You can now make edits, run tools, and take actions."
EXIT_REF = " The plan file is located at {path} if you need to reference it."

PERMISSION_MODES = ("default", "plan", "acceptEdits", "bypassPermissions", "dontAsk", "auto")
_PLAN_TYPES = ("plan_mode", "plan_mode_reentry", "plan_mode_exit")


def in_plan_mode(state, flag: bool | None) -> bool:
    """``--plan-mode`` when given, else the transcript's latest recorded permission mode."""
    if flag is not None:
        return bool(flag)
    modes = [m for _, m in state.session.get("modes", []) if m in PERMISSION_MODES]
    return bool(modes) and modes[-1] == "plan"


@register
class PlanMode(AttachmentType):
    name = "plan_mode"
    summary = "While in plan mode, a reminder that only planning is allowed (full, then sparse)."
    replays = _PLAN_TYPES
    cc_role = "system"
    options_schema = options_schema({
        "turns_between": {"type": "integer", "minimum": 1, "default": 5,
                          "description": "Human turns between two reminders."},
        "full_every": {"type": "integer", "minimum": 1, "default": 5,
                       "description": "Every Nth reminder is the full one (the first always is)."},
        "plan_file": {"type": "string", "default": "~/.claude/plans/{slug}.md",
                      "description": "The plan file named in the reminder; {slug} and {session_id} come from the "
                                     "transcript."},
    })

    @classmethod
    def parse_rendered(cls, text: str) -> dict | None:
        if text.startswith("Plan mode is active."):
            return {"type": "plan_mode", "reminderType": "full"}
        if text.startswith("Plan mode still active"):
            return {"type": "plan_mode", "reminderType": "sparse"}
        if text.startswith("## Exited Plan Mode"):
            return {"type": "plan_mode_exit"}
        return None

    def compute(self, view, transcript, ctx, options, state):
        path = self.plan_path(options, state)
        exists = os.path.exists(os.path.expanduser(path))
        role = self.role(options, state)
        # the events since the last exit note: plan reminders and human turns
        since_exit = []
        for ev in state.events:
            if ev.kind == "attachment" and ev.name == "plan_mode_exit":
                since_exit = []
            elif (ev.kind == "attachment" and ev.name in _PLAN_TYPES) or ev.kind == "prompt":
                since_exit.append(ev)
        reminders = [e for e in since_exit if e.kind == "attachment"]
        if not in_plan_mode(state, ctx.inputs.plan_mode):
            if reminders:
                record = {"type": "plan_mode_exit", "planFilePath": path, "planExists": exists}
                text = EXIT + (EXIT_REF.format(path=path) if exists else "")
                return [NewMessage([reminder(text)], role, attachment=record)]
            return []
        if reminders:
            last = since_exit.index(reminders[-1])
            turns = sum(1 for e in since_exit[last + 1:] if e.kind == "prompt")
            if turns < int(options["turns_between"]):
                return []
        count = sum(1 for e in reminders if e.name == "plan_mode") + 1
        every = int(options["full_every"])
        kind = "full" if every <= 1 or count % every == 1 else "sparse"
        if kind == "full":
            text = FULL.format(plan_info=(HAS_PLAN if exists else NO_PLAN).format(path=path))
        else:
            text = SPARSE.format(path=path)
        record = {"type": "plan_mode", "reminderType": kind, "isSubAgent": False, "planFilePath": path,
                  "planExists": exists}
        return [NewMessage([reminder(text)], role, attachment=record)]

    @staticmethod
    def plan_path(options, state) -> str:
        """The plan file's path; the slug and session id come from the transcript, so each is made one
        safe, bounded file name (:func:`ctxkit.filenames.file_name_part`; Claude Code's own stay as they are)."""
        sid, slug = state.session.get("session_id"), state.session.get("slug")
        slug_part = file_name_part(str(slug or sid)) if (slug or sid) else "plan"
        sid_part = file_name_part(str(sid)) if sid else "session"
        return str(options["plan_file"]).replace("{slug}", slug_part).replace("{session_id}", sid_part)
