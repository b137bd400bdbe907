"""Running a batch: the files split into tasks, the tasks run in this process or a local process pool.

A worker process costs its start-up (importing ctxkit: about half a second), so tasks hold several
files and the pool's processes live for the whole batch; on systems that have it the pool forks,
so a worker starts with ctxkit already imported. ``-j 1`` runs in this process.

The same :class:`Task` runs on a Dask cluster (:mod:`.dask_engine`): :func:`run_task` is what a
worker calls, with the command's own function inside the task (sent by reference, so workers
import it themselves).
"""
from __future__ import annotations

import math
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import InvalidStateError, ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..errors import ExitCode
from ..fileio import forget_inherited_temps, raise_interruption
from .remote import Staging, group_key
from .results import FileResult

# run_file(local_source, local_output_or_None, context) -> (exit code, stdout bytes, stderr text)
RunFile = Callable[[str, "str | None", Any], "tuple[int, bytes, str]"]

_TASKS_PER_WORKER = 4  # enough tasks that a slow file does not leave the other workers idle at the end
_MAX_FILES_PER_TASK = 32


@dataclass(frozen=True)
class FileJob:
    index: int  # position in the batch: results are reported in this order
    source: str
    output: str | None


@dataclass(frozen=True)
class Batch:
    """What to run: ``run_file`` (a top-level function) on each job, with ``context`` (picklable)."""

    run_file: RunFile
    context: Any
    jobs: tuple[FileJob, ...]
    cwd: str  # the working directory the command would have run in (its policy is found from there)


@dataclass(frozen=True)
class Task:
    batch: Batch  # jobs: the ones of this task
    jobs: tuple[FileJob, ...]


def split(batch: Batch, workers: int) -> list[Task]:
    """Tasks of a few consecutive files; every file of one remote folder in the same task (its store)."""
    groups: list[list[FileJob]] = []
    by_key: dict[str, list[FileJob]] = {}
    for job in batch.jobs:
        key = group_key(job.source)
        if key is None:
            groups.append([job])
        elif key in by_key:
            by_key[key].append(job)
        else:
            by_key[key] = [job]
            groups.append(by_key[key])
    size = max(1, min(_MAX_FILES_PER_TASK, math.ceil(len(batch.jobs) / max(1, workers * _TASKS_PER_WORKER))))
    tasks: list[Task] = []
    chunk: list[FileJob] = []
    shell = Batch(batch.run_file, batch.context, (), batch.cwd)
    for group in groups:
        if len(group) > 1:  # a remote folder: one task, never split
            tasks.append(Task(shell, tuple(group)))
            continue
        chunk.extend(group)
        if len(chunk) >= size:
            tasks.append(Task(shell, tuple(chunk)))
            chunk = []
    if chunk:
        tasks.append(Task(shell, tuple(chunk)))
    return tasks


_cwd_lock = threading.Lock()


@contextmanager
def _working_dir(cwd: str) -> Iterator[None]:
    """Run in the batch's working directory when this process is elsewhere and it exists here (a Dask
    worker on a shared file system); one run at a time then, as the directory is the process's."""
    here = os.getcwd()
    if os.path.realpath(here) == os.path.realpath(cwd) or not os.path.isdir(cwd):
        yield
        return
    with _cwd_lock:
        os.chdir(cwd)
        try:
            yield
        finally:
            os.chdir(here)


def run_task(task: Task) -> list[FileResult]:
    """Run every file of a task, one after another; a failure of one is its result, never the task's."""
    results = []
    staging = Staging()
    try:
        with _working_dir(task.batch.cwd):
            for job in task.jobs:
                raise_interruption()  # a signal whose exception a finalizer swallowed
                results.append(_run_job(task.batch, job, staging))
    finally:
        try:
            staging.close()
        except Exception as exc:  # noqa: BLE001 - the store could not be uploaded: every file of the task says so
            for r in results:
                r.exit_code = max(r.exit_code, int(ExitCode.USAGE)) if r.exit_code != ExitCode.INTERNAL else r.exit_code
                r.stderr += f"ctxkit: error: {r.source}: the store could not be uploaded: {exc}\n"
    return results


def _run_job(batch: Batch, job: FileJob, staging: Staging) -> FileResult:
    start = time.perf_counter()
    try:
        source = staging.input(job.source)
        output = staging.output(job.output)
    except Exception as exc:  # noqa: BLE001 - a URL that cannot be read: this file's problem
        return FileResult(job.index, job.source, job.output, int(ExitCode.USAGE),
                          stderr=f"ctxkit: error: cannot read {job.source}: {exc}\n",
                          seconds=time.perf_counter() - start)
    size = os.path.getsize(source) if os.path.isfile(source) else 0
    try:
        code, out, err = batch.run_file(source, output, batch.context)
    except Exception as exc:  # noqa: BLE001 - outside the command's own error boundary: a bug, this file's only
        code, out, err = int(ExitCode.INTERNAL), b"", f"ctxkit: error: internal error: {type(exc).__name__}: {exc}\n"
    if source != job.source:  # messages name the URL, not the scratch copy
        err = err.replace(source, job.source)
    try:
        staging.publish(job.output, output)
    except Exception as exc:  # noqa: BLE001
        code = max(code, int(ExitCode.USAGE))
        err += f"ctxkit: error: cannot write {job.output}: {exc}\n"
    return FileResult(job.index, job.source, job.output, code, out, err, time.perf_counter() - start, size)


def deliver(done, futures: dict, on_result: Callable[[FileResult], None]) -> None:
    """Hand each finished task's results to ``on_result`` (``done``: the futures as they finish, from
    either engine); a task whose worker died gives each of its files a result saying so."""
    for fut in done:
        try:
            results = fut.result()
        except Exception as exc:  # noqa: BLE001 - a worker died: its files are reported, the rest go on
            results = failed_task(futures[fut], exc)
        for r in results:
            on_result(r)
        raise_interruption()


def failed_task(task: Task, exc: BaseException) -> list[FileResult]:
    """A task that died (its worker was killed, a bug outside the command): each of its files says so."""
    return [FileResult(j.index, j.source, j.output, int(ExitCode.INTERNAL),
                       stderr=f"ctxkit: error: {j.source}: the worker running it failed: {type(exc).__name__}: {exc}\n")
            for j in task.jobs]


def _start_worker() -> None:
    """A worker process's signals: Ctrl-C goes to the whole process group, and the batch's own process
    decides (it stops the workers with SIGTERM); SIGTERM between two files ends the worker quietly,
    and during one unwinds it like the command's own (:func:`ctxkit.fileio.terminate_cleanly`)."""
    forget_inherited_temps()
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, _exit_quietly)


def _run_task_in_worker(task: Task) -> list[FileResult]:
    """:func:`run_task` in a worker process: stopped (SIGTERM from the batch's process), the worker ends once
    the file being written has removed its temporary file, rather than take the next task from its queue."""
    try:
        return run_task(task)
    except KeyboardInterrupt:
        os._exit(128 + signal.SIGTERM)


def _exit_quietly(signum, frame) -> None:
    os._exit(128 + signum)  # idle: nothing is being written, and a traceback would only alarm the user


def _stop_workers(workers: list) -> None:
    """SIGTERM to each worker process (the pool's own, read from it: no public API before Python 3.14)."""
    for proc in workers:
        try:
            proc.terminate()
        except (OSError, ValueError):
            pass  # already gone


def _pool_context():
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def _quiet_about_cancelled_futures(previous):
    """A thread exception hook that drops the pool thread's ``InvalidStateError``: when its workers are
    stopped, Python 3.11's executor marks every pending future broken, cancelled ones included, and
    raises on those (fixed in later Pythons); what the user must see is the one "terminated" line."""

    def hook(args):
        if isinstance(args.exc_value, InvalidStateError):
            return
        previous(args)

    return hook


def run_local(batch: Batch, jobs: int, on_result: Callable[[FileResult], None],
              on_started: Callable[[], None] | None = None) -> None:
    """Run the batch here (``jobs`` 1, or a single task) or in a pool of ``jobs`` worker processes;
    ``on_result`` is called in this process for each file as its task finishes."""
    tasks = split(batch, jobs)
    if jobs <= 1 or len(tasks) <= 1:
        if on_started:
            on_started()
        for task in tasks:
            for r in run_task(task):
                on_result(r)
        return
    # the workers are forked before the caller starts anything threaded (a progress bar)
    with ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), mp_context=_pool_context(),
                             initializer=_start_worker) as pool:
        futures = {pool.submit(_run_task_in_worker, t): t for t in tasks}
        if on_started:
            on_started()
        try:
            deliver(as_completed(futures), futures, on_result)
        except BaseException:
            # Ctrl-C, SIGTERM, or a failure here: no new file starts, and the files being written stop
            # now (each removes its temporary file) rather than when their tasks end
            previous_hook = threading.excepthook
            threading.excepthook = _quiet_about_cancelled_futures(previous_hook)
            try:
                for fut in futures:
                    fut.cancel()
                _stop_workers(list((getattr(pool, "_processes", None) or {}).values()))
                # then wait for the pool's thread to see its workers gone: left running, it would trip over
                # its closed pipe at exit (Python 3.11) and print a traceback
                pool.shutdown(wait=True, cancel_futures=True)
            finally:
                threading.excepthook = previous_hook
            raise
