"""The stages a policy may ``use``: an explicit list, in the default order.

A stage exists for policies when it is listed here, and only then: there is no
discovery and no decorator, so a stage module that fails to import fails every
run loudly instead of vanishing from the list. Adding a stage is one import and
one entry in :data:`STAGES`.

The policy package never imports this module: the library entry points
(``ctxkit.load_policy``, the CLI) pass :data:`REGISTRY` in.
"""
from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from .attachments.stage import Attachments
from .autocompact.stage import Autocompact
from .base import Stage
from .collapse.stage import Collapse
from .microcompact import Microcompact
from .snip import Snip
from .tool_result_budget import ToolResultBudget

#: Every stage, cheapest and most local first (the order of the default policy).
STAGES: tuple[type[Stage], ...] = (ToolResultBudget, Snip, Microcompact, Collapse, Autocompact, Attachments)

#: stage name (what ``use:`` says) -> stage class.
REGISTRY: Mapping[str, type[Stage]] = MappingProxyType({cls.name: cls for cls in STAGES})


def undo_steps() -> list:
    """Each stage's :meth:`~ctxkit.stages.base.Stage.undo`, in stage order (what ``ctxkit expand``
    runs before it restores offloaded content)."""
    return [cls.undo for cls in STAGES]
