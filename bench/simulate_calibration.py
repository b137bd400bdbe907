#!/usr/bin/env python3
"""How close ``ctxkit simulate``'s ``replayed`` row comes to what each real session was billed.

    python bench/simulate_calibration.py [SESSION...]

Without arguments: every main-session transcript of the shared corpus (``../shared/corpus/public``,
its subagent files aside, and ``../shared/corpus/claude-code-2.1.328/*/session.jsonl``). For each, the
relative error of ``replayed`` against ``recorded`` plus the subagents (the ``calibration`` object of
``simulate --json``) on cost, cache reads and cache writes, and ``none``'s peak against the recorded
one. A session off by more than 10% on any of the three is marked ``!``.
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


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from ctxkit import load_policy
    from ctxkit.reports.pricing import load_pricing
    from ctxkit.reports.simulate import simulate

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sessions", nargs="*")
    args = parser.parse_args()
    paths = [Path(p) for p in args.sessions] or corpus_sessions()
    doc, _ = simulate([str(p) for p in paths], [("default", load_policy(None))], load_pricing())
    print(f"{'session':<52} {'req':>4} {'cost':>8} {'reads':>8} {'writes':>8}  {'peak none/recorded':>20}")
    def pct(err: dict, key: str) -> str:
        return "n/a" if err[key] is None else f"{err[key]:+.1%}"

    for s in doc["sessions"]:
        err = s["calibration"]["relative_error"]

        name = str(Path(s["session"]).relative_to(CORPUS)) if CORPUS in Path(s["session"]).parents else s["session"]
        mark = "!" if s["calibration"]["off"] else " "
        print(f"{name[-52:]:<52} {s['recorded']['requests']:>4} {pct(err, 'cost_usd'):>8} "
              f"{pct(err, 'cache_read_input_tokens'):>8} {pct(err, 'cache_creation_input_tokens'):>8}{mark} "
              f"{s['none']['peak_context']:>10,}/{s['recorded']['peak_context']:<10,}")


if __name__ == "__main__":
    main()
