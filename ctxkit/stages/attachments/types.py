"""The base class of attachment types and their registry (re-exported by the package).

Below every type module, the stage and the run's state: they all import it, it imports none of them.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from ...policy.defaults import schema_defaults

if TYPE_CHECKING:
    from ...transcript.edits import NewMessage
    from ...transcript.model import Transcript
    from ...transcript.view import View
    from ..base import Context
    from .state import AttachmentState


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
