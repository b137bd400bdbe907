"""The policy as it applies to one session: the session's own model, output limit and cache lifetime
where the policy makes no choice of its own.

A session records which model it talks to (:func:`ctxkit.transcript.claude_code.session.recorded_settings`). Budgets,
thresholds, token counts, request bodies and simulated costs all depend on that model, so they must
use it — not the schema's default model (``claude-sonnet-4-5``, 32,000 output tokens) that a policy
which never names a model carries. A policy file or ``--set`` that names ``model`` (or
``max_output_tokens``, ``request.cache_ttl``) is an explicit override and wins; ``ctxkit policy show``
prints which layer set each value.

* ``model``: the session's newest (recorded request, else answering model, else the ``model``
  attachment written before any answer);
* ``max_output_tokens``: the newest recorded request's ``max_tokens`` when it went to the model the
  request goes to (the session's, or the one the policy names), else the ``max_tokens`` Claude Code
  sends that model by default (the model table's ``default_max_tokens``: 32,000 to Opus 4.5, 128,000
  to Opus 5.5; a run resumed on another model sends that model's own, not the one recorded before, and
  so does a policy that names another model: the request a user gets for ``--set model=X`` is the one
  Claude Code would send X), else the policy's;
* ``request.cache_ttl``: the lifetime the newest request's cache writes had (its usage's
  ``cache_creation`` split);
* ``context_window``: the window the agent itself counts against, where it records one (a Codex
  rollout's ``model_context_window``); else 1,000,000 when a recorded request to the session's model held
  more than the model table's window for it (for a model the table does not know, more than the 200,000
  ctxkit assumes leaves besides the summary's reserve): the session ran with the 1M window, which
  Claude Code's answers do not name (Eduardodmb/ClaudeWork: a ``claude-sonnet-4-6`` session at 248,633
  tokens, never compacted); else the model table's.

Every command that reads a transcript resolves its policy here once (``ctxkit.run_context``,
``view``, ``simulate``); the origin of a value taken from the session reads ``session (<entry>)``.
"""
from __future__ import annotations

import dataclasses
from types import MappingProxyType

from ..policy.model import SESSION_ORIGIN, Policy
from ..transcript.claude_code.session import RecordedSettings, recorded_settings
from ..transcript.interface import handler
from ..transcript.model import Transcript
from .models import DEFAULT_CONTEXT_WINDOW, ONE_MILLION, model_info


def session_policy(policy: Policy, transcript: Transcript | None) -> Policy:
    """``policy`` with the session's facts filled in where the policy made no explicit choice
    (see the module docstring); ``policy`` itself when the transcript records nothing to apply."""
    if transcript is None:
        return policy
    own = handler(transcript.format).settings  # (a Codex or Gemini CLI session records its model its own way)
    return policy_with_settings(policy, own(transcript) if own is not None else recorded_settings(transcript))


def policy_with_settings(policy: Policy, facts: RecordedSettings) -> Policy:
    changes: dict[str, object] = {}
    origins: dict[str, str] = {}
    model = policy.model
    if facts.model and not policy.explicit("model") and facts.model != policy.model:
        model = changes["model"] = facts.model
        origins["model"] = f"{SESSION_ORIGIN} ({facts.model_source})"
    if not policy.explicit("max_output_tokens"):
        info = model_info(model)
        recorded_for_model = facts.max_tokens is not None and facts.max_tokens_model in (None, model)
        # (a policy that names another model gets what Claude Code sends that model, as a resumed run on it)
        if recorded_for_model:
            limit, where = facts.max_tokens, f"{SESSION_ORIGIN} (api-request)"
        elif info is not None and (facts.model or facts.max_tokens is not None):
            limit, where = info.sent_max_tokens, f"{SESSION_ORIGIN} (model table: {model})"
        else:
            limit, where = policy.max_output_tokens, ""
        if limit != policy.max_output_tokens:
            changes["max_output_tokens"], origins["max_output_tokens"] = limit, where
    if not policy.explicit("context_window") and policy.context_window is None:
        if facts.context_window:
            changes["context_window"] = facts.context_window
            origins["context_window"] = f"{SESSION_ORIGIN} (the agent's own window)"
        elif facts.largest_context and facts.model == model and facts.largest_context > _most_held(policy, model):
            changes["context_window"] = ONE_MILLION
            origins["context_window"] = (f"{SESSION_ORIGIN} (a recorded request of {facts.largest_context:,} tokens: "
                                         "the 1M window)")
    merged = dict(policy.merged)
    if facts.cache_ttl and not policy.explicit("request.cache_ttl") and facts.cache_ttl != policy.cache_ttl:
        merged["request"] = {**dict(merged.get("request") or {}), "cache_ttl": facts.cache_ttl}
        origins["request.cache_ttl"] = f"{SESSION_ORIGIN} ({facts.cache_ttl_source})"
    if not origins:
        return policy
    merged.update({k: v for k, v in changes.items()})
    return dataclasses.replace(policy, **changes, merged=MappingProxyType(merged),
                               origins=MappingProxyType({**policy.origins, **origins}))


def _most_held(policy: Policy, model: str | None) -> int:
    """The most a request to ``model`` can hold under the window the budget takes when nothing else names
    one (:func:`ctxkit.tokens.budget_for`): the model table's window. For a model the table does not know,
    the 200,000 is ctxkit's guess (Claude Code counts such a model against 1,000,000), and a request over
    what it leaves besides the summary's reserve (180,000) says the agent did not count against it: it
    would have compacted before (LeoDChen/claude-config: DeepSeek sessions at 183,832-199,250 tokens)."""
    info = model_info(model)
    if info is not None:
        return info.context_window
    return DEFAULT_CONTEXT_WINDOW - min(policy.max_output_tokens, policy.thresholds.summary_reserve)
