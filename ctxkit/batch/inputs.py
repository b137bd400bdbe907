"""Which transcripts a batch reads, and where each one's output goes.

A user names inputs the way a shell user would: files, folders (every ``*.jsonl`` below them, the
files agents name their own way: :data:`AGENT_FILES`, and every file whose content is a session of a
format ctxkit reads: :mod:`ctxkit.transcript.sniff`), one session of an OpenCode database
(``opencode.db#<id>``) and
shell-style globs (``logs/**/*.jsonl``), or fsspec URLs of any of these (``s3://bucket/day/``,
``memory://fleet/*.jsonl``). Each input becomes an :class:`Item`: the file, and its path relative
to the folder or glob root it was found under, which is where its output goes below ``--out-dir``.

Walking a folder skips hidden folders: a store (``.ctxkit/``) is one, and so are ``.git`` and the
like. A file named on the command line is always taken, hidden or not. Files below the output
folder are skipped, so that running a batch twice does not read its own outputs.

Paths are taken as the file system has them, not as they are spelled: neither a folder walk nor a
``**`` in a glob goes down a symbolic link to a folder (a link loop would name one file forty times,
and two loops an exponential number of times), an input reached by two names is read once (by its
real path), and an output must land below ``--out-dir`` once ``..`` and links are resolved
(``'a/*/../../b/*.jsonl' --out-dir out`` would otherwise write over ``b/``): else the run refuses
before it starts (exit 2). The same holds for ``--in-place``: an input a folder or glob found is
written over only when its real path lies below that folder (or the glob's fixed start), so that a
link ``ip/evil.jsonl -> ../b/f.jsonl`` in a cloned repository does not get ``b/f.jsonl`` rewritten
by ``ctxkit compact ip --in-place``; a file named on the command line is the user's word and is
followed.
"""
from __future__ import annotations

import fnmatch
import glob
import os
import posixpath
from pathlib import Path
from typing import NamedTuple

from ..errors import UsageError
from ..quoting import quote
from ..store.disk import MARKER as STORE_MARKER
from ..store.disk import is_marked_store
from ..transcript.opencode.database import split_session
from ..transcript.sniff import is_session, is_session_file

#: the files agents keep a session in under a name of their own, taken from a folder too (Cline's and Roo
#: Code's task history, aider's chat history): a folder of task folders is a batch's input
AGENT_FILES = ("api_conversation_history.json", ".aider.chat.history.md")


class Item(NamedTuple):
    """One transcript of a batch: ``source`` as the user would write it (a path or a URL), and ``rel``,
    its path below the folder or glob root it was found under (``/``-separated)."""

    source: str
    rel: str


def is_url(path: str) -> bool:
    """An fsspec URL (``s3://...``, ``memory://...``); ``file://`` URLs too. A local path is not."""
    return "://" in path


def _url_fs(url: str):
    try:
        import fsspec
    except ImportError:
        raise UsageError(f"{quote(url)}: reading URLs needs the dask extra: pip install 'ctxkit[dask]'") from None
    try:
        return fsspec.core.url_to_fs(url)
    except (ImportError, ValueError) as exc:
        raise UsageError(f"{quote(url)}: {exc}") from None


def _hidden(parts: list[str]) -> bool:
    return any(p.startswith(".") and p not in (".", "..") for p in parts)


def _glob_root(pattern: str, sep: str = os.sep) -> str:
    """The leading part of a glob without wildcards: outputs keep their path below it."""
    parts = pattern.split(sep)
    fixed = []
    for part in parts[:-1]:
        if glob.has_magic(part):
            break
        fixed.append(part)
    return sep.join(fixed) if fixed else ""


def _local(arg: str, skip_under: str | None) -> list[Item]:
    def keep(path: str) -> bool:
        return skip_under is None or not os.path.abspath(path).startswith(skip_under + os.sep)

    if glob.has_magic(arg):
        root = _glob_root(arg)
        found: list[Item] = []
        for path in sorted(glob_no_links(arg)):
            if os.path.isdir(path):
                found.extend(_walk(path, keep))
            elif os.path.isfile(path) and keep(path):
                found.append(Item(path, Path(os.path.relpath(path, root or ".")).as_posix()))
        if not found:
            raise UsageError(f"no transcript matches {quote(arg)}")
        return found
    if os.path.isdir(arg):
        found = _walk(arg, keep)
        if not found:
            raise UsageError(f"no session file under {quote(arg)}")
        return found
    if not os.path.exists(arg):
        base, session = split_session(arg)
        if session is not None:  # one session of an OpenCode database (what `ctxkit sessions` lists)
            return [Item(arg, f"{os.path.basename(base)}-{session}.json")]
        raise UsageError(f"no such file or folder: {quote(arg)}")
    return [Item(arg, os.path.basename(arg))]


def glob_no_links(pattern: str) -> list[str]:
    """``glob.glob(pattern, recursive=True)``, except that ``**`` never goes down a symbolic link to a
    folder (Python's does, up to the kernel's 40 links a path, once per loop: exponential with two).

    Each ``**`` stands for the folder it is at and every real folder below it (hidden ones skipped, as
    glob does); a component with wildcards matches the names of one folder (a hidden name only when
    the component starts with ``.``); other components, ``..`` included, are taken as written. What is
    returned exists. Linear in the number of folders and files below the pattern's fixed start."""
    absolute = os.path.isabs(pattern)
    parts = [p for p in pattern.split(os.sep) if p]
    paths = [os.sep if absolute else ""]
    for k, part in enumerate(parts):
        last = k == len(parts) - 1
        found: list[str] = []
        for base in paths:
            if part == "**":
                found.extend(_below(base, files=last))
            elif glob.has_magic(part):
                try:
                    names = sorted(os.listdir(base or os.curdir))
                except OSError:
                    continue  # not a folder, or not readable: matches nothing, as for glob
                found.extend(os.path.join(base, n) for n in fnmatch.filter(names, part)
                             if part.startswith(".") or not n.startswith("."))
            else:
                found.append(os.path.join(base, part))
        paths = list(dict.fromkeys(found))
    return [p for p in paths if p and os.path.lexists(p)]


def _below(base: str, *, files: bool) -> list[str]:
    """``base`` and every folder below it that is not a link and not hidden (with ``files``: the files
    too, as a trailing ``**`` matches them), walked without following links."""
    out = [base] if base else []
    for here, dirs, names in os.walk(base or os.curdir):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not os.path.islink(os.path.join(here, d)))
        rel = "" if here == (base or os.curdir) else os.path.relpath(here, base or os.curdir)
        for d in dirs:
            out.append(os.path.join(base, rel, d))
        if files:
            out.extend(os.path.join(base, rel, n) for n in sorted(names) if not n.startswith("."))
    return out


def _walk(folder: str, keep) -> list[Item]:
    """Every session file below ``folder`` (``*.jsonl``, an agent file, :data:`AGENT_FILES`, and any file
    whose content is a session: :func:`ctxkit.transcript.sniff.is_session_file`), hidden folders and
    ctxkit stores skipped, in a stable (sorted) order."""
    found = []
    for here, dirs, files in os.walk(folder):
        if here != folder and is_marked_store(Path(here)):
            dirs[:] = []
            continue  # a ctxkit store (named by --store, not hidden): its blobs are archived messages
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            path = os.path.join(here, name)
            if os.path.exists(path) and not os.path.isfile(path):
                continue  # a FIFO, socket or device named *.jsonl is no transcript (reading a FIFO would wait forever)
            if (name in AGENT_FILES or is_session_file(path)) and keep(path):
                rel = Path(os.path.relpath(path, folder)).as_posix()
                found.append(Item(rel if os.path.normpath(folder) == "." else path, rel))
    return found


def _remote(arg: str, skip_under: str | None) -> list[Item]:
    fs, path = _url_fs(arg)

    def url(p: str) -> str:
        if any(part in (".", "..") for part in p.split("/")):  # an object store's key is data: 'a/../../x'
            raise UsageError(f"{quote(fs.unstrip_protocol(p))}: a URL whose path has a '.' or '..' part is not read "
                             "(it would name a local file outside the scratch folder)")
        return fs.unstrip_protocol(p)

    def keep(p: str) -> bool:
        return skip_under is None or not url(p).startswith(skip_under.rstrip("/") + "/")

    if glob.has_magic(path):
        root = _glob_root(path, "/")
        found = [Item(url(p), posixpath.relpath(p, root or "/"))
                 for p in sorted(fs.glob(path)) if fs.isfile(p) and keep(p)]
        if not found:
            raise UsageError(f"no transcript matches {quote(arg)}")
        return found
    if fs.isdir(path):
        base = path.rstrip("/")
        found = []
        keys = sorted(fs.find(base))
        stores = {posixpath.dirname(p) + "/" for p in keys if posixpath.basename(p) == STORE_MARKER}
        for p in keys:
            rel = posixpath.relpath(p, base)
            name = posixpath.basename(p)
            if _hidden(rel.split("/")[:-1]) or any(p.startswith(s) for s in stores) or not keep(p):
                continue
            if name in AGENT_FILES or is_session(name, lambda p=p: fs.open(p, "rb")):
                found.append(Item(url(p), rel))
        if not found:
            raise UsageError(f"no session file under {quote(arg)}")
        return found
    if not fs.isfile(path):
        raise UsageError(f"no such file or folder: {quote(arg)}")
    return [Item(url(path), posixpath.basename(path))]


def _found_under(arg: str) -> str | None:
    """The folder a local argument's inputs were found under (a folder, or a glob's fixed start), or
    None for a file named itself (or a URL of an object store, where there is no link to follow).
    A ``file://`` URL is a local folder all the same: its links count."""
    if is_url(arg):
        if not arg.startswith(_FILE_URL):
            return None
        arg = os.path.abspath(arg[len(_FILE_URL):])
    if glob.has_magic(arg):
        return _glob_root(arg) or (os.sep if os.path.isabs(arg) else os.curdir)
    return arg if os.path.isdir(arg) else None


def _check_in_place(item: Item, root: str) -> None:
    path = item.source[len(_FILE_URL):] if item.source.startswith(_FILE_URL) else item.source
    if not _below_real(path, root):
        raise UsageError(f"{quote(item.source)} is {quote(os.path.realpath(path))}, outside {quote(root)} "
                         "(a symbolic link or a '..' on the way): --in-place does not write it; nothing was run. "
                         "Name the file itself to write it")


def expand_inputs(args: list[str], out_dir: str | None = None, in_place: bool = False) -> list[Item]:
    """The transcripts the arguments name, in the order given (each folder and glob sorted), once each.

    Raises :class:`UsageError` for an argument that names nothing, for ``-`` among several inputs
    (standard input is one transcript), and with ``in_place`` for an input a folder or glob found
    whose real path (links resolved) is outside that folder or the glob's fixed start."""
    if "-" in args and len(args) > 1:
        raise UsageError("- (standard input) cannot be combined with other inputs")
    skip = None
    if out_dir is not None:
        skip = out_dir.rstrip("/") if is_url(out_dir) else os.path.abspath(out_dir)
    items: list[Item] = []
    seen: set[str] = set()
    named = {os.path.realpath(a) for a in args if in_place and not is_url(a) and not glob.has_magic(a)
             and os.path.isfile(a)}  # the user's word, wherever a folder also finds it
    for arg in args:
        root = _found_under(arg) if in_place else None
        for item in (_remote(arg, skip) if is_url(arg) else _local(arg, skip)):
            if root is not None and (is_url(item.source) or os.path.realpath(item.source) not in named):
                _check_in_place(item, root)
            key = item.source if is_url(item.source) else os.path.realpath(item.source)  # one file, one run
            if key not in seen:
                seen.add(key)
                items.append(item)
    return items


def output_for(item: Item, out_dir: str | None, in_place: bool) -> str | None:
    """Where ``item``'s output goes: ``OUT/REL`` below ``--out-dir``, the input itself with
    ``--in-place``, or None (the command writes no file)."""
    if in_place:
        return item.source
    if out_dir is None:
        return None
    if is_url(out_dir):
        out = out_dir.rstrip("/") + "/" + item.rel
        inside = not any(p == ".." for p in item.rel.split("/")) and not item.rel.startswith("/")
        if inside and out_dir.startswith(_FILE_URL):  # a local folder all the same: its links count
            inside = _below_real(out[len(_FILE_URL):], out_dir[len(_FILE_URL):])
    else:
        out = os.path.join(out_dir, *item.rel.split("/"))
        inside = _below_real(out, out_dir)
    if not inside:
        raise UsageError(f"{quote(item.source)} would be written to {quote(out)}, outside --out-dir {quote(out_dir)} "
                         "(a '..' or a symbolic link on the way); nothing was run. Name inputs whose path below "
                         "the glob's or folder's start stays below it")
    return out


_FILE_URL = "file://"


def _below_real(path: str, folder: str) -> bool:
    """Whether ``path`` lies below ``folder`` once ``..`` and symbolic links are resolved."""
    real, base = os.path.realpath(path), os.path.realpath(folder)
    return real.startswith(base.rstrip(os.sep) + os.sep)


def check_outputs(items: list[Item], outputs: list[str | None]) -> None:
    """Two inputs must not write the same output (``a/x.jsonl b/x.jsonl --out-dir OUT``)."""
    seen: dict[str, str] = {}
    for item, out in zip(items, outputs, strict=True):
        if out is None:
            continue
        key = out if is_url(out) else os.path.abspath(out)
        if key in seen:
            raise UsageError(f"{quote(seen[key])} and {quote(item.source)} would both be written to {quote(out)}; "
                             "name their folder instead, so each keeps its path below it")
        seen[key] = item.source
