#!/usr/bin/env python3
"""How close ``ctxkit simulate``'s ``replayed`` row comes to what each real session was billed.

    python bench/simulate_calibration.py [SESSION_OR_DIR...] [--summary]

Without arguments: every main-session transcript of the shared corpus (``../shared/corpus/public``,
its subagent files aside, and ``../shared/corpus/claude-code-2.1.328/*/session.jsonl``); a folder stands
for every main session below it (subagents' files aside; of several copies of one file name, as a
repository's history and backups hold, the largest). For each, the relative error of ``replayed``
against ``recorded`` plus the subagents (the ``calibration`` object of ``simulate --json``) on cost,
cache reads and cache writes, the cache events its usage showed (lost, kept: docs/simulate.md), and
``none``'s peak against the recorded one. A session off by more than 10% on any of the three is marked
``!``. ``--summary`` prints only how many sessions with a request on the main chain are within 10%, on
Claude models and on other providers' (a held-out set's figure in docs/simulate.md). Lines that cannot
be read are skipped (as ``simulate --on-bad-line skip``); a session that cannot be replayed is named and
left out.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"


def corpus_sessions() -> list[Path]:
    """The main transcripts of the shared corpus (subagent files are read beside their session)."""
    public = sorted(p for p in (CORPUS / "public").rglob("*.jsonl")
                    if "subagents" not in p.parts and not p.name.startswith("agent-"))
    return public + sorted((CORPUS / "claude-code-2.1.328").glob("*/session.jsonl"))


def largest_copies(args: list[str]) -> list[Path]:
    """The main sessions the arguments name (:func:`cache_misses.session_files`), the largest copy of each
    file name (see the module docstring)."""
    from cache_misses import session_files

    largest: dict[str, Path] = {}
    for p in session_files(args):
        if p.name not in largest or p.stat().st_size > largest[p.name].stat().st_size:
            largest[p.name] = p
    return sorted(largest.values())


def main() -> None:
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "bench"))
    from ctxkit import load_policy
    from ctxkit.reports.pricing import load_pricing
    from ctxkit.reports.simulate import simulate

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sessions", nargs="*")
    parser.add_argument("--summary", action="store_true", help="only the counts within 10%%")
    args = parser.parse_args()
    paths = largest_copies(args.sessions) if args.sessions else corpus_sessions()
    policy, prices = load_policy(None), load_pricing()
    counts: dict[str, list[int]] = {"Claude models": [0, 0], "other providers' models": [0, 0]}
    if not args.summary:
        print(f"{'session':<52} {'req':>4} {'cost':>8} {'reads':>8} {'writes':>8}  {'events':>7} "
              f"{'peak none/recorded':>20}")

    def pct(err: dict, key: str) -> str:
        return "n/a" if err[key] is None else f"{err[key]:+.1%}"

    def refused(path: str, exc: Exception) -> None:
        print(f"left out: {path}: {getattr(exc, 'message', exc)}", file=sys.stderr)

    for path in paths:  # (one at a time: a session's rows are let go before the next)
        doc, _ = simulate([str(path)], [("default", policy)], prices, on_error=refused, on_bad_line="skip")
        for s in doc["sessions"]:
            cal = s["calibration"]
            if s["recorded"]["requests"]:
                row = counts["Claude models" if "claude" in (s["model"] or "") else "other providers' models"]
                row[0] += not cal["off"]
                row[1] += 1
            if args.summary:
                continue
            err, events = cal["relative_error"], cal["cache_events"]
            name = str(Path(s["session"]).relative_to(CORPUS)) if CORPUS in Path(s["session"]).parents \
                else s["session"]
            mark = "!" if cal["off"] else " "
            print(f"{name[-52:]:<52} {s['recorded']['requests']:>4} {pct(err, 'cost_usd'):>8} "
                  f"{pct(err, 'cache_read_input_tokens'):>8} {pct(err, 'cache_creation_input_tokens'):>8}{mark} "
                  f"{events['lost']:>3}/{events['kept']:<3} "
                  f"{s['none']['peak_context']:>10,}/{s['recorded']['peak_context']:<10,}")
    for kind, (within, of) in counts.items():
        if of:
            print(f"replayed within 10% on cost, cache reads and writes: {within} of {of} sessions on {kind}")


if __name__ == "__main__":
    main()
