"""The stages: one module (or sub-package) per stage, and their explicit list.

Owns each stage's transformation, its options schema and the docstring that is
its user documentation; ``base`` says what a stage is, ``registry`` lists
them. Default order (cheapest and most local first): tool-result-budget, snip,
microcompact, collapse, autocompact, attachments.

May import summarize, store, tokens, policy (its model), transcript and the
shared utilities; must not import the pipeline, reports, the CLI, typer or
rich, and a stage does not call another stage.
"""
from .base import Context, Report, RunInputs, Stage, StageResult
from .registry import REGISTRY, all_stages

__all__ = ["REGISTRY", "Context", "Report", "RunInputs", "Stage", "StageResult", "all_stages"]
