"""The parameters of the next request that depend on the model it goes to: ``thinking`` and
``output_config`` (the effort), and the per-turn effort a system message carries, as Claude Code
2.1.328 sends them.

Why: a session's model can change (a run resumed with ``--model``, ``/model``, a fallback, or ctxkit's
own ``--set model=X``), and what Claude Code asks of a model depends on the model, not on the session.
Resuming an Opus 5.5 session with ``--model claude-haiku-4-5``, it sends Haiku
``{"budget_tokens": 31999, "type": "enabled"}``, not Opus 5.5's ``{"type": "adaptive"}``, and no
``output_config``; a request that kept the recorded ones would be refused (Haiku 4.5 has no adaptive
thinking nor effort). So the recorded values are the next request's only when the newest recorded
request went to the same model; otherwise they are built for the model from the model table
(:class:`ctxkit.tokens.models.ModelInfo`'s ``thinking``, ``effort`` and ``per_turn_effort``), as
Claude Code builds them (its binary, checked in the request of a ``--model`` run for each model,
docs/formats.md):

* ``thinking``: ``{"type": "adaptive"}`` for a model with adaptive thinking; else
  ``{"budget_tokens": B, "type": "enabled"}`` with ``B`` the model's maximum output minus one, at most
  ``max_tokens`` minus one, at least 1,024 (31,999 under the 32,000 Claude Code sends Haiku 4.5); none
  for Claude 3.x. Its ``display`` is the session's (how Claude Code runs, not the model: ``omitted``
  under ``claude -p``).
* ``output_config``: ``{"effort": E}``, the model's default effort (``medium`` for the 5.5 family,
  ``xhigh`` for Opus 4.7, ``high`` for the others that take one, Opus 4.5 included); none for a model
  without effort (Claude 3.x, Claude 4 before 4.6 but Opus 4.5). An effort chosen by ``--effort`` is a
  run's, not the session's: a run resumed on another model without it sends that model's default.
* per-turn effort (the 5.5 family, Fable 5.1): a system message may carry ``output_config`` (the
  effort of its turn); Claude Code writes it on the message it records, so the recorded messages keep
  theirs; a model without per-turn effort gets none on any message (Claude Code takes it off the
  recorded ones). Not modelled: the per-turn effort Claude Code would add when ctxkit itself moves a
  session to a per-turn model of another default effort (``--set model=claude-fable-5-1`` on an Opus
  5.5 session: the top-level effort is Fable's, the messages keep Opus's).

A session without records (written before Claude Code recorded its requests, another agent's) keeps
what it had: no ``thinking`` nor ``output_config``.
"""
from __future__ import annotations

import copy
from typing import Any

from ..tokens import MODEL_ALIASES
from ..tokens.models import ADAPTIVE, ASSUMED_CLAUDE, BUDGET, model_info
from ..transcript.claude_code.fields import version_key
from ..transcript.claude_code.requests import RequestRecords, message_digest
from ..transcript.claude_code.session import recorded_settings
from ..transcript.model import Transcript
from .pricing import normalize_model

#: How Claude Code shows thinking on a session's first request: before its first ``api-request`` entry a
#: session records no parameters. Observed on every session of the corpus (2.1.328) and on those recorded
#: with 2.1.300 to 2.1.336 (``-p`` runs); the same code in every CLI that records requests, from 2.1.282
#: (:data:`FIRST_REQUEST_FROM`) on.
FIRST_REQUEST_DISPLAY = "omitted"
FIRST_REQUEST_FROM = (2, 1, 282)
#: The smallest thinking budget the API takes (Claude Code raises a smaller one to it).
MIN_THINKING_BUDGET = 1_024


def same_model(a: Any, b: Any) -> bool:
    """Whether two model names (ids, dated or provider ids, aliases) name the same model."""
    if not isinstance(a, str) or not isinstance(b, str):
        return False
    return _canonical(a) == _canonical(b)


def _canonical(model: str) -> str:
    name = model.strip().lower()
    return normalize_model(MODEL_ALIASES.get(name, name))


def _defaults(model: str) -> tuple[str | None, str | None, bool, int | None]:
    """(thinking mode, effort, per-turn effort, maximum output) Claude Code uses for ``model``: the model
    table's row; for a Claude model the table does not know, what Claude Code assumes (adaptive, "high")."""
    info = model_info(model)
    if info is not None:
        return info.thinking, info.effort, info.per_turn_effort, info.max_output_tokens
    if "claude" in model.lower():
        return (*ASSUMED_CLAUDE, False, None)
    return None, None, False, None


def thinking_for(model: str, max_tokens: int, display: str | None) -> dict[str, Any] | None:
    """The ``thinking`` Claude Code sends ``model`` under ``max_tokens`` (see the module docstring)."""
    mode, _, _, upper = _defaults(model)
    if mode == ADAPTIVE:
        out: dict[str, Any] = {"type": "adaptive"}
    elif mode == BUDGET:
        out = {"budget_tokens": _clamped((upper or max_tokens) - 1, max_tokens), "type": "enabled"}
    else:
        return None
    if display is not None:
        out["display"] = display
    return out


def _clamped(budget: int, max_tokens: int) -> int:
    return max(MIN_THINKING_BUDGET, min(budget, max_tokens - 1))


def effort_for(model: str) -> str | None:
    """The effort Claude Code sends ``model`` by default (None: it sends no ``output_config``)."""
    return _defaults(model)[1]


def recorded_params(t: Transcript, records: RequestRecords, messages: list[dict]) -> dict[str, Any] | None:
    """The ``thinking`` and ``output_config`` of the newest recorded request, with the ``model`` it went
    to (the session's facts say them for a request recorded without an id); ``None`` before the first."""
    if records.requests:
        params = records.requests[-1].params
        out = {k: params[k] for k in ("thinking", "output_config") if isinstance(params.get(k), dict)}
        if isinstance(params.get("model"), str):
            out["model"] = params["model"]
        stated = _stated_since(records, messages)
        if stated is not None:  # a run resumed with ``--effort``: its turn says the effort, not the record
            out["output_config"] = stated
        return out
    facts = recorded_settings(t)
    if facts.thinking is None and facts.max_tokens_model is None:
        return None
    out = {} if facts.max_tokens_model is None else {"model": facts.max_tokens_model}
    return out if facts.thinking is None else {**out, "thinking": dict(facts.thinking)}


def _stated_since(records: RequestRecords, messages: list[dict]) -> dict | None:
    """The ``output_config`` a system message of the next request states when Claude Code recorded that
    message after its newest request: the effort of the turn being sent, the run's (a run resumed with
    ``--effort high`` sends ``high`` at the top and on that message, where the newest record said the
    run before's ``medium``). Every request recorded so far agrees (53 that state one: the corpus and the
    ``bench/cc_scenarios`` recordings). None when no such message states one."""
    newest = records.requests[-1].index
    sent = {message_digest(m) for m in messages if m.get("role") == "system" and "output_config" in m}
    stated = [(at, m["output_config"]) for h, (at, m) in records.blobs.items()
              if at > newest and h in sent and isinstance(m.get("output_config"), dict)]
    return copy.deepcopy(max(stated, key=lambda x: x[0])[1]) if stated else None


def recorded_safeguards(records: RequestRecords) -> list | None:
    """``safeguards`` (the classifier context of 2.1.300's auto mode, recorded with the request's
    parameters): sent with the first request of each run of the CLI only, so the newest recorded one when
    the run that sent the newest request has ended since (its ``cost-state`` entry); None otherwise (the
    first request of a session has none recorded to send; 2.1.328 and later leave it out of the record)."""
    if not records.requests:
        return None
    guards = next((r.params["safeguards"] for r in reversed(records.requests)
                   if isinstance(r.params.get("safeguards"), list)), None)
    if guards is None or not any(i > records.requests[-1].index for i in records.run_ends):
        return None
    return copy.deepcopy(guards)


def next_params(records: RequestRecords, recorded: dict[str, Any] | None, model: str, max_tokens: int,
                messages: list[dict]) -> tuple[dict | None, dict | None, list[dict]]:
    """(``thinking``, ``output_config``, the messages with the per-turn effort Claude Code sends) of the
    next request to ``model`` with ``max_tokens``. ``recorded``: :func:`recorded_params`; before the first
    request, the ``output_config`` the first turn's system message carries is the run's own (``--effort``).
    See the module docstring."""
    if recorded is not None and (recorded.get("model") is None or same_model(recorded["model"], model)):
        thinking = recorded.get("thinking")
        if isinstance(thinking, dict) and isinstance(thinking.get("budget_tokens"), int):
            thinking = {**thinking, "budget_tokens": _clamped(thinking["budget_tokens"], max_tokens)}
        return thinking, recorded.get("output_config"), messages
    stated = next((m["output_config"] for m in messages if isinstance(m.get("output_config"), dict)), None)
    if recorded is not None:
        display = recorded["thinking"].get("display") if isinstance(recorded.get("thinking"), dict) else None
        config = recorded.get("output_config")
    elif records.shapes and records.version and version_key(records.version) >= FIRST_REQUEST_FROM:
        display = FIRST_REQUEST_DISPLAY
        if stated is not None:  # the effort the first turn states is the run's (``--effort``)
            return thinking_for(model, max_tokens, display), dict(stated), messages
        config = None
    else:
        return None, stated, messages  # nothing recorded (a first request of a version not known: as it states)
    effort = effort_for(model)
    config = {k: v for k, v in (config or {}).items() if k != "effort"}
    if effort is not None:
        config["effort"] = effort
    return thinking_for(model, max_tokens, display), config or None, _per_turn(messages, model, effort)


def _per_turn(messages: list[dict], model: str, effort: str | None) -> list[dict]:
    """``messages`` as ``model`` takes them: with the ``output_config`` Claude Code recorded on them for a
    model with per-turn effort, with none for another."""
    if (_defaults(model)[2] and effort is not None) or not any("output_config" in m for m in messages):
        return messages
    return [{k: v for k, v in m.items() if k != "output_config"} if "output_config" in m else m for m in messages]
