#!/usr/bin/env python3
"""Every row of ctxkit's performance table, each as a ratio to its baseline measured in the same run.

    python bench/perf.py [--repeat N] [--warmup N] [--quick] [--only WORDS] [--keep] [--samples]

Builds its inputs from the recorded sessions (``../shared/corpus``, or ``$CTXKIT_SHARED/corpus``):
copies of the Claude Code sessions, each copy with fresh uuids, message ids and tool ids, chained
onto the one before (a compact boundary every 10 copies, as in a long session; none at all for the
"whole file is the view" input). Each row runs ``--repeat`` times (default 3), baseline and subject
alternating, after ``--warmup`` passes over every row that do not count (default 1), and reports the
ratio's min / median / max; a row passes when its median ratio is at most its target. Prints a
markdown table and exits 1 when a row misses its target.

Times are CPU seconds (user + system) of the child process, which a busy machine disturbs less than
wall time; memory is the child's peak RSS. ``--quick`` builds inputs a quarter of the size (for a
check that the rows run; the targets are set for the full sizes). ``--only`` keeps the rows whose
name contains one of the comma-separated words. ``--samples`` also prints every sample, and every
command's user and system time.

Rows come from a registry: :func:`rows` here, plus ``rows(ctx)`` of every module ``bench/perf_*.py``
(e.g. ``perf_incremental.py``), each returning a list of :class:`Row`. A row is a name, a target and
a function that makes one measurement::

    from perf import Row, Sample  # bench/ is on sys.path when perf.py runs

    def rows(ctx) -> list[Row]:
        def second_run() -> Sample:
            big = ctx.session(190)                 # a built input (cached for the run), its Path
            seconds, rss = ctx.run([*ctx.ctxkit, "compact", str(big), ...])
            return Sample(seconds, base_seconds, f"{seconds:.2f} s vs {base_seconds:.2f} s")
        return [Row("second compact ...", "time", 2.0, second_run)]

``Context`` gives the inputs (``session(size_mb, boundary_every=10)``, ``tiny()``), a scratch folder
(``work``), the command that runs ctxkit (``ctxkit``), ``run(cmd, inputs=...)`` (CPU seconds and peak
RSS of a command, which must exit 0 or 1; its ``inputs`` read once first, untimed), ``compact(path, out,
store, *extra)`` (``ctxkit compact --policy no-llm`` with a clock and a window that make every stage
work) and ``orjson_floor(path)`` (a plain orjson read+write of the file: the baseline of the big rows).
``ctx.scale`` is 1 for the full sizes and 0.25 with ``--quick``: ``session()`` applies it.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
CORPUS = Path(os.environ.get("CTXKIT_SHARED", HERE.parent.parent / "shared")) / "corpus" / "claude-code-2.1.328"
ROOT = HERE.parent

#: the baseline of the big rows: parse every line with orjson and write it back
ORJSON_FLOOR = r"""
import sys, orjson
with open(sys.argv[1], 'rb') as f, open(sys.argv[2], 'wb') as out:
    for line in f:
        out.write(orjson.dumps(orjson.loads(line)))
        out.write(b'\n')
"""
#: the baseline of the start-up rows: the two libraries any typer + rich CLI imports
IMPORT_FLOOR = "import typer, rich.console"
#: run once before the rows, by ctxkit's own interpreter: every ctxkit module (and what each imports) is
#: compiled into the bench's bytecode cache, as an installed package has them all compiled; a one-line
#: warm-up compaction loads only some (no summarizer, no re-injection), and the first busy sample then
#: timed the compiler for the rest (about 0.15 s of the first 50 MB compaction)
IMPORT_ALL = r"""
import importlib, pkgutil, ctxkit
for found in pkgutil.walk_packages(ctxkit.__path__, "ctxkit."):
    if not found.name.endswith("__main__"):
        try:
            importlib.import_module(found.name)
        except Exception:  # an optional extra that is not installed
            pass
"""
#: a clock a day after the recordings (the prompt cache is cold: microcompact clears) and a window small
#: enough that autocompact (the extractive summarizer) compacts too: every stage of no-llm works (with a
#: summary reserve a compaction fits under in that window: compact refuses a window it cannot fit in)
BUSY = ["--policy", "no-llm", "--now", "2026-12-01T00:00:00Z", "--context-window", "50000", "--set",
        "thresholds.summary_reserve=5000", "--report", "none"]


@dataclass
class Sample:
    """One measurement of a row: what was measured, its baseline, and how to say it in the table."""

    value: float
    baseline: float
    shown: str

    @property
    def ratio(self) -> float:
        return self.value / self.baseline if self.baseline else float("inf")


@dataclass
class Row:
    """One line of the table. ``measure`` makes one :class:`Sample`; the row passes when the median of
    the ratios is at most ``target``. ``kind`` says what the ratio is of (``time`` or ``memory``)."""

    name: str
    kind: str
    target: float
    measure: Callable[[], Sample]
    samples: list[Sample] = field(default_factory=list)
    warmup: list[Sample] = field(default_factory=list)  # the warm-up pass's: shown by --samples, not counted

    @property
    def ratios(self) -> list[float]:
        return [s.ratio for s in self.samples]

    @property
    def passed(self) -> bool:
        return bool(self.samples) and statistics.median(self.ratios) <= self.target


class Context:
    """What a row may use: built inputs, a scratch folder, the ctxkit command, measuring helpers."""

    def __init__(self, work: Path, scale: float):
        self.work = work
        self.scale = scale
        self.python = sys.executable
        script = shutil.which("ctxkit") or str(Path(sys.executable).with_name("ctxkit"))
        self.ctxkit = [script]
        self.ctxkit_python = _interpreter_of(script)
        self._built: dict[tuple, Path] = {}
        #: every command run, in order: (what, user seconds, system seconds, peak RSS), for ``--samples``
        self.log: list[tuple[str, float, float, int]] = []
        # children compile ctxkit's modules once, as an installed package has them compiled: an
        # environment that forbids bytecode (PYTHONDONTWRITEBYTECODE) would time the compiler instead
        self.env = {**os.environ, "PYTHONPYCACHEPREFIX": str(work / "pycache")}
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)

    # -- inputs -----------------------------------------------------------------------------------
    def session(self, size_mb: float, boundary_every: int = 10) -> Path:
        """A Claude Code transcript of about ``size_mb`` MB (times :attr:`scale`) built from copies of the
        corpus sessions with unique ids; ``boundary_every`` copies a compact boundary (0: none)."""
        key = (size_mb, boundary_every)
        if key not in self._built:
            path = self.work / f"session-{size_mb * self.scale:g}mb-b{boundary_every}.jsonl"
            build_session(path, int(size_mb * self.scale * 1024 * 1024), boundary_every)
            self._built[key] = path
        return self._built[key]

    def tiny(self) -> Path:
        """The first three lines of a recorded session."""
        path = self.work / "tiny.jsonl"
        if not path.exists():
            with open(_corpus_sessions()[0], "rb") as f:
                path.write_bytes(b"".join(f.readline() for _ in range(3)))
        return path

    # -- measuring --------------------------------------------------------------------------------
    def run(self, cmd: list[str], cwd: Path | None = None, inputs: tuple[Path, ...] = (),
            note: str = "", stdin: Path | None = None) -> tuple[float, int]:
        """(CPU seconds, peak RSS in bytes) of ``cmd``; it must exit 0 or 1 (ctxkit's "did its job, a
        check failed"). ``note`` goes after its name in ``--samples`` (``set-up``: a run a row needs
        before it measures, not a sample); ``stdin``: a file its standard input is redirected from (it
        counts among the ``inputs``). The peak RSS is the kernel's for the child, which counts the
        bench's own memory at the time it started the command (Linux keeps the high-water mark across
        ``exec``): no reading is below the bench's own, about 25-30 MiB. Not timed, first:

        * the bench's own earlier writes are flushed to disk (``os.sync``): the floor writes its copy
          without an fsync, and the inputs are copied; left pending, their writeback lands in whichever
          command runs next (ctxkit fsyncs what it writes, and on this machine that once made a 0.4 s
          run take 0.9 s);
        * the command's ``inputs`` are read once, so that it reads them from memory, as a baseline run
          just before it mostly does: this machine's kernel drops file pages a few seconds unused
          (DAMON ``pageout``), and neither side should pay for reading them back from disk."""
        os.sync()
        for path in (*inputs, *([stdin] if stdin else [])):
            with open(path, "rb") as f:
                while f.read(1 << 20):
                    pass
        with open(stdin or os.devnull, "rb") as given:
            proc = subprocess.Popen(cmd, stdin=given, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=cwd,
                                    env=self.env)
            err = proc.stderr.read() if proc.stderr else b""
            _, status, usage = os.wait4(proc.pid, 0)
        code = os.waitstatus_to_exitcode(status)
        if code not in (0, 1):
            sys.exit(f"{' '.join(cmd)} exited {code}: {err.decode(errors='replace')[-600:]}")
        self.log.append((_label(cmd) + (f" < {stdin.name}" if stdin else "") + (f" ({note})" if note else ""),
                         usage.ru_utime, usage.ru_stime,
                         usage.ru_maxrss * 1024))
        return usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024

    def orjson_floor(self, path: Path) -> tuple[float, int]:
        """A Python process that parses every line of ``path`` with orjson and writes it back."""
        return self.run([self.python, "-c", ORJSON_FLOOR, str(path), str(self.work / "floor.out")], inputs=(path,))

    def compact(self, path: Path, out: Path, store: Path, *extra: str, note: str = "",
                stdin: bool = False) -> tuple[float, int]:
        """``ctxkit compact PATH -o OUT`` with :data:`BUSY`; with ``stdin``, ``compact - -o OUT < PATH``."""
        named = "-" if stdin else str(path)
        return self.run([*self.ctxkit, "compact", named, "-o", str(out), "--store", str(store), *BUSY, *extra],
                        inputs=() if stdin else (path,), note=note, stdin=path if stdin else None)


# -- the inputs ---------------------------------------------------------------------------------------
_ID_KEYS = ("uuid", "parentUuid", "id", "tool_use_id", "sourceToolAssistantUUID", "leafUuid", "logicalParentUuid",
            "headUuid", "anchorUuid", "tailUuid")


def _corpus_sessions() -> list[Path]:
    found = sorted(d / "session.jsonl" for d in CORPUS.iterdir() if (d / "session.jsonl").exists()) \
        if CORPUS.is_dir() else []
    if not found:
        sys.exit(f"no recorded sessions in {CORPUS} (set CTXKIT_SHARED to the folder holding corpus/)")
    return found


def _suffix_ids(value, suffix: str):
    if isinstance(value, dict):
        return {k: (v + suffix if k in _ID_KEYS and isinstance(v, str) else _suffix_ids(v, suffix))
                for k, v in value.items()}
    if isinstance(value, list):
        return [_suffix_ids(v, suffix) for v in value]
    return value


def build_session(target: Path, size: int, boundary_every: int) -> int:
    """Write copies of the corpus sessions to ``target`` until it holds ``size`` bytes; its size."""
    sessions = [[orjson.loads(line) for line in p.read_bytes().splitlines() if line.strip()]
                for p in _corpus_sessions()]
    written = copy = 0
    leaf = None
    with open(target, "wb") as out:
        while written < size:
            suffix = f"-c{copy}"
            lines = []
            if boundary_every and copy and copy % boundary_every == 0:
                boundary = {"type": "system", "subtype": "compact_boundary", "parentUuid": None,
                            "logicalParentUuid": leaf, "uuid": f"boundary{suffix}", "isSidechain": False,
                            "content": "Conversation compacted", "compactMetadata": {"trigger": "auto"},
                            "timestamp": "2026-11-29T23:00:00.000Z"}
                summary = {"type": "user", "parentUuid": boundary["uuid"], "uuid": f"summary{suffix}",
                           "isSidechain": False, "isCompactSummary": True, "timestamp": "2026-11-29T23:00:00.000Z",
                           "message": {"role": "user", "content": "This session is being continued from a previous "
                                       "conversation that ran out of context. Summary: benchmark."}}
                lines += [boundary, summary]
                leaf = summary["uuid"]
            for e in sessions[copy % len(sessions)]:
                e = _suffix_ids(e, suffix)
                if e.get("type") == "system" and e.get("subtype") == "compact_boundary":
                    e = {**e, "subtype": "informational"}  # the copies' own boundaries: not boundaries here
                if "uuid" in e and e.get("parentUuid") is None:
                    e["parentUuid"] = leaf  # each copy goes on where the one before ended
                lines.append(e)
                if e.get("type") in ("user", "assistant", "attachment") and not e.get("isSidechain"):
                    leaf = e["uuid"]
            chunk = b"".join(orjson.dumps(e) + b"\n" for e in lines)
            out.write(chunk)
            written += len(chunk)
            copy += 1
    return written


# -- the rows -----------------------------------------------------------------------------------------
def _interpreter_of(script: str) -> str:
    """The Python a console script runs with (its ``#!`` line), else this one."""
    try:
        with open(script, "rb") as f:
            first = f.readline(4096).decode(errors="replace").strip()
    except OSError:
        return sys.executable
    named = first[2:].strip().split()[0] if first.startswith("#!") and first[2:].strip() else ""
    return named if named and os.path.isfile(named) and "python" in Path(named).name else sys.executable


def _label(cmd: list[str]) -> str:
    """A short name for a measured command: ``ctxkit compact session-50mb-b0.jsonl``, ``python -c
    (import typer, rich.console)``, ``python -c (orjson) session-50mb-b0.jsonl``."""
    if len(cmd) > 2 and cmd[1] == "-c":
        script = {IMPORT_FLOOR: "import typer, rich.console", IMPORT_ALL: "import every ctxkit module"}.get(cmd[2],
                                                                                                       "orjson")
        return " ".join([Path(cmd[0]).name, "-c", f"({script})", *(Path(c).name for c in cmd[3:4])])
    return " ".join(Path(c).name if os.sep in c else c for c in cmd[:3])


def _mb(n: float) -> str:
    return f"{n / 2**20:.0f} MiB"


def rows(ctx: Context) -> list[Row]:
    big_mb, view_mb = f"{190 * ctx.scale:g} MB", f"{50 * ctx.scale:g} MB"

    def start_up(args: Callable[[], list[str]]) -> Callable[[], Sample]:
        def measure() -> Sample:
            base, _ = ctx.run([ctx.python, "-c", IMPORT_FLOOR])
            spent, _ = ctx.run([*ctx.ctxkit, *args()], cwd=ctx.work)
            return Sample(spent, base, f"{spent * 1000:.0f} ms vs {base * 1000:.0f} ms")
        return measure

    def tiny_args() -> list[str]:
        return ["compact", str(ctx.tiny()), "-o", str(ctx.work / "tiny.out"), "--store", str(ctx.work / "tiny-store")]

    runs = {"n": 0}

    def compact_big() -> tuple[float, int, Path, Path]:
        """Compact the 190 MB input with a fresh store: (CPU seconds, peak RSS, output, store)."""
        runs["n"] += 1
        out, store = ctx.work / "big.out", ctx.work / f"big-store-{runs['n']}"
        spent, rss = ctx.compact(ctx.session(190), out, store)
        runs["last"] = (spent, rss, out, store)
        return runs["last"]

    def big_compact() -> Sample:
        base, _ = ctx.orjson_floor(ctx.session(190))
        spent, *_ = compact_big()
        return Sample(spent, base, f"{spent:.2f} s vs {base:.2f} s")

    def big_compact_memory() -> Sample:
        _, rss, *_ = runs.get("last") or compact_big()  # the run the row above measured
        size = ctx.session(190).stat().st_size
        return Sample(rss, size, f"{_mb(rss)} for {_mb(size)}")

    def expand_memory() -> Sample:
        *_, compacted, store = runs.get("last") or compact_big()
        _, rss = ctx.run([*ctx.ctxkit, "expand", str(compacted), "-o", str(ctx.work / "expanded.jsonl"),
                          "--store", str(store)], inputs=(compacted,))
        size = compacted.stat().st_size
        return Sample(rss, size, f"{_mb(rss)} for {_mb(size)}")

    def whole_view() -> Sample:
        one = ctx.session(50, boundary_every=0)
        base, _ = ctx.orjson_floor(one)
        runs["n"] += 1
        spent, _ = ctx.compact(one, ctx.work / "view.out", ctx.work / f"view-store-{runs['n']}")
        return Sample(spent, base, f"{spent:.2f} s vs {base:.2f} s")

    return [
        Row("`ctxkit compact` on a 3-line transcript, vs `python -c \"import typer, rich.console\"`", "time", 2.0,
            start_up(tiny_args)),
        Row("`ctxkit --help`, vs `python -c \"import typer, rich.console\"`", "time", 2.0, start_up(lambda: ["--help"])),
        Row(f"`compact --policy no-llm` on {big_mb} (copies of the corpus, a boundary every 10), vs orjson "
            "read+write", "time", 2.0, big_compact),
        Row("the same: peak RSS, vs the file's size", "memory", 1.0, big_compact_memory),
        Row("`ctxkit expand` on that compacted file: peak RSS, vs its size", "memory", 1.0, expand_memory),
        Row(f"`compact --policy no-llm` on {view_mb} that is all one view (no boundary), vs orjson read+write", "time", 3.0,
            whole_view),
    ]


def _plugin_rows(ctx: Context) -> list[Row]:
    """``rows(ctx)`` of every ``bench/perf_*.py`` (another part of the table, kept in its own file)."""
    found: list[Row] = []
    for path in sorted(HERE.glob("perf_*.py")):
        spec = importlib.util.spec_from_file_location(f"bench_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        found += module.rows(ctx)
    return found


def table(all_rows: list[Row]) -> str:
    out = ["| what | measured (median run) | ratio min / median / max | target | |",
           "| --- | --- | --- | --- | --- |"]
    for row in all_rows:
        if not row.samples:
            continue
        ratios = row.ratios
        middle = sorted(row.samples, key=lambda s: s.ratio)[len(row.samples) // 2]
        out.append(f"| {row.name} | {middle.shown} | {min(ratios):.2f}x / {statistics.median(ratios):.2f}x / "
                   f"{max(ratios):.2f}x | at most {row.target:g}x | {'ok' if row.passed else '**missed**'} |")
    return "\n".join(out)


def samples(all_rows: list[Row], log: list[tuple[str, float, float, int]], counted_from: int = 0) -> str:
    """Every sample of every row (and the warm-up's, which do not count), then every command in the order it
    ran (user and system CPU seconds, peak RSS; those before ``counted_from`` prepared or warmed up): what a
    median hides (one slow sample, and whether the kernel or Python spent it)."""
    def shown(found: list[Sample]) -> str:
        return ", ".join(f"{s.ratio:.2f}x ({s.shown})" for s in found)

    out = [f"{row.name}: {shown(row.samples)}" + (f"; warm-up, not counted: {shown(row.warmup)}" if row.warmup else "")
           for row in all_rows if row.samples]
    out += ["", "| command | user s | system s | peak RSS |", "| --- | --- | --- | --- |"]
    out += [f"| {what}{'' if k >= counted_from else ' (not counted)'} | {user:.3f} | {system:.3f} | {_mb(rss)} |"
            for k, (what, user, system, rss) in enumerate(log)]
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3, help="measurements per row (default 3)")
    ap.add_argument("--quick", action="store_true", help="inputs a quarter of the size")
    ap.add_argument("--only", default="", help="comma-separated words: keep the rows whose name has one")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder (its path is printed)")
    ap.add_argument("--warmup", type=int, default=1,
                    help="passes over every row before the measured ones, not counted (default 1)")
    ap.add_argument("--samples", action="store_true",
                    help="also print every sample of every row, and every command's user and system time")
    args = ap.parse_args()
    if args.repeat < 1 or args.warmup < 0:
        ap.error("--repeat must be at least 1 and --warmup at least 0")
    work = Path(tempfile.mkdtemp(prefix="ctxkit-perf-"))
    ctx = Context(work, 0.25 if args.quick else 1.0)
    try:
        all_rows = rows(ctx) + _plugin_rows(ctx)
        words = [w.strip().lower() for w in args.only.split(",") if w.strip()]
        if words:
            all_rows = [r for r in all_rows if any(w in r.name.lower() for w in words)]
            if not all_rows:
                ap.error(f"--only {args.only!r}: no row's name has any of these words")
        # compile the modules once (see Context.env), both sides': no row's first sample times the compiler
        ctx.run([ctx.python, "-c", IMPORT_FLOOR])
        # (from the scratch folder: ``-c`` imports from the current folder first, the script does not)
        ctx.run([ctx.ctxkit_python, "-c", IMPORT_ALL], cwd=work)
        ctx.run([*ctx.ctxkit, "--version"])
        warm = work / "warm.jsonl"  # one line of our own: the corpus may not be there for every row
        warm.write_bytes(orjson.dumps({"type": "user", "uuid": "warm", "parentUuid": None, "sessionId": "warm",
                                       "message": {"role": "user", "content": "warm up"}}) + b"\n")
        ctx.run([*ctx.ctxkit, "compact", str(warm), "-o", str(work / "warm.out"), *BUSY,
                 "--store", str(work / "warm-store")])
        # a pass over every row that does not count: on a virtual machine a command that takes tens of MiB
        # anew may pay the host for memory it had taken back, often the first time (docs/benchmarks.md)
        for _ in range(args.warmup):
            for row in all_rows:
                row.warmup.append(row.measure())
        counted_from = len(ctx.log)
        for _ in range(args.repeat):
            for row in all_rows:
                row.samples.append(row.measure())
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        print(f"{args.repeat} run(s) per row after {args.warmup} not counted{', quick sizes' if args.quick else ''}; "
              f"{os.cpu_count()} cores, "
              f"load average {load:.1f}\n")
        print(table(all_rows))
        if args.samples:
            print("\n" + samples(all_rows, ctx.log, counted_from))
        return 0 if all(r.passed for r in all_rows) else 1
    finally:
        if args.keep:
            print(f"\nkept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
