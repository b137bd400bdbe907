"""Rules about the merged policy as a whole, which no single layer can break alone."""
from __future__ import annotations

from typing import Any, Mapping

from ..errors import Problem
from ..quoting import quote
from .merge import Origin

PROACTIVE_STAGES = ("collapse", "autocompact")


def policy_rules(doc: Mapping[str, Any], origins: Mapping[str, Origin]) -> list[Problem]:
    return proactive_conflict(doc, origins) + summarizer_command(doc, origins)


def summarizer_command(doc: Mapping[str, Any], origins: Mapping[str, Origin]) -> list[Problem]:
    """``summarizer.use: command`` needs ``summarizer.command`` — from any layer (so that two
    ``--set`` items, or a repository file and a user file, can say one each)."""
    summarizer = doc.get("summarizer") or {}
    if summarizer.get("use") != "command" or summarizer.get("command"):
        return []
    origin = origins["summarizer.use"]
    return [Problem(origin.file, origin.line, origin.col, "summarizer.use is 'command' but no summarizer.command "
                    "is set", "add summarizer.command: the shell command that writes the summary")]


def proactive_conflict(doc: Mapping[str, Any], origins: Mapping[str, Origin]) -> list[Problem]:
    """Collapse and autocompact both enabled, without ``proactive`` saying which one leads.

    Their thresholds sit close together (about 90% and 93% of the window), so both running
    proactively would fight: collapse commits, then autocompact summarizes away what collapse
    kept. Claude Code turns proactive autocompact off when collapse is on; ctxkit asks the
    policy to choose. Reactive compaction (after prompt-too-long) is unaffected. The problem
    points at the layer that enabled the later of the two.
    """
    if doc.get("proactive") is not None:
        return []
    enabled = [s for s in doc.get("stages", []) if s.get("enabled", True) is not False]
    pair = [next((s for s in enabled if s.get("use", s["id"]) == use), None) for use in PROACTIVE_STAGES]
    if None in pair:
        return []
    origin = max((_enabling_origin(s, origins) for s in pair), key=lambda o: (o.rank, o.line, o.col))
    names = " and ".join(_stage_name(s) for s in pair)
    message = (f"stages {names} are both enabled; set 'proactive' to collapse or autocompact "
               "to choose which one compacts proactively")
    return [Problem(origin.file, origin.line, origin.col, message, "reactive compaction stays available either way")]


def _enabling_origin(stage: Mapping[str, Any], origins: Mapping[str, Origin]) -> Origin:
    stage_id = stage["id"]
    return origins.get(f"stages.{stage_id}.enabled") or origins[f"stages.{stage_id}.id"]


def _stage_name(stage: Mapping[str, Any]) -> str:
    use = stage.get("use", stage["id"])
    return quote(stage['id']) if use == stage["id"] else f"{quote(stage['id'])} (use: {use})"
