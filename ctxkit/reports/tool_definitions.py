"""Tool definitions ctxkit offers an agent to give its model (``ctxkit tools NAME --json``).

The snip tool lets the model remove finished turns from its own context: the
view tags each real user message with ``[id:xxxxxx]`` (see
:mod:`ctxkit.transcript.snip_ids`), the model calls ``snip`` with the ids of the
turns it no longer needs, and the ``snip`` stage carries the call out on the
next ``ctxkit compact`` (the agent answers the call with the stage's report).
The definition is in the Messages API ``tools`` shape.
"""
from __future__ import annotations

from typing import Any, Callable

from ..errors import UsageError
from ..quoting import quote

SNIP_DESCRIPTION = (
    "Remove earlier turns of this conversation that you no longer need, to keep your context small. "
    "Each user message ends with a tag like [id:k8f3z1]; pass the ids of the user messages whose turns "
    "should go. A turn is that user message and everything after it up to the next user message "
    "(your replies, tool calls and their results), and it is removed whole. Before snipping, write down "
    "anything from those turns you will still need (file paths, decisions, results). The first user "
    "message and the current turn cannot be removed."
)


def snip_tool(name: str = "snip") -> dict[str, Any]:
    """The snip tool's definition (``name`` as the policy's snip stage calls it)."""
    return {
        "name": name,
        "description": SNIP_DESCRIPTION,
        "input_schema": {
            "type": "object",
            "properties": {
                "ids": {
                    "type": "array",
                    "items": {"type": "string", "pattern": "^[0-9a-z]{1,6}$"},
                    "minItems": 1,
                    "description": "Ids from the [id:...] tags of the user messages whose turns to remove, "
                                   "e.g. [\"k8f3z1\"].",
                },
                "reason": {"type": "string", "description": "Optional: why these turns are no longer needed."},
            },
            "required": ["ids"],
            "additionalProperties": False,
        },
    }


TOOLS: dict[str, Callable[..., dict[str, Any]]] = {"snip": snip_tool}


def tool_definition(name: str, **kwargs: Any) -> dict[str, Any]:
    """The definition of the tool ctxkit offers under ``name``; a usage error names the known ones."""
    make = TOOLS.get(name)
    if make is None:
        raise UsageError(f"unknown tool {quote(name)}; known: {', '.join(sorted(TOOLS))}")
    return make(**kwargs)
