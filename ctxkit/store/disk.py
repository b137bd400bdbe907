"""The disk store: content-addressed blobs, the decision ledger and per-session state.

Everything ctxkit takes out of a view goes here first, so that ``ctxkit
expand`` can put it back. Writes are atomic and durable (:mod:`ctxkit.fileio`: temporary
file, fsync, rename), blobs are named by the SHA-256 of their bytes, and re-writing a blob is a
no-op. The CLI saves the store (:meth:`Store.flush`) *before* the output replaces anything, so a
run killed at any point leaves an output whose store holds everything it points at (docs/store.md).

Over 400 lines: one class with three files (blobs, ledger, state), each read and written through
one rule for its paths (:meth:`Store.has_file`); the writes a stage holds until it is known that
the output needs them are in :mod:`ctxkit.store.held`.

Layout::

    STORE/blobs/ab/abcdef....txt      tool outputs and archived messages
    STORE/ledger.json                 decisions about tool results, per session (below)
    STORE/state.json                  session id -> small state (breaker, snip, memory...)
    STORE/.lock                       taken (flock) while ledger.json and state.json are rewritten
    STORE/tokens-*.json               exact token counts kept between runs (a cache)
    STORE/checkpoints/HEAD/*.json     what earlier runs read and wrote, to resume a read (a cache:
                                      :mod:`ctxkit.store.checkpoint`, which checks their shape)
    STORE/.ctxkit-store               the marker: ``{"format": 1}``, written with the store's first file

The marker is what makes a folder a store (:func:`is_marked_store`): a transcript names its store
by path, and a transcript is data, so a run follows that name to write only into a folder ctxkit
itself made a store (:mod:`ctxkit.store.link`). A store from before the marker gets it the first
time a run writes to it as its default (``.ctxkit/`` beside the input) or ``--store``.

``ledger.json`` and ``state.json`` are checked for shape when loaded (:mod:`ctxkit.store.documents`):
one that is not JSON or not of that shape is a :class:`StoreError` naming the file (exit 2: the user
repairs or removes it); it is never overwritten or reset.

``ledger.json`` (format 2)::

    {"format": 2,
     "sessions": {"<scope>": {"<tool_use_id>": <decision>, ...}, ...},
     "unscoped": {"<tool_use_id>": <decision>, ...}}

Every transcript of a folder shares one store and frameworks reuse tool ids
(``call_0``), so a decision is keyed by (scope, tool_use_id), the scope naming
the transcript's session (:func:`ctxkit.store.offload.decision_scope`). ``unscoped``
holds the records of ledgers written before scopes existed (a flat
``tool_use_id -> decision`` document): they are never replayed by a stage, and
``ctxkit expand`` uses one only when a tool result's content equals its
``replacement`` exactly. What a decision holds: :mod:`ctxkit.store.offload`.

Several runs may share a store at once (two ``ctxkit compact`` in one folder):
:meth:`Store.flush` takes an exclusive lock on ``STORE/.lock``, re-reads the
documents from disk, applies only the keys this run changed and writes them
back atomically, so no run loses another's decisions (POSIX ``flock``; where
``fcntl`` is missing the lock is skipped).
"""
from __future__ import annotations

import hashlib
import os
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import orjson

from ..confined import BLOB_NAME, TOO_LARGE, Refused, check_under, read_under
from ..errors import CtxkitError, ExitCode, WriteError
from ..fileio import atomic_output, atomic_write, fsync_dir, make_dirs, sweep_stale_temps
from .documents import LEDGER_FORMAT, check_ledger, check_object, check_state, parse_ledger
from .held import HeldWrites

try:  # POSIX only; elsewhere flushes are not serialized
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

DEFAULT_DIRNAME = ".ctxkit"
LEDGER = "ledger.json"
STATE = "state.json"
LOCK = ".lock"
MARKER = ".ctxkit-store"
BLOBS = "blobs"
#: what the top of a store holds (folder or file), checked before the store is first read or written
#: (``checkpoints/`` is a cache: checked when one is written, a warning then, :mod:`ctxkit.store.checkpoint`)
_LAYOUT = ((BLOBS, True), ("lines", True), (LEDGER, False), (STATE, False), (LOCK, False), (MARKER, False))
STORE_FORMAT = 1
#: the most bytes of blobs :meth:`Store.held_for` keeps in memory until the flush (more are written at once)
HELD_AT_MOST = 32 * 1024 * 1024
#: the largest ledger.json / state.json read (they hold small records; anything bigger is not ours)
MAX_DOCUMENT_BYTES = 256 * 1024 * 1024


class StoreError(CtxkitError):
    """A store file ctxkit cannot use as it is (not JSON, not of its shape, unreadable): names the
    file and what is wrong. The user's to repair or remove (exit 2); ctxkit never resets it."""

    exit_code = ExitCode.USAGE

    def __init__(self, path: Path | str, problem: str):
        self.path = str(path)
        super().__init__(f"store file {path}: {problem}; ctxkit leaves it as it is (repair or remove it)")


def is_marked_store(folder: Path) -> bool:
    """Whether ``folder`` holds the marker ctxkit writes when it makes a store (a regular file, not a link)."""
    try:
        st = os.lstat(Path(folder) / MARKER)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode)

_JSON_OPTIONS = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS


class Store(HeldWrites):
    """A folder of blobs and two small JSON documents. Loaded lazily, saved by :meth:`flush`.

    With ``dry_run`` nothing is ever written. A damaged ledger or state raises :class:`StoreError`
    when it is loaded, dry run or not.
    """

    def __init__(self, root: Path, *, dry_run: bool = False):
        self.root = Path(root)
        self.dry_run = dry_run  # read decisions, write nothing (``ctxkit stats`` asks what would happen)
        self._sessions: dict[str, dict[str, Any]] | None = None  # scope -> tool_use_id -> decision
        self._unscoped: dict[str, Any] = {}  # records of format-1 ledgers (no scope)
        self._state: dict[str, Any] | None = None
        self._changed_decisions: set[tuple[str, str]] = set()  # (scope, tool_use_id) this run recorded
        self._changed_sessions: set[str] = set()  # state.json keys this run updated
        self.warnings: list[str] = []  # problems met while loading (damaged documents), for the caller to print
        #: whether this run put something in the store or replayed a decision from it: then the output
        #: depends on the store and records where it is (:mod:`ctxkit.store.link`)
        self.used = False
        self._blobs: tuple[str | None, str] | None = None  # (working folder if root is relative, blobs folder)
        self._present: set[str] = set()  # blob files this run stored or found
        self._unsynced: set[Path] = set()  # folders this run added files to, not fsynced yet (sync_folders)
        self._holding: int | None = None  # the transcript line whose edit the writes are for now (held_for)
        self._held: dict[int, list[str]] = {}  # line -> the blobs held for its edit
        self._held_blobs: dict[str, list[Any]] = {}  # path -> [bytes, how many lines hold it]
        #: decision key -> (line, record, the record before it, whether this run had changed it), in order
        self._held_keys: dict[tuple[str, str], list[tuple[int, Any, Any, bool]]] = {}
        self._held_bytes = 0
        self._layout_checked = False
        #: the fingerprints of tool results this run took, by identity (:func:`ctxkit.store.offload.content_digest`)
        self.digests: dict[int, tuple[Any, str]] = {}

    # -- the one rule for every path of the store ----------------------------------------------------
    def has_file(self, parts: Sequence[str], *, folder: bool = False) -> bool:
        """Whether the store holds the regular file (with ``folder``: the folder) ``root/parts...``;
        raises :class:`StoreError` (exit 2) when one of ``parts`` is a symbolic link or not what the
        store puts there. Every file the store reads or writes is looked at through this first (reads
        also open it without following links, :func:`ctxkit.confined.read_under`), so a link planted in
        a store (``ledger.json`` pointing at another file, ``blobs/`` at another folder) never sends a
        write elsewhere, and what is written can be read back. The store's own folder may be a link
        (``--store`` is the user's word; a default ``.ctxkit/`` that is a link: :func:`ctxkit.store.link.find_store`)."""
        if not self._layout_checked:
            self._layout_checked = True  # (first: the checks below come back here)
            try:
                for name, is_folder in _LAYOUT:
                    self.has_file([name], folder=is_folder)
            except StoreError:
                self._layout_checked = False
                raise
        try:
            return check_under(self.root, parts, folder=folder)
        except Refused as exc:
            raise StoreError(exc.path, exc.reason) from None

    # -- blobs ------------------------------------------------------------------------------------
    def blob_path(self, data: bytes, suffix: str = ".txt", digest: str | None = None) -> Path:
        """Where ``put_blob`` stores these bytes (nothing is written); ``digest``: their SHA-256, when known."""
        return Path(self._blob_file(digest or hashlib.sha256(data).hexdigest(), suffix))

    def _blob_file(self, digest: str, suffix: str) -> str:
        """The absolute path of a blob's file, as a string: a run may store thousands of results, so the
        blobs folder is resolved once (again if a relative root's working folder changed) and the rest
        is joined as text, not as Path objects."""
        here = None if self.root.is_absolute() else os.getcwd()
        if self._blobs is None or self._blobs[0] != here:
            self.has_file([BLOBS], folder=True)  # not a link: the blobs are where the store's folder is
            self._blobs = (here, os.path.join(os.path.realpath(self.root), BLOBS))
        return f"{self._blobs[1]}{os.sep}{digest[:2]}{os.sep}{digest}{suffix}"

    def put_blob(self, data: bytes, suffix: str = ".txt", digest: str | None = None) -> Path:
        """Store bytes under their hash (``digest``, when the caller has it); returns the absolute path
        (stable for the same bytes)."""
        return Path(self.put_blob_file(data, suffix, digest))

    def put_blob_file(self, data: bytes, suffix: str = ".txt", digest: str | None = None) -> str:
        """:meth:`put_blob`, the path as a string. A blob this run stored or found already is not looked
        for again (a session repeats the same result: the same file read twice)."""
        path = self._blob_file(digest or hashlib.sha256(data).hexdigest(), suffix)
        if not self.dry_run:
            self.used = True
            if path in self._present:
                return path
            if self._holding is not None and (path in self._held_blobs
                                              or self._held_bytes + len(data) <= HELD_AT_MOST):
                held = self._held_blobs.get(path)
                if held is None:
                    held = self._held_blobs[path] = [data, 0]
                    self._held_bytes += len(data)
                held[1] += 1
                self._held.setdefault(self._holding, []).append(path)
                return path
            self._put(path, data)
            self._present.add(path)
            if self._held_blobs.pop(path, None) is not None:  # held for a line until now: stored for good
                self._held_bytes -= len(data)
        return path

    def put_file(self, parts: Sequence[str], data: bytes) -> None:
        """Write the file ``root/parts...`` of the store, named by its content (an original line),
        unless it is there; durable once :meth:`sync_folders` ran (:meth:`flush` runs it)."""
        if not self.dry_run:
            self._put(str(self.root.joinpath(*parts)), data, parts)

    def _put(self, path: str, data: bytes, parts: Sequence[str] | None = None) -> None:
        """Write a file named by its content at ``path`` (a blob's: ``.../blobs/ab/NAME``; else ``root/parts``)."""
        if self.has_file(parts or path.rsplit(os.sep, 3)[-3:]):
            # found: written by another run sharing the store, or by one killed before its flush;
            # its folder may not be durable yet, and this run is about to name the file
            self._unsynced.add(Path(os.path.realpath(path)).parent)
            return
        self._mark()
        atomic_write(path, data, unsynced=self._unsynced)

    def sync_folders(self) -> None:
        """Fsync the folders this run stored files in or named files of, and their parents up to the
        store, so that those names survive a crash: once per folder, before anything that names the
        files is written (:meth:`flush` runs it first; the CLI flushes before it writes an output, and
        a library caller must too). Each file's own bytes were fsynced before its rename. Why not after
        every blob, as other files are: a blob folder is often new, and fsyncing it and its parent for
        each blob was most of what storing a result cost (about 1 ms of CPU per blob)."""
        if not self._unsynced:
            return
        root = self.root.resolve()
        folders = {root}
        for folder in self._unsynced:  # (absolute: atomic_output resolves the paths it writes)
            while folder not in folders:
                folders.add(folder)
                if root not in folder.parents:
                    break
                folder = folder.parent
        for folder in sorted(folders, key=lambda f: len(f.parts), reverse=True):  # a child before its parent
            fsync_dir(folder)
        self._unsynced.clear()

    def put_text(self, text: str, suffix: str = ".txt") -> Path:
        return self.put_blob(text.encode("utf-8"), suffix)

    def put_json(self, value: Any) -> Path:
        return self.put_blob(orjson.dumps(value), ".json")

    def fetch_blob(self, name: str) -> bytes | None:
        """The bytes of the blob ``name`` names, None when it is not in the store; raises
        :class:`ctxkit.confined.Refused` when ``name`` is not a blob's name, or the file in the
        store is not a regular file (a link, a FIFO) or is too large."""
        base = _last_component(name)
        if not BLOB_NAME.fullmatch(base):
            raise Refused(name, "not a blob of the store (a blob is named by the SHA-256 of its content)")
        held = self._held_blobs.get(self._blob_file(base, "")) if self._held_blobs else None
        if held:
            return held[0]
        self.has_file([BLOBS], folder=True)  # a store whose blobs/ is a link is refused, not read piecemeal
        return read_under(self.root, [BLOBS, base[:2], base], shown=name)

    def read_blob(self, name: str) -> bytes | None:
        """Like :meth:`fetch_blob`, but None for a name it refuses too (stages replaying records:
        what is not a blob of the store is not theirs to read)."""
        try:
            return self.fetch_blob(name)
        except Refused:
            return None

    # -- ledger: decisions about tool results, frozen once made, per scope ---------------------
    @property
    def sessions(self) -> dict[str, dict[str, Any]]:
        """``scope -> tool_use_id -> decision`` (loaded on first use)."""
        if self._sessions is None:
            self._sessions, self._unscoped = parse_ledger(self._load(LEDGER))
        return self._sessions

    @property
    def unscoped(self) -> dict[str, Any]:
        """Records of ledgers written before scopes existed (``tool_use_id -> decision``); read-only."""
        _ = self.sessions
        return self._unscoped

    def decision(self, tool_use_id: str, *, scope: str) -> dict[str, Any] | None:
        """The decision recorded for this tool result in this scope (a transcript's session), if any."""
        found = self.sessions.get(scope or "default", {}).get(tool_use_id)
        if found is not None:
            self.used = True
        return found

    def record_decision(self, tool_use_id: str, decision: dict[str, Any], *, scope: str) -> None:
        scope = scope or "default"
        self.used = True
        records = self.sessions.setdefault(scope, {})
        key = (scope, tool_use_id)
        if self._holding is not None:  # the line's edit relies on this record (made now, or the same already)
            self._held_keys.setdefault(key, []).append(
                (self._holding, decision, records.get(tool_use_id), key in self._changed_decisions))
        else:
            self._held_keys.pop(key, None)  # recorded for good: no held line's to undo
        if records.get(tool_use_id) != decision:
            records[tool_use_id] = decision
            self._changed_decisions.add(key)

    def set_aside(self, scope: str) -> str | None:
        """Move every decision of ``scope`` to a scope of its own, ``SCOPE~set-aside-N``, where no stage
        looks (they read their transcript's scope only) and ``ctxkit expand`` still finds them (it
        matches every scope's records against the content): an output written under those decisions
        is still restored, while the next run decides afresh (``compact --fresh``). Returns the new
        scope's name, None when ``scope`` held no decision."""
        scope = scope or "default"
        records = self.sessions.get(scope)
        if not records:
            return None
        n = 1
        while f"{scope}~set-aside-{n}" in self.sessions:
            n += 1
        aside = f"{scope}~set-aside-{n}"
        for tid in list(records):
            self.record_decision(tid, records.pop(tid), scope=aside)
            self._changed_decisions.add((scope, tid))  # gone from the scope: flush takes it out on disk
        return aside

    def decisions_for(self, tool_use_id: str) -> list[tuple[str | None, dict[str, Any]]]:
        """Every record of this tool id: ``(scope, decision)`` by scope name, then the unscoped one
        (scope ``None``). For ``ctxkit expand``, which must match them against the content itself."""
        out: list[tuple[str | None, dict[str, Any]]] = [
            (scope, records[tool_use_id]) for scope, records in sorted(self.sessions.items())
            if isinstance(records.get(tool_use_id), dict)]
        legacy = self.unscoped.get(tool_use_id)
        if isinstance(legacy, dict):
            out.append((None, legacy))
        return out

    # -- state: small per-session facts (circuit breaker, last summarized id, ...) -------------
    @property
    def state(self) -> dict[str, Any]:
        if self._state is None:
            self._state = self._load(STATE)
        return self._state

    def session_state(self, session: str) -> dict[str, Any]:
        return dict(self.state.get(session or "default", {}))

    def update_session_state(self, session: str, **values: Any) -> None:
        key = session or "default"
        self.used = True
        cur = self.state.setdefault(key, {})
        for k, v in values.items():
            if v is None:
                cur.pop(k, None)
            else:
                cur[k] = v
        self._changed_sessions.add(key)

    # -- other small documents (e.g. token counts kept between runs) ---------------------------
    def load_document(self, name: str) -> dict[str, Any]:
        """A cache document (e.g. token counts): one that cannot be used is only a warning (it is
        rebuilt; nothing in it is the user's)."""
        try:
            return self._load(name)
        except StoreError as exc:
            self._warn(f"{exc.path}: {exc.message.split(': ', 1)[1].split(';')[0]}; ignored (a cache, rebuilt)")
            return {}

    def save_file(self, parts: list[str], chunks: Iterable[bytes]) -> None:
        """Write a file of the store under ``root/parts...`` (a checkpoint: :mod:`ctxkit.store.checkpoint`)
        from ``chunks`` (made as they are written: only one is in memory at a time), atomically; nothing
        in a dry run."""
        if not self.dry_run:
            self.has_file(parts)
            self._mark()
            with atomic_output(self.root.joinpath(*parts)) as out:
                for chunk in chunks:
                    out.write(chunk)

    def save_document(self, name: str, value: dict[str, Any]) -> None:
        if not self.dry_run:
            self.has_file([name])
            self._mark()
            atomic_write(self.root / name, orjson.dumps(value))

    # -- persistence ------------------------------------------------------------------------------
    def check(self) -> list[str]:
        """Check the store's layout (:meth:`has_file`), load the ledger and the state now; returns
        :attr:`warnings` (e.g. a damaged document)."""
        self.has_file([])
        _ = self.sessions, self.state
        return list(self.warnings)

    def _mark(self) -> None:
        """Write the marker that makes this folder a store, before the store's first file (once)."""
        if not self.has_file([MARKER]):
            atomic_write(self.root / MARKER, orjson.dumps({"format": STORE_FORMAT}) + b"\n")

    def _load(self, name: str) -> dict[str, Any]:
        """A JSON document of the store, ``{}`` when absent; raises :class:`StoreError` when it cannot
        be read or is not JSON, and (ledger, state) when it is not of its shape."""
        path = self.root / name
        if not self.has_file([name]):
            return {}  # no store yet (a folder that cannot be one is named when the run writes)
        try:
            data = read_under(self.root, [name], shown=str(path), limit=MAX_DOCUMENT_BYTES)
        except Refused as exc:
            if exc.kind == TOO_LARGE:
                raise StoreError(path, f"more than the {MAX_DOCUMENT_BYTES} bytes a store document may hold") from None
            raise StoreError(path, exc.reason) from None
        except OSError as exc:
            raise StoreError(path, f"cannot be read ({exc.strerror or exc})") from None
        if data is None:
            return {}  # removed since
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise StoreError(path, f"not JSON ({exc})") from None
        problem = {LEDGER: check_ledger, STATE: check_state}.get(name, check_object)(value)
        if problem:
            raise StoreError(path, problem)
        return value

    def _warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    def flush(self) -> None:
        """Save the decisions and state this run changed, durably (called before the output is written:
        an output must never point at a decision the store does not hold yet).

        Under the store's lock the documents are read again from disk and only the keys this run
        recorded are applied, so runs sharing a store keep each other's decisions.
        """
        self.write_held()
        self.sync_folders()  # the blobs this run stored: durable before a decision or an output names them
        if not self.dry_run and self.root.is_dir():
            sweep_stale_temps(self.root)  # a killed run's half-written ledger or state
        if self.dry_run or not (self._changed_decisions or self._changed_sessions):
            return
        make_dirs(self.root)
        self._mark()
        with self._locked():
            if self._changed_decisions:
                sessions, unscoped = parse_ledger(self._load(LEDGER))
                mine = self.sessions
                for scope, tid in sorted(self._changed_decisions):
                    if tid in mine.get(scope, {}):
                        sessions.setdefault(scope, {})[tid] = mine[scope][tid]
                    elif tid in sessions.get(scope, {}):  # set aside (set_aside)
                        del sessions[scope][tid]
                        if not sessions[scope]:
                            del sessions[scope]
                doc: dict[str, Any] = {"format": LEDGER_FORMAT, "sessions": sessions}
                if unscoped:
                    doc["unscoped"] = unscoped
                atomic_write(self.root / LEDGER, orjson.dumps(doc, option=_JSON_OPTIONS))
                self._sessions, self._unscoped = sessions, unscoped
                self._changed_decisions.clear()
            if self._changed_sessions:
                state = self._load(STATE)
                mine = self.state
                for key in sorted(self._changed_sessions):
                    state[key] = mine.get(key, {})
                atomic_write(self.root / STATE, orjson.dumps(state, option=_JSON_OPTIONS))
                self._state = state
                self._changed_sessions.clear()

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """An exclusive lock on ``STORE/.lock`` for the time of a read-merge-write (POSIX flock)."""
        if fcntl is None:  # pragma: no cover - Windows
            yield
            return
        self.has_file([LOCK])
        try:  # not through a link put there since (O_NOFOLLOW)
            fd = os.open(self.root / LOCK, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
        except OSError as exc:
            raise WriteError(str(self.root / LOCK), exc) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


def _last_component(name: str) -> str:
    """The file name at the end of a path written by any OS (``/`` or ``\\`` separated)."""
    return name.replace("\\", "/").rsplit("/", 1)[-1] if isinstance(name, str) else ""


def default_store_dir(transcript_path: str | None, cwd: Path | None = None) -> Path:
    """``.ctxkit/`` beside the transcript when it is a file, else in the working directory."""
    if transcript_path and transcript_path != "-":
        return Path(transcript_path).resolve().parent / DEFAULT_DIRNAME
    return (cwd or Path.cwd()) / DEFAULT_DIRNAME
