"""Running the policy's stages in order and collecting what each did.

The pipeline holds no stage logic: it instantiates the enabled stages the
policy lists, runs each on the previous one's output, counts the view's tokens
before and after, and hands tokens freed so far to later stages (autocompact's
threshold check counts what snip and microcompact freed).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .errors import UsageError
from .policy.hints import did_you_mean
from .policy.model import Policy, StageSpec
from .quoting import quote
from .stages import REGISTRY
from .stages.base import CALIBRATED_OVERHEAD, SUPERSEDED_USAGE, Context, Report, Stage
from .store.original_lines import keep_original_lines
from .store.sessions import session_key
from .summarize.redaction_report import redaction_summary
from .tokens.view_count import REWRITTEN, ViewTokens, implausible, prefix_digest
from .transcript.edits import history_as_read
from .transcript.interface import handler
from .transcript.model import Transcript


@dataclass
class Pipeline:
    stages: list[Stage]

    def uses_summarizer(self) -> bool:
        """Whether a stage may call the policy's summarizer."""
        return any(stage.uses_summarizer() for stage in self.stages)

    def run(self, transcript: Transcript, ctx: Context) -> PipelineResult:
        ctx.store.write_held()  # what an earlier run held (its lines are not this transcript's) is its for good
        reports: list[Report] = []
        current = transcript
        # the count every threshold decision uses (reported usage plus estimate, or estimate plus overhead)
        start = counted = ctx.view_tokens(current)
        fmt = handler(transcript.format)
        editable = fmt.stages
        for stage in self.stages:
            if editable is not None and stage.name not in editable:
                why = fmt.skip_reasons.get(stage.name) or (f"does not edit {transcript.format} transcripts yet "
                                                          f"(only {', '.join(sorted(editable))} does)")
                reports.append(Report(stage.id, stage.name, "skipped", why, counted.total, counted.total))
                continue
            result = stage.run(current, ctx)
            # a stage that changed nothing hands back its input: its view is counted already
            after = counted if result.transcript is current else ctx.view_tokens(result.transcript)
            report = result.report
            report.tokens_before, report.tokens_after = counted.total, after.total
            ctx.tokens_freed += max(0, counted.total - after.total)
            reports.append(report)
            current, counted = result.transcript, after
        # what a stage edited and a later one took out of the view (a compaction, a snip) is written as read
        current, kept_as_read = history_as_read(current, transcript)
        ctx.store.drop_held(kept_as_read)  # the originals their edits stored: nothing names them now
        _remember_superseded_usage(start, counted, current, ctx)
        _keep_calibration(counted, current, ctx)
        # lines rewritten or removed keep their exact bytes in the store, for expand to give back
        keep_original_lines(transcript, current, ctx.store)
        return PipelineResult(current, reports, start.total, counted.total, list(ctx.warnings),
                              redaction_summary(ctx), len(kept_as_read))


def _remember_superseded_usage(start: ViewTokens, end: ViewTokens, out: Transcript, ctx: Context) -> None:
    """When this run rewrote the history the input's reported usage counted (its count went from the usage to
    the estimate), remember that response and the view left up to it, so that the output read back is counted
    as this run counted it (and decides the same way: compacting the output again changes nothing)."""
    # a format that records usage (Claude Code, Codex, Gemini, OpenCode, Cline); the usage used, or not used as no
    # count of the view (far below its estimate): the view this run left may be small enough to look counted by it
    if start.anchor is None or start.source != "usage" and not implausible(start):
        return
    if end.why != REWRITTEN:  # still the usage, or a boundary/record that says so itself
        return
    digest = prefix_digest(out, start.anchor)
    if digest is not None:
        ctx.store.update_session_state(session_key(out), **{SUPERSEDED_USAGE: {"anchor": start.anchor, "view": digest}})


def _keep_calibration(end: ViewTokens, out: Transcript, ctx: Context) -> None:
    """When the output is counted with the calibrated overhead (this run made its usage stale: a rewrite, a
    compaction, a collapse commit), keep that overhead for the session's next run: the output read back is then
    counted on the same basis, not with the policy's ``overhead_tokens``."""
    if end.overhead_source != "calibrated" or ctx.calibrated_overhead is None:
        return
    kept = {"estimator": ctx.estimator_name(), **ctx.calibrated_overhead.to_json()}
    key = session_key(out)
    if ctx.store.session_state(key).get(CALIBRATED_OVERHEAD) != kept:
        ctx.store.update_session_state(key, **{CALIBRATED_OVERHEAD: kept})


@dataclass
class PipelineResult:
    transcript: Transcript
    reports: list[Report]
    tokens_before: int
    tokens_after: int
    warnings: list[str] = field(default_factory=list)
    #: secrets kept out of what went to a summarizer and of the summaries: {"enabled", "secrets", "kinds"}
    redacted: dict = field(default_factory=lambda: {"enabled": True, "secrets": 0, "kinds": {}})
    #: lines a stage edited that a later stage took out of the view (behind a compact boundary, snipped):
    #: written as read, not edited (:func:`ctxkit.transcript.edits.history_as_read`)
    lines_kept_as_read: int = 0

    def to_json(self) -> dict:
        return {
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "stages": [r.to_json() for r in self.reports],
            "warnings": self.warnings,
            "redacted": self.redacted,
            "lines_kept_as_read": self.lines_kept_as_read,
        }


def compile_pipeline(policy: Policy, only: list[str] | None = None) -> Pipeline:
    """Build the stages the policy enables, in its order; ``only`` keeps the named ids or stage names."""
    specs = list(policy.enabled_stages())
    if only:
        wanted = set(only)
        known = {s.id for s in policy.stages} | {s.use for s in policy.stages} | set(REGISTRY)
        unknown = sorted(wanted - known)
        if unknown:
            named = ", ".join(f"'{name}'" + (f" ({hint})" if (hint := did_you_mean(name, known)) else "")
                              for name in unknown)
            raise UsageError(f"unknown stage {named}; known: {', '.join(sorted(REGISTRY))}")
        specs = [s for s in policy.stages if s.id in wanted or s.use in wanted]
        named = {s.id for s in specs} | {s.use for s in specs}
        # a stage named on the command line but absent from the policy runs with its defaults
        for name in sorted(wanted - named):
            specs.append(StageSpec(id=name, use=name))
    stages = []
    for spec in specs:
        cls = REGISTRY.get(spec.use)
        if cls is None:
            raise UsageError(f"stage {quote(spec.id)} uses unknown stage {quote(spec.use)}")
        stages.append(cls(spec.id, dict(spec.options)))
    return Pipeline(stages)
