"""Codex CLI rollouts for the tests, written from the format as Codex's source defines it
(codex-rs/protocol/src/protocol.rs ``RolloutLine``/``RolloutItem``, codex-rs/protocol/src/models.rs
``ResponseItem``): nothing here is copied from a real session."""
from __future__ import annotations

import json

SESSION_ID = "0199aaaa-0000-7000-8000-000000000001"


def line(typ: str, payload: dict, second: int = 0) -> str:
    return json.dumps({"timestamp": f"2026-03-01T10:{second // 60:02d}:{second % 60:02d}.000Z", "type": typ,
                       "payload": payload})


def message(role: str, text: str) -> dict:
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


def call(call_id: str, command: str) -> dict:
    return {"type": "function_call", "name": "shell_command", "arguments": json.dumps({"command": command}),
            "call_id": call_id}


def output(call_id: str, text: str) -> dict:
    return {"type": "function_call_output", "call_id": call_id, "output": text}


def token_count(input_tokens: int, output_tokens: int, window: int = 258_400) -> dict:
    usage = {"input_tokens": input_tokens, "cached_input_tokens": input_tokens // 2, "output_tokens": output_tokens,
             "reasoning_output_tokens": output_tokens // 4, "total_tokens": input_tokens + output_tokens}
    return {"type": "token_count", "info": {"total_token_usage": usage, "last_token_usage": usage,
                                            "model_context_window": window}, "rate_limits": None}


def opening() -> list[str]:
    """The lines Codex writes before the first prompt: session meta, the developer and environment context."""
    return [
        line("session_meta", {"id": SESSION_ID, "timestamp": "2026-03-01T10:00:00Z", "cwd": "/w",
                              "originator": "codex_cli_rs", "cli_version": "0.120.0", "instructions": None,
                              "model_provider": "openai"}),
        line("response_item", message("developer", "<permissions instructions>sandbox: workspace-write"
                                                   "</permissions instructions>")),
        line("response_item", message("user", "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>")),
    ]


def turn(n: int, prompt: str, calls: list[tuple[str, str, str]], answer: str, *, usage: tuple[int, int] | None = None,
         second: int = 0) -> list[str]:
    """One user turn: turn context, the prompt, a reasoning item, the calls and their outputs, the answer."""
    out = [line("turn_context", {"turn_id": f"t{n}", "cwd": "/w", "approval_policy": "on-request",
                                 "sandbox_policy": {"type": "workspace-write"}, "model": "gpt-5.1-codex",
                                 "summary": "auto"}, second),
           line("event_msg", {"type": "task_started", "turn_id": f"t{n}", "model_context_window": 258_400}, second),
           line("response_item", message("user", prompt), second),
           line("event_msg", {"type": "user_message", "message": prompt, "images": []}, second),
           line("response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": "**Looking**"}],
                                  "content": None, "encrypted_content": "gAAAAB-opaque"}, second + 1)]
    out += [line("response_item", call(cid, cmd), second + 1) for cid, cmd, _ in calls]
    out += [line("response_item", output(cid, text), second + 2) for cid, _, text in calls]
    out.append(line("response_item", message("assistant", answer), second + 3))
    if usage is not None:
        out.append(line("event_msg", token_count(*usage), second + 3))
    out.append(line("event_msg", {"type": "task_complete", "turn_id": f"t{n}", "last_agent_message": answer},
                    second + 3))
    return out


def write(path, lines: list[str]) -> None:
    path.write_text("\n".join(lines) + "\n")
