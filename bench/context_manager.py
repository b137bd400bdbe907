#!/usr/bin/env python3
"""Benchmark: ``ContextManager.prepare`` on a conversation growing by two messages a call, up to 1,000 messages.

An agent calls ``prepare`` before every model call with its whole history. A call that crosses no
threshold runs the stages on the tail only (``ctxkit/live/incremental.py``), so it should cost what the
two new messages cost, not what the conversation holds. The conversation is built from the corpus
sessions' views (``tests/live_conversations.py``; ``--synthetic``, or no corpus: Bash rounds of 1.5 KB
outputs), under ``--policy no-llm`` with a 1,000,000-token window (no compaction, no summarizer call:
the steady state). Measured, in process, CPU time (``time.process_time``: other work on a shared
machine inflates a call, never shrinks it):

* every call from 2 messages to 1,000, two more each time; the median call after the first (target:
  at most 2 ms) and the median of the last ten calls over the median of the first ten (target: at most
  1.5x: no growth with the conversation);
* the baseline, in the same run: the same last call made in full (the stages on all 1,000 messages, as
  ``ctxkit compact`` runs them), and the median call's share of it;
* the same calls when the caller hands over new dicts every call (an adapter converting its framework's
  messages afresh each time): the messages seen before are then compared by value, not by identity;
  printed for information (no target: an adapter keeps one dict per message to avoid it).

Each series runs ``--runs`` times (default 3) on a fresh store; the least median is kept. Exits 1 when a
target of the first series is missed. The conversation ends with its own first twenty messages again
(new tool ids), so the last ten calls add the same messages as the first ten. Usage::

    python bench/context_manager.py [--messages 1000] [--runs 3] [--synthetic]
"""
from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
MEDIAN_TARGET_MS = 2.0
GROWTH_TARGET = 1.5
NOW = "2026-12-01T12:00:00Z"
SAME = "same dicts"


def manager(store: Path):
    from ctxkit import ContextManager

    return ContextManager(policy="no-llm", store=store, now=NOW, context_window=1_000_000)


def series(messages: list[dict], store: Path, *, fresh_dicts: bool) -> list[float]:
    """CPU seconds of each call on messages[:2], [:4], ... (the last one on all of them)."""
    cm = manager(store)
    times = []
    for n in range(len(messages) % 2 or 2, len(messages) + 1, 2):  # the last call on all of them
        given = orjson.loads(orjson.dumps(messages[:n])) if fresh_dicts else messages[:n]
        gc.collect()  # the bench's own garbage (the copies above) is not collected inside a timed call
        start = time.process_time()
        cm.prepare(given)
        times.append(time.process_time() - start)
        assert cm.reports.ran and (n <= 2 or cm.reports.incremental), cm.reports.to_json()
    cm.close()
    return times


def in_full(messages: list[dict], store: Path) -> float:
    """CPU seconds of the last call made in full: the stages on every message, as compact runs them."""
    cm = manager(store)
    cm._incremental = False
    cm.prepare(messages[:-2])
    gc.collect()
    start = time.process_time()
    cm.prepare(messages)
    took = time.process_time() - start
    cm.close()
    return took


def ending_as_it_starts(messages: list[dict], total: int) -> list[dict]:
    """About ``total`` messages: the conversation cut after a complete round (an assistant's answer added
    when it ends on the user's side), then its first twenty messages again (their tool ids made new), so
    that the last ten calls add the same messages as the first ten (the sessions' messages differ in
    size: compared so, the ratio is the conversation's length, not theirs)."""
    from live_conversations import suffixed

    again = [suffixed(m, "_again") for m in messages[:20]]
    cut = total - len(again) - 1
    while cut > 2 and messages[cut - 1]["role"] == "assistant" and calls_tools(messages[cut - 1]):
        cut -= 1  # never between a call and its result
    head = messages[:cut]
    if head[-1]["role"] != "assistant":
        head.append({"role": "assistant", "content": "Done; on to the next task."})
    return head + again


def calls_tools(message: dict) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(b.get("type") == "tool_use" for b in content)


def main() -> int:
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "tests"))
    from live_conversations import from_corpus, synthetic

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--synthetic", action="store_true", help="Bash rounds instead of the corpus sessions.")
    args = parser.parse_args()
    built = None if args.synthetic else from_corpus(args.messages)
    source = "corpus sessions"
    if built is None:
        built, source = synthetic(args.messages // 2, size=1_500), "synthetic Bash rounds"
    messages = ending_as_it_starts(built, args.messages)
    size = len(orjson.dumps(messages))
    print(f"{len(messages)} messages ({source}, {size / 1e6:.1f} MB as JSON), {len(messages) // 2} calls, "
          f"best of {args.runs} runs, CPU time")
    results = {}
    with tempfile.TemporaryDirectory(prefix="ctxkit-bench-") as tmp:
        for name, fresh in ((SAME, False), ("new dicts every call", True)):
            best = None
            for run in range(args.runs):
                times = series(messages, Path(tmp) / f"{name}-{run}", fresh_dicts=fresh)
                after_first = statistics.median(times[1:])
                if best is None or after_first < best[0]:
                    best = (after_first, statistics.median(times[1:11]), statistics.median(times[-10:]))
            results[name] = best
        baseline = min(in_full(messages, Path(tmp) / f"full-{run}") for run in range(args.runs))
    failed = False
    print(f"baseline, the last call in full (all {len(messages)} messages): {baseline * 1e3:.1f} ms")
    for name, (median, first, last) in results.items():
        growth = last / first if first else float("inf")
        line = (f"{name}: median call {median * 1e3:.2f} ms ({median / baseline:.3f}x the call in full); last ten "
                f"{last * 1e3:.2f} ms / first ten {first * 1e3:.2f} ms = {growth:.2f}x")
        if name == SAME:
            ok = median * 1e3 <= MEDIAN_TARGET_MS and growth <= GROWTH_TARGET
            failed |= not ok
            line += f" (targets: <= {MEDIAN_TARGET_MS} ms, <= {GROWTH_TARGET}x) {'ok' if ok else 'MISSED'}"
        else:
            line += " (no target: the messages seen are compared by value, a cost that follows the conversation)"
        print(line)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
