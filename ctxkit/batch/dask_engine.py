"""Running a batch on a Dask ``distributed`` cluster (the optional extra ``pip install 'ctxkit[dask]'``).

The tasks are the local engine's (:func:`ctxkit.batch.engine.split`, :func:`~ctxkit.batch.engine.run_task`):
each worker runs a few files one after another with the command's own code, so the bytes written
are the local pool's. Only the results travel back to the client (what each run printed, a few
kilobytes), never a transcript; inputs and outputs stay where they are stored (a shared file system,
or fsspec URLs every worker can reach). docs/fleet.md says how to size a cluster.
"""
from __future__ import annotations

import uuid
from collections.abc import Callable

from ..errors import UsageError
from ..quoting import quote
from .engine import Batch, deliver, run_task, split
from .results import FileResult

CONNECT_TIMEOUT = "10s"


def _client(address: str):
    try:
        from distributed import Client
    except ImportError:
        raise UsageError("--scheduler needs the dask extra: pip install 'ctxkit[dask]'") from None
    try:
        return Client(address, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError, ValueError) as exc:
        raise UsageError(f"cannot reach the Dask scheduler at {quote(address)}: {exc}") from None


def run_dask(batch: Batch, address: str, on_result: Callable[[FileResult], None],
             on_started: Callable[[], None] | None = None) -> None:
    """Run the batch's tasks on the cluster whose scheduler is at ``address`` (``tcp://host:8786``);
    ``on_result`` is called here for each file as its task finishes."""
    client = _client(address)
    from distributed import as_completed

    try:
        threads = sum(client.nthreads().values()) or 1
        tasks = split(batch, threads)
        run = uuid.uuid4().hex[:8]
        futures = {client.submit(run_task, t, key=f"ctxkit-{run}-{i}", pure=False): t for i, t in enumerate(tasks)}
        if on_started:
            on_started()
        deliver(as_completed(list(futures)), futures, on_result)
    finally:
        client.close()
