"""Where a transcript's store is: written with the output, read back by ``compact`` and ``expand``.

The store stays where the run put it (``--store``, else ``.ctxkit/`` beside the input), and the
output says where that is, so that ``ctxkit expand OTHER/compacted.jsonl`` finds it from any folder:

* **Claude Code transcripts** carry a record line (not in the conversation chain, so the model never
  sees it)::

      {"type": "ctxkit-record", "record": "store", "timestamp": ..., "sessionId": ..., "path": "/abs/.ctxkit"}

  One per transcript: a run whose store is the recorded one leaves the line as it is (compacting the
  output again changes nothing); a run with another store rewrites that line in place.
* **Anthropic / OpenAI message lists** have no place for bookkeeping (every line is a message the model
  is sent), so the pointer goes in a sidecar file beside the output, ``OUTPUT.ctxkit-store``, holding
  ``{"store": "/abs/.ctxkit"}``. It is written only when the output is a file whose folder's default
  store is not the one used (or when one is already there), and copied along by whoever moves the
  output. Standard output has no sidecar: pass ``--store`` to ``expand`` then.

Which store a run uses (:func:`find_store`): ``--store``; else the one the input names (record or
sidecar) when it is a store ctxkit made (its marker, :func:`ctxkit.store.is_marked_store`); else
``.ctxkit/`` beside the input (the working directory for stdin). A transcript is data: the folder it
names is never written unless it is already a marked store (``ctxkit expand`` only reads, and also
accepts a store from before the marker there). Whenever the store used is not beside the input, a
warning says which it is.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

import orjson

from ..confined import Refused, check_under
from ..errors import UsageError
from ..fileio import atomic_write
from ..transcript.claude_code import entries as claude_code_entries
from ..transcript.claude_code import projection as claude_code
from ..transcript.claude_code import records as claude_code_records
from ..transcript.model import Transcript
from .disk import LEDGER, STATE, default_store_dir, is_marked_store
from .disk import MARKER as MARKER_NAME

STORE_RECORD = "store"
SIDECAR_SUFFIX = ".ctxkit-store"


def sidecar_path(output: str | Path) -> Path:
    """The sidecar of a plain output file: ``OUTPUT.ctxkit-store`` beside it (beside the name given,
    a symlink's own name included)."""
    return Path(f"{output}{SIDECAR_SUFFIX}")


def recorded_store(t: Transcript, source: str | None) -> str | None:
    """The store the transcript names: its last ``store`` record (Claude Code) or its sidecar (plain)."""
    if t.format == claude_code.NAME:
        recs = claude_code_records.records(t, STORE_RECORD)
        path = recs[-1][1].get("path") if recs else None
        return path if isinstance(path, str) and path else None
    if not source or source == "-":
        return None
    side = sidecar_path(source)
    try:
        if not check_under(side.parent, [side.name]):
            return None
        doc = orjson.loads(side.read_bytes())
    except (Refused, OSError, orjson.JSONDecodeError):
        return None  # a link (or a folder, a FIFO) is not a sidecar ctxkit wrote: not followed
    path = doc.get("store") if isinstance(doc, dict) else None
    return path if isinstance(path, str) and path else None


def find_store(source: str, t: Transcript, given: Path | None, *, writing: bool = True) -> tuple[Path, str | None]:
    """(the store folder to use, a warning or None): ``--store``; else the one the input names when it
    is a marked store (``writing=False``, for reading only: also a store from before the marker);
    else the default beside the input."""
    if given is not None:
        if Path(given).exists() and not Path(given).is_dir():
            raise UsageError(f"--store {given}: not a folder (--store names the folder compact used)")
        return Path(given), None
    default = default_store_dir(source)
    _refuse_linked_default(default, writing)
    named = recorded_store(t, source)
    if named is None or _same_folder(Path(named), default):
        return default, None
    folder = Path(named)
    if folder.is_absolute() and (is_marked_store(folder) or (not writing and looks_like_store(folder))):
        return folder, f"using the store this transcript names, {folder} (not {default} beside the input)"
    return default, (f"the store this transcript names ({named}) is not a ctxkit store (no {MARKER_NAME} "
                     f"marker); using {default}")


def _refuse_linked_default(default: Path, writing: bool) -> None:
    """Raise :class:`UsageError` when the ``.ctxkit/`` beside the input is a symbolic link to a folder
    that is not a ctxkit store (for reading: nor one from before the marker). It came with the input
    (a cloned repository can ship ``examples/.ctxkit`` pointing anywhere): the rule for a store a
    transcript names holds for it too. A store the user wants elsewhere is named with ``--store``."""
    if not default.is_symlink():
        return
    target = Path(os.path.realpath(default))
    if is_marked_store(target) or (not writing and looks_like_store(target)):
        return
    raise UsageError(f"store {default}: a symbolic link to {target}, which is not a ctxkit store (no {MARKER_NAME} "
                     f"marker); ctxkit does not write through it (name the folder with --store to use it)")


def _same_folder(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except (OSError, RuntimeError):
        return False


def looks_like_store(folder: Path) -> bool:
    """Whether a folder holds what a store from before the marker holds (for reading only)."""
    return folder.is_absolute() and any((folder / name).exists() for name in (LEDGER, STATE, "blobs"))


def refuse_output_in_store(output: str | Path | None, store_root: Path) -> None:
    """Raise :class:`UsageError` when ``-o`` names a file inside the store folder (the ledger, a blob):
    the output would destroy what restores it."""
    if output is None or str(output) == "-":
        return
    try:
        target = Path(os.path.realpath(output))
        root = Path(os.path.realpath(store_root))
    except (OSError, ValueError):
        return
    if target == root or root in target.parents:
        raise UsageError(f"-o {output}: inside the store folder {root}; write the output elsewhere")


def link_store(t: Transcript, store_root: Path, timestamp: str) -> Transcript:
    """The transcript with its ``store`` record naming ``store_root`` (Claude Code; plain formats are
    returned unchanged: see :func:`write_sidecar`). Unchanged when the record already says so."""
    if t.format != claude_code.NAME:
        return t
    path = str(Path(store_root).resolve())
    recs = claude_code_records.records(t, STORE_RECORD)
    if recs and recs[-1][1].get("path") == path:
        return t
    entry = claude_code_entries.record_entry(t, STORE_RECORD, timestamp, path=path)
    if recs:
        return t.with_edits(replace={recs[-1][0]: entry})
    return t.with_edits(append=[entry])


def unlink_store(t: Transcript) -> Transcript:
    """The transcript without its ``store`` records: what ``ctxkit expand`` writes, the transcript as it
    was before compaction (which depended on no store)."""
    if t.format != claude_code.NAME:
        return t
    recs = claude_code_records.records(t, STORE_RECORD)
    return t.with_edits(remove=[i for i, _ in recs]) if recs else t


def write_sidecar(output: str | Path, store_root: Path) -> None:
    """Point a plain output file at its store, unless its folder's default store is that one (and no
    sidecar is there to correct)."""
    side = sidecar_path(output)
    root = Path(store_root).resolve()
    try:
        if not stat.S_ISREG(os.stat(output).st_mode):
            return  # a device or FIFO (-o /dev/null): nothing to point back at, nowhere to put a sidecar
    except OSError:
        pass  # a new file
    if default_store_dir(str(output)).resolve() == root and not os.path.lexists(side):
        return
    try:  # a file of ctxkit's own: never written through a link (one planted beside the output could point anywhere)
        check_under(side.parent, [side.name])
    except Refused as exc:
        raise UsageError(f"sidecar {exc.path}: {exc.reason}; it was not written, nor the output (remove it)") from None
    atomic_write(side, orjson.dumps({"store": str(root)}) + b"\n")
