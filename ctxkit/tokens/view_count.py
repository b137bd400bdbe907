"""The token count of a view, as Claude Code counts it: what the API last reported, plus an estimate of the rest.

Claude Code decides to compact on ``tokenCountWithEstimation``: the usage the API reported for the
newest main-chain assistant message (``input_tokens + cache_creation_input_tokens +
cache_read_input_tokens + output_tokens``: everything that request held, system prompt and tool
definitions included, plus the reply) and a rough estimate of what came after it (the blocks of that
response written after its first entry, then the later messages). A Claude Code
transcript carries that usage on every assistant entry, so ctxkit counts the same way: this is the one
function every threshold decision (``check``, ``stats``, autocompact, collapse, the pipeline's
before/after) asks.

When no reported usage describes the view, the count is the estimate of the whole view plus the
overhead (the system prompt and tool definitions the view does not hold). The overhead is
*calibrated* when a usage has been seen: a count from usage implies it (``calibration``: the count
minus the estimate of the whole view, i.e. the usage minus the estimate of what that usage counted),
and the count of a view the usage no longer describes is that calibration plus the estimate of the
new view. When the estimator counts the view above what the API reported (no room left for a system
prompt: the corpus's stand-in API reports less than characters / 4), the calibration is a scale
instead (the count over the estimate, below 1) and the overhead 0; a usage below half the estimate
(:data:`MIN_SCALE`) is no count of the view at all, and not used. So counts are continuous across a rewrite: a stage that takes content out of the view
lowers the count by the estimate of what it took out, never raises it. Without a calibration (message
lists, which carry no usage) or when a policy file or ``--set`` names ``overhead_tokens`` (an explicit
override), the overhead is the policy's ``overhead_tokens``. No usage describes the view for plain
Anthropic / OpenAI message lists, and for a Claude Code transcript whose newest usage no longer
describes its view:

- the usage predates the last compact boundary (a preserved tail keeps its assistant entries, whose
  usage counted the whole history that was compacted away);
- ctxkit changed the view since that request: a record after it that changes the view (a collapse
  commit, a snip removal); in this run, a stage that rewrote or removed an entry at or before the
  message carrying the usage (microcompact clearing old results, a compaction); or an earlier run
  that did so and wrote its output in place (``superseded``: the pipeline remembers, in the store,
  the message whose usage it made stale and the view it left, so reading that output back counts
  it the same way, while the original input, or a new response of the agent, still counts by usage).

Edits after that message (a new tool result persisted to the store, attachments appended at the
tail) leave the usage valid: they are in the estimated part. So a stage decides whether to act on the
reported count, and once it has rewritten the history the next decision counts the new view with
the estimator plus the calibrated overhead: the same basis, moved by what the stage changed.

The estimator (``--estimator``, the policy's ``estimator``) counts the un-reported part either way.
"""
from __future__ import annotations

from typing import Any, NamedTuple

from ..transcript.claude_code.chain import entry_type
from ..transcript.claude_code.records import RECORD_HANDLERS, RECORD_TYPE
from ..transcript.claude_code.session import recorded_settings
from ..transcript.interface import handler
from ..transcript.model import Transcript
from ..transcript.view import ViewMessage
from .counters import TokenCounter, message_key

#: Why no usage is used when a stage of this run rewrote or removed entries the usage counted.
REWRITTEN = "a stage changed the history the reported usage counted"

#: The lowest usage over the estimate of the view it counted that is taken as a count of that view. A request
#: holds the view and the system prompt and tools, so the usage of real sessions is above the estimate (scale 1
#: on every public session); the corpus's stand-in API, which counts characters, is the lowest seen: 0.61 of
#: ``tiktoken``'s estimate, 0.77 of ``rough``'s (docs/tokens.md). Below half the estimate the usage is not a count
#: of the view (a fake or odd usage: 5 tokens for a view of 4,800): a scale fitted to it would count the view after
#: a rewrite as next to nothing, 0 once rounded.
MIN_SCALE = 0.5

#: Why no usage is used when it is far below the estimate of the view it counted.
IMPLAUSIBLE = ("the count from the reported usage ({:,} tokens) is below half the estimate of the view ({:,}): "
               "the usage is not a count of it")

#: The usage fields Claude Code adds up (its ``getTokenCountFromUsage``).
USAGE_FIELDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")


class Calibration(NamedTuple):
    """What a count from usage says about the rest of the session: the tokens the API counted besides the
    view (``overhead``: the system prompt and tools) and how it counts the view against the estimator
    (``scale``: 1, unless the estimator counted the view above the whole usage)."""

    overhead: int
    scale: float = 1.0

    @classmethod
    def of(cls, total: int, whole: int) -> Calibration:
        """From a count from usage (``total``) and the estimate of the whole view it describes (``whole``); a
        ``total`` below :data:`MIN_SCALE` of ``whole`` is not a count of that view (:func:`count_view` does
        not use it): the scale is bounded there."""
        if total >= whole or whole <= 0:
            return cls(total - whole)
        return cls(0, max(MIN_SCALE, total / whole))

    def count(self, estimated: int) -> int:
        """A view's count from its estimate: equals the usage count on the view the calibration was made on,
        and never rises when the estimate falls."""
        if self.scale == 1.0 or estimated <= 0:
            return self.overhead + estimated
        return self.overhead + max(1, round(estimated * self.scale))  # content there is never 0 tokens

    def to_json(self) -> dict[str, Any]:
        return {"tokens": self.overhead, "scale": self.scale}

    @classmethod
    def from_json(cls, doc: Any) -> Calibration | None:
        """A calibration kept as :meth:`to_json` wrote it, or None when ``doc`` is not one."""
        if not isinstance(doc, dict):
            return None
        tokens, scale = doc.get("tokens"), doc.get("scale", 1.0)
        if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 0 \
                or not isinstance(scale, (int, float)) or isinstance(scale, bool) or not MIN_SCALE <= scale <= 1:
            return None
        return cls(tokens, float(scale))


class ViewTokens(NamedTuple):
    """A view's token count and its parts: ``total = reported + estimated + overhead``.

    ``reported`` is the API's usage of the newest valid assistant message (0 when none),
    ``estimated`` the estimator's count of what follows it (of the whole view when none),
    ``overhead`` the system prompt and tools when no usage is used (else 0): calibrated from an
    earlier usage, else the policy's ``overhead_tokens`` (``overhead_source`` says which), and
    ``scale`` what the calibration multiplies the estimate by (1 but when the estimator counts above
    the API); ``source`` is ``usage`` or ``estimate``, and ``why`` says why no usage was used (None
    when it was). ``calibration`` (a count from usage only) is what that usage implies
    (:class:`Calibration`)."""

    total: int
    reported: int
    estimated: int
    overhead: int
    source: str
    why: str | None = None
    anchor: str | None = None  # uuid of the message whose usage was reported (used or not)
    calibration: Calibration | None = None
    overhead_source: str | None = None  # "calibrated" | "policy" (a count from the estimate only)
    scale: float = 1.0

    def to_json(self) -> dict[str, Any]:
        return {"tokens_reported": self.reported, "tokens_estimated": self.estimated,
                "tokens_overhead": self.overhead, "tokens_overhead_source": self.overhead_source,
                "tokens_estimate_scale": self.scale,
                "tokens_calibration": None if self.calibration is None else self.calibration.to_json(),
                "tokens_source": self.source, "tokens_source_note": self.why}


def implausible(count: ViewTokens) -> bool:
    """Whether ``count`` left its usage aside as no count of the view (:data:`MIN_SCALE`)."""
    return (count.why or "").startswith(IMPLAUSIBLE.split("{", 1)[0])


def usage_total(usage: Any, reads_in_input: bool = False) -> int | None:
    """The four figures of a usage object added up, or None when it reports none of them, or none above 0:
    a request the API answered held tokens, so a usage of 0 (a proxy in front of another model that
    fills in zeros) counts nothing; taken as a count, it would scale every estimate after a rewrite to 0.
    ``reads_in_input``: the session's API counted the cache reads in ``input_tokens`` too
    (:attr:`RecordedSettings.reads_in_input`): they are counted once."""
    if not isinstance(usage, dict):
        return None
    plain, write, read, output = (v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else 0
                                  for v in (usage.get(k) for k in USAGE_FIELDS))
    if reads_in_input and plain >= read:
        plain -= read
    return plain + read + write + output or None


def _message_usage(t: Transcript, m: ViewMessage) -> int | None:
    """The usage of an assistant view message: that of its newest fragment entry reporting one (or where
    its format records usage: a Codex rollout's ``token_count`` events)."""
    own = handler(t.format).usage
    if own is not None:
        return own(t, m.entries)
    reads_in_input = t.format == "claude-code" and recorded_settings(t).reads_in_input
    for i in reversed(m.entries):
        msg = t.entry(i).get("message")
        total = usage_total(msg.get("usage"), reads_in_input) if isinstance(msg, dict) else None
        if total is not None:
            return total
    return None


def _later_fragments(m: ViewMessage) -> list[dict]:
    """The blocks of an assistant message written by entries after its first one, as one message (or none).

    Claude Code writes a streamed response as one entry per content block, all sharing the message id.
    ``tokenCountWithEstimation`` walks back to the first of them and estimates everything after it, so the
    later blocks of the response are estimated on top of the usage (the recorded ``preTokens`` of
    sessions with multi-block responses match only this way)."""
    first = min(m.entries)
    later = [b for b, ref in zip(m.content, m.refs, strict=True) if ref is not None and ref.entry != first]
    return [{"role": "assistant", "content": later}] if later else []


def _changes_view(rec: dict) -> bool:
    """Whether a ctxkit record changes what the view shows (an archive record only points at originals)."""
    return rec.get("record") in RECORD_HANDLERS or bool(rec.get("removedUuids"))


def _invalidated(t: Transcript, entries: list[int]) -> str | None:
    """Why the usage reported on the assistant message made of ``entries`` no longer describes the view, or None."""
    first, own = min(entries), set(entries)
    if any(i < first or i in own for i in (*t.overrides, *t.removed)):
        return REWRITTEN
    for i in range(first + 1, t.n_entries):
        if i in t.removed:
            continue
        typ = entry_type(t, i)
        if typ == "compacted" or typ == "system" and t.peek(i).get("subtype") == "compact_boundary":
            return "the reported usage predates the last compact boundary"
        if typ == RECORD_TYPE and _changes_view(t.entry(i)):
            return "ctxkit changed the view after the reported usage"
    return None


def prefix_digest(t: Transcript, anchor: str) -> str | None:
    """A fingerprint of the view up to and including the message ``anchor`` opens (None when it is not in the view)."""
    messages = t.view().messages
    k = next((k for k, m in enumerate(messages) if m.uuid == anchor), None)
    return None if k is None else message_key([m.api() for m in messages[:k + 1]]).hex()


def count_view(t: Transcript, counter: TokenCounter, overhead_tokens: int,
               superseded: dict | None = None, calibrated: Calibration | None = None) -> ViewTokens:
    """The token count of ``t``'s view (see the module docstring), counting the un-reported part with ``counter``.

    ``superseded`` (``{"anchor": uuid, "view": digest}``, from the store) names a response whose usage an
    earlier run made stale, and the view that run left up to it: when ``t`` shows that view, the usage is
    not used. ``calibrated`` is the overhead an earlier count from usage implied (its ``calibration``):
    when no usage describes the view, it stands for the system prompt and tools instead of
    ``overhead_tokens``."""
    messages = t.view().messages
    why, anchor = "no usage reported in the transcript", None
    for k in range(len(messages) - 1, -1, -1):
        m = messages[k]
        if m.role != "assistant" or not m.entries:
            continue
        reported = _message_usage(t, m)
        if reported is None:
            continue
        anchor = m.uuid
        why = _invalidated(t, m.entries)
        if why is None and superseded and superseded.get("anchor") == anchor and anchor is not None \
                and superseded.get("view") == prefix_digest(t, anchor):
            why = "an earlier run changed the history the reported usage counted"
        if why is not None:
            break
        fragments, rest = _later_fragments(m), messages[k + 1:]
        if counter.additive:
            estimated = counter.count_messages(fragments) + counter.count_view_messages(rest)
            whole = counter.count_view_messages(messages)
        else:
            estimated = counter.count_messages([*fragments, *(x.api() for x in rest)])
            whole = counter.count_messages([x.api() for x in messages])
        total = reported + estimated
        if total < whole * MIN_SCALE:
            why = IMPLAUSIBLE.format(total, whole)
            break
        return ViewTokens(total, reported, estimated, 0, "usage", anchor=anchor,
                          calibration=Calibration.of(total, whole))
    estimated = counter.count_view_messages(messages)
    if calibrated is None:
        return ViewTokens(estimated + overhead_tokens, 0, estimated, overhead_tokens, "estimate", why, anchor,
                          overhead_source="policy")
    return ViewTokens(calibrated.count(estimated), 0, estimated, calibrated.overhead, "estimate", why, anchor,
                      overhead_source="calibrated", scale=calibrated.scale)
