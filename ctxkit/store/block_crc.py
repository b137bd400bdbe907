"""The checksum of a checkpoint's blocks (:mod:`ctxkit.store.checkpoint`): CRC-32C, or CRC-32; and the
check a checkpoint document ends with (:func:`sealed`).

Every resumed run hashes the whole prefix it resumes from, so this is most of what a resumed run
spends on a long session. CRC-32C where google-crc32c's C code is installed (it uses the CPU's CRC
instruction: 190 MB in 0.01 s of CPU), else zlib's CRC-32 (0.07 s). A checkpoint names its hash
(:func:`name`): one kept with the other is passed over, and the input read in full.

A CRC, not a cryptographic hash: what it guards against is an edit of the file since the checkpoint
was kept. It sees every change of up to 32 bits in a block, and misses any other with a chance of one
in four billion per changed block. A collision someone crafts needs write access to the input, which
lets them give ctxkit any input they like anyway.
"""
from __future__ import annotations

import warnings
import zlib
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache

#: every hash a checkpoint of this format may name (one of another is passed over quietly)
NAMES = ("crc32c/1MiB", "crc32/1MiB")


@lru_cache(maxsize=1)
def _chosen() -> tuple[str, Callable[[int, bytes], int]]:
    try:
        with warnings.catch_warnings():  # (it warns when it has only its pure-Python code)
            warnings.simplefilter("ignore")
            import google_crc32c
    except ImportError:
        google_crc32c = None
    if google_crc32c is not None and google_crc32c.implementation == "c":
        return "crc32c/1MiB", google_crc32c.extend
    # (google-crc32c's pure-Python fallback would take minutes for a long session)
    return "crc32/1MiB", lambda crc, data: zlib.crc32(data, crc)


def name() -> str:
    """What this installation hashes blocks with (a checkpoint's ``hash``): ``crc32c/1MiB`` or ``crc32/1MiB``."""
    return _chosen()[0]


def extend(crc: int, data: bytes) -> int:
    """The checksum of the bytes ``crc`` is the checksum of, followed by ``data`` (``crc`` 0: of nothing)."""
    return _chosen()[1](crc, data)


def digest(data: bytes) -> str:
    """The digest of one block: its checksum, eight hex digits."""
    return f"{_chosen()[1](0, data):08x}"


def forget_choice() -> None:
    """Choose again on next use (tests that hide google-crc32c)."""
    _chosen.cache_clear()


# -- the check a checkpoint document ends with --------------------------------------------------------
_CHECK = b',"check":"'
_SEAL = len(_CHECK) + 8 + 2  # ,"check":"<eight hex digits>"}


def sealed(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """A checkpoint document's bytes: ``chunks`` (a JSON object without its closing brace), then its last
    field, ``check``: the CRC (:func:`extend`) of every byte before it. A checkpoint is
    trusted for what it says of the input's lines; a byte changed on disk that leaves it JSON of its shape
    (a line's flag, a type code) would otherwise change the output of every run resumed from it."""
    crc = 0
    for chunk in chunks:
        crc = extend(crc, chunk)
        yield chunk
    yield _CHECK + f"{crc:08x}".encode() + b'"}'


def seal_problem(data: bytes) -> str | None:
    """What is wrong with the check a checkpoint document ends with (:func:`sealed`), None when it holds."""
    if len(data) <= _SEAL or data[-_SEAL:-10] != _CHECK or not data.endswith(b'"}'):
        return "it does not end with a check of its bytes"
    if f"{extend(0, data[:-_SEAL]):08x}".encode() != data[-10:-2]:
        return "its bytes changed since it was written (its check does not match)"
    return None
