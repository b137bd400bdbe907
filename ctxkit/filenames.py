"""Names from transcripts and policies made safe to use in file names.

A session id, a slug or a model name is text someone else wrote: it may be 5,000
characters long, hold ``/`` or ``..``, or start with a dot. Wherever one becomes
part of a path, :func:`file_name_part` turns it into one bounded path component
that cannot leave its folder. Ordinary names (Claude Code's session ids are
uuids, its slugs are words joined by dashes) stay exactly as they are, so the
paths Claude Code itself uses (``~/.claude/plans/<slug>.md``) still match.
"""
from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

#: The longest component :func:`file_name_part` returns (file systems allow 255 bytes).
MAX_PART = 80
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def file_name_part(text: str, max_len: int = MAX_PART) -> str:
    """``text`` as one path component: itself when it is short and made of letters, digits, ``.``,
    ``_`` and ``-`` (not starting with a dot); else its safe characters, shortened, plus a hash of the
    whole text, so that two different names never share a file.

    >>> file_name_part("7d1c2a9e-4b5f-4e8a-9c3d-2f6e8a1b0c4d")
    '7d1c2a9e-4b5f-4e8a-9c3d-2f6e8a1b0c4d'
    >>> file_name_part("../../etc/passwd")
    'etc-passwd-3754d6cb3a38'
    """
    if text and len(text) <= max_len and not text.startswith(".") and not _UNSAFE.search(text):
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    head = _UNSAFE.sub("-", text).strip(".-")[: max(0, max_len - len(digest) - 1)].rstrip(".-")
    return f"{head}-{digest}" if head else digest


def is_file(path: Path | str) -> bool:
    """Whether ``path`` names a regular file. A path that cannot be looked at (a folder on the way
    that cannot be searched, a name too long, a NUL byte, no home folder for ``~``) is not a file here:
    the question is asked of paths from transcripts and config folders, and the answer must not stop
    the command."""
    try:
        return Path(os.path.expanduser(path)).is_file()
    except (OSError, ValueError, RuntimeError):
        return False


#: The tool-input keys that name the file a call reads or writes (Read, Edit, Write: ``file_path``;
#: NotebookRead, NotebookEdit: ``notebook_path``). Grep's and Glob's ``path`` is a folder, not a file.
FILE_PATH_KEYS = ("file_path", "notebook_path")
