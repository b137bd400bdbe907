"""Attachment types: state the model must know, appended at the tail of the view.

Each type is a small module that registers one :class:`AttachmentType` here,
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
from typing import TYPE_CHECKING, Any, ClassVar

from ...policy.defaults import schema_defaults
from ...reminders import reminder
from ...transcript.edits import NewMessage
from .state import AttachmentState, load_state_file

if TYPE_CHECKING:
    from ...transcript.model import Transcript
    from ...transcript.view import View
    from ..base import Context


class AttachmentType:
    """Base class of every attachment type. Subclasses set ``name``, ``options_schema``, ``compute``.

    ``replays`` lists the Claude Code attachment types (``attachment.type`` of earlier entries) the
    type reads back to know what the model was already told. ``cc_role`` is the role Claude Code
    2.1.x renders it with: ``system`` types become mid-conversation system messages when the
    transcript's own attachments are rendered that way (``role: auto``), user reminders otherwise.
    """

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    replays: ClassVar[tuple[str, ...]] = ()
    cc_role: ClassVar[str] = "user"
    options_schema: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}, "additionalProperties": False}

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        return schema_defaults(cls.options_schema)

    @classmethod
    def resolve(cls, options: Mapping[str, Any] | None) -> dict[str, Any]:
        """The type's options: its defaults, overridden by what the policy sets."""
        return {**cls.defaults(), **dict(options or {})}

    @classmethod
    def role(cls, options: Mapping[str, Any], state: AttachmentState) -> str:
        chosen = options.get("role", "auto")
        if chosen in ("user", "system"):
            return chosen
        return state.system_role if cls.cc_role == "system" else "user"

    @classmethod
    def parse_rendered(cls, text: str) -> dict | None:
        """Plain formats: the attachment data behind one of this type's earlier reminder texts
        (the text inside ``<system-reminder>``), or None when the text is not this type's."""
        return None

    def compute(self, view: View, transcript: Transcript, ctx: Context, options: Mapping[str, Any],
                state: AttachmentState) -> list[NewMessage]:  # pragma: no cover - abstract
        raise NotImplementedError


def options_schema(properties: dict[str, Any], *, role: bool = True) -> dict[str, Any]:
    """An attachment type's options schema: ``enabled`` (and ``role``) plus the type's own options."""
    common: dict[str, Any] = {"enabled": {"type": "boolean", "default": True, "description": "Whether this type runs."}}
    if role:
        common["role"] = {"enum": ["auto", "user", "system"], "default": "auto",
                          "description": "Role of the appended message. auto: as Claude Code 2.1.x renders this type "
                                         "when the transcript's own attachments are system-rendered, else user."}
    return {"type": "object", "additionalProperties": False, "properties": {**common, **properties}}


ATTACHMENT_TYPES: dict[str, type[AttachmentType]] = {}


def register(cls: type[AttachmentType]) -> type[AttachmentType]:
    """Class decorator: make an attachment type available to policies under ``cls.name``."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no name")
    ATTACHMENT_TYPES[cls.name] = cls
    return cls


def options_schemas() -> dict[str, dict[str, Any]]:
    """type name -> its options schema (what the policy validator checks ``attachments.<type>`` with)."""
    return {name: cls.options_schema for name, cls in ATTACHMENT_TYPES.items()}


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
