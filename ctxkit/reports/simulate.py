"""``ctxkit simulate``: what a policy would have done to a recorded session, and what it would have cost.

Each session is replayed request by request (:mod:`ctxkit.reports.replay`). For every row:

* ``recorded`` — what the session's main chain actually used: its usage figures, each response
  counted once with its final figures (:mod:`ctxkit.reports.usage`); ``sidechain`` holds the
  subagents' requests found in the file, apart.
* ``none`` — no context management: the raw view at each request; a request whose context is over
  the window is a failure (``failures``), and still counts in the peak.
* one row per policy — the view the policy's pipeline leaves at each request, with its compactions;
  a compaction made by a summarizer that calls a model is a request of its own (the history in, the
  summary out, no cache).

The prompt-cache model: a request reads from the cache the longest prefix (tools, system, then
content blocks) byte-identical to an earlier request made within the cache lifetime (the policy's
``request.cache_ttl``, 5 minutes or 1 hour; a read refreshes it), and writes the rest. The output of
each request is the recorded one (the same answer under every policy). Costs come from
:mod:`ctxkit.reports.pricing`, by the model each request was made with.
"""
from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

from ..errors import CtxkitError
from ..policy.model import Policy
from ..run_context import build_context
from ..store.disk import Store
from ..summarize.redact import redactor_for
from ..tokens import budget_for, make_counter
from ..tokens.session import session_policy
from ..transcript import read_transcript
from ..transcript.model import Transcript
from .pricing import PriceTable, Usage
from .removed import removed_items
from .replay import GrowingRead, PolicyReplay, Segment, Step, request_segments
from .stats import view_stats
from .usage import RecordedRequest, recorded_requests

ROW_KEYS = ("policy", "requests", "peak_context", "compactions", "input_tokens", "cache_creation_input_tokens",
            "cache_read_input_tokens", "output_tokens", "cost_usd", "retention", "failures")


@dataclass
class Request:
    """One request of a row: when, by which model, its prompt size, usage and cost."""

    timestamp: datetime | None
    model: str
    context: int
    usage: Usage
    cost: float
    kind: str = "main"  # "main" | "summarizer"
    failed: bool = False


@dataclass
class Row:
    """A policy (or baseline) over one session: its requests, compactions and, for policies, the last step."""

    policy: str
    window: int | None = None
    thresholds: dict[str, int] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    compactions: list[dict[str, Any]] = field(default_factory=list)  # {"request", "tokens_before", "tokens_after"}
    retention: list[Any] = field(default_factory=list)
    final: Step | None = None
    breakdown: dict[str, Any] = field(default_factory=dict)  # the last view's tokens by_tool and by_kind
    removed: list[dict[str, Any]] = field(default_factory=list)  # what the stages took out (ctxkit.reports.removed)

    def to_json(self) -> dict[str, Any]:
        u = [r.usage for r in self.requests]
        return {
            "policy": self.policy,
            "requests": len(self.requests),
            "peak_context": max((r.context for r in self.requests), default=0),
            "compactions": len(self.compactions),
            "input_tokens": sum(x.input_tokens for x in u),
            "cache_creation_input_tokens": sum(x.cache_creation_input_tokens for x in u),
            "cache_read_input_tokens": sum(x.cache_read_input_tokens for x in u),
            "output_tokens": sum(x.output_tokens for x in u),
            "cost_usd": round(sum(r.cost for r in self.requests), 6),
            "retention": list(self.retention),
            "failures": sum(1 for r in self.requests if r.failed),
        }


def sum_rows(name: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Rows of several sessions added up (the peak is the highest; retention lists are joined)."""
    out: dict[str, Any] = {"policy": name}
    for key in ROW_KEYS[1:]:
        if key == "peak_context":
            out[key] = max((r[key] for r in rows), default=0)
        elif key == "retention":
            out[key] = [x for r in rows for x in r[key]]
        elif key == "cost_usd":
            out[key] = round(sum(r[key] for r in rows), 6)
        else:
            out[key] = sum(r[key] for r in rows)
    return out


class _CacheModel:
    """Earlier requests still in the cache: (last use, segment digests)."""

    def __init__(self, ttl_seconds: int):
        self.ttl = ttl_seconds
        self.entries: list[list[Any]] = []

    def request(self, when: datetime | None, segments: list[Segment]) -> tuple[int, int]:
        """(tokens read from the cache, tokens written to it) for a request made ``when``."""
        digests = [d for d, _ in segments]
        if when is not None:
            self.entries = [e for e in self.entries if e[0] is None or (when - e[0]).total_seconds() <= self.ttl]
        best, hit = 0, None
        for entry in self.entries:
            n, limit, other = 0, min(len(digests), len(entry[1])), entry[1]
            while n < limit and digests[n] == other[n]:
                n += 1
            if n > best:
                best, hit = n, entry
        if hit is not None:
            hit[0] = when  # a read refreshes the cached prefix's lifetime
        self.entries.append([when, digests])
        read = sum(tokens for _, tokens in segments[:best])
        return read, sum(tokens for _, tokens in segments) - read


def _modelled_request(cache: _CacheModel, point: RecordedRequest, segments: list[Segment], policy: Policy,
                      prices: PriceTable, window: int) -> Request:
    """The request sent at ``point`` with these pieces: what the cache model reads and writes, priced, and
    whether it went over the window. Output tokens are the recorded answer's."""
    read, write = cache.request(point.timestamp, segments)
    usage = Usage(cache_creation_input_tokens=write, cache_read_input_tokens=read,
                  output_tokens=point.usage.output_tokens, cache_write_1h_tokens=write if policy.cache_ttl == "1h" else 0)
    return Request(point.timestamp, point.model, read + write, usage, prices.cost(point.model, usage),
                   failed=read + write > window)


def _main_requests(row: Row, points: list[RecordedRequest], segments: list[list[Segment]], policy: Policy,
                   prices: PriceTable, window: int) -> None:
    cache = _CacheModel(policy.cache_minutes * 60)
    for point, segs in zip(points, segments, strict=True):
        row.requests.append(_modelled_request(cache, point, segs, policy, prices, window))



def _thresholds(policy: Policy, context_window: int | None) -> dict[str, int]:
    b = budget_for(policy, context_window)
    return {"context_window": b.context_window, "autocompact_threshold": b.autocompact_threshold,
            "warning_threshold": b.warning_threshold, "blocking_limit": b.blocking_limit}


def simulate_session(path: str, policies: list[tuple[str, Policy]], prices: PriceTable, *,
                     context_window: int | None = None, cwd: Path | None = None) -> dict[str, Any]:
    """Replay one Claude Code session under each policy; returns its rows (see the module docstring).

    The result holds :class:`Row` objects under ``"rows"`` (for the HTML report) beside the JSON
    parts; :func:`session_json` keeps only what ``simulate --json`` prints."""
    t = read_transcript(path)  # an unreadable line stops here, named (exit 3); the steps read their own output
    if t.format != "claude-code":
        from ..errors import UsageError

        what = f"this one is {t.format} messages" if t.lines else "this file is empty"  # empty: no format to name
        raise UsageError(f"{path}: simulate replays a Claude Code transcript (the recorded requests and their "
                         f"usage); {what}")
    # each policy as it applies to this session: its model, max_tokens and cache lifetime where the policy names none
    policies = [(name, session_policy(pol, t)) for name, pol in policies]
    everything = recorded_requests(t)
    points = [r for r in everything if not r.sidechain]
    base = policies[0][1]
    first_model = points[0].model if points else base.model
    window = budget_for(base, context_window).context_window
    recorded = _recorded_row("recorded", points, prices, _boundaries(t))
    sidechain = _recorded_row("sidechain", [r for r in everything if r.sidechain], prices, [])
    counter = make_counter(base.estimator, model=base.model)
    raw_lines = [t.raw_line(i)[0] + b"\n" for i in range(t.n_lines)]
    none = Row("none", window=window, thresholds=_thresholds(base, context_window))
    none_segments = []
    with tempfile.TemporaryDirectory(prefix="ctxkit-simulate-") as tmp:
        growing = GrowingRead(Path(tmp) / "prefix.jsonl")  # each line read once, not once per request
        prefix, done = None, 0
        for point in points:
            prefix = growing.add(raw_lines[done:point.first_entry])
            done = point.first_entry
            none_segments.append(request_segments(prefix, base, counter, point.timestamp))
        _main_requests(none, points, none_segments, base, prices, window)
        if prefix is not None:
            ctx = build_context(base, Store(Path(tmp) / "none", dry_run=True), now=points[-1].timestamp,
                                context_window=context_window)
            ctx.tokens = counter
            none.breakdown = _breakdown(prefix, ctx)
        rows = [_policy_row(name, pol, t, points, raw_lines, prices, Path(tmp) / f"p{k}", context_window, cwd, path)
                for k, (name, pol) in enumerate(policies)]
    warnings = list(dict.fromkeys(prices.warnings))
    if not any(r.usage.prompt_tokens or r.usage.output_tokens for r in points):
        warnings.append("the session records no usage on its main chain: the recorded row is empty, and costs 0")
    for row in rows:
        if row.final is not None:
            warnings.extend(w for w in row.final.ctx.warnings if w not in warnings)
    return {"session": path, "model": first_model, "context_window": window, "cache_ttl": base.cache_ttl,
            "rows": {"recorded": recorded, "sidechain": sidechain, "none": none, "policies": rows},
            "warnings": warnings}


def _boundaries(t: Transcript) -> list[int]:
    """Entry indexes of the session's own compactions (Claude Code's ``compact_boundary`` lines)."""
    return [i for i in t.live_indexes() if t.entry(i).get("type") == "system"
            and t.entry(i).get("subtype") == "compact_boundary" and not t.entry(i).get("isSidechain")]


def _recorded_row(name: str, requests: list[RecordedRequest], prices: PriceTable, boundaries: list[int]) -> Row:
    row = Row(name)
    for r in requests:
        row.requests.append(Request(r.timestamp, r.model, r.usage.prompt_tokens, r.usage,
                                    prices.cost(r.model, r.usage)))
    for b in boundaries:  # marked before the first request after the boundary
        after = next((k for k, r in enumerate(requests) if r.first_entry > b), None)
        row.compactions.append({"request": after, "trigger": "recorded"})
    return row


def _policy_row(name: str, policy: Policy, t: Transcript, points: list[RecordedRequest], raw_lines: list[bytes],
                prices: PriceTable, workdir: Path, context_window: int | None, cwd: Path | None,
                path: str) -> Row:
    workdir.mkdir(parents=True)
    counter = make_counter(policy.estimator, model=policy.model)
    replay = PolicyReplay(policy, workdir, context_window=context_window, cwd=cwd or Path.cwd(),
                          transcript_path=str(Path(path).resolve()), counter=counter)
    thresholds = _thresholds(policy, context_window)
    window = thresholds["context_window"]
    row = Row(name, window=window, thresholds=thresholds)
    cache = _CacheModel(policy.cache_minutes * 60)
    summarizer_model = str((policy.summarizer or {}).get("model") or policy.model)
    done = 0
    for k, point in enumerate(points):
        step = replay.step(raw_lines[done:point.first_entry], point.timestamp)
        done = point.first_entry
        for call in step.summarizer_calls:
            usage = Usage(input_tokens=call["input_tokens"], output_tokens=call["output_tokens"])
            row.requests.append(Request(point.timestamp, summarizer_model, call["input_tokens"], usage,
                                        prices.cost(summarizer_model, usage), kind="summarizer"))
        for r in step.result.reports:
            if r.use == "autocompact" and r.action == "applied":
                row.compactions.append({"request": k, "tokens_before": r.tokens_before,
                                        "tokens_after": r.tokens_after, "trigger": "auto" if not r.details.get("forced")
                                        else "manual", "summarizer": r.details.get("summarizer")})
                if "retention" in r.details:
                    row.retention.append(r.details["retention"])
        segs = request_segments(step.transcript, policy, counter, point.timestamp)
        request = _modelled_request(cache, point, segs, policy, prices, window)
        row.requests.append(request)
        # what the answer to this request reports (next step)
        replay.sent = {"read": request.usage.cache_read_input_tokens, "write": request.usage.cache_creation_input_tokens}
        row.final = step
    if row.final is not None:
        t_last, ctx = row.final.transcript, row.final.ctx
        row.breakdown = _breakdown(t_last, ctx)
        row.removed = removed_items(t_last, Store(workdir / "store", dry_run=True), redactor_for(ctx),
                                    counter.count_text)
    return row


def _breakdown(t: Transcript, ctx: Any) -> dict[str, Any]:
    """Where the tokens of a view go: by tool and by kind of message (:func:`ctxkit.reports.stats.view_stats`)."""
    stats = view_stats(t, ctx, simulate=False)
    return {"by_tool": stats["by_tool"], "by_kind": stats["by_kind"]}


def session_json(result: dict[str, Any]) -> dict[str, Any]:
    """What ``simulate --json`` prints for one session."""
    rows = result["rows"]
    out = {k: v for k, v in result.items() if k != "rows"}
    out.update(recorded=rows["recorded"].to_json(), sidechain=rows["sidechain"].to_json(),
               none=rows["none"].to_json(), policies=[r.to_json() for r in rows["policies"]])
    if "sweep" in result:
        out["sweep"] = result["sweep"]
    return out


def cheapest_within_window(rows: list[dict[str, Any]]) -> int | None:
    """Index of the cheapest row that never went over the window, or None."""
    fitting = [(r["cost_usd"], k) for k, r in enumerate(rows) if r["failures"] == 0]
    return min(fitting)[1] if fitting else None


def simulate(paths: list[str], policies: list[tuple[str, Policy]], prices: PriceTable, *,
             context_window: int | None = None, cwd: Path | None = None,
             sweep: tuple[str, list[str]] | None = None,
             on_error: Callable[[str, CtxkitError], None] | None = None,
             ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Every session under every policy: (the ``--json`` document, the per-session results with rows).

    A session that cannot be replayed (an unreadable line, not a Claude Code transcript) raises; with
    ``on_error`` it is handed to it instead and left out, so one bad file does not stop the others."""
    results = []
    for p in paths:
        try:
            results.append(simulate_session(p, policies, prices, context_window=context_window, cwd=cwd))
        except CtxkitError as exc:
            if on_error is None:
                raise
            on_error(p, exc)
    sessions = [session_json(r) for r in results]
    total: dict[str, Any] = {
        "sessions": len(sessions),
        "recorded": sum_rows("recorded", [s["recorded"] for s in sessions]),
        "sidechain": sum_rows("sidechain", [s["sidechain"] for s in sessions]),
        "none": sum_rows("none", [s["none"] for s in sessions]),
        "policies": [sum_rows(name, [s["policies"][k] for s in sessions]) for k, (name, _) in enumerate(policies)],
    }
    if sweep is not None:
        setting, values = sweep
        for s in [*sessions, total]:
            best = cheapest_within_window(s["policies"])
            s["sweep"] = {"setting": setting, "values": values, "cheapest": None if best is None else values[best]}
    return {"sessions": sessions, "total": total}, results
