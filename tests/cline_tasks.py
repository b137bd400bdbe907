"""Cline and Roo Code task histories for the tests, written from the format as their source defines it
(cline/cline ``src/core/storage/disk.ts``: the task's Anthropic messages as one JSON array, by
``JSON.stringify``; RooCodeInc/Roo-Code ``src/core/task-persistence/apiMessages.ts``: the same, each with
``ts``, and the condense and truncation markers): nothing here is copied from a real task."""
from __future__ import annotations

import json

TS = 1_767_000_000_000


def task(text: str, ts: int | None = None) -> dict:
    m = {"role": "user", "content": [{"type": "text", "text": f"<task>\n{text}\n</task>"},
                                     {"type": "text", "text": "<environment_details>\n# Current Time\n2026-03-01"
                                                              "\n</environment_details>"}]}
    if ts is not None:
        m["ts"] = ts
    return m


def say(text: str, **extra) -> dict:
    return {"role": "assistant", "content": [{"type": "text", "text": text}], **extra}


def xml_call(tool: str, path: str) -> dict:
    """A tool called as Cline's original protocol does: XML in the assistant's text."""
    return say(f"<thinking>I read it.</thinking>\n<{tool}>\n<path>{path}</path>\n</{tool}>")


def xml_result(tool: str, path: str, output: str, **extra) -> dict:
    """Its result as Cline sends it back: user text."""
    return {"role": "user", "content": [{"type": "text", "text": f"[{tool} for '{path}'] Result:"},
                                        {"type": "text", "text": output},
                                        {"type": "text", "text": "<environment_details>\n...\n</environment_details>"}],
            **extra}


def native_call(cid: str, name: str, args: dict, **extra) -> dict:
    return {"role": "assistant", "content": [{"type": "tool_use", "id": cid, "name": name, "input": args}], **extra}


def native_result(cid: str, output: str, **extra) -> dict:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": cid, "content": output}], **extra}


def write(path, messages: list[dict]) -> None:
    """As Cline writes the file: ``JSON.stringify`` of the array, one line, no newline at the end."""
    path.write_text(json.dumps(messages, separators=(",", ":"), ensure_ascii=False))
