"""Writing files so that a reader sees the old file or the new one, never a part of one."""
from __future__ import annotations

import os
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO


@contextmanager
def atomic_output(path: str | os.PathLike | None, stdout: BinaryIO | None = None):
    """Yield a binary stream; for a path, write a temporary file beside it and rename it into place
    only when the block finishes without error, so no half-written output is ever left behind."""
    if path is None or str(path) == "-":
        stream = stdout if stdout is not None else sys.stdout.buffer
        yield stream
        stream.flush()
        return
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (temporary file beside it, then rename)."""
    with atomic_output(path) as f:
        f.write(data)
