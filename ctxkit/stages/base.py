"""What a stage is: a named, registered transformation of a transcript.

A stage is a class with a ``name`` (what a policy's ``use:`` names), an
``options_schema`` (JSON Schema, Draft 2020-12, with defaults; the policy
validator checks each stage's options against it) and a ``run`` method that
takes a transcript and a :class:`Context` and returns a new transcript plus a
:class:`Report`. Stages never mutate their input (transcripts are
copy-on-write) and never call each other; the pipeline runs them in the order
the policy declares.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from ..policy.defaults import schema_defaults

if TYPE_CHECKING:  # imported for type names only; stages stay free of the CLI
    from ..clock import Clock
    from ..policy.model import Policy
    from ..store.disk import Store
    from ..tokens import TokenCounter
    from ..tokens.view_count import ViewTokens
    from ..transcript.model import Transcript


#: The session-state key under which a run remembers the response whose usage it made stale (see
#: :mod:`ctxkit.tokens.view_count`): ``{"anchor": uuid, "view": digest of the view it left up to it}``.
SUPERSEDED_USAGE = "usage_superseded"

#: The session-state key under which a run keeps the overhead its newest count from usage implied
#: (:attr:`ctxkit.tokens.view_count.ViewTokens.calibration`): ``{"estimator": name, "tokens": n, "scale": s}``, so
#: that the next run counts its output, whose usage that run made stale, on the same basis.
CALIBRATED_OVERHEAD = "calibrated_overhead"


@dataclass
class RunInputs:
    """What one invocation adds to the policy: flags and files named on the command line."""

    now: Any = None  # datetime or None (the clock decides)
    force: bool = False  # --force: compact regardless of thresholds (manual /compact)
    instructions: str | None = None  # --instructions: focus for the summary
    session_memory: Path | None = None  # --session-memory FILE
    snip_ids: tuple[str, ...] = ()  # ctxkit snip --ids
    state_file: Path | None = None  # --state FILE (tools, agents, MCP servers) for delta attachments
    queued_file: Path | None = None  # --queued FILE
    plan_mode: bool | None = None  # --plan-mode
    context_window: int | None = None  # --context-window: overrides the policy and the model table
    cwd: Path = field(default_factory=Path.cwd)
    #: whether ``now`` named its UTC offset (``--now 2026-11-30T01:00:00+01:00``): then it, not TZ, decides
    #: the local date; an aware ``now`` given by a library caller is taken to carry one
    now_has_offset: bool = True
    plan_file: Path | None = None  # the session's plan file (re-injected after a compaction), when known
    transcript_path: str | None = None  # the transcript's path, named in a compaction summary (Claude Code)


@dataclass
class Context:
    """Everything a stage may use besides the transcript; tests replace any part."""

    policy: Policy
    tokens: TokenCounter
    clock: Clock
    store: Store
    inputs: RunInputs
    summarizer_factory: Any = None  # callable(policy, ctx) -> Summarizer; see ctxkit.summarize.factory
    simulate: bool = False  # ctxkit stats: report what would be done; no model or command is called
    tokens_freed: int = 0  # tokens freed by earlier stages in this run (autocompact counts them)
    redactor: Any = None  # the run's secret redactor (ctxkit.summarize.redact.redactor_for builds it on first use)
    warnings: list[str] = field(default_factory=list)
    #: the overhead (system prompt and tools) the newest count from usage implied in this run
    calibrated_overhead: Any = None  # a ctxkit.tokens.view_count.Calibration

    def warn(self, message: str) -> None:
        self.warnings.append(message)

    def view_tokens(self, t: Transcript) -> ViewTokens:
        """The token count of ``t``'s view that every threshold decision uses: the usage the API reported for
        the newest assistant message plus an estimate of what follows, or the estimate plus the overhead
        (:func:`ctxkit.tokens.view_count.count_view`): calibrated from the newest usage counted in this
        run, else from the one an earlier run kept for the session, else the policy's ``overhead_tokens``
        (which a policy file or ``--set`` naming it always makes the overhead)."""
        from ..store.sessions import session_key
        from ..tokens.view_count import Calibration, count_view
        from ..transcript.interface import handler

        # a format that records usage (Claude Code; Codex, Gemini, OpenCode, Cline): message lists have none
        recorded = t.format == "claude-code" or handler(t.format).usage is not None
        state = self.store.session_state(session_key(t)) if recorded else {}
        calibrated = None if self.policy.explicit("overhead_tokens") else self.calibrated_overhead
        kept = state.get(CALIBRATED_OVERHEAD)
        if calibrated is None and not self.policy.explicit("overhead_tokens") and isinstance(kept, dict) \
                and kept.get("estimator") == self.estimator_name():
            calibrated = Calibration.from_json(kept)
        count = count_view(t, self.tokens, self.policy.overhead_tokens, state.get(SUPERSEDED_USAGE), calibrated)
        if count.calibration is not None:
            self.calibrated_overhead = count.calibration
        return count

    def session_overhead(self, t: Transcript) -> int:
        """The system prompt and tools as the counts of ``t`` have them: what its usage implies (0 when the
        estimator counts the view above the usage: the calibration scales instead), else the overhead its
        count adds (a calibration kept by an earlier run, or the policy's ``overhead_tokens``, which a policy
        file or ``--set`` naming it makes the answer)."""
        if self.policy.explicit("overhead_tokens"):
            return self.policy.overhead_tokens
        count = self.view_tokens(t)
        return count.calibration.overhead if count.calibration is not None else count.overhead

    def estimator_name(self) -> str:
        """The estimator that really counts: the policy's, or ``rough`` once it has fallen back."""
        return "rough" if self.tokens.degraded else self.tokens.name

    def timestamp(self) -> str:
        """Now, as transcripts write it ("2026-11-29T23:06:25.561Z"), for entries a stage appends."""
        now = self.clock.now()
        return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


@dataclass
class Report:
    """What one stage did, for stderr and ``--report json``."""

    stage_id: str
    use: str
    action: str = "skipped"  # "skipped" | "applied" | "nothing-to-do" | "failed" | "breaker-open" ...
    reason: str = ""
    tokens_before: int = 0
    tokens_after: int = 0
    details: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def tokens_freed(self) -> int:
        return max(0, self.tokens_before - self.tokens_after)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.stage_id,
            "use": self.use,
            "action": self.action,
            "reason": self.reason,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "tokens_freed": self.tokens_freed,
            "details": self.details,
            "warnings": self.warnings,
        }


@dataclass
class StageResult:
    transcript: Transcript
    report: Report


class Stage:
    """Base class of every stage. Subclasses set ``name``, ``options_schema`` and implement ``run``."""

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    options_schema: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}, "additionalProperties": False}

    def __init__(self, stage_id: str, options: dict[str, Any]):
        self.id = stage_id
        self.options = {**self.defaults(), **(options or {})}

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        """The option values a policy gets when it does not set them (from the schema's ``default``s)."""
        return schema_defaults(cls.options_schema)

    def uses_summarizer(self) -> bool:
        """Whether this stage, as configured, may call the policy's summarizer (the CLI checks before a run
        that a repository policy may run it: ctxkit.policy.trust)."""
        return False

    @classmethod
    def extend_policy_schema(cls, schema: dict[str, Any]) -> None:
        """Add to the policy schema what this stage reads outside its ``options`` (e.g. the
        ``attachments:`` section); ``ctxkit.policy`` calls it for each stage it is given."""

    @classmethod
    def leaves_behind(cls, options: dict[str, Any], threshold: int) -> int | None:
        """For a stage that compacts at ``threshold``: the most tokens of messages it keeps or re-injects
        after the summary (the summary itself aside), with these ``options`` (defaults filled in). None
        for a stage that does not compact. ``ctxkit policy lint`` adds the summary reserve and the system
        prompt to tell whether a compaction would leave the view over the threshold again."""
        return None

    @staticmethod
    def undo(t: Transcript, store: Store, left: list) -> Transcript:
        """Undo this stage's own records for ``ctxkit expand`` (idempotent). Records whose content
        could not be put back are appended to ``left`` as ``(record kind, blob, why or None)``.
        The default: the stage writes no record of its own (what it offloaded, ``expand`` restores
        from the store's ledger)."""
        return t

    def report(self, **kwargs: Any) -> Report:
        return Report(stage_id=self.id, use=self.name, **kwargs)

    def run(self, transcript: Transcript, ctx: Context) -> StageResult:  # pragma: no cover - abstract
        raise NotImplementedError


