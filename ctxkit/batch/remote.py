"""Transcripts stored behind fsspec URLs (``s3://``, ``gs://``, ``memory://``...), run through a local folder.

ctxkit's commands read and write local files (atomically, with a store of local files beside the
input). A worker given ``s3://bucket/day/a.jsonl`` therefore stages it:

1. the input is copied to a scratch folder that mirrors the URL, ``SCRATCH/s3/bucket/day/a.jsonl``
   (``SCRATCH`` is ``$CTXKIT_SCRATCH``, else ``ctxkit-stage`` in the system's temporary folder), and
   the store beside it, ``s3://bucket/day/.ctxkit/``, to ``SCRATCH/s3/bucket/day/.ctxkit/``;
2. the command runs on the local copy; its output, when it goes to a URL, is written to the mirror
   of that URL and uploaded (with its sidecar, if the command wrote one);
3. the files of the store that the run added or changed are uploaded back beside the input, so the
   store stays with its transcripts, as for local files; then the scratch copies are removed.

The mirror's paths are the same on every machine and for every engine, so the bytes a run writes
(an output names its store by path) do not depend on where it ran. Two runs must not write one
remote store at once (an object store has no lock): :func:`group_key` puts every file of one folder
in the same task, which runs them one after another.

Nothing is staged outside the scratch folder: an object's name is data (an object store takes
``day/../../../home/me/.bashrc`` as a key), so a URL whose path has a ``.`` or ``..`` part is refused
(:func:`mirror`), and a store is downloaded file by file under the same rule. The default scratch
folder is in the shared temporary folder, where another user could have put it first (with links
inside, to files of the user running the batch): it is used only when it is a real folder of this
user that no one else may write (:func:`scratch_root`).
"""
from __future__ import annotations

import os
import posixpath
import shutil
import stat
import tempfile
from pathlib import Path

from ..errors import UsageError
from ..quoting import quote
from .inputs import is_url

STORE_DIR = ".ctxkit"
SIDECAR_SUFFIX = ".ctxkit-store"  # ctxkit.store.link.SIDECAR_SUFFIX (the store package is not imported here)


def scratch_root() -> Path:
    """``$CTXKIT_SCRATCH`` (the user's word), else ``ctxkit-stage`` in the system's temporary folder,
    made private (mode 0700) when this creates it. Raises :class:`UsageError` when that default folder
    is a link, is not this user's, or others may write in it."""
    given = os.environ.get("CTXKIT_SCRATCH")
    if given:
        return Path(given)
    root = Path(tempfile.gettempdir()) / "ctxkit-stage"
    try:
        root.mkdir(mode=0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise UsageError(f"scratch folder {root}: cannot be made ({exc.strerror or exc}); set CTXKIT_SCRATCH") from None
    info = os.lstat(root)
    owner = os.geteuid() if hasattr(os, "geteuid") else info.st_uid
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != owner or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise UsageError(f"scratch folder {root}: not a folder of yours that only you can write (another user's, "
                         "a link, or writable by others); ctxkit stages no file there: remove it, or set CTXKIT_SCRATCH")
    return root


def _plain_path(url: str, path: str) -> str:
    """``path`` (of ``url``) when no part of it is ``.`` or ``..``; else :class:`UsageError`."""
    if any(part in (".", "..") for part in path.split("/")):
        raise UsageError(f"{quote(url)}: a URL whose path has a '.' or '..' part is not staged (it would name a "
                         "local file outside the scratch folder)")
    return path


def _fs(url: str):
    import fsspec

    return fsspec.core.url_to_fs(url)


def mirror(url: str) -> Path:
    """The local path standing for ``url``: ``SCRATCH/PROTOCOL/PATH``."""
    fs, path = _fs(url)
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    return scratch_root() / protocol / _plain_path(url, path).lstrip("/")


def group_key(source: str) -> str | None:
    """Files that share a remote store (the same folder) share this key; None for a local file."""
    return posixpath.dirname(source) if is_url(source) else None


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    found = {}
    for here, _dirs, files in os.walk(folder):
        for name in files:
            p = Path(here) / name
            st = p.stat()
            found[str(p.relative_to(folder))] = (st.st_size, st.st_mtime_ns)
    return found


class Staging:
    """The local copies of one task's URL inputs and outputs; :meth:`close` uploads and removes them."""

    def __init__(self) -> None:
        self._stores: dict[str, tuple[Path, dict[str, tuple[int, int]]]] = {}  # remote store -> (mirror, before)
        self._made: list[Path] = []

    def input(self, source: str) -> str:
        """A local path for ``source``: itself, or the staged copy of a URL (with its store)."""
        if not is_url(source):
            return source
        local = mirror(source)
        local.parent.mkdir(parents=True, exist_ok=True)
        fs, path = _fs(source)
        fs.get_file(path, str(local))
        self._made.append(local)
        self._fetch_store(posixpath.dirname(source) + "/" + STORE_DIR, local.parent / STORE_DIR)
        return str(local)

    def output(self, output: str | None) -> str | None:
        if output is None or not is_url(output):
            return output
        local = mirror(output)
        local.parent.mkdir(parents=True, exist_ok=True)
        return str(local)

    def publish(self, output: str | None, local: str | None) -> None:
        """Upload a URL output the run wrote (and its sidecar), then remove the local copy."""
        if output is None or local is None or not is_url(output):
            return
        fs, path = _fs(output)
        for suffix in ("", SIDECAR_SUFFIX):
            src = Path(local + suffix)
            if src.exists():
                fs.makedirs(posixpath.dirname(path), exist_ok=True)
                fs.put_file(str(src), path + suffix)
                src.unlink()

    def _fetch_store(self, remote: str, local: Path) -> None:
        if remote in self._stores:
            return
        fs, path = _fs(remote)
        if local.exists():
            shutil.rmtree(local)  # a copy left by a run that died: the remote store is the truth
        if fs.isdir(path):  # file by file: a key with '..' in it is not the store's, and is not written
            base = path.rstrip("/")
            for key in sorted(fs.find(base)):
                rel = key[len(base):].lstrip("/") if key.startswith(base + "/") else ""
                if not rel or any(part in ("", ".", "..") for part in rel.split("/")):
                    continue
                (local / rel).parent.mkdir(parents=True, exist_ok=True)
                fs.get_file(key, str(local / rel))
        self._stores[remote] = (local, _snapshot(local) if local.is_dir() else {})

    def close(self) -> None:
        """Upload what the runs added to or changed in each store, then remove every local copy."""
        try:
            for remote, (local, before) in self._stores.items():
                if not local.is_dir():
                    continue
                fs, path = _fs(remote)
                for rel, sig in sorted(_snapshot(local).items()):
                    if before.get(rel) != sig:
                        target = path.rstrip("/") + "/" + rel.replace(os.sep, "/")
                        fs.makedirs(posixpath.dirname(target), exist_ok=True)
                        fs.put_file(str(local / rel), target)
        finally:
            for local, _ in self._stores.values():
                shutil.rmtree(local, ignore_errors=True)
            for p in self._made:
                p.unlink(missing_ok=True)
