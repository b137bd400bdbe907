"""Building what a command needs from its options: policy (checked for trust), transcript, store, clock, Context."""
from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .. import load_policy
from ..clock import names_offset, parse_instant
from ..errors import UsageError, WriteError
from ..fileio import names_open_file
from ..policy.layers import CLI_LABELS
from ..policy.model import Policy
from ..quoting import quote
from ..run_context import build_context, save_token_cache
from ..side_files import check_side_file
from ..stages.base import Context
from ..store.checkpoint import Checkpoints
from ..store.disk import Store, StoreError, default_store_dir
from ..store.link import find_store, link_store, refuse_output_in_store, write_sidecar
from ..transcript.appended import write_over
from ..transcript.model import Transcript
from ..transcript.reader import read_transcript, require_a_readable_line
from ..transcript.writer import write_transcript
from . import quick_exit
from .app import print_warnings


@dataclass
class Run:
    policy: Policy
    transcript: Transcript
    ctx: Context
    #: where the read resumed from, and where this run's checkpoints go (compact only)
    checkpoints: Checkpoints | None = None
    #: the output named the input's file when it was read (``-o`` onto the session: see write_output)
    onto_input: bool = False

    def save(self) -> None:
        """Save the store's decisions and the token counts, durably (before the output is written)."""
        self.ctx.store.flush()
        save_token_cache(self.ctx)

    def write_output(self, transcript: Transcript, output: Path | None, to: str | None = None) -> None:
        """Save the store and this run's checkpoints, then write the output (naming its store when it
        depends on it).

        In this order, a run killed at any moment leaves either the old output or the new one, and
        the store holds everything either points at: ``ctxkit expand`` restores it (docs/store.md)."""
        store = self.ctx.store
        quick_exit.keep_until_exit("output", transcript)  # with the versions it was edited from
        refuse_output_in_store(output, store.root)
        if store.used:
            transcript = link_store(transcript, store.root, self.ctx.timestamp())
        self.save()
        to_file = output is not None and str(output) != "-"
        if store.used and to_file and (to is not None or transcript.format != "claude-code"):
            write_sidecar(output, store.root)
        if self.checkpoints is not None:  # the next run after new turns reads only those
            try:  # with the store, before the output (a checkpoint of bytes never written is never found)
                self.checkpoints.save(self.transcript, transcript if to is None else None)
            except (WriteError, StoreError) as exc:  # a cache: the output is still written, the next run reads in full
                print_warnings([f"no checkpoint kept: {exc.message}"])
        write_over(self.transcript, transcript, output, lambda t, out: write_transcript(t, out, to),
                   onto_input=self.onto_input, keep_appended=to is None)


def guard_policy(policy: Policy, *, summarizes: bool, counts_tokens: bool = True) -> None:
    """Before a run: refuse (exit 2, nothing done yet) when it would use a setting of a repository policy
    that is not trusted; otherwise say once that such settings are there and not used. Every command that
    reads a transcript counts its tokens (``counts_tokens``), so uses the estimator (docs/security.md;
    ``ctxkit policy trust`` grants trust)."""
    from ..policy.trust import require_trusted_estimator, require_trusted_summarizer, untrusted_warning

    if not policy.untrusted:
        return
    if counts_tokens:
        require_trusted_estimator(policy)
    if summarizes:
        require_trusted_summarizer(policy, os.environ)
    print_warnings([untrusted_warning(policy.untrusted)])


def parse_now(now: str | None) -> Any:
    if now is None:
        return None
    try:
        return parse_instant(now)
    except ValueError:
        raise UsageError(f"--now must be an ISO-8601 instant like 2026-11-29T23:06:25Z, got {quote(now)}") from None


_shared_policies: dict[tuple, Policy] = {}
_sharing = threading.local()  # .batch: the batch whose files share one loaded policy, in this thread


@contextmanager
def policies_shared(batch: str):
    """While a batch's file runs: the policy loaded for an earlier file of the same batch, with the same
    options and working directory, is used again (a compiled policy is frozen; loading it is most of
    the time a small transcript takes). A worker that outlives the batch never reuses it for another."""
    _sharing.batch = batch
    try:
        yield
    finally:
        _sharing.batch = None
        for key in [k for k in list(_shared_policies) if k[0] != batch]:
            _shared_policies.pop(key, None)


def make_policy(policy: str | None, sets: list[str] | None, context_window: int | None = None) -> Policy:
    batch = getattr(_sharing, "batch", None)
    key = (batch, policy, tuple(sets or []), str(Path.cwd())) if batch else None
    if key in _shared_policies:
        return _shared_policies[key]
    loaded = load_policy(policy, list(sets or []), cwd=Path.cwd(), labels=CLI_LABELS)
    if key is not None:
        _shared_policies[key] = loaded
    return loaded


#: the run's inputs that name a side file, and the option that names it (read within its bound by the stages)
_SIDE_FILE_OPTIONS = {"session_memory": "--session-memory", "state_file": "--state", "queued_file": "--queued"}


def open_run(source: str, *, policy: str | None, sets: list[str] | None, fmt: str, on_bad_line: str,
             store: Path | None, now: str | None, context_window: int | None, dry_run: bool = False,
             summarizes: Callable[[Policy], bool] | None = None, checkpoint: bool | None = None,
             output: Path | None = None, fits: Callable[[Policy, int], None] | None = None,
             check_pairing: bool = True, unreadable: bool = False, **inputs: Any) -> Run:
    """Load the policy first (a bad policy is a usage error even with a bad transcript), then the rest.

    ``summarizes(policy)`` says whether the run may call the summarizer: then a repository policy must be
    trusted for the summarizer settings it sets, or the run stops here (exit 2) before anything is done.
    ``checkpoint``: None, no checkpoints (a command that writes no transcript); True, resume the read
    from the store's checkpoints and save new ones with the output; False, neither (``--no-checkpoint``).
    ``output``: where :meth:`Run.write_output` will write, to tell whether it names the input's file now,
    as it was read (standard input redirected from the session, too). ``fits(policy, overhead)`` raises when
    the run cannot work in its window (:func:`ctxkit.policy.lint.require_window_fit`): asked of the policy as
    it applies to the session (its recorded model and output limit, :mod:`ctxkit.tokens.session`; its system
    prompt and tools as its counts have them, :meth:`ctxkit.stages.base.Context.session_overhead`), before
    any stage runs or anything is written. ``check_pairing=False``: a result answering no tool_use is left
    for the caller to report (``ctxkit doctor``), not a bad line. A transcript none of whose lines could be
    read (under ``--on-bad-line skip``) stops the run, unless ``unreadable`` (``ctxkit doctor`` reports
    each of its lines).
    """
    pol = make_policy(policy, sets)
    guard_policy(pol, summarizes=summarizes is not None and summarizes(pol))
    for name, option in _SIDE_FILE_OPTIONS.items():  # a device or FIFO named by mistake: refused before any work
        check_side_file(inputs.get(name), option)
    instant = parse_now(now)
    checkpoints = None
    if checkpoint is not None:
        # a checkpoint is found by content: the store this transcript names (known once it is read)
        # may be another, and the one looked in here gives the same transcript anyway
        lookup = Path(store) if store is not None else default_store_dir(source)
        checkpoints = Checkpoints(Store(lookup, dry_run=True), enabled=checkpoint, fmt=fmt)
    t = read_transcript(source, fmt=fmt, on_bad_line=on_bad_line, check_pairing=check_pairing,
                        resume=checkpoints.resume if checkpoints is not None else None)
    if not unreadable:
        require_a_readable_line(t)
    # whether the output names the input's file now: it may name another by the time the output is written
    onto_input = names_open_file(output, t.source.fd)
    store_dir, store_note = find_store(source, t, store, writing=not dry_run)
    ctx = build_context(pol, Store(store_dir, dry_run=dry_run), now=instant, transcript=t,
                        context_window=context_window, cwd=Path.cwd(),
                        now_has_offset=now is not None and names_offset(now), **inputs)
    if store_note:
        ctx.warnings.insert(0, store_note)
    if checkpoints is not None:
        for warning in checkpoints.warnings:
            ctx.warn(warning)
        checkpoints.store = ctx.store  # this run's checkpoints go in the store it uses
    if fits is not None:
        fits(ctx.policy, ctx.session_overhead(t))
    run = Run(ctx.policy, t, ctx, checkpoints, onto_input=onto_input)  # the policy as it applies to the session
    quick_exit.keep_until_exit("run", run)  # freed when the process ends (at once, not entry by entry)
    return run


def name_history(run: Any, path: Any) -> None:
    """Where the full history can be read after a compaction (``path``; not standard input): the summary
    tells the model (``ctx.inputs.transcript_path``), so ``stats`` names the file as ``compact`` does."""
    if path is not None and str(path) != "-":
        run.ctx.inputs.transcript_path = str(Path(path).resolve())
