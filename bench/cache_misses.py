#!/usr/bin/env python3
"""Where real Claude Code sessions miss the prompt cache without a cause their transcript records.

    nice python bench/cache_misses.py DIR_OR_FILE... [--json]

Why: ``simulate``'s ``replayed`` row follows the causes of a cache miss a transcript shows (a pause
longer than the cache lifetime, another model, a compaction, a restart, ``/mcp``, a new day, a turn's
thinking, directory or model: docs/simulate.md, "The prompt-cache model"). What is left of its error
on real sessions is misses the transcript gives no cause for. This script counts them, so that the
claim "the transcript does not say why" rests on numbers anyone can reproduce, and says *where* they
fall: by what the session wrote between a request and the one before it.

A request is counted when, by everything the transcript records, it should have read what the request
before it sent (:func:`ctxkit.reports.cache_events.comparable`: the same model, epoch and turn setting)
within that request's cache lifetime, and is at least 90% of its size (a history rewritten smaller is
another cause). It *missed* when it read less than 80% of it
(:func:`ctxkit.reports.session_prefix.read_it`): what ``simulate`` takes as a loss the session met.
Sessions whose API did not cache (no read or write at all), sent most of the prompt as plain
input (a relay that caches the tools and system prompt only) or never reported a write (an API that
reports its writes as input: :func:`ctxkit.reports.api_cache.reports_writes_as_input`) are left out. The kinds:

- ``tool results``: the request answers the calls of the one before (the turn goes on);
- ``new prompt``: the user typed a prompt (a new turn; a slash command's expansion counts);
- ``interrupted``: the turn before was interrupted ("[Request interrupted by user]") and a prompt followed;
- ``interrupted for tool use``: a call was refused ("... for tool use]") and a prompt followed.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ctxkit.errors import CtxkitError  # noqa: E402
from ctxkit.reports.api_cache import reports_writes_as_input, request_ttl  # noqa: E402
from ctxkit.reports.cache_events import SAME_SIZE, comparable  # noqa: E402
from ctxkit.reports.session_prefix import epochs, prefix_changes, read_it  # noqa: E402
from ctxkit.reports.turn_settings import turn_settings  # noqa: E402
from ctxkit.reports.usage import recorded_requests  # noqa: E402
from ctxkit.transcript import read_transcript  # noqa: E402

KINDS = ("tool results", "new prompt", "interrupted", "interrupted for tool use")


def session_files(paths: list[str]) -> list[Path]:
    """Every main session file below ``paths`` (subagents' and ``agent-*`` files aside)."""
    out: list[Path] = []
    for p in map(Path, paths):
        found = sorted(p.rglob("*.jsonl")) if p.is_dir() else [p]
        out.extend(f for f in found if "subagents" not in f.parts and not f.name.startswith("agent-"))
    return out


def _kind(entries: list[dict]) -> str:
    """What the session wrote between two requests (see the module docstring), from its user lines."""
    seen = set()
    for e in entries:
        if e.get("type") != "user" or e.get("isMeta"):
            continue
        content = (e.get("message") or {}).get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        results = any(isinstance(b, dict) and b.get("type") == "tool_result" for b in blocks)
        for b in blocks:
            text = b.get("text") if isinstance(b, dict) and b.get("type") == "text" else None
            if not isinstance(text, str):
                continue
            if "[Request interrupted by user for tool use]" in text:
                seen.add("interrupted for tool use")
            elif "[Request interrupted by user]" in text:
                seen.add("interrupted")
            elif not results:
                seen.add("new prompt")
    return next((k for k in reversed(KINDS) if k in seen), "tool results")


def session_counts(path: Path) -> Counter:
    """(kind, missed) -> requests, for one session (empty when it is left out: see the module docstring)."""
    out: Counter = Counter()
    t = read_transcript(str(path), on_bad_line="skip")
    if t.format != "claude-code":
        return out
    points = [p for p in recorded_requests(t) if not p.sidechain and p.usage.prompt_tokens]
    prompt = sum(p.usage.prompt_tokens for p in points)
    cached = sum(p.usage.cache_read_input_tokens + p.usage.cache_creation_input_tokens for p in points)
    if not cached or sum(p.usage.input_tokens for p in points) > prompt / 2 or reports_writes_as_input(points):
        return out
    marks = epochs(points, prefix_changes(t), True)
    for k, b, gap in comparable(points, marks, turn_settings(t, points)):
        if 0 <= gap < request_ttl(points[b].usage, 300) and \
                points[k].usage.prompt_tokens >= SAME_SIZE * points[b].usage.prompt_tokens:
            between = [t.entry(i) for i in range(points[b].first_entry, points[k].first_entry)]
            out[(_kind([e for e in between if isinstance(e, dict)]), not read_it(points[b], points[k]))] += 1
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--json", action="store_true", help="one JSON object instead of the table")
    args = ap.parse_args()
    total: Counter = Counter()
    sessions = 0
    for f in session_files(args.paths):
        try:
            counts = session_counts(f)
        except CtxkitError as exc:
            print(f"left out: {exc.message}", file=sys.stderr)
            continue
        sessions += bool(counts)
        total.update(counts)
    rows = {k: {"requests": total[(k, False)] + total[(k, True)], "missed": total[(k, True)]} for k in KINDS}
    if args.json:
        print(json.dumps({"sessions": sessions, "kinds": rows}))
        return 0
    print(f"{sessions} sessions that cached; requests within the cache lifetime, same model, no known prefix change:")
    print(f"{'after':28s} {'requests':>9s} {'missed':>7s} {'share':>7s}")
    for k, r in rows.items():
        share = f"{r['missed'] / r['requests']:.1%}" if r["requests"] else "-"
        print(f"{k:28s} {r['requests']:9d} {r['missed']:7d} {share:>7s}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
