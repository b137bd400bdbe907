#!/usr/bin/env python3
"""Long fuzz runs of every ctxkit command on mutated real transcripts and policies.

Draws cases from ``tests/fuzz_inputs.py`` (real transcripts from the shared corpus and
ctxkit's own output with fields of the wrong type, through compact, view, stats, check,
expand, snip, memory update, policy validate/show, in-process), and counts the cases,
the crashes (an exception: what the CLI reports as exit 4, or a non-zero exit with no
message) and the hangs (no answer within ``--timeout`` seconds). Crashes are grouped
by where they happened; for each group hypothesis then searches again and shrinks the
input to a minimal failing case, which is printed. Exit status 1 when anything was found.

    nice python bench/fuzz.py --cases 10000 [--seed 1] [--timeout 30] [--no-shrink]
"""
from __future__ import annotations

import argparse
import base64
import json
import os
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

import fuzz_inputs  # noqa: E402
from hypothesis import HealthCheck, Phase, find, given, seed, settings  # noqa: E402


def signature(exc: BaseException) -> str:
    """Where a crash happened: the exception type and the innermost ctxkit frame."""
    if isinstance(exc, fuzz_inputs.Hang):
        return "hang"
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/ctxkit/" in f.filename]
    where = f"{Path(frames[-1].filename).name}:{frames[-1].lineno} {frames[-1].name}" if frames else "?"
    return f"{type(exc).__name__} at {where}"


def outcome(case: fuzz_inputs.Case) -> str | None:
    """None when ctxkit behaved, else a signature of what went wrong."""
    try:
        wrong = fuzz_inputs.problem(case)
    except BaseException as exc:  # noqa: BLE001 - a crash is what we are looking for
        if isinstance(exc, KeyboardInterrupt):
            raise
        return signature(exc)
    return f"misbehaved: {wrong[:120]}" if wrong else None


def save(case: fuzz_inputs.Case, folder: Path, name: str) -> Path:
    """Write ``case`` whole (its printed form cuts long lines), so that ``--replay`` can run it again."""
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / f"case-{name}.json"
    b64 = lambda b: base64.b64encode(b).decode("ascii")  # noqa: E731
    out.write_text(json.dumps({"seed": case.seed, "command": case.command, "policy": case.policy,
                               "side": None if case.side is None else b64(case.side),
                               "lines": [b64(x) for x in case.lines]}), encoding="utf-8")
    return out


def replay(paths: list[Path]) -> int:
    """Run saved cases again: what each does now, and how long it took."""
    bad = 0
    for path in paths:
        d = json.loads(path.read_text(encoding="utf-8"))
        case = fuzz_inputs.Case(d["seed"], [base64.b64decode(x) for x in d["lines"]], d["command"], d["policy"],
                                None if d["side"] is None else base64.b64decode(d["side"]))
        start = time.monotonic()
        sig = outcome(case)
        bad += sig is not None
        print(f"{path}: {case.command} on {case.seed}: {sig or 'fine'} in {time.monotonic() - start:.1f} s")
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=30, help="seconds before a case counts as a hang")
    ap.add_argument("--no-shrink", action="store_true", help="count only; do not minimize what was found")
    ap.add_argument("--save", type=Path, default=Path("fuzz-found"),
                    help="folder each new kind of problem's first case is saved to, whole (default: fuzz-found)")
    ap.add_argument("--replay", type=Path, nargs="+", help="run saved cases again instead of exploring")
    ap.add_argument("--only", metavar="TEXT", help="draw only from the transcripts whose name holds TEXT")
    ap.add_argument("--commands", metavar="C,C", help="draw only these commands (names as fuzz_inputs.COMMANDS)")
    args = ap.parse_args()
    fuzz_inputs.CASE_TIMEOUT = args.timeout
    if args.replay:
        return replay(args.replay)
    pool = fuzz_inputs.seeds()
    if args.only:  # e.g. to draw again, on a quiet machine, around a case that was slow on a busy one
        pool.transcripts[:] = [t for t in pool.transcripts if args.only in t[0]]
    if args.commands:
        fuzz_inputs.COMMANDS = tuple(c for c in args.commands.split(",") if c in fuzz_inputs.COMMANDS)
    if not pool.transcripts or not fuzz_inputs.COMMANDS:
        ap.error("--only/--commands leave nothing to draw")
    found: dict[str, int] = {}
    first: dict[str, fuzz_inputs.Case] = {}
    counts = {"cases": 0}
    start = time.monotonic()

    @seed(args.seed)
    @settings(max_examples=args.cases, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(fuzz_inputs.cases())
    def explore(case):
        counts["cases"] += 1
        sig = outcome(case)
        if sig is not None:
            found[sig] = found.get(sig, 0) + 1
            if sig not in first:  # said at once: a long run cut short still tells what it found
                first[sig] = case
                saved = save(case, args.save, f"{args.seed}-{counts['cases']}")
                print(f"... new after {counts['cases']} cases: {sig} (saved whole: {saved})\n{case!r}"[:6000],
                      file=sys.stderr, flush=True)
        if counts["cases"] % 500 == 0:
            print(f"... {counts['cases']} cases, {sum(found.values())} problems, {time.monotonic() - start:.0f} s",
                  file=sys.stderr, flush=True)

    explore()
    crashes = sum(n for s, n in found.items() if s != "hang")
    hangs = found.get("hang", 0)
    print(f"cases: {counts['cases']}  crashes: {crashes}  hangs: {hangs}  distinct: {len(found)}  "
          f"time: {time.monotonic() - start:.0f} s")
    for sig, n in sorted(found.items(), key=lambda kv: -kv[1]):
        print(f"\n== {n} x {sig}")
        if args.no_shrink or sig == "hang":
            print(repr(first[sig]))
            continue
        try:
            small = find(fuzz_inputs.cases(), lambda c, sig=sig: outcome(c) == sig,
                         settings=settings(max_examples=2000, deadline=None, database=None,
                                           suppress_health_check=list(HealthCheck)))
            print("minimized:", repr(small))
        except Exception:  # noqa: BLE001 - not found again within the budget: show the first one
            print("(not found again to shrink; first seen:)", repr(first[sig]))
    return 1 if found else 0


if __name__ == "__main__":
    os.environ.setdefault("CTXKIT_DEBUG", "1")
    sys.exit(main())
