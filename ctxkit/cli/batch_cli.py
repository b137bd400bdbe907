"""Many transcripts at once: the batch options, and :func:`run_many`, the one call a command makes for them.

A command that takes many inputs declares ``sources: SourcesArg`` and the batch options
(``JobsOpt``, ``SchedulerOpt``, ``ReportFileOpt``; ``OutDirOpt`` and ``InPlaceOpt`` when it writes a
transcript), and begins::

    params = dict(locals())
    if wants_batch(params):
        return run_many(COMPACT, params)      # a BatchCommand of ctxkit.cli.batch_commands
    source = one_source(sources)              # then exactly what it did with one file

With one plain file (or standard input) and no batch option, nothing changes. Otherwise each file
is run by the command's own function (:func:`run_file`: in a worker process, or on a Dask worker),
its standard output and error captured, so that every file gets exactly the bytes and the exit
code ``ctxkit COMMAND FILE`` would give it. The batch then prints, on stderr, each file's problems
(naming the file) as it finishes, or one JSON object per file with ``--report json``, a progress bar
when stderr is a terminal, and a summary; its data (the command's ``render``) on stdout; and exits
with the most severe exit code of all (:func:`ctxkit.batch.results.most_severe`).
User documentation: docs/batch.md, docs/fleet.md.
"""
from __future__ import annotations

import importlib
import io
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Iterator, Literal, Optional

import typer

from ..batch.inputs import is_url
from ..errors import ExitCode, UsageError
from ..fileio import atomic_output
from .conventions import choices_metavar

if TYPE_CHECKING:
    from ..batch.results import FileResult

BatchReport = Literal["text", "json"]

SourcesArg = Annotated[Optional[list[str]], typer.Argument(
    metavar="FILE", help="Transcript files, folders (every session file below them, by its content; hidden folders skipped), "
    "shell globs or fsspec URLs; - (the default) for standard input.", show_default=False)]
JobsOpt = Annotated[Optional[int], typer.Option("--jobs", "-j", metavar="N", min=1, help="With several inputs: "
                                                "run N at once in local processes (default: the number of CPUs).")]
OutDirOpt = Annotated[Optional[str], typer.Option("--out-dir", metavar="DIR", help="With several inputs: write "
                                                  "each output at DIR/its path below the folder or glob it was "
                                                  "found under (a folder or an fsspec URL).")]
InPlaceOpt = Annotated[bool, typer.Option("--in-place", help="With several inputs: replace each input with its "
                                          "output (atomically).")]
SchedulerOpt = Annotated[Optional[str], typer.Option("--scheduler", metavar="ADDRESS", help="Run the batch on "
                                                     "this Dask scheduler (tcp://HOST:PORT; default with several "
                                                     "inputs: $DASK_SCHEDULER_ADDRESS). Needs ctxkit[dask].")]
ReportFileOpt = Annotated[Optional[str], typer.Option("--report-file", metavar="FILE", help="With several inputs: "
                                                      "write the JSON report (one object per file, then the "
                                                      "totals) to FILE instead of stderr.")]
BatchReportOpt = Annotated[Optional[BatchReport], typer.Option(
    "--report", metavar=choices_metavar(BatchReport), help="With several inputs: a summary table (text) or one "
    "JSON object per file on stderr as each finishes, then the totals (json).")]

# options that only the batch reads: a file's own run gets their defaults
# (``batch_report`` is ``--report`` of the commands that had no report of their own: stats, check, expand)
BATCH_PARAMS = {"jobs": None, "out_dir": None, "in_place": False, "scheduler": None, "report_file": None,
                "batch_report": None}


@dataclass(frozen=True)
class BatchCommand:
    """How a command runs over many files.

    ``function``: ``"module:name"`` of the command's function (imported by each worker). ``writes``:
    it writes one transcript per input (``-o`` becomes ``--out-dir``/``--in-place``). ``per_file``:
    the parameters each file's run gets (a JSON report to read figures from). ``figures``: what the
    summary needs out of one run (``tokens_before``, ``tokens_after``...). ``render``: the batch's data
    on stdout, from every file's result, in input order."""

    name: str
    function: str
    writes: bool
    per_file: Callable[[dict[str, Any]], dict[str, Any]]
    figures: Callable[[FileResult], dict[str, Any]] = lambda r: {}
    render: Callable[[list[FileResult], dict[str, Any]], None] = lambda results, params: None
    output_param: str = "output"


def one_source(sources: list[str] | None) -> str:
    return sources[0] if sources else "-"


def _names_many(source: str) -> bool:
    if source == "-":
        return False
    if is_url(source) or os.path.isdir(source):
        return True
    return not os.path.exists(source) and any(c in source for c in "*?[")


def wants_batch(params: dict[str, Any]) -> bool:
    """Several inputs, a folder, a glob or a URL, or a batch option: the batch. Else the one-file command."""
    sources = params.get("sources") or []
    if len(sources) > 1 or any(_names_many(s) for s in sources):
        return True
    return any(params.get(k) not in (None, False) for k in BATCH_PARAMS if k != "jobs")


# -- one file, in a worker ----------------------------------------------------------------------------

_streams = threading.local()
_install = threading.Lock()


class _ThreadStream:
    """Stands in for ``sys.stdout``/``sys.stderr``: writes of a thread running a file's command go to that
    run's buffer, every other write to the stream it replaced (Dask runs tasks in threads)."""

    def __init__(self, name: str, fallback: Any):
        self._name = name
        self._fallback = fallback

    def _target(self) -> Any:
        return getattr(_streams, self._name, None) or self._fallback

    def write(self, text: str) -> int:
        return self._target().write(text)

    def flush(self) -> None:
        self._target().flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target(), name)


def _stand_in(name: str) -> None:
    with _install:
        if not isinstance(getattr(sys, name), _ThreadStream):
            setattr(sys, name, _ThreadStream(name, getattr(sys, name)))


@contextmanager
def _captured() -> Iterator[tuple[io.TextIOWrapper, io.TextIOWrapper]]:
    _stand_in("stdout")
    _stand_in("stderr")
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
    try:  # set inside the try: a Ctrl-C right after must still give the batch its own stderr back
        _streams.stdout, _streams.stderr = out, err
        yield out, err
    finally:
        _streams.stdout = _streams.stderr = None


def run_file(source: str, output: str | None, context: tuple[str, dict[str, Any], str | None, str]
             ) -> tuple[int, bytes, str]:
    """Run a command's own function on one local file, as ``ctxkit COMMAND FILE [-o OUTPUT]`` would:
    (exit code, what it wrote on stdout, what it wrote on stderr)."""
    from .app import interrupts_propagate
    from .run_setup import policies_shared

    function, params, output_param, batch_id = context
    module, name = function.split(":")
    fn = getattr(importlib.import_module(module), name)
    kwargs = {**params, "sources": [source]}
    if output_param is not None:
        kwargs[output_param] = output
    with _captured() as (out, err), policies_shared(batch_id), interrupts_propagate():
        try:
            fn(**kwargs)
            code = int(ExitCode.OK)
        except typer.Exit as exc:
            code = int(exc.exit_code)
        except SystemExit as exc:  # not expected from a command: say so rather than lose the file
            code = exc.code if isinstance(exc.code, int) else int(ExitCode.INTERNAL)
        out.flush()
        err.flush()
        return code, out.buffer.getvalue(), err.buffer.getvalue().decode("utf-8", "replace")


# -- the batch, in the command's process ---------------------------------------------------------------

def _check_options(command: BatchCommand, params: dict[str, Any]) -> None:
    out_dir, in_place = params.get("out_dir"), bool(params.get("in_place"))
    if "-" in (params.get("sources") or ["-"]):
        raise UsageError("- (standard input) is one transcript: the batch options need files, folders or globs")
    if not command.writes:
        if out_dir is not None or in_place:
            raise UsageError(f"ctxkit {command.name} writes no transcript: --out-dir and --in-place do not apply")
        return
    if out_dir is not None and in_place:
        raise UsageError("--out-dir and --in-place: choose one")
    output = params.get(command.output_param)
    if output is not None and str(output) != "-":
        raise UsageError(f"-o names one output; with several inputs, ctxkit {command.name} writes under "
                         "--out-dir DIR or over each input with --in-place")
    if out_dir is None and not in_place:
        raise UsageError(f"with several inputs, ctxkit {command.name} writes each output under --out-dir DIR, "
                         "or over its input with --in-place")


def run_many(command: BatchCommand, params: dict[str, Any]) -> None:
    """Run ``command`` on every input ``params['sources']`` names; exit with the most severe code."""
    # the engines load for a batch only: a one-file run starts without them
    from ..batch.engine import Batch, FileJob, run_local
    from ..batch.inputs import check_outputs, expand_inputs, output_for
    from ..batch.results import most_severe, totals
    from .app import cycle_collector
    from .batch_report import Reporter

    _check_options(command, params)
    if "policy" in params:  # a bad policy is one error, before any file is read (not one per file)
        from .run_setup import make_policy

        make_policy(params.get("policy"), params.get("set_"))
    out_dir = params.get("out_dir")
    items = expand_inputs(list(params["sources"]), out_dir, bool(params.get("in_place")))
    outputs = [output_for(item, out_dir, bool(params.get("in_place"))) for item in items]
    check_outputs(items, outputs)
    own = {k: v for k, v in params.items() if k not in BATCH_PARAMS}
    own.update({k: v for k, v in BATCH_PARAMS.items() if k in params})  # declared: their defaults
    own.update(command.per_file(params))
    batch = Batch(run_file, (command.function, own, command.output_param if command.writes else None,
                             uuid.uuid4().hex),
                  tuple(FileJob(i, item.source, out) for i, (item, out) in enumerate(zip(items, outputs, strict=True))),
                  os.getcwd())
    scheduler = params.get("scheduler") or os.environ.get("DASK_SCHEDULER_ADDRESS") or None
    start = time.perf_counter()
    # the collector runs for the batch (long, with Dask's machinery); each file's command pauses it
    with atomic_output(params["report_file"]) if params.get("report_file") else _no_file() as report_file, \
            cycle_collector(on=True):
        reporter = Reporter(command, params, items, report_file)
        try:
            if scheduler:
                from ..batch.dask_engine import run_dask

                run_dask(batch, scheduler, reporter.add, reporter.start)
            else:
                jobs = params.get("jobs") or os.cpu_count() or 1
                if any(u.startswith("memory://") for u in [*params["sources"], out_dir or ""]):
                    jobs = 1  # fsspec's memory file system lives in this process: a worker process has its own
                run_local(batch, jobs, reporter.add, reporter.start)
        finally:
            reporter.stop()
        results = sorted(reporter.results, key=lambda r: r.index)
        command.render(results, params)
        reporter.finish(totals(results, time.perf_counter() - start))
    code = most_severe(r.exit_code for r in results)
    if code:
        raise typer.Exit(code)


@contextmanager
def _no_file() -> Iterator[None]:
    yield None
