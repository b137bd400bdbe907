"""What the stages need to know about a whole Claude Code session, collected while its lines are indexed.

The working directory, slug and session id (the last ones written on the main chain), whether
attachments are rendered as system messages, the permission-mode changes and the queue operations.
The attachment types and re-injection read these for every version of a run's transcript; gathered in
the one indexing pass, they cost no second reading of the file (and are kept in a checkpoint,
:mod:`ctxkit.store.checkpoint`, so that a later run reads only the lines added since).

And the settings the session ran with (:class:`RecordedSettings`, :func:`recorded_settings`): budgets,
counts, request bodies and simulated costs depend on them (:mod:`ctxkit.tokens.session`). The newest
one wins:

* ``api-request`` (Claude Code 2.1.3xx): the exact ``params`` of each request (``model``, ``betas``,
  ``max_tokens``, ``thinking``, ...);
* an ``assistant`` message: the ``model`` that answered (``<synthetic>`` messages are Claude Code's
  own placeholders: no model) and its ``usage``, whose ``cache_creation`` split
  (``ephemeral_5m_input_tokens`` / ``ephemeral_1h_input_tokens``) says which cache lifetime the
  request asked for;
* before any answer, the ``model`` attachment (``identity.modelId``) names the session's model;
* the largest context a model's requests held (its answers' ``usage``: input, cache reads and writes):
  a request over the model's standard window says the session ran with the 1M one (Claude Code writes
  ``claude-sonnet-4-6``, not ``claude-sonnet-4-6[1m]``, in the answers of a session run on the latter);
  not a request Claude Code compacted automatically right after (:meth:`SessionFacts._largest`).

Sidechain (subagent) entries are not the session's: a subagent may run another model (a subagent's
own file, all sidechain, has its own model).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ..interface import reported
from ..model import Transcript
from .fields import version_key
from .requests import request_records
from .usage import read_about_input, reads_counted_in_input

#: (from which version, the model): what every release that records requests talks to by default (its
#: ``model`` attachment and first request, in a ``-p`` run without ``--model``: 2.1.300, 2.1.315, 2.1.328,
#: 2.1.332 and 2.1.336 against the stand-in API, ``bench/record_cc_sessions.py``).
DEFAULT_MODEL = ((2, 1, 300), "claude-opus-5-5")

_NAMED = (("cwd", "cwd"), ("slug", "slug"), ("sessionId", "session_id"))


def line_facts(i: int, d: dict) -> tuple:
    """What entry ``i`` tells about the session (empty for a sidechain entry), as a value compared to
    tell whether an edit changed any of it: what :meth:`SessionFacts.add` collects from it alone."""
    one = SessionFacts()
    one.add(i, d)
    return (tuple(one.named.items()), one.system_rendered, tuple(mode for _, mode in one.modes),
            tuple(one.queue_ops), one.model, one.attachment_model, one.side_model, repr(one.request),
            tuple(one.cache_ttls.items()), tuple(one.contexts.items()), one.pending, one.answer, _auto_compaction(d))


_CONVERSATION = frozenset(("user", "assistant", "attachment"))


class SessionFacts:
    """The session's facts over the lines added so far, in line order (see the module docstring)."""

    def __init__(self) -> None:
        self.named: dict[str, str] = {}  # cwd, slug, session_id: the last value seen
        self.system_rendered = False
        self.modes: list[tuple[int, str]] = []  # (entry index, permission mode), in order
        self.queue_ops: list[dict[str, Any]] = []
        #: the model of the newest request or answer, and which entry said it ("api-request" | "assistant message")
        self.model: tuple[str, str] | None = None
        self.attachment_model: str | None = None  # the ``model`` attachment's, written before any answer
        self.side_model: str | None = None  # the newest sidechain answer's (a subagent's own file)
        self.request: dict[str, Any] = {}  # the newest api-request's params: model, max_tokens, betas, thinking
        self.cache_ttls: dict[str, str] = {}  # message id -> "5m" | "1h", as its usage's cache writes were
        self.contexts: dict[str, int] = {}  # model -> the largest context a request to it held, by its usage
        #: the newest answer's (message id, model, context held): in ``contexts`` once the session went on
        #: from it, dropped when Claude Code compacted automatically right after it (:meth:`_largest`)
        self.pending: tuple[str, str, int] | None = None
        #: the newest main-chain answer's (message id, model, input_tokens), and of the answers that read the
        #: cache after one to the same model, how many and how many read about its input (usage.py)
        self.answer: tuple[str, str, int] | None = None
        self.read_pairs = 0
        self.read_about = 0

    def add(self, i: int, d: dict) -> None:
        """Take in what entry ``i`` tells about the session (nothing, for a sidechain entry). Run on every
        line read: plain statements, no intermediate values."""
        typ = d.get("type")
        if typ == "assistant" or typ == "api-request":
            self._add_settings(typ, d)
        if d.get("isSidechain"):
            return
        if _auto_compaction(d):
            self.pending = None
        if typ in _CONVERSATION:
            for key, name in _NAMED:
                value = d.get(key)
                if isinstance(value, str) and value:
                    self.named[name] = value
            if typ == "attachment" and d.get("renderedRole") == "system":
                self.system_rendered = True
        if typ in ("user", "permission-mode") and isinstance(d.get("permissionMode"), str):
            self.modes.append((i, d["permissionMode"]))
        elif typ == "mode" and isinstance(d.get("mode"), str):
            self.modes.append((i, d["mode"]))
        elif typ == "queue-operation":
            self.queue_ops.append({"operation": d.get("operation"), "content": d.get("content"),
                                   "timestamp": d.get("timestamp")})
        elif typ == "attachment":
            att = d.get("attachment")
            identity = att.get("identity") if isinstance(att, dict) and att.get("type") == "model" else None
            name = identity.get("modelId") if isinstance(identity, dict) else None
            if isinstance(name, str) and name:
                self.attachment_model = name
                if self.model is not None:  # a resumed run on another model (``--model``) says so first
                    self.model = (name, "model attachment")

    def _add_settings(self, typ: str, d: dict) -> None:
        """What an answer or a recorded request says about the settings (see the module docstring)."""
        if typ == "api-request":
            params = d.get("params")
            if isinstance(params, dict) and not d.get("isSidechain"):
                self.request = {k: params[k] for k in ("model", "max_tokens", "betas", "thinking") if k in params}
                if isinstance(params.get("model"), str) and params["model"]:
                    self.model = (params["model"], "api-request")
            return
        msg = d.get("message")
        if not isinstance(msg, dict) or d.get("isApiErrorMessage"):
            return
        name = msg.get("model")
        if isinstance(name, str) and name and name != "<synthetic>":
            if d.get("isSidechain"):
                self.side_model = name
                return
            self.model = (name, "assistant message")
        if d.get("isSidechain"):
            return
        ttl = _cache_ttl(msg.get("usage"))
        if ttl is not None and isinstance(msg.get("id"), str):
            self.cache_ttls[msg["id"]] = ttl
        if isinstance(name, str) and name != "<synthetic>" and isinstance(msg.get("usage"), dict):
            self._add_answer(str(msg.get("id")), name, msg["usage"])
        held = _context_held(msg.get("usage"))
        if held and isinstance(name, str) and name != "<synthetic>":
            key = str(msg.get("id"))
            if self.pending is not None and self.pending[0] == key:  # another line of the same streamed answer
                held = max(held, self.pending[2])
            elif self.pending is not None:  # the session went on from the answer before
                _, before, before_held = self.pending
                self.contexts[before] = max(self.contexts.get(before, 0), before_held)
            self.pending = (key, name, held)

    def _add_answer(self, key: str, model: str, usage: dict) -> None:
        """An answer's usage, for whether its API counted the reads in ``input_tokens`` (counted on the first
        line of each streamed answer, against the answer before)."""
        read = reported(usage.get("cache_read_input_tokens"))
        if self.answer is not None and self.answer[0] != key and read and self.answer[1] == model:
            self.read_pairs += 1
            self.read_about += read_about_input(self.answer[2], read)
        self.answer = (key, model, reported(usage.get("input_tokens")))

    def settings(self) -> RecordedSettings:
        """The settings the session ran with, as :class:`RecordedSettings`."""
        model, source = self.model or ((self.attachment_model, "model attachment") if self.attachment_model
                                       else (self.side_model, "assistant message") if self.side_model
                                       else (None, None))
        request = self.request
        max_tokens, betas, thinking = request.get("max_tokens"), request.get("betas"), request.get("thinking")
        return RecordedSettings(
            model=model, model_source=source,
            max_tokens=max_tokens if isinstance(max_tokens, int) and not isinstance(max_tokens, bool)
            and max_tokens > 0 else None,
            max_tokens_model=request["model"] if isinstance(request.get("model"), str) else None,
            betas=tuple(b for b in betas if isinstance(b, str)) if isinstance(betas, list) else (),
            thinking=dict(thinking) if isinstance(thinking, dict) else None,
            cache_ttl=next(reversed(self.cache_ttls.values()), None) if self.cache_ttls else None,
            largest_context=self._largest(model) if model else None,
            reads_in_input=reads_counted_in_input(self.read_about, self.read_pairs))

    def _largest(self, model: str) -> int | None:
        """The largest context a request to ``model`` held, of those the session went on from without Claude
        Code compacting automatically: a figure it compacted right after says nothing of a 1M window (the
        stand-in's 990,000 on a Haiku 4.5 run, or a relay's bogus figure: Claude Code compacted against
        200,000), and every window compacts at its threshold."""
        held = [n for n in (self.contexts.get(model), self.pending[2] if self.pending and self.pending[1] == model
                            else None) if n]
        return max(held) if held else None

    def copy(self) -> SessionFacts:
        new = SessionFacts()
        new.named, new.system_rendered = dict(self.named), self.system_rendered
        new.modes, new.queue_ops = list(self.modes), list(self.queue_ops)
        new.model, new.attachment_model, new.side_model = self.model, self.attachment_model, self.side_model
        new.request, new.cache_ttls, new.contexts = dict(self.request), dict(self.cache_ttls), dict(self.contexts)
        new.pending = self.pending
        new.answer, new.read_pairs, new.read_about = self.answer, self.read_pairs, self.read_about
        return new

    def as_dict(self) -> dict[str, Any]:
        """The shape the attachment state reads: ``cwd``, ``slug``, ``session_id`` (when known),
        ``system_rendered`` (when true), ``modes`` and ``queue_ops``."""
        out: dict[str, Any] = {"modes": list(self.modes), "queue_ops": list(self.queue_ops), **self.named}
        if self.system_rendered:
            out["system_rendered"] = True
        return out

    # -- kept in a checkpoint -------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {"named": self.named, "system_rendered": self.system_rendered,
                "modes": [[i, m] for i, m in self.modes], "queue_ops": self.queue_ops,
                "model": list(self.model) if self.model else None, "attachment_model": self.attachment_model,
                "side_model": self.side_model, "request": self.request, "cache_ttls": self.cache_ttls, "contexts": self.contexts,
                "pending": list(self.pending) if self.pending else None,
                "answer": list(self.answer) if self.answer else None, "read_pairs": [self.read_pairs, self.read_about]}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> SessionFacts:
        """Raises KeyError, TypeError or ValueError on a document of another shape (a checkpoint kept by
        a version of ctxkit that did not collect the settings is one: it is read in full again)."""
        new = cls()
        new.named = {str(k): str(v) for k, v in doc["named"].items()}
        new.system_rendered = bool(doc["system_rendered"])
        new.modes = [(int(i), str(m)) for i, m in doc["modes"]]
        new.queue_ops = [dict(op) for op in doc["queue_ops"]]
        model = doc["model"]
        new.model = (str(model[0]), str(model[1])) if model else None
        new.attachment_model = None if doc["attachment_model"] is None else str(doc["attachment_model"])
        new.side_model = None if doc["side_model"] is None else str(doc["side_model"])
        new.request = dict(doc["request"])
        new.cache_ttls = {str(k): str(v) for k, v in doc["cache_ttls"].items()}
        new.contexts = {str(k): int(v) for k, v in doc["contexts"].items()}
        pending = doc["pending"]
        new.pending = (str(pending[0]), str(pending[1]), int(pending[2])) if pending else None
        answer = doc["answer"]
        new.answer = (str(answer[0]), str(answer[1]), int(answer[2])) if answer else None
        new.read_pairs, new.read_about = (int(n) for n in doc["read_pairs"])
        return new


@dataclass(frozen=True)
class RecordedSettings:
    """The settings a session ran with, as recorded; ``None`` (or empty) where the transcript says nothing."""

    model: str | None = None
    model_source: str | None = None  # "api-request" | "assistant message" | "model attachment"
    max_tokens: int | None = None  # the newest recorded request's max_tokens
    #: the model that request went to (None from a checkpoint kept before ctxkit collected it): a resumed
    #: run on another model sends that model's own default, not this max_tokens
    max_tokens_model: str | None = None
    betas: tuple[str, ...] = ()
    thinking: dict | None = field(default=None, hash=False)
    cache_ttl: str | None = None  # "5m" | "1h": the newest answer's cache writes
    cache_ttl_source: str = "usage cache_creation"  # what told it (named in the policy's origin of the value)
    #: the window the agent itself counts against, where it records one (a Codex rollout's token_count)
    context_window: int | None = None
    #: the largest context a request to ``model`` held, by its usage (input, cache reads and writes)
    largest_context: int | None = None
    #: whether the session's API reported ``input_tokens`` with the cache reads in it (a relay to DeepSeek:
    #: :func:`ctxkit.transcript.claude_code.usage.reads_counted_in_input`): counts leave the reads out again
    reads_in_input: bool = False


def recorded_settings(t: Transcript) -> RecordedSettings:
    """The settings of a Claude Code session as it is now (see the module docstring); empty for other formats."""
    if t.format != "claude-code":
        return RecordedSettings()
    settings = current_facts(t).settings()
    if settings.model is None:
        default = version_default_model(request_records(t).version)
        if default is not None:
            return replace(settings, model=default, model_source="the Claude Code version's default")
    return settings


def version_default_model(version: str | None) -> str | None:
    """The model a Claude Code version that records its requests talks to when nothing chose one
    (:data:`DEFAULT_MODEL`), else None. Why: a session's first turn may state no model. A first prompt
    that starts with ``/`` but names no command (``/tmp/app is where the code is``) gets none of the
    first turn's attachments, the ``model`` one among them; ctxkit then built the first request for its
    own default model (no system messages, 32,000 max_tokens) where Claude Code sent Opus 5.5's."""
    if version is None or version_key(version) < DEFAULT_MODEL[0]:
        return None
    return DEFAULT_MODEL[1]


def _cache_ttl(usage: Any) -> str | None:
    """Which lifetime a request's cache writes had: the ``cache_creation`` split names it (1 h wins when
    both were written: the agent asked for it at some breakpoint)."""
    split = usage.get("cache_creation") if isinstance(usage, dict) else None
    if not isinstance(split, dict):
        return None
    if _positive(split.get("ephemeral_1h_input_tokens")):
        return "1h"
    if _positive(split.get("ephemeral_5m_input_tokens")):
        return "5m"
    return None


def _context_held(usage: Any) -> int:
    """What a request held, by its usage: input, cache reads and cache writes (0 when it says nothing)."""
    if not isinstance(usage, dict):
        return 0
    return sum(reported(usage.get(k)) for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"))


def _auto_compaction(d: dict) -> bool:
    """Whether entry ``d`` is the boundary of a compaction Claude Code made by itself (``trigger: auto``)."""
    meta = d.get("compactMetadata")
    return d.get("subtype") == "compact_boundary" and isinstance(meta, dict) and meta.get("trigger") == "auto"


def _positive(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


def session_facts(t: Transcript) -> dict[str, Any]:
    """The facts of transcript ``t`` as it is now, as :meth:`SessionFacts.as_dict`."""
    return current_facts(t).as_dict()


def current_facts(t: Transcript) -> SessionFacts:
    """The facts of transcript ``t`` as it is now (edits and appended entries included); do not change
    them. Computed once per transcript version, and carried over from the version an edit was made from
    when the edit changed none of them (the usual case: stages rewrite content, not these fields)."""
    facts = t.memo.get("facts")
    if facts is None:
        earlier = t.earlier[0].get("facts") if t.earlier is not None and t.replaced_blocks_only() else None
        # content blocks are not facts: an edit of them alone keeps the earlier version's
        facts = t.memo["facts"] = earlier or t.carried("facts", line_facts) or _computed(t)
    return facts


def _facts_of(d: dict) -> tuple:
    return line_facts(0, d)  # (what line_facts finds does not depend on the index)


def _input_facts(t: Transcript, i: int) -> tuple:
    """The facts of input line ``i`` (kept with the line index: every version asks for its edited lines);
    none for a line that could not be read (the indexing pass took none from it, and ``doctor --fix`` puts
    a record in its place)."""
    kept = t.lines.memo.setdefault("input-line-facts", {})
    found = kept.get(i)
    if found is None:
        found = kept[i] = line_facts(i, {} if t.lines.bad(i) else t.input_entry(i))
    return found


def _computed(t: Transcript) -> SessionFacts:
    """From the facts the indexing pass collected when no edit changed any of them; else every live
    line is read again."""
    base = t.lines.facts
    n = t.n_lines
    if not isinstance(base, SessionFacts) or any(i < n for i in t.removed) or any(
            t.extract(i, _facts_of) != _input_facts(t, i) for i in t.overrides):
        facts = SessionFacts()
        for i in t.live_indexes():
            facts.add(i, t.peek(i))  # keep none of them parsed (memory follows the view)
        return facts
    facts = base.copy()
    for i in range(n, t.n_entries):
        if i not in t.removed:
            facts.add(i, t.entry(i))
    return facts
