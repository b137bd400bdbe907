"""The stages a policy may ``use``: an explicit list, in the default order.

A stage exists for policies when it is listed here, and only then: there is no
discovery and no decorator. Adding a stage is one entry in :data:`LISTED`
(its name, its module, its class).

Each stage module is imported the first time its class is asked for, not with
this module: a run imports the stages its policy enables, not all six (with
what they import: the summarizers, the attachment types), which keeps
``ctxkit compact`` quick to start (docs/benchmarks.md). A listed module that
cannot be imported still fails loudly, with an ImportError naming it, as soon
as anything asks for that stage (``REGISTRY[name]``) or for every stage
(:func:`all_stages`: ``ctxkit stages``, ``ctxkit expand``, the policy schema,
checking a policy that is not a built-in one). ``tests/test_layout.py`` imports
them all.

The policy package never imports this module: the library entry points
(``ctxkit.load_policy``, the CLI) pass :data:`REGISTRY` in.
"""
from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .base import Stage

#: Every stage, cheapest and most local first (the order of the default policy):
#: (name, as ``use:`` says it; module under ``ctxkit.stages``; class).
LISTED: tuple[tuple[str, str, str], ...] = (
    ("tool-result-budget", "tool_result_budget", "ToolResultBudget"),
    ("snip", "snip", "Snip"),
    ("microcompact", "microcompact", "Microcompact"),
    ("collapse", "collapse.stage", "Collapse"),
    ("autocompact", "autocompact.stage", "Autocompact"),
    ("attachments", "attachments.stage", "Attachments"),
    # repairs (ctxkit doctor --fix): in no built-in policy's pipeline; run by name
    ("repair", "repair.stage", "Repair"),
    ("slim", "repair.slim", "Slim"),
)


class _Registry(Mapping):
    """stage name -> stage class, each module imported on first use. Its names (iterating, ``in``,
    ``len``) need no import."""

    def __init__(self, listed: tuple[tuple[str, str, str], ...]):
        self._where = {name: (module, cls) for name, module, cls in listed}
        self._loaded: dict[str, type[Stage]] = {}

    def __getitem__(self, name: str) -> type[Stage]:
        if name not in self._loaded:
            module, cls_name = self._where[name]  # KeyError: not a stage
            cls = getattr(importlib.import_module(f"{__package__}.{module}"), cls_name)
            if cls.name != name:  # the list and the class disagree: a bug, said at once
                raise ImportError(f"ctxkit.stages.{module}.{cls_name} is named {cls.name!r}, listed as {name!r}")
            self._loaded[name] = cls
        return self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def __len__(self) -> int:
        return len(self._where)

    def __contains__(self, name: object) -> bool:
        return name in self._where


#: stage name (what ``use:`` says) -> stage class.
REGISTRY: Mapping[str, type[Stage]] = _Registry(LISTED)


def all_stages() -> tuple[type[Stage], ...]:
    """Every stage class, in the default order (imports every stage module)."""
    return tuple(REGISTRY[name] for name, _, _ in LISTED)


def undo_steps() -> list:
    """Each stage's :meth:`~ctxkit.stages.base.Stage.undo`, in stage order (what ``ctxkit expand``
    runs before it restores offloaded content)."""
    return [cls.undo for cls in all_stages()]
