"""Policy lint: settings that are valid but would not do what they seem to (``ctxkit policy lint``).

``ctxkit policy validate`` checks each value against the schema; a policy can pass it and still
compact on every turn, throw away a warm prompt cache, or have one stage undo another. The lint
reads the merged policy (the file on top of what it extends) with the token budget it implies
(:func:`ctxkit.tokens.budget_for`) and reports each finding as ``file:line:col: level: message
(hint)``, at the value in the linted file that causes it when it sets one (else where it was set).

Errors (the policy does not work as intended; ``ctxkit policy lint`` exits 1):

* the autocompact threshold is below the system prompt and tools (every request is over it), or
  at or below what a compaction leaves behind: the summary reserve, the kept tail and re-injected
  files and skills at their budgets (within the half of the threshold autocompact lets them fill),
  and the system prompt and tools: the next turn would compact again;
* a collapse threshold, or the API-native ``clear_tool_uses`` trigger, below the system prompt and
  tools: it would act on every request;
* two stages that compact proactively (two ``autocompact`` or two ``collapse`` entries, or both
  kinds when ``proactive`` does not make one of them wait: a policy enabling collapse and
  autocompact without ``proactive`` is already refused by ``policy validate``);
* stages ordered so that a later one undoes an earlier one: ``attachments`` before
  ``autocompact`` (a compaction summarizes away the state just announced, which is then not
  announced again); ``microcompact`` or ``collapse`` after ``autocompact`` (they clear or fold
  the tail autocompact just kept word for word).

Warnings (the policy works, at a cost; exit 0):

* the API-native ``clear_tool_uses`` trigger above the context window: it is never reached;
* a microcompact ``gap_minutes`` shorter than the prompt cache's lifetime: it rewrites the view
  while the cache is still warm, and the next request writes the whole prefix again;
* a microcompact ``keep_recent`` of 0: a cold cache clears even the newest tool result;
* ``tool-result-budget`` after ``autocompact``: autocompact decides before oversized results are
  moved out, so it compacts sooner than it needs to.
"""
from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import Problem, UsageError
from ..quoting import quote
from ..tokens.budget import Budget, budget_for
from .layers import CLI_LABELS, Layer, LayerReader
from .loader import assemble
from .merge import Origin
from .model import Policy, StageSpec


@dataclass
class LintResult:
    """What ``ctxkit policy lint`` prints: the policy's problems (it is not valid: exit 2, no lint),
    else its findings, each a :class:`Problem` whose ``level`` is ``error`` or ``warning``."""

    label: str  # the layer linted ("policy.yaml", "<builtin>/default.yaml")
    problems: list[Problem]
    findings: list[Problem]

    @property
    def errors(self) -> int:
        return sum(1 for f in self.findings if f.level == "error")


def lint_policy(value: str | None, sets: Sequence[str] = (), *, stages: Mapping[str, Any], cwd: Path | None = None,
                context_window: int | None = None) -> LintResult:
    """Lint the policy file or built-in named ``value`` (on top of what it extends), or, when ``value``
    is None, the layers a run in ``cwd`` reads (the user's file and the repository's ``.ctxkit.yaml``;
    ``default`` when there are none); ``sets`` (``--set`` items) go on top, ``context_window`` is
    ``--context-window``. ``stages``: the registry (name -> stage class)."""
    reader = LayerReader(Path.cwd() if cwd is None else Path(cwd))
    layers = [reader.named(value)] if value is not None else reader.layers(None, [], None)
    if not layers:
        layers = [reader.builtin("default")]
    top = layers[-1]
    assembly = assemble([*layers, *(reader.setting(item) for item in sets)], reader, stages)
    label = top.label
    if assembly.problems:
        return LintResult(label, assembly.problems, [])
    return LintResult(label, [], Linter(assembly.doc, assembly.origins, top, stages, context_window).findings())


#: the settings that decide the autocompact threshold: where a window that does not fit is pointed at
WINDOW_KEYS = ("context_window", "thresholds.autocompact_buffer", "thresholds.summary_reserve", "max_output_tokens",
               "model")


@dataclass(frozen=True)
class Misfit:
    """A window the policy cannot work in: what is wrong, what to change, and the autocompact stage whose
    kept tail and re-injected files make it so (None: the threshold is below the system prompt and tools)."""

    message: str
    hint: str
    stage: StageSpec | None = None

    def render(self) -> str:
        return f"{self.message} ({self.hint})"


def window_misfits(policy: Policy, stages: Mapping[str, Any], context_window: int | None = None, *,
                   budget: Budget | None = None, overhead: int | None = None) -> list[Misfit]:
    """The fit check, one function for ``policy lint`` and for the commands that run a policy (compact,
    simulate, report ask it before any work): the autocompact threshold of ``policy`` in its window
    (``context_window``, the run's ``--context-window``, else the policy's and the model table's) must be
    above the system prompt and tools, and above what a compaction leaves behind (the summary reserve, the
    kept tail and re-injected files and skills at their budgets, the system prompt and tools), or every
    request compacts again. Only when an autocompact stage is enabled. ``stages``: the registry.
    ``overhead``: the system prompt and tools as the session's own counts have them (a run's calibrated
    overhead, :meth:`ctxkit.stages.base.Context.session_overhead`), so that the check and the run's decisions
    stand on one basis; without a session, the policy's ``overhead_tokens``."""
    b = budget_for(policy, context_window) if budget is None else budget
    th, t = policy.thresholds, b.autocompact_threshold
    o = policy.overhead_tokens if overhead is None else overhead
    autocompacts = [s for s in policy.enabled_stages() if s.use == "autocompact"]
    if autocompacts and t < o:
        reserved = b.context_window - b.effective_window
        return [Misfit((
            f"the autocompact threshold ({t:,} tokens: the {b.context_window:,}-token window, less "
            f"{reserved:,} reserved for output and the {th.autocompact_buffer:,}-token autocompact buffer) "
            f"is below the system prompt and tools (about {o:,} tokens): every request "
            "would be over it"), "use a larger context_window, or lower thresholds.summary_reserve or "
                                 "thresholds.autocompact_buffer")]
    out = []
    for spec in autocompacts:
        kept = stages[spec.use].leaves_behind(_merged(stages[spec.use].defaults(), dict(spec.options)), t) or 0
        left = th.summary_reserve + kept + o
        if t <= left:
            out.append(Misfit((
                f"the autocompact threshold ({t:,} tokens) is at or below what a compaction may leave "
                f"behind ({left:,} tokens: the {th.summary_reserve:,}-token summary reserve, up to {kept:,} of "
                f"kept tail and re-injected files and skills, and about {o:,} of system prompt "
                "and tools): it would compact again every turn"),
                f"lower the {quote(spec.id)} keep_tail / reinject budgets or thresholds.summary_reserve, or use "
                "a larger context_window", spec))
    return out


def session_misfits(policy: Policy, stages: Mapping[str, Any], context_window: int | None, overhead: int, *,
                    force: bool = False) -> list[Misfit]:
    """What refuses a run on one session before any work (``ctxkit compact``): lint's findings with the
    policy's own ``overhead_tokens`` (the policy cannot work in that window, whatever the session), else,
    unless ``force``, an autocompact threshold below the session's own system prompt and tools (``overhead``,
    its calibrated overhead): every request would be over it, and automatic compaction would run on every
    turn without ever getting under it.

    What a compaction may leave behind is not judged with the session's overhead ahead of the run: that
    check adds the kept tail and re-injected files at their largest budgets (half the threshold), a bound
    real compactions rarely reach (a session with 70,000 tokens of system prompt and tools fits a 200,000
    window, 71,000 tokens after a compaction, where the bound says 173,000). The run measures the view it
    leaves instead, and says when it is still over the threshold, and why
    (:func:`ctxkit.reports.outcome.over_threshold_message`). ``--force`` (compact now) is refused only by
    the policy's own misfits: a compaction that makes the view smaller is written, still over the
    threshold or not."""
    own = window_misfits(policy, stages, context_window)
    if force or own and own[0].stage is None:
        return own
    below = [m for m in window_misfits(policy, stages, context_window, overhead=overhead) if m.stage is None]
    if below:
        return [Misfit(below[0].message, below[0].hint + "; `--force` compacts anyway")]
    return own


def require_window_fit(policy: Policy, stages: Mapping[str, Any], context_window: int | None = None,
                       label: str | None = None, overhead: int | None = None, *,
                       misfits: list[Misfit] | None = None) -> None:
    """Raise :class:`UsageError` (exit 2) with lint's message when :func:`window_misfits` finds the window
    too small for ``policy`` (``label``: the policy's name, when a command runs several; ``overhead``: the
    session's system prompt and tools, when a run has one; ``misfits``: found already)."""
    if misfits is None:
        misfits = window_misfits(policy, stages, context_window, overhead=overhead)
    if misfits:
        where = f"policy {quote(label)}: " if label else ""
        raise UsageError(where + "; ".join(m.render() for m in misfits))


class Linter:
    """The rules, over one merged policy document and where each of its values was written."""

    def __init__(self, doc: Mapping[str, Any], origins: Mapping[str, Origin], top: Layer,
                 stages: Mapping[str, Any], context_window: int | None = None):
        self.doc, self.origins, self.top, self.registry = doc, origins, top, stages
        self.policy = Policy.from_mapping(doc)
        self.budget: Budget = budget_for(self.policy, context_window)
        self.enabled = list(self.policy.enabled_stages())

    def findings(self) -> list[Problem]:
        found = [*self.autocompact_threshold(), *self.other_thresholds(), *self.microcompact_cache(),
                 *self.proactive_compactors(), *self.order()]
        return sorted(found, key=lambda p: (p.line, p.col))

    # -- helpers ------------------------------------------------------------------------------------
    def options(self, spec: StageSpec) -> dict[str, Any]:
        """The stage's options with its schema's defaults filled in, nested mappings merged."""
        return _merged(self.registry[spec.use].defaults(), dict(spec.options))

    def of(self, use: str) -> list[StageSpec]:
        return [s for s in self.enabled if s.use == use]

    def where(self, keys: list[str], stage: StageSpec | None = None) -> tuple[str, int, int]:
        """Where to point: the first of ``keys`` the linted file (or a ``--set``) sets, else its entry for
        ``stage``, else the layer that set the first of ``keys`` last, else the top of the linted file."""
        given = [self.origins[k] for k in keys if k in self.origins]
        mine = [o for o in given if o.file in (self.top.label, CLI_LABELS.setting)]
        if mine:
            return mine[0].file, mine[0].line, mine[0].col
        if stage is not None and self.top.document is not None:
            entries = self.top.document.data.get("stages") if isinstance(self.top.document.data, dict) else None
            for i, entry in enumerate(entries if isinstance(entries, list) else []):
                if isinstance(entry, dict) and entry.get("id") == stage.id:
                    key = next((k for k in ("after", "before", "enabled", "id") if k in entry), "id")
                    line, col = self.top.document.key_position(["stages", i, key])
                    return self.top.label, line, col
        shown = [o for o in given if o.line]
        if shown:
            best = max(shown, key=lambda o: o.rank)
            return best.file, best.line, best.col
        return self.top.label, 1, 1

    def problem(self, level: str, where: tuple[str, int, int], message: str, hint: str | None = None) -> Problem:
        return Problem(*where, message, hint, level)

    # -- thresholds -----------------------------------------------------------------------------------
    def window_keys(self) -> list[str]:
        return list(WINDOW_KEYS)

    def autocompact_threshold(self) -> list[Problem]:
        out = []
        for misfit in window_misfits(self.policy, self.registry, budget=self.budget):
            keys = list(WINDOW_KEYS)
            if misfit.stage is not None:  # what the stage leaves behind: its keep_tail / reinject settings
                prefix = f"stages.{misfit.stage.id}.options."
                keys += [k for k in self.origins if k.startswith(prefix + "reinject") or k.startswith(prefix + "keep_tail")]
            out.append(self.problem("error", self.where(keys, misfit.stage), misfit.message, misfit.hint))
        return out

    def other_thresholds(self) -> list[Problem]:
        out = []
        effective = self.budget.effective_window
        if self.policy.proactive != "autocompact":
            for spec in self.of("collapse"):
                opts = self.options(spec)
                key = min(("commit_ratio", "llm_ratio"), key=lambda k: float(opts[k]))
                level = int(effective * float(opts[key]))
                if level < self.policy.overhead_tokens:
                    out.append(self.problem("error", self.where(
                        [f"stages.{spec.id}.options.{key}", *self.window_keys()], spec), (
                        f"stage {quote(spec.id)} acts at {level:,} tokens ({key} {opts[key]} of the "
                        f"{effective:,}-token effective window), below the system prompt and tools (about "
                        f"{self.policy.overhead_tokens:,} tokens): it would act on every request"),
                        f"raise {key} or use a larger context_window"))
        for spec in self.of("microcompact"):
            opts = self.options(spec)
            clear = opts["api_native"]["clear_tool_uses"]
            if opts["mode"] == "time-based" or not clear["enabled"]:
                continue
            key = f"stages.{spec.id}.options.api_native.clear_tool_uses.trigger"
            trigger = int(clear["trigger"])
            if trigger > self.budget.context_window:
                out.append(self.problem("warning", self.where([key], spec), (
                    f"stage {quote(spec.id)}: the clear_tool_uses trigger ({trigger:,} tokens) is above the context window "
                    f"({self.budget.context_window:,} tokens): the API never clears"),
                    "set it below the window, e.g. at the autocompact threshold"))
            elif trigger < self.policy.overhead_tokens:
                out.append(self.problem("error", self.where([key], spec), (
                    f"stage {quote(spec.id)}: the clear_tool_uses trigger ({trigger:,} tokens) is below the system prompt and "
                    f"tools (about {self.policy.overhead_tokens:,} tokens): the API would clear on every request, and every "
                    "clearing rewrites the cached prefix"), "raise it"))
        return out

    # -- the prompt cache -----------------------------------------------------------------------------
    def microcompact_cache(self) -> list[Problem]:
        out = []
        # the lifetime the policy asks the provider for: a 5-minute cache is cold after 5 minutes
        lifetime = self.policy.cache_minutes
        for spec in self.of("microcompact"):
            opts = self.options(spec)
            if opts["mode"] == "api-native":
                continue
            gap = opts["gap_minutes"]
            if gap < lifetime:
                out.append(self.problem("warning", self.where([f"stages.{spec.id}.options.gap_minutes"], spec), (
                    f"stage {quote(spec.id)}: gap_minutes ({gap:g}) is shorter than the prompt cache's lifetime "
                    f"({lifetime} minutes): it would clear tool results while the cache is still "
                    "warm, and the next request writes the whole prefix to the cache again"),
                    f"set gap_minutes to {lifetime} or more" + ("; 5 suits an agent that uses the 5-minute cache"
                                                                if lifetime > 5 else "")))
            if opts["keep_recent"] == 0:
                out.append(self.problem("warning", self.where([f"stages.{spec.id}.options.keep_recent"], spec), (
                    f"stage {quote(spec.id)}: keep_recent is 0: once the cache is cold it clears every compactable tool "
                    "result, even the newest one, which the model has not answered yet"),
                    "keep at least 1; Claude Code keeps 5"))
        return out

    # -- stages that fight ----------------------------------------------------------------------------
    def proactive_compactors(self) -> list[Problem]:
        """Collapse is passive under ``proactive: autocompact``; autocompact waits (reactive) under
        ``proactive: collapse`` when a collapse stage is on. Whatever is left compacts proactively."""
        collapse_on = bool(self.of("collapse"))
        proactive = [s for s in self.enabled if (s.use == "collapse" and self.policy.proactive != "autocompact")
                     or (s.use == "autocompact" and not (self.policy.proactive == "collapse" and collapse_on))]
        if len(proactive) < 2:
            return []
        names = ", ".join(_name(s) for s in proactive[:-1]) + f" and {_name(proactive[-1])}"
        every = "both" if len(proactive) == 2 else "all"
        return [self.problem("error", self.where([f"stages.{proactive[-1].id}.id"], proactive[-1]), (
            f"stages {names} {every} compact proactively: each would compact again what the one before it just "
            "compacted, on the same turn"),
            "disable all but one, or set 'proactive' so that the other waits")]

    def order(self) -> list[Problem]:
        out = []
        position = {s.id: i for i, s in enumerate(self.enabled)}
        for auto in self.of("autocompact"):
            for other in self.enabled:
                before = position[other.id] < position[auto.id]
                if other.use == "attachments" and before:
                    out.append(self.problem("error", self.where([f"stages.{other.id}.id"], other), (
                        f"stage {quote(other.id)} runs before {quote(auto.id)}: a compaction would summarize away "
                        "the state attachments just announced, and they would not announce it again"),
                        f"move {quote(other.id)} after {quote(auto.id)}"))
                elif other.use in ("microcompact", "collapse") and not before:
                    verb = "clear the tool results" if other.use == "microcompact" else "fold the read/search calls"
                    out.append(self.problem("error", self.where([f"stages.{other.id}.id"], other), (
                        f"stage {quote(other.id)} runs after {quote(auto.id)}: it would {verb} that autocompact "
                        "just kept word for word in its tail"), f"move {quote(other.id)} before {quote(auto.id)}"))
                elif other.use == "tool-result-budget" and not before:
                    out.append(self.problem("warning", self.where([f"stages.{other.id}.id"], other), (
                        f"stage {quote(other.id)} runs after {quote(auto.id)}: autocompact decides before oversized "
                        "tool results are moved to the store, so it compacts sooner than it needs to"),
                        f"move {quote(other.id)} before {quote(auto.id)}"))
        return out


def _name(spec: StageSpec) -> str:
    return quote(spec.id) if spec.use == spec.id else f"{quote(spec.id)} (use: {spec.use})"


def _merged(defaults: dict[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
    """``given`` over ``defaults``, mappings merged key by key at every depth."""
    out = copy.deepcopy(defaults)
    for key, value in given.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _merged(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out
