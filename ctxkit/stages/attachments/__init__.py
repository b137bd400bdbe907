"""Attachment types: state the model must know, appended at the tail of the view.

Each type is a small module that registers one :class:`AttachmentType` (:mod:`.types`),
like the stages do in ``ctxkit.stages``. A policy names the types it wants
under ``attachments:`` (a type runs when present and not ``enabled: false``);
the ``attachments`` stage runs them in the order of :data:`ATTACHMENT_TYPES`,
which is the order Claude Code computes them in.

A type computes ``list[NewMessage]`` from the view, the transcript, the run's
:class:`~ctxkit.stages.attachments.state.AttachmentState` (events, earlier
attachments, the ``--state`` and ``--queued`` files, paths) and its options.
It never edits anything: the stage appends what the types return.

For other stages (autocompact's post-compact re-injection) the delta
renderers are plain functions: :func:`render_delta` and :func:`announce_full`.

``stage`` is the stage, ``state`` what the types read (events of the session,
the ``--state`` and ``--queued`` files, times), ``delta_base`` the base of the
three delta types. Must not import: the CLI, typer or rich; other stages.
"""
from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from ...reminders import reminder
from ...transcript.edits import NewMessage
from .state import AttachmentState, load_state_file
from .types import ATTACHMENT_TYPES, AttachmentType, options_schema, options_schemas, register

# Claude Code's order (attachments.ts): queued commands, date, the three deltas, changed files,
# nested memory, plan mode, task reminder.
_MODULES = ("queued_commands", "date_change", "deferred_tools_delta", "agent_listing_delta", "mcp_instructions_delta",
            "changed_files", "nested_memory", "plan_mode", "task_reminder")
for _name in _MODULES:
    importlib.import_module(f"{__name__}.{_name}")


# -- for other stages: the delta renderers ----------------------------------------------------------
def render_delta(kind: str, added: list[str], removed: list[str], state: Mapping[str, Any] | None,
                 *, role: str = "system", initial: bool = False) -> NewMessage | None:
    """A delta attachment announcing ``added`` and ``removed`` names of ``kind`` (one of
    ``deferred_tools_delta``, ``agent_listing_delta``, ``mcp_instructions_delta``).

    ``state`` is the ``--state`` document (the lines/instructions of the added names come from
    it). None when there is nothing to say.
    """
    from .delta_base import DeltaType

    cls = ATTACHMENT_TYPES[kind]
    assert issubclass(cls, DeltaType)
    return cls.render(added, removed, cls.current(state or {}) or {}, role=role, initial=initial, options=cls.defaults())


def announce_full(kind: str, state: Mapping[str, Any] | None, *, role: str = "system") -> NewMessage | None:
    """The full current state of ``kind`` as if nothing had been announced (after a compaction,
    the earlier deltas are gone from the view). None when the state file says nothing of it."""
    from .delta_base import DeltaType

    cls = ATTACHMENT_TYPES[kind]
    assert issubclass(cls, DeltaType)
    current = cls.current(state or {})
    if not current:
        return None
    from .delta_base import locale_order

    return cls.render(sorted(current, key=locale_order), [], current, role=role, initial=True, options=cls.defaults())


__all__ = ["ATTACHMENT_TYPES", "AttachmentState", "AttachmentType", "NewMessage", "announce_full", "load_state_file",
           "options_schema", "options_schemas", "register", "reminder", "render_delta"]
