#!/usr/bin/env python3
"""How far each token estimator's count is from the usage the API reported next, on recorded sessions.

    python bench/estimator_error.py [SESSION ...] [--markdown]

Before each main-chain request of a session, ctxkit counts the view as Claude Code does: the newest
reported usage (system prompt and tools included) plus an estimate of what was added since. The
request's own usage (``input_tokens + cache_creation_input_tokens + cache_read_input_tokens``) says
what the count should have been. For each estimator the script prints, per session, the median and
largest error of that count against the next usage, and the error on the growth alone (what was added
since the last usage: the only part an estimator counts, and what a stage that takes content out moves
the count by, so the error of a count after a rewrite):

- ``rough``: characters / 4 (JSON / 2), Claude Code's estimate;
- ``tiktoken``: ``cl100k_base`` counts of the same pieces;
- ``scaled``: ``rough`` times a per-session scale fitted to the session's earlier requests (the sum of
  their reported growths over the sum of their estimated growths; 1 until a request has been seen);
- ``fallback``: the estimate of the whole view plus ``overhead_tokens`` (10,000), what ctxkit counted
  after a rewrite before the overhead was calibrated.

SESSION defaults to every main transcript of ``../shared/corpus`` (public sessions and the Claude Code
2.1.328 recordings; subagent files aside). Requests whose usage no longer describes the view (right
after a compaction) are not counted, nor requests that report no usage.
"""
from __future__ import annotations

import argparse
import io
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"
ESTIMATORS = ("rough", "tiktoken", "scaled", "fallback")


def corpus_sessions() -> list[Path]:
    found = sorted(p for p in CORPUS.rglob("*.jsonl") if "subagents" not in p.parts and "workdir" not in p.parts)
    return [p for p in found if p.name != "requests.jsonl"]


def session_errors(path: Path) -> dict[str, list[tuple[float, float, float]]] | None:
    """Per estimator: (count error / next usage, growth error, reported growth) for each request."""
    from ctxkit.reports.usage import recorded_requests
    from ctxkit.tokens import RoughCounter, TiktokenCounter
    from ctxkit.tokens.view_count import count_view
    from ctxkit.transcript import read_transcript

    lines = path.read_bytes().splitlines(keepends=True)
    requests = [r for r in recorded_requests(read_transcript(path, on_bad_line="skip", check_pairing=False))
                if not r.sidechain]
    rough, tik = RoughCounter(), TiktokenCounter()
    out: dict[str, list[tuple[float, float, float]]] = {k: [] for k in ESTIMATORS}
    grown_reported = grown_estimated = 0
    for r in requests[1:]:
        actual = r.usage.input_tokens + r.usage.cache_creation_input_tokens + r.usage.cache_read_input_tokens
        if actual <= 0:
            continue
        cut = read_transcript("-", stdin=io.BytesIO(b"".join(lines[:r.first_entry])), on_bad_line="skip",
                              check_pairing=False)
        by_rough = count_view(cut, rough, 10_000)
        if by_rough.source != "usage":
            continue
        by_tik = count_view(cut, tik, 10_000)
        base, growth = by_rough.reported, actual - by_rough.reported
        scale = grown_reported / grown_estimated if grown_estimated > 0 else 1.0
        whole = rough.count_view_messages(cut.view().messages) + 10_000
        for name, count in (("rough", by_rough.total), ("tiktoken", by_tik.total),
                            ("scaled", base + round(scale * by_rough.estimated)), ("fallback", whole)):
            out[name].append((abs(count - actual) / actual, abs((count - base) - growth), abs(growth)))
        grown_reported += growth
        grown_estimated += by_rough.estimated
    return out if out["rough"] else None


def summary(rows: list[tuple[float, float, float]]) -> tuple[float, float, float]:
    """Median and largest error against the next usage (%), and the growth error over the growth (%)."""
    rel = [e for e, _, _ in rows]
    growth = sum(g for _, _, g in rows)
    return (100 * statistics.median(rel), 100 * max(rel),
            100 * sum(e for _, e, _ in rows) / growth if growth else 0.0)


def main() -> None:
    sys.path.insert(0, str(ROOT))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sessions", nargs="*", type=Path)
    parser.add_argument("--markdown", action="store_true", help="print the table as docs/tokens.md shows it")
    args = parser.parse_args()
    paths = args.sessions or corpus_sessions()
    header = ["session", "requests", *(f"{name} median / max / growth" for name in ESTIMATORS)]
    rows: list[list[str]] = []
    pooled: dict[str, dict[str, list]] = {}  # collection -> estimator -> rows
    for path in paths:
        errors = session_errors(path)
        if errors is None:
            continue
        name = str(path.relative_to(CORPUS)) if path.is_relative_to(CORPUS) else str(path)
        cells = [name, str(len(errors["rough"]))]
        group = pooled.setdefault(name.split("/")[0] if "/" in name else "other", {k: [] for k in ESTIMATORS})
        for est in ESTIMATORS:
            group[est].extend(errors[est])
            cells.append("%.1f%% / %.1f%% / %.0f%%" % summary(errors[est]))
        rows.append(cells)
    for group_name, group in pooled.items():
        rows.append([f"all of {group_name}", str(len(group["rough"])),
                     *("%.1f%% / %.1f%% / %.0f%%" % summary(group[est]) for est in ESTIMATORS)])
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + " --- |" * len(header))
        for cells in rows:
            print("| " + " | ".join(cells) + " |")
    else:
        for cells in [header, *rows]:
            print("\t".join(cells))


if __name__ == "__main__":
    main()
