#!/usr/bin/env python3
"""How ``ctxkit simulate``'s CPU time grows with another agent's session: a synthetic Codex rollout and
Gemini CLI recording of N turns against the same of 2N turns.

    python bench/simulate_scaling_agents.py [--turns N] [--runs R] [--format codex|gemini|all] [--context-window W]

Each session is written by the generators the tests use (``tests/codex_rollouts.py``,
``tests/gemini_sessions.py``): every turn a prompt, two tool calls with their outputs (a few KB each)
and an answer with its recorded usage; the Codex rollout rolls a turn back every 25 turns. Each size is
simulated R times (default 3) under the default policy, in process (imports done once, before),
alternating the two; the figure is the least CPU time of each (``time.process_time``: other work on a
shared machine inflates a run, never shrinks it), and their ratio. Linear time would be 2x for twice
the turns (target: at most 2.3x). A second line times the reads alone: the session read again and
projected before each of its requests, as simulate's steps read it (``GrowingRead``), without the
requests, the cache model and the policy's stages. A third line gives the policy's compactions in each
session (with ``--context-window``, a window the sessions outgrow: a replay that trusted the agent's recorded
usage after a compaction compacted again at nearly every request).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def codex_rollout(turns: int) -> str:
    """A Codex rollout of ``turns`` turns (a turn rolled back every 25)."""
    from codex_rollouts import line, message, opening, turn
    lines = opening()
    for k in range(turns):
        calls = [(f"c{k}a", f"cat src/f{k}.py", f"def f{k}():\n    return {k}\n" * 60),
                 (f"c{k}b", f"rg needle{k}", f"src/f{k}.py:{k}: needle{k}\n" * 40)]
        lines += turn(k, f"look at f{k} and find needle{k}", calls, f"f{k} returns {k}",
                      usage=(4_000 + 900 * k, 150), second=k * 7)
        if k % 25 == 24:
            lines += [line("response_item", message("user", "undo that"), k * 7 + 5),
                      line("event_msg", {"type": "thread_rolled_back", "num_turns": 1}, k * 7 + 5)]
    return "\n".join(lines) + "\n"


def gemini_recording(turns: int) -> str:
    """A Gemini CLI recording of ``turns`` turns."""
    from gemini_sessions import gemini, metadata, tool_call, user
    records = [metadata()]
    for k in range(turns):
        calls = [tool_call(f"t{k}a", "read_file", {"path": f"src/f{k}.py"}, f"def f{k}():\n    return {k}\n" * 60),
                 tool_call(f"t{k}b", "search_file_content", {"pattern": f"needle{k}"},
                           f"src/f{k}.py:{k}: needle{k}\n" * 40)]
        records += [user(f"u{k}", f"look at f{k} and find needle{k}"),
                    gemini(f"g{k}", f"f{k} returns {k}", calls, tokens=4_000 + 900 * k)]
    return "".join(json.dumps(r) + "\n" for r in records)


GENERATORS = {"codex": codex_rollout, "gemini": gemini_recording}


def main() -> None:
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "tests"))
    from ctxkit import load_policy
    from ctxkit.reports.agent_usage import agent_requests
    from ctxkit.reports.pricing import load_pricing
    from ctxkit.reports.replay import GrowingRead
    from ctxkit.reports.simulate import simulate
    from ctxkit.transcript import read_transcript

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--format", choices=[*GENERATORS, "all"], default="all")
    parser.add_argument("--context-window", type=int, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ctxkit-bench-") as tmp:
        policy = load_policy(None, [], cwd=Path(tmp))
        prices = load_pricing()
        compactions: dict[Path, int] = {}  # the policy's, in each session (of its last run)
        for fmt in GENERATORS if args.format == "all" else [args.format]:
            paths = {}
            for size in ("N", "2N"):
                paths[size] = Path(tmp) / f"{fmt}-{size}.jsonl"
                paths[size].write_text(GENERATORS[fmt](args.turns * (1 if size == "N" else 2)))

            def cpu(path: Path) -> float:
                start = time.process_time()
                doc, _ = simulate([str(path)], [("default", policy)], prices, cwd=Path(tmp),
                                  context_window=args.context_window)
                spent = time.process_time() - start
                compactions[path] = doc["sessions"][0]["policies"][0]["compactions"]
                return spent

            def reads(path: Path) -> float:
                t = read_transcript(str(path))
                lines = [t.raw_line(i)[0] + b"\n" for i in range(t.n_lines)]
                start = time.process_time()
                growing, done = GrowingRead(Path(tmp) / "growing.jsonl"), 0
                for point in agent_requests(t):
                    growing.add(lines[done:point.first_entry]).view()
                    done = point.first_entry
                return time.process_time() - start

            for what, run in (("simulate", cpu), ("reads and views", reads)):
                run(paths["N"])  # warm: imports, the pricing table
                times: dict[str, list[float]] = {"N": [], "2N": []}
                for _ in range(args.runs):
                    for size in times:
                        times[size].append(run(paths[size]))
                n, n2 = min(times["N"]), min(times["2N"])
                print(f"{fmt} {what}: {args.turns} turns {n:.2f} s, {2 * args.turns} turns {n2:.2f} s CPU "
                      f"(least of {args.runs}); ratio {n2 / n:.2f}")
            print(f"{fmt} compactions under the default policy: {args.turns} turns {compactions[paths['N']]}, "
                  f"{2 * args.turns} turns {compactions[paths['2N']]}")


if __name__ == "__main__":
    main()
