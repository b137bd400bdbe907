r"""task_reminder: tasks are open but the task tools have been idle; a gentle reminder with the list.

The open tasks come from the `--state` file (key `tasks`: objects with `id`, `subject` or
`content`, `status`) or, without it, are rebuilt from the view: the latest `TodoWrite` list, and
`TaskCreate`/`TaskUpdate` calls (ids from `Task #N` in their results). A task is open unless
`completed` (or `deleted`). When no task tool was called for `turns_since_use` assistant turns,
and no reminder came in the last `turns_between` turns, one reminder is appended (Claude Code's
numbers: 10 and 10):

```
The task tools haven't been used recently. If you're working on tasks that would benefit from tracking progress, consider using TaskCreate to add new tasks and TaskUpdate to update task status (set to in_progress when starting, completed when done). Also consider cleaning up the task list if it has become stale. Only use these if relevant to the current work. This is just a gentle reminder - ignore if not applicable. Make sure that you NEVER mention this reminder to the user


Here are the existing tasks:

#1. [in_progress] Add the discount parameter
#2. [pending] Update the tests
```

A session that tracks work with `TodoWrite` gets Claude Code's TodoWrite wording instead
(`The TodoWrite tool hasn't been used recently. ...`). The list is capped at `max_items`.
"""
from __future__ import annotations

import re

from ...reminders import reminder
from ...transcript.edits import NewMessage
from .types import AttachmentType, options_schema, register

TASK_TEXT = ("The task tools haven't been used recently. If you're working on tasks that would benefit from tracking "
             "progress, consider using TaskCreate to add new tasks and TaskUpdate to update task status (set to "
             "in_progress when starting, completed when done). Also consider cleaning up the task list if it has "
             "become stale. Only use these if relevant to the current work. This is just a gentle reminder - ignore "
             "if not applicable. Make sure that you NEVER mention this reminder to the user\n")
TODO_TEXT = ("The TodoWrite tool hasn't been used recently. If you're working on tasks that would benefit from "
             "tracking progress, consider using the TodoWrite tool to track progress. Also consider cleaning up the "
             "todo list if has become stale and no longer matches what you are working on. Only use it if it's "
             "relevant to the current work. This is just a gentle reminder - ignore if not applicable. Make sure "
             "that you NEVER mention this reminder to the user\n")
CLOSED = ("completed", "deleted", "cancelled")
_TASK_ID = re.compile(r"Task #(\w+)")


@register
class TaskReminder(AttachmentType):
    name = "task_reminder"
    summary = "A gentle reminder with the open task list when the task tools have been idle."
    replays = ("task_reminder", "todo_reminder")
    cc_role = "system"
    options_schema = options_schema({
        "turns_since_use": {"type": "integer", "minimum": 1, "default": 10,
                            "description": "Assistant turns without a task tool call before reminding."},
        "turns_between": {"type": "integer", "minimum": 1, "default": 10,
                          "description": "Assistant turns between two reminders."},
        "tools": {"type": "array", "items": {"type": "string"}, "default": ["TaskCreate", "TaskUpdate", "TodoWrite"],
                  "description": "Calls that count as using the task tools."},
        "max_items": {"type": "integer", "minimum": 1, "default": 50, "description": "Most tasks listed."},
    })

    @classmethod
    def parse_rendered(cls, text: str) -> dict | None:
        if text.startswith("The task tools haven't been used recently."):
            return {"type": "task_reminder"}
        if text.startswith("The TodoWrite tool hasn't been used recently."):
            return {"type": "todo_reminder"}
        return None

    def compute(self, view, transcript, ctx, options, state):
        tools = set(options["tools"])
        since_use = since_reminder = 0
        reminded = False
        for ev in state.events:
            if ev.kind == "assistant":
                since_use += 1
                since_reminder += 1
            elif ev.kind == "tool" and ev.name in tools:
                since_use = 0
            elif ev.kind == "attachment" and ev.name in self.replays:
                reminded, since_reminder = True, 0
        if since_use < int(options["turns_since_use"]) or (reminded and since_reminder < int(options["turns_between"])):
            return []
        todo_style, tasks = self.open_tasks(state)
        if not tasks:
            return []
        tasks = tasks[: int(options["max_items"])]
        if todo_style:
            listing = "\n".join(f"{k}. [{t['status']}] {t['subject']}" for k, t in enumerate(tasks, 1))
            text = TODO_TEXT + "\n\nHere are the existing contents of your todo list:\n\n[" + listing + "]"
            kind = "todo_reminder"
        else:
            listing = "\n".join(f"#{t['id']}. [{t['status']}] {t['subject']}" for t in tasks)
            text = TASK_TEXT + "\n\nHere are the existing tasks:\n\n" + listing
            kind = "task_reminder"
        record = {"type": kind, "content": tasks, "itemCount": len(tasks)}
        return [NewMessage([reminder(text)], self.role(options, state), attachment=record)]

    @staticmethod
    def open_tasks(state) -> tuple[bool, list[dict]]:
        """(listed with TodoWrite?, the open tasks as {id, subject, status})."""
        if state.env is not None and isinstance(state.env.get("tasks"), list):
            tasks = [{"id": str(t.get("id", k)), "subject": str(t.get("subject") or t.get("content") or ""),
                      "status": str(t.get("status") or "pending")}
                     for k, t in enumerate(state.env["tasks"], 1) if isinstance(t, dict)]
            return False, [t for t in tasks if t["status"] not in CLOSED]
        tasks: dict[str, dict] = {}
        todo_style = False
        for ev in state.tools(("TodoWrite", "TaskCreate", "TaskUpdate")):
            if ev.is_error:
                continue
            if ev.name == "TodoWrite" and isinstance(ev.input.get("todos"), list):
                todo_style = True
                tasks = {str(k): {"id": str(k), "subject": str(t.get("content") or t.get("subject") or ""),
                                  "status": str(t.get("status") or "pending")}
                         for k, t in enumerate(ev.input["todos"], 1) if isinstance(t, dict)}
            elif ev.name == "TaskCreate":
                m = _TASK_ID.search(ev.result_text())
                tid = m.group(1) if m else str(len(tasks) + 1)
                tasks[tid] = {"id": tid, "subject": str(ev.input.get("subject") or ev.input.get("description") or ""),
                              "status": "pending"}
                todo_style = False
            elif ev.name == "TaskUpdate":
                tid = str(ev.input.get("taskId") or ev.input.get("id") or "")
                if tid in tasks:
                    if isinstance(ev.input.get("status"), str):
                        tasks[tid]["status"] = ev.input["status"]
                    if isinstance(ev.input.get("subject"), str):
                        tasks[tid]["subject"] = ev.input["subject"]
        return todo_style, [t for t in tasks.values() if t["status"] not in CLOSED]
