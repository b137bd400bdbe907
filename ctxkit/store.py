"""The disk store: content-addressed blobs, the decision ledger and per-session state.

Everything ctxkit takes out of a view goes here first, so that ``ctxkit
expand`` can put it back. Writes are atomic (temporary file + rename), blobs
are named by the SHA-256 of their bytes, and re-writing a blob is a no-op.

Layout::

    STORE/blobs/ab/abcdef....txt      tool outputs and archived messages
    STORE/ledger.json                 tool_use_id -> decision (frozen replacements)
    STORE/state.json                  session id -> small state (breaker, snip, memory...)
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import orjson

from .fileio import atomic_write

DEFAULT_DIRNAME = ".ctxkit"


class Store:
    """A folder of blobs and two small JSON documents. Loaded lazily, saved by :meth:`flush`."""

    def __init__(self, root: Path, *, dry_run: bool = False):
        self.root = Path(root)
        self.dry_run = dry_run  # read decisions, write nothing (``ctxkit stats`` asks what would happen)
        self._ledger: dict[str, Any] | None = None
        self._state: dict[str, Any] | None = None
        self._dirty: set[str] = set()

    # -- blobs ------------------------------------------------------------------------------------
    def blob_path(self, data: bytes, suffix: str = ".txt") -> Path:
        """Where ``put_blob`` stores these bytes (nothing is written)."""
        digest = hashlib.sha256(data).hexdigest()
        return (self.root / "blobs" / digest[:2] / f"{digest}{suffix}").resolve()

    def put_blob(self, data: bytes, suffix: str = ".txt") -> Path:
        """Store bytes under their hash; returns the absolute path (stable for the same bytes)."""
        path = self.blob_path(data, suffix)
        if not path.exists() and not self.dry_run:
            atomic_write(path, data)
        return path

    def put_text(self, text: str, suffix: str = ".txt") -> Path:
        return self.put_blob(text.encode("utf-8"), suffix)

    def put_json(self, value: Any) -> Path:
        return self.put_blob(orjson.dumps(value), ".json")

    def find_blob(self, name: str) -> Path | None:
        """Find a blob by file name or by path recorded in a transcript (the store may have moved)."""
        base = Path(name).name
        candidate = self.root / "blobs" / base[:2] / base
        if candidate.exists():
            return candidate
        p = Path(name)
        return p if p.is_absolute() and p.exists() else None

    def read_blob(self, name: str) -> bytes | None:
        path = self.find_blob(name)
        return path.read_bytes() if path else None

    # -- ledger: decisions about tool results, frozen once made --------------------------------
    @property
    def ledger(self) -> dict[str, Any]:
        if self._ledger is None:
            self._ledger = self._load("ledger.json")
        return self._ledger

    def decision(self, tool_use_id: str) -> dict[str, Any] | None:
        return self.ledger.get(tool_use_id)

    def record_decision(self, tool_use_id: str, decision: dict[str, Any]) -> None:
        if self.ledger.get(tool_use_id) != decision:
            self.ledger[tool_use_id] = decision
            self._dirty.add("ledger.json")

    # -- state: small per-session facts (circuit breaker, last summarized id, ...) -------------
    @property
    def state(self) -> dict[str, Any]:
        if self._state is None:
            self._state = self._load("state.json")
        return self._state

    def session_state(self, session: str) -> dict[str, Any]:
        return dict(self.state.get(session or "default", {}))

    def update_session_state(self, session: str, **values: Any) -> None:
        cur = self.state.setdefault(session or "default", {})
        for k, v in values.items():
            if v is None:
                cur.pop(k, None)
            else:
                cur[k] = v
        self._dirty.add("state.json")

    # -- other small documents (e.g. token counts kept between runs) ---------------------------
    def load_document(self, name: str) -> dict[str, Any]:
        return self._load(name)

    def save_document(self, name: str, value: dict[str, Any]) -> None:
        if not self.dry_run:
            atomic_write(self.root / name, orjson.dumps(value))

    # -- persistence ------------------------------------------------------------------------------
    def _load(self, name: str) -> dict[str, Any]:
        path = self.root / name
        if not path.exists():
            return {}
        try:
            value = orjson.loads(path.read_bytes())
        except orjson.JSONDecodeError:
            # A damaged bookkeeping file must not stop the user's work; start afresh beside it.
            os.replace(path, path.with_suffix(".damaged"))
            return {}
        return value if isinstance(value, dict) else {}

    def flush(self) -> None:
        """Save the ledger and state if they changed (called once the output is safely written)."""
        if self.dry_run:
            return
        for name in sorted(self._dirty):
            value = self._ledger if name == "ledger.json" else self._state
            atomic_write(self.root / name, orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
        self._dirty.clear()


def default_store_dir(transcript_path: str | None, cwd: Path | None = None) -> Path:
    """``.ctxkit/`` beside the transcript when it is a file, else in the working directory."""
    if transcript_path and transcript_path != "-":
        return Path(transcript_path).resolve().parent / DEFAULT_DIRNAME
    return (cwd or Path.cwd()) / DEFAULT_DIRNAME
