"""The stages, one module each; importing this package registers them all.

Default order (cheapest and most local first): tool-result-budget, snip,
microcompact, collapse, autocompact, attachments.
"""
import importlib

from .base import REGISTRY, Context, Report, RunInputs, Stage, StageResult, register

_MODULES = ("tool_result_budget", "snip", "microcompact", "collapse", "autocompact.stage", "attachments.stage")
for _name in _MODULES:
    try:
        importlib.import_module(f"{__name__}.{_name}")
    except ModuleNotFoundError as exc:  # a stage module not written yet must not break the others
        if exc.name != f"{__name__}.{_name}":
            raise

__all__ = ["REGISTRY", "Context", "Report", "RunInputs", "Stage", "StageResult", "register"]
