"""Running one command over many transcripts: on this machine's cores, or on a Dask cluster.

The pieces, each usable alone (user documentation: docs/batch.md and docs/fleet.md):

- :mod:`.inputs` turns the paths a user gave (files, folders, shell globs, fsspec URLs) into
  :class:`~.inputs.Item` s, each with the path it has relative to where it was found, and maps
  each to its output (``--out-dir`` or ``--in-place``);
- :mod:`.results` is what one file's run gave (:class:`~.results.FileResult`) and the totals of a
  batch: its status, the most severe exit code;
- :mod:`.engine` runs :class:`~.engine.Task` s (a few files each, so a worker process is reused)
  in a local process pool, or in this process for ``-j 1``; :mod:`.dask_engine` runs the same
  tasks on a ``distributed`` scheduler; :mod:`.remote` stages URL inputs and outputs through a
  local folder on the worker;
- :mod:`.aggregate` folds many ``stats`` results into one.

The engine does not know what a command does: a task carries a function (a top-level function,
sent by reference) that runs the command on one local file. The CLI supplies it
(:mod:`ctxkit.cli.batch_cli`), so this package never imports the CLI.
"""
