"""``ctxkit view --to anthropic-request``: the view as one Messages API request body.

The body is what an agent would send next, ready for ``curl`` or the SDK::

    {"model": ..., "system": ..., "tools": [...], "messages": [...], "context_management": {...},
     "max_tokens": ...}

* ``model`` and ``max_tokens`` come from the policy (``max_output_tokens``, capped by the model; for a
  session, the max_tokens Claude Code sends its model: :mod:`ctxkit.tokens.session`).
* ``system``: given explicitly, else what the transcript recorded: Claude Code writes the exact
  system blocks of its last request (``api-request-shape``) and its system prompt
  (``prompt_snapshot`` attachment); plain message lists have their leading system messages.
* ``tools``: given explicitly, else the ones Claude Code recorded with the request shape (the API
  refuses tool_use blocks in a request that defines no tools); plus the ``snip`` tool when the
  policy's snip stage shows message ids (``tag_ids``).
* ``messages``: the view (ids tagged when ``tag_ids`` is on). Mid-conversation system messages
  stay as they are for models that accept them (Claude 5 family, Opus 4.8 and later, or the
  policy's ``request.system_messages: keep``); for other models they are folded into a user
  message as ``<system-reminder>`` text (``fold``), where the model read them (:func:`api_messages`; a
  Claude Code session's where Claude Code puts them, :mod:`ctxkit.reports.claude_code_fold`).
* ``thinking`` and ``output_config`` (Claude Code 2.1.3xx): those of its newest recorded request
  (``api-request``) when that went to the request's model, else what Claude Code sends that model
  (adaptive or a budget, its default effort; :mod:`ctxkit.reports.request_params`).
* ``context_management``: as Claude Code sends it, ``clear_thinking_20251015`` (``keep: all``) when
  the request has thinking on; plus the edits the microcompact stage's ``api_native`` options ask
  for (modes ``api-native`` and ``both``). Such a request needs beta headers: :func:`required_betas`.
* cache edits (microcompact ``mode: cached``): ``cache_reference`` on tool results, the pinned
  ``cache_edits`` blocks and a ``cache_control`` breakpoint; :mod:`ctxkit.reports.cache_edits`.
"""
from __future__ import annotations

import copy
import re
from bisect import bisect_left
from datetime import datetime
from operator import methodcaller
from typing import Any

from ..clock import Clock
from ..quoting import quote
from ..reminders import as_reminder
from ..stages.microcompact import Microcompact, betas_for, cache_gap_minutes, context_management
from ..stages.snip import snip_options
from ..tokens import MODEL_ALIASES, budget_for
from ..transcript.claude_code import chain as claude_code_chain
from ..transcript.claude_code.requests import request_records
from ..transcript.model import Transcript
from ..transcript.snip_ids import tag_view
from ..transcript.view import ViewMessage, answer_cut_off_calls
from .cache_edits import apply_cache_edits
from .cache_model import same_leading
from .claude_code_layout import claude_code_layout, mark_breakpoints, session_header
from .request_params import next_params, recorded_params, recorded_safeguards
from .tool_definitions import snip_tool

SYSTEM_MESSAGE_MODES = ("auto", "keep", "fold")
ADVANCED_TOOL_USE_BETA = "advanced-tool-use-2025-11-20"
_FAMILY = re.compile(r"claude-(opus|sonnet|haiku|fable|mythos)-(\d+)(?:-(\d{1,2})(?!\d))?")


def accepts_system_messages(model: str) -> bool:
    """Whether ``model`` takes ``role: system`` messages mid-conversation (Opus 4.8+, the Claude 5 family)."""
    name = MODEL_ALIASES.get(model.strip().lower(), model.strip().lower())
    m = _FAMILY.search(name)
    if not m:
        return False
    major, minor = int(m.group(2)), int(m.group(3) or 0)
    return major >= 5 or (m.group(1) == "opus" and major == 4 and minor >= 8)


def _keep_system_messages(policy: Any, override: str | None) -> bool:
    mode = override or ((policy.merged.get("request") or {}).get("system_messages")) or "auto"
    if mode not in SYSTEM_MESSAGE_MODES:
        raise ValueError(f"system_messages must be one of {', '.join(SYSTEM_MESSAGE_MODES)}, got {quote(mode)}")
    return accepts_system_messages(policy.model) if mode == "auto" else mode == "keep"


def transcript_request_shape(t: Transcript) -> tuple[Any, list[dict] | None]:
    """(system, tools) as the transcript recorded them (Claude Code only; (None, None) otherwise).

    The newest ``api-request-shape`` entry holds the exact system blocks and tools of Claude Code's
    requests; without one, the system prompt of the newest ``prompt_snapshot`` attachment is used.
    """
    if t.format != "claude-code":
        return None, None
    records = request_records(t)
    shape = records.shapes.get(records.shape_at[-1][1]) if records.shape_at else None
    if shape:
        system = [{k: v for k, v in b.items() if k != "cache_control"} for b in shape.get("system") or []]
        return system or None, shape.get("tools")
    for i in reversed(claude_code_chain.indexes_of(t, ("attachment",))):
        att = t.entry(i).get("attachment") or {}
        if att.get("type") == "prompt_snapshot" and att.get("systemPrompt"):
            snapshot = att["systemPrompt"]
            return "\n\n".join(snapshot) if isinstance(snapshot, list) else str(snapshot), None
    return None, None


def _thinking_on(thinking: dict | None) -> bool:
    return bool(thinking) and thinking.get("type") != "disabled"


def build_request(t: Transcript, policy: Any, *, max_tokens: int | None = None, system: Any = None,
                  tools: list[dict] | None = None, now: datetime | None = None,
                  system_messages: str | None = None, tag_ids: bool | None = None,
                  store: Any = None, memo: dict | None = None) -> dict[str, Any]:
    """The Messages API request body for the transcript's view under ``policy`` (see the module docstring).

    ``tag_ids`` (``ctxkit view --tag-ids/--no-tag-ids``) overrides the snip stage's ``tag_ids`` option:
    with it, user messages carry their ``[id:...]`` and the request offers the snip tool. ``store``: where
    microcompact's ``mode: cached`` keeps its pinned cache edits (without one, no cache edits are sent).
    ``memo``: kept from one call to the next over a growing view (``ctxkit simulate``), so that a block
    sent before is sent as the same object (:func:`api_messages`)."""
    view = t.view()
    snip = snip_options(policy)
    offer_snip = bool(snip and snip["tag_ids"]) if tag_ids is None else tag_ids
    if offer_snip and not snip:
        from ..stages.snip import Snip

        snip = Snip.defaults()
    if offer_snip:
        view = tag_view(view)
    msgs = list(view.messages)
    recorded_system, recorded_tools = transcript_request_shape(t)
    if system is None:
        system = recorded_system
    if system is None and t.format != "claude-code":
        lead = 0
        while lead < len(msgs) and msgs[lead].role == "system":
            lead += 1
        if lead:
            system = "\n\n".join(m.text() for m in msgs[:lead])
            msgs = msgs[lead:]
    body: dict[str, Any] = {"model": policy.model}
    if system:
        body["system"] = system
    tool_list = list(tools if tools is not None else recorded_tools or [])
    if offer_snip and not any(x.get("name") == snip["tool_name"] for x in tool_list):
        tool_list.append(snip_tool(snip["tool_name"]))
    if tool_list:
        body["tools"] = tool_list
    keep_system = _keep_system_messages(policy, system_messages)
    layout = claude_code_layout(t, msgs, fold=not keep_system) if t.format == "claude-code" and not offer_snip \
        else None
    if layout is not None:
        body["messages"] = _interned(layout.messages, memo)
        header = session_header(t, layout.records, msgs, layout.messages) if recorded_system is system else None
        if header and isinstance(system, list):
            body["system"] = [{"type": "text", "text": header}, *copy.deepcopy(system)]
    else:
        body["messages"] = api_messages(msgs, keep_system=keep_system, memo=memo)
    body["messages"] = _answered(body["messages"], memo)  # before the cache pins digest the messages
    records = layout.records if layout is not None else request_records(t)
    sent_max_tokens = max_tokens or budget_for(policy).max_output
    # thinking and effort for the model the request goes to: the recorded ones only if it is the recorded one's
    thinking, output_config, body["messages"] = next_params(
        records, recorded_params(t, records, body["messages"]), policy.model, sent_max_tokens, body["messages"])
    if thinking is not None:
        body["thinking"] = thinking
    spec = policy.stage(Microcompact.name)
    options = {**Microcompact.defaults(), **(dict(spec.options) if spec is not None else {})}
    gap = cache_gap_minutes(view, now or Clock().now())
    cm = context_management(options, cold=gap is not None and gap > options["gap_minutes"],
                            thinking=_thinking_on(thinking))
    if cm:
        body["context_management"] = cm
    body["max_tokens"] = sent_max_tokens
    if output_config is not None:  # Claude Code 2.1.3xx
        body["output_config"] = output_config
    safeguards = recorded_safeguards(records)
    if safeguards is not None:  # Claude Code 2.1.300's auto mode, on a run's first request
        body["safeguards"] = safeguards
    if layout is not None:
        mark_breakpoints(body, layout.records, shifted=1 if body.get("system") is not system else 0)
    if store is not None:
        apply_cache_edits(body, t, policy, store, now=now)  # microcompact mode cached (ctxkit.reports.cache_edits)
    return body


def required_betas(body: dict[str, Any]) -> list[str]:
    """The ``anthropic-beta`` header values the body needs (context management, server compaction,
    deferred tool loading); empty for a plain request."""
    out = betas_for(body.get("context_management"))
    if any(isinstance(x, dict) and x.get("defer_loading") for x in body.get("tools") or []):
        out.append(ADVANCED_TOOL_USE_BETA)
    return out


def api_messages(msgs: list[ViewMessage], *, keep_system: bool, memo: dict | None = None) -> list[dict[str, Any]]:
    """View messages as request messages: transcript-only fields dropped, consecutive user messages
    merged, and system messages either kept (after a user turn) or folded into a user message as
    ``<system-reminder>`` text, where the model read them: at the end of the user message just before
    (when no assistant reply came in between), else at the start of the next one (after its tool
    results), else in a user message of their own at the end. Folding never moves text out of an
    earlier message, so a growing conversation keeps a stable prefix. ``memo``: the blocks cleaned by
    earlier calls, by the block they were cleaned from (a block sent again is the same object), and where
    the call before stood before each of its view messages: the messages this call shares with it (the same
    objects, first) are not gone through again, it goes on from where that call stood after them."""
    out: list[dict[str, Any]] = []
    pending: list[str] = []
    start, stood = 0, []
    before = memo.get(("api-messages", keep_system)) if memo is not None else None
    if before is not None:
        # (``stood[i]``: before message i, how many messages out held, its last one, and the system texts
        # pending; the messages before out's last are never changed after, the last one may be merged into)
        start = same_leading(before[0], msgs)
        stood = before[2][:start]
        size, last, waiting = before[2][start]
        out = [*before[1][:size - 1], last] if size else []
        pending = list(waiting)
    for m in msgs[start:]:
        if memo is not None:
            stood.append((len(out), out[-1] if out else None, tuple(pending)))
        if m.role == "system":
            texts = [b.get("text", "") for b in m.content if b.get("type") == "text"]
            if keep_system and any(x["role"] == "user" for x in out):
                out.append(m.api())
            elif out and out[-1]["role"] == "user" and not pending:
                out[-1] = {"role": "user", "content": _blocks(out[-1]["content"]) + _reminders(texts)}
            else:
                pending.extend(texts)
            continue
        api = _api(m, memo)
        if m.role == "user" and pending:
            api = _fold(api, pending)
            pending = []
        if out and api["role"] == "user" and out[-1]["role"] == "user" and not _starts_with_results(api):
            out[-1] = {"role": "user", "content": _blocks(out[-1]["content"]) + _blocks(api["content"])}
        else:
            out.append(api)
    if memo is not None:
        stood.append((len(out), out[-1] if out else None, tuple(pending)))
        memo[("api-messages", keep_system)] = (msgs, list(out), stood)
    if pending:
        out.append({"role": "user", "content": _reminders(pending)})
    return out


def _answered(messages: list[dict], memo: dict | None) -> list[dict]:
    """:func:`ctxkit.transcript.view.answer_cut_off_calls`; with ``memo``, going on from the call before: a
    message before the last non-system one both calls share is followed by what the next one in the
    conversation decides, one they share too, so they are answered as that call answered them."""
    if memo is None:
        return answer_cut_off_calls(messages)
    before = memo.get("answered")  # (messages, the answer, after which of them an error message went)
    cut, head = 0, []
    answered: list[int] = []
    if before is not None:
        cut = same_leading(before[0], messages) - 1
        while cut > 0 and messages[cut].get("role") == "system":
            cut -= 1
        cut = max(cut, 0)
        answered = before[2][:bisect_left(before[2], cut)]
        head = before[1][:cut + len(answered)]
    tail = answer_cut_off_calls(messages[cut:])
    k = cut
    for m in tail:  # (an error message is a new one: not one of the messages)
        if k < len(messages) and m is messages[k]:
            k += 1
        else:
            answered.append(k - 1)
    out = [*head, *tail]
    memo["answered"] = (messages, out, answered)
    return out


def _reminders(texts: list[str]) -> list[dict]:
    return [{"type": "text", "text": as_reminder(x)} for x in texts]


def _blocks(content: Any) -> list[dict]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def _starts_with_results(api: dict) -> bool:
    content = api["content"]
    return isinstance(content, list) and bool(content) and content[0].get("type") == "tool_result"


def _fold(api: dict, texts: list[str]) -> dict:
    """Put system texts into a user message as reminders: after its tool results, before anything else."""
    blocks = _blocks(api["content"])
    reminders = _reminders(texts)
    lead = 0
    while lead < len(blocks) and blocks[lead].get("type") == "tool_result":
        lead += 1
    return {"role": "user", "content": blocks[:lead] + reminders + blocks[lead:]}


def _api(m: ViewMessage, memo: dict | None) -> dict:
    """``m`` as a request message (:func:`_clean`); with ``memo``, the one an earlier call made of the same
    view message (a view is read-only once built: a growing one shares its earlier messages)."""
    if memo is None:
        return _clean(m.api())
    key = ("api", id(m))
    found = memo.get(key)
    if found is None or found[0] is not m:  # (the message is kept with it: its id is no other message's)
        found = memo[key] = (m, _clean(m.api(), memo))
    return found[1]


_HAS_CALLER = methodcaller("__contains__", "caller")


def _interned(messages: list[dict], memo: dict | None) -> list[dict]:
    """The layout's messages, each :func:`_clean` (a 2.1.38 view's tool_use carries its ``caller``), and with
    ``memo`` the same object as an earlier request's for a message of the same role and the same blocks
    (the view's own objects): the layout makes its messages anew at every request, and the steps after it
    (cut-off calls, the replay's pieces) go on from the request before only over the objects it shares."""
    if memo is None:
        return [_clean(m) for m in messages]
    seen = memo.setdefault("interned", {})
    out = []
    for m in messages:
        content = m.get("content")
        if m.keys() != {"role", "content"}:  # (a system message's own effort: as it is)
            out.append(_clean(m, memo))
            continue
        key = (m["role"], tuple(map(id, content)) if isinstance(content, list) else content)
        found = seen.get(key)
        if found is None:  # (kept with the blocks its key names, so that their ids are no other blocks')
            found = seen[key] = (content, _clean(m, memo))
        out.append(found[1])
    return out


def _clean(api: dict, memo: dict | None = None) -> dict:
    """Drop block fields the transcript carries but a request must not (``caller`` on tool_use)."""
    if isinstance(api["content"], list) and any(map(_HAS_CALLER, api["content"])):  # (in C: on every request)
        api = copy.copy(api)
        api["content"] = [_without_caller(b, memo) for b in api["content"]]
    return api


def _without_caller(block: dict, memo: dict | None) -> dict:
    if "caller" not in block:
        return block
    if memo is None:
        return {k: v for k, v in block.items() if k != "caller"}
    key = ("without-caller", id(block))
    found = memo.get(key)
    if found is None or found[0] is not block:  # (the block is kept with it: its id is no other block's)
        found = memo[key] = (block, {k: v for k, v in block.items() if k != "caller"})
    return found[1]
