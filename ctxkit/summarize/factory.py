"""The one factory that picks a summarizer: the only place ctxkit decides how it talks to a language model.

Autocompact (and the LLM level of collapse) needs one thing from a model:
"here is a conversation, give me back a summary". This module hides how that
happens behind :class:`Summarizer`, so stages never see SDK types and tests can
swap in anything with the same two methods:

* ``complete(messages, *, system, max_tokens) -> str`` — one request, text
  only, no tools; raises :class:`~ctxkit.errors.LLMError`. A prompt the model
  cannot take raises ``LLMError(prompt_too_long=True)`` with
  ``overflow_tokens`` when the error says by how much, so the caller can drop
  the oldest API rounds and try again (Claude Code's PTL retry).
* ``summarize(messages, *, instructions=None) -> str`` — the nine-section
  summary of ``messages`` (see :mod:`ctxkit.summarize.prompt`).

Three implementations:

* :class:`AnthropicSummarizer` — the Messages API through the official SDK,
  with our own counted retries (the SDK's are switched off so that retries are
  visible in reports and bounded by the policy).
* :class:`CommandSummarizer` — any shell command that reads a prompt on stdin
  and prints a summary (``llm``, ``claude -p``, a local model...).
* :class:`~ctxkit.summarize.extractive.ExtractiveSummarizer` — no model at all: a deterministic summary
  assembled from the messages themselves. It is what ``use: auto`` picks
  without an API key, so ctxkit works offline and in CI.

:func:`make_summarizer` builds one from the policy's ``summarizer`` mapping.
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import UsageError
from .extractive import ExtractiveSummarizer, SessionFacts
from .protocol import (
    DEFAULT_MAX_OUTPUT_TOKENS,
    DEFAULT_MAX_RETRIES,
    DEFAULT_MODEL,
    DEFAULT_TIMEOUT_SECONDS,
    DEFAULT_TOTAL_TIMEOUT_SECONDS,
    SUMMARIZER_KINDS,
    Summarizer,
)


def make_summarizer(
    config: Mapping[str, Any] | None,
    *,
    env: Mapping[str, str] = os.environ,
    client: Any = None,
    sleep: Callable[[float], None] = time.sleep,
    default_model: str = DEFAULT_MODEL,
    command_dir: str | os.PathLike[str] | None = None,
    facts: SessionFacts | None = None,
) -> Summarizer:
    """The summarizer a policy's ``summarizer`` mapping asks for.

    ``use: auto`` (the default) picks Anthropic when ``ANTHROPIC_API_KEY`` is
    set (or a client is injected) and the extractive summarizer otherwise, so
    that ctxkit works offline and in CI without configuration.
    ``ANTHROPIC_BASE_URL`` is honoured when the policy sets no ``base_url``.
    ``command_dir`` is the working directory of ``use: command``: the folder of the policy file that set
    ``summarizer.command`` (None: the process's own), so that ``./summarize.sh`` is the script beside the
    file that was read (and trusted), never one in whatever folder ctxkit happens to run in.
    ``facts``: what the run knows beyond the messages (the session's prompts, stored originals), for the
    extractive summarizer; a model summarizes from the messages alone, as Claude Code's does.
    """
    config = dict(config or {})
    use = summarizer_kind(config, env=env, client=client)
    if use == "anthropic":
        from .anthropic import AnthropicSummarizer  # (the SDK's client module loads for a model summary only)

        return AnthropicSummarizer(
            model=str(config.get("model") or default_model),
            max_output_tokens=int(config.get("max_output_tokens") or DEFAULT_MAX_OUTPUT_TOKENS),
            timeout_seconds=float(config.get("timeout_seconds") or DEFAULT_TIMEOUT_SECONDS),
            max_retries=int(config["max_retries"] if config.get("max_retries") is not None else DEFAULT_MAX_RETRIES),
            base_url=config.get("base_url") or env.get("ANTHROPIC_BASE_URL") or None,
            client=client,
            env=env,
            sleep=sleep,
            total_timeout_seconds=_total_timeout(config),
        )
    if use == "command":
        command = config.get("command")
        if not command:
            raise UsageError("summarizer.use is 'command' but summarizer.command is not set")
        from .command import CommandSummarizer

        return CommandSummarizer(
            str(command),
            timeout_seconds=float(config.get("timeout_seconds") or DEFAULT_TIMEOUT_SECONDS),
            max_output_tokens=int(config.get("max_output_tokens") or DEFAULT_MAX_OUTPUT_TOKENS),
            env=env,
            cwd=command_dir,
            total_timeout_seconds=_total_timeout(config),
        )
    return ExtractiveSummarizer(facts=facts)


def summarizer_for_run(ctx: Any, facts: SessionFacts | None = None) -> Summarizer:
    """The summarizer a run uses: the one choice autocompact, collapse, session memory and ``ctxkit
    stats`` all make through here, so that what stats reports is what compact would do.

    ``ctx`` is the stage Context: its ``summarizer_factory`` (tests, embedders) wins, else the policy's
    ``summarizer`` mapping (:func:`make_summarizer`). When ``ctx.simulate`` is set (``ctxkit stats``),
    no model and no command may be called: a summarizer that would call one is replaced by a
    :class:`StandInSummarizer` that says which one it stands for (the extractive summarizer needs no
    stand-in: it is offline and free, so the simulation runs it for real). ``facts``: see
    :func:`make_summarizer`.
    """
    from .redact import guard  # detect-secrets loads only when a run summarizes

    factory = getattr(ctx, "summarizer_factory", None)
    if factory is not None:
        chosen = factory(ctx.policy, ctx)
    else:
        from ..policy.trust import require_trusted, require_trusted_summarizer

        if not getattr(ctx, "simulate", False):  # a simulation runs no summarizer: no trust needed for it
            require_trusted_summarizer(ctx.policy)  # the CLI refused already; this guards library callers
        else:  # but it does redact what it would send, so it runs the redact patterns (a slow regex hangs it)
            require_trusted(getattr(ctx.policy, "untrusted", ()), {"redact"})
        chosen = make_summarizer(ctx.policy.summarizer, default_model=ctx.policy.model,
                                 command_dir=getattr(ctx.policy, "origin_folders", {}).get("summarizer.command"),
                                 facts=facts)
    if getattr(ctx, "simulate", False) and not isinstance(chosen, ExtractiveSummarizer):
        chosen = StandInSummarizer(chosen, facts)
    # every summarizer of a run sees no secret and returns none (ctxkit.summarize.redact)
    return guard(chosen, ctx)


class StandInSummarizer:
    """What a simulation runs in place of a summarizer that calls a model or a command.

    Its :attr:`name` names the summarizer it stands for (``anthropic claude-sonnet-4-5, simulated``),
    so reports say what would run. :meth:`summarize` writes the extractive summary, a realistic size
    for the token counts after compaction; :meth:`complete` (collapse's short summaries) answers a
    one-line placeholder. Neither touches the network, a subprocess or a key.
    """

    def __init__(self, stands_for: Summarizer, facts: SessionFacts | None = None):
        what = getattr(stands_for, "name", type(stands_for).__name__)
        model = getattr(stands_for, "model", None)
        self.stands_for = f"{what} {model}" if isinstance(model, str) and model else what
        self.name = f"{self.stands_for}, simulated"
        self._extractive = ExtractiveSummarizer(facts=facts)

    def complete(self, messages: list[dict], *, system: str | None, max_tokens: int) -> str:
        return f"(a summary by {self.stands_for} would be written here)"

    def summarize(self, messages: list[dict], *, instructions: str | None = None) -> str:
        return self._extractive.summarize(messages, instructions=instructions)
def _total_timeout(config: Mapping[str, Any]) -> float:
    return float(config.get("total_timeout_seconds") or DEFAULT_TOTAL_TIMEOUT_SECONDS)


def summarizer_kind(config: Mapping[str, Any] | None, *, env: Mapping[str, str] = os.environ, client: Any = None
                    ) -> str:
    """Which summarizer :func:`make_summarizer` builds for ``config``: ``use``, with ``auto`` resolved."""
    use = str((config or {}).get("use") or "auto")
    if use not in SUMMARIZER_KINDS:
        raise UsageError(f"summarizer.use must be one of {', '.join(SUMMARIZER_KINDS)}, not {use!r}")
    if use == "auto":
        use = "anthropic" if (env.get("ANTHROPIC_API_KEY") or "").strip() or client is not None else "extractive"
    return use


#: The ``summarizer`` settings each kind of summarizer acts on (what :func:`make_summarizer` reads for it).
SETTINGS_BY_KIND: dict[str, tuple[str, ...]] = {
    "anthropic": ("use", "model", "max_output_tokens", "timeout_seconds", "total_timeout_seconds", "max_retries",
                  "base_url"),
    "command": ("use", "command", "timeout_seconds", "total_timeout_seconds", "max_output_tokens"),
    "extractive": ("use",),
}


def summarizer_settings_used(config: Mapping[str, Any] | None, env: Mapping[str, str] = os.environ,
                             client: Any = None) -> frozenset[str]:
    """The dotted policy keys (``summarizer.command``...) the summarizer built for ``config`` would use:
    what a repository policy must be trusted for before that summarizer runs (see ctxkit.policy.trust).
    Every summarizer also uses ``redact``: it decides what of the transcript reaches the summarizer and
    the summary, and its patterns run over every message (:func:`ctxkit.summarize.redact.guard`)."""
    try:
        kind = summarizer_kind(config, env=env, client=client)
    except UsageError:
        return frozenset()  # make_summarizer reports the bad value; nothing would run
    return frozenset({"redact", *(f"summarizer.{key}" for key in SETTINGS_BY_KIND[kind])})
