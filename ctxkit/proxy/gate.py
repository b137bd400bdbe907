"""Never worse than direct: send the managed messages only when they cost less than the original ones.

An edit the policy makes deep in the history shrinks every later request, but the provider's prompt cache
holds the bytes sent last time: a request whose messages part from them at message k pays the cache-write
rate for everything from k on, instead of the cache-read rate. So for each request the proxy prices both
bodies it could send, over the turns the conversation is expected to have left:

    now(X)   = read × shared(X) + write × (tokens(X) − shared(X))
    later(X) = turns_left × read × tokens(X)

``shared(X)`` is the tokens of X's leading messages equal to the ones last sent (``cache_control`` marks
aside, a string content taken as its one text block: neither changes the cached prefix), or 0 once the cache has gone cold (``cache_ttl`` seconds since
the last request). The managed body is sent when ``now + later`` is lower for it; ties go to the original.
``turns_left``: a conversation that has lasted n requests is expected to last n more, at most
:data:`MAX_TURNS_LEFT` (the Lindy estimate; a short one earns no costly edit, a long one does).
Rates come from ``ctxkit/reports/pricing.json`` for Claude models; a model the table cannot price (an OpenAI
one: automatic caching, no write premium) is priced as input 1, write 1, read 0.1 — the least an edit can
save, so the proxy edits it the least.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..reports.pricing import PriceTable, family_and_version, load_pricing, normalize_model
from ..tokens.counters import RoughCounter

MAX_TURNS_LEFT = 50
DEFAULT_CACHE_TTL = 300.0  # seconds: the API's default (5-minute) cache
OPENAI_RATES = {"input": 1.0, "cache_write_5m": 1.0, "cache_read": 0.1}
_COUNTER = RoughCounter()


@lru_cache(maxsize=1)
def _pricing() -> PriceTable:
    return load_pricing()


def rates_for(model: str) -> dict[str, float]:
    """USD per million tokens (or, for a model the table has no family of, the relative OpenAI rates)."""
    if family_and_version(normalize_model(model)) is None:
        return dict(OPENAI_RATES)
    return _pricing().rates(model)


def without_marks(value: Any) -> Any:
    """``value`` as the cache compares it: every ``cache_control`` key taken out, and a message's string
    content as the one text block the API reads it as (Claude Code sends its last message's content as
    blocks, to mark it, and the same content as a string once it is no longer last)."""
    if isinstance(value, dict):
        if isinstance(value.get("content"), str) and "role" in value:
            value = {**value, "content": [{"type": "text", "text": value["content"]}]}
        return {k: without_marks(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [without_marks(v) for v in value]
    return value


def tokens(messages: list[dict]) -> int:
    return sum(_COUNTER.count_message(m) if isinstance(m, dict) else 1 for m in messages)


def shared_prefix(previous: list[dict] | None, messages: list[dict]) -> int:
    """How many leading messages of ``messages`` equal those of ``previous`` (marks aside)."""
    if not previous:
        return 0
    n = 0
    for old, new in zip(previous, messages, strict=False):
        if old != new and without_marks(old) != without_marks(new):
            break
        n += 1
    return n


class Counted:
    """Token counts of a growing message list: :meth:`update` counts only the messages that differ from
    the list it was last given (an agent's request repeats the one before and adds a turn), so pricing
    a request costs its new messages, not the whole conversation."""

    def __init__(self) -> None:
        self.messages: list[dict] = []
        self.cumulative = [0]  # cumulative[i]: the tokens of messages[:i]

    def update(self, messages: list[dict]) -> Counted:
        k, n = 0, min(len(messages), len(self.messages))
        while k < n and (messages[k] is self.messages[k] or messages[k] == self.messages[k]):
            k += 1
        cumulative = self.cumulative[:k + 1]
        for m in messages[k:]:
            cumulative.append(cumulative[-1] + tokens([m]))
        self.messages, self.cumulative = messages, cumulative
        return self

    def upto(self, n: int) -> int:
        return self.cumulative[n]

    @property
    def total(self) -> int:
        return self.cumulative[-1]


@dataclass(frozen=True)
class Verdict:
    """What the gate decided and the figures behind it (USD, or relative units for unpriced models)."""

    send_managed: bool
    tokens_original: int
    tokens_managed: int
    cost_original: float
    cost_managed: float
    turns_left: int

    @property
    def saved(self) -> float:
        return self.cost_original - self.cost_managed if self.send_managed else 0.0


def judge(original: list[dict], managed: list[dict], *, previous: list[dict] | None, cache_warm: bool,
          requests_so_far: int, model: str, counts: tuple[Counted, Counted] | None = None) -> Verdict:
    """Price sending ``original`` or ``managed`` after ``previous`` (module docstring); pick the cheaper.
    ``counts``: the conversation's :class:`Counted` for its original and its managed lists, to reuse."""
    r = rates_for(model)
    read, write = r["cache_read"], r["cache_write_5m"]
    turns_left = max(1, min(requests_so_far, MAX_TURNS_LEFT))
    memo_orig, memo_man = counts or (Counted(), Counted())

    def cost(messages: list[dict], memo: Counted) -> tuple[int, float]:
        memo.update(messages)
        total = memo.total
        shared = memo.upto(shared_prefix(previous, messages)) if cache_warm else 0
        return total, (read * shared + write * (total - shared) + turns_left * read * total) / 1_000_000

    t_orig, c_orig = cost(original, memo_orig)
    t_man, c_man = cost(managed, memo_man)
    return Verdict(c_man < c_orig, t_orig, t_man, c_orig, c_man, turns_left)
