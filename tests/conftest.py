"""Shared fixtures: where the shared corpus is, and a ready-made stage Context."""
from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import settings

# In CI the property tests replay the same examples every run (a red CI must mean a change broke
# something, not that the search got lucky); locally they explore new examples each time.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("CTXKIT_SHARED", ROOT.parent / "shared"))
CORPUS = SHARED / "corpus"
CC_CORPUS = CORPUS / "claude-code-2.1.328"
PUBLIC_CORPUS = CORPUS / "public"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def cc_sessions() -> list[Path]:
    """The recorded Claude Code sessions (folders with session.jsonl), or [] when the corpus is absent."""
    if not CC_CORPUS.is_dir():
        return []
    return sorted(p for p in CC_CORPUS.iterdir() if (p / "session.jsonl").exists())


def extra_cc_sessions() -> list[Path]:
    """Claude Code sessions recorded outside the repository (``bench/record_cc_sessions.py``), named by
    ``CTXKIT_EXTRA_CC_SESSIONS`` (a folder of session folders): the request and summary checks run on
    them too, so sessions ctxkit has not seen are checked like the corpus. [] when unset or absent."""
    folder = os.environ.get("CTXKIT_EXTRA_CC_SESSIONS")
    if not folder or not Path(folder).is_dir():
        return []
    return sorted(p for p in Path(folder).iterdir() if (p / "session.jsonl").exists())


def recorded_cc_sessions() -> list[Path]:
    """The corpus's recorded sessions, then the extra ones (``extra_cc_sessions``)."""
    return cc_sessions() + extra_cc_sessions()


def public_transcripts() -> list[Path]:
    if not PUBLIC_CORPUS.is_dir():
        return []
    return sorted(PUBLIC_CORPUS.rglob("*.jsonl"))


needs_corpus = pytest.mark.skipif(not CC_CORPUS.is_dir(), reason=f"shared corpus not found at {CC_CORPUS}")


@pytest.fixture
def corpus_session():
    """Path of a named recorded session's transcript; skips when the corpus is absent."""

    def get(name: str) -> Path:
        path = CC_CORPUS / name / "session.jsonl"
        if not path.exists():
            pytest.skip(f"corpus session {name} not found at {path}")
        return path

    return get


FIXED_NOW = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)


@pytest.fixture
def make_context(tmp_path):
    """Build a stage Context: ``make_context(policy_doc=None, now=FIXED_NOW, **inputs)``."""
    from ctxkit.clock import Clock
    from ctxkit.policy.model import Policy
    from ctxkit.stages.base import Context, RunInputs
    from ctxkit.store.disk import Store
    from ctxkit.tokens import make_counter

    def make(policy_doc: dict | None = None, now: datetime | None = FIXED_NOW, store_dir: Path | None = None,
             **inputs):
        policy = Policy.from_mapping(policy_doc or {})
        return Context(
            policy=policy,
            tokens=make_counter(policy.estimator, model=policy.model),
            clock=Clock(now),
            store=Store(store_dir or tmp_path / "store"),
            inputs=RunInputs(now=now, cwd=inputs.pop("cwd", tmp_path), **inputs),
        )

    return make


@pytest.fixture
def runner(tmp_path, monkeypatch):
    """A typer CliRunner in a fresh working directory, with no user policy and no API key."""
    from typer.testing import CliRunner

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    return CliRunner()


@pytest.fixture
def no_overhead(tmp_path, monkeypatch):
    """A user policy with ``overhead_tokens: 0`` (in the same config folder :func:`runner` uses): for tests
    whose small synthetic sessions are measured against small windows, written before counts carried the
    system prompt and tools."""
    config = tmp_path / "xdg" / "ctxkit"
    config.mkdir(parents=True, exist_ok=True)
    (config / "policy.yaml").write_text("overhead_tokens: 0\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
