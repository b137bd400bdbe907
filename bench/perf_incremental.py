#!/usr/bin/env python3
"""Benchmark rows: the second ``ctxkit compact`` after one new turn, on a 190 MB session and on a 3 MB one.

ctxkit runs after every agent turn, so the run that matters is the one after the agent appended a
turn to a session ctxkit has compacted before (same store). Both sessions are the inputs
``bench/perf.py`` builds from the corpus (fresh ids per copy), copied; for each:

1. ``ctxkit compact SESSION -o OUT`` (the first run: reads everything, keeps checkpoints);
2. one new turn (a user prompt and the assistant's answer, chained onto the leaf) is appended to
   the session;
3. measured: ``ctxkit compact SESSION -o OUT`` again, same store (CPU seconds, like every row).

The row is step 3 on 190 MB over step 3 on 3 MB (target: at most 2x): with checkpoints the second
run reads only the new turn, and copies the unchanged bytes in the kernel. A second row runs the same
steps on two more copies of the 190 MB session, one named on the command line and one on standard
input (``compact - -o OUT < SESSION``, the redirect the README opens with), and compares step 3 of the
two (target: at most 1.5x): standard input that is a file is read in place, not copied to a temporary
file before each run (which made the row 1.88x). Both are part of the table ``python bench/perf.py``
prints (``rows`` is its plug-in interface); alone: ``python bench/perf.py --only "second compact"``.
"""
from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import orjson

#: the row's name at the full sizes (``--quick`` builds a quarter of each, and the row says so)
NAME = "second compact after one new turn, 190 MB vs 3 MB (same store)"
TARGET = 2.0
STDIN_NAME = "the same second compact on 190 MB, the session on standard input vs named"
STDIN_TARGET = 1.5
_TURN = 0


def new_turn(path: Path) -> None:
    """Append one turn to a Claude Code session: a user prompt and the assistant's answer, chained onto
    the leaf, with the envelope fields of the last conversation entry."""
    global _TURN
    _TURN += 1
    last = None
    with open(path, "rb") as f:
        f.seek(max(0, os.path.getsize(path) - (4 << 20)))
        for line in f.read().splitlines()[1:]:
            try:
                d = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if d.get("type") in ("user", "assistant", "attachment") and not d.get("isSidechain") and d.get("uuid"):
                last = d
    if last is None:
        raise SystemExit(f"{path}: no conversation entry to chain onto")
    env = {k: last[k] for k in ("userType", "entrypoint", "cwd", "sessionId", "version", "gitBranch") if k in last}
    tag = f"bench-turn-{os.getpid()}-{_TURN}-{time.monotonic_ns()}"
    user = {"parentUuid": last["uuid"], "isSidechain": False, **env, "type": "user", "uuid": f"{tag}-u",
            "timestamp": "2026-11-30T12:00:00.000Z", "message": {"role": "user", "content": "One more thing: "
                                                                 "summarize what changed."}}
    answer = {"parentUuid": user["uuid"], "isSidechain": False, **env, "type": "assistant", "uuid": f"{tag}-a",
              "timestamp": "2026-11-30T12:00:05.000Z",
              "message": {"id": f"msg_{tag}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                          "content": [{"type": "text", "text": "The models and views were edited; tests pass."}],
                          "stop_reason": "end_turn", "usage": {"input_tokens": 10, "output_tokens": 12}}}
    with open(path, "ab") as f:
        f.write(orjson.dumps(user) + b"\n" + orjson.dumps(answer) + b"\n")


def rows(ctx) -> list:
    """The two rows, for ``bench/perf.py`` (``ctx`` is its Context: inputs, scratch folder, ``compact``)."""
    from perf import Row, Sample  # bench/ is on sys.path when perf.py runs

    prepared: dict[tuple[int, str], tuple[Path, Path, Path]] = {}

    def prepare(size_mb: int, how: str = "") -> tuple[Path, Path, Path]:
        """A copy of the built session of ``size_mb`` (one per ``how``), compacted once: (session, output,
        store)."""
        if (size_mb, how) not in prepared:
            session = ctx.work / f"incr-{size_mb}{how}.jsonl"
            shutil.copyfile(ctx.session(size_mb), session)  # the built input is shared: this copy grows
            out, store = ctx.work / f"incr-{size_mb}{how}.out", ctx.work / f"incr-store-{size_mb}{how}"
            ctx.compact(session, out, store, note="set-up", stdin=how == "-stdin")  # the first run
            prepared[size_mb, how] = (session, out, store)
        return prepared[size_mb, how]

    def measured(size_mb: int, how: str = "") -> float:
        session, out, store = prepare(size_mb, how)
        new_turn(session)
        return ctx.compact(session, out, store, stdin=how == "-stdin")[0]

    def second_run() -> Sample:
        spent = [measured(190), measured(3)]
        return Sample(spent[0], spent[1], f"{spent[0]:.2f} s vs {spent[1]:.2f} s")

    def from_stdin() -> Sample:
        spent = [measured(190, "-stdin"), measured(190, "-named")]
        return Sample(spent[0], spent[1], f"{spent[0]:.2f} s vs {spent[1]:.2f} s")

    size = f"{190 * ctx.scale:g} MB"
    name = NAME if ctx.scale == 1 else NAME.replace("190 MB vs 3 MB", f"{size} vs {3 * ctx.scale:g} MB")
    return [Row(name, "time", TARGET, second_run), Row(STDIN_NAME.replace("190 MB", size), "time", STDIN_TARGET,
                                                       from_stdin)]
