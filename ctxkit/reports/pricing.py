"""Prices per model, and what one request costs: the cost side of ``ctxkit simulate``.

The table ships with the package (``ctxkit/reports/pricing.json``): per model, USD per million
tokens of base input, output, 5-minute and 1-hour cache writes and cache reads, with the date the
prices were taken from the provider's published page. ``--pricing FILE`` replaces it with a file of
the same shape.

A model the table does not name is priced as the newest model of its family (opus, sonnet, haiku,
fable, mythos: the highest version the table has) with a warning naming both, so that a request
that has usage never costs 0. A model of no known family is priced as the newest model in the table,
again with a warning. OpenAI's and Google's models (``gpt-5.1-codex``, ``gemini-2.5-pro``) have lines
of their own (``gpt-codex``, ``gemini-pro``: the suffix): one the table lacks is priced as the newest of its
line; a model of no line and no Claude family (``deepseek-chat``) is priced as unknown, at 0 USD with a
warning, rather than as a model it is not. Dated ids (``claude-sonnet-4-5-20250929``), provider prefixes
(``us.anthropic.``, ``anthropic/``) and Claude Code's ``[1m]`` marker resolve to the same entry.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..quoting import quote
from ..side_files import parse_json, read_side_text
from ..tokens.models import model_row, spelled_as_the_api

PRICING_FILE = Path(__file__).resolve().parent / "pricing.json"
RATE_KEYS = ("input", "output", "cache_write_5m", "cache_write_1h", "cache_read")
_FAMILIES = ("opus", "sonnet", "haiku", "fable", "mythos")
_NEW_STYLE = re.compile(r"^claude-([a-z]+)-(\d+)(?:-(\d{1,2}))?$")  # claude-opus-4-5
_OLD_STYLE = re.compile(r"^claude-(\d+)(?:-(\d{1,2}))?-([a-z]+)$")  # claude-3-5-sonnet
#: OpenAI's and Google's ids: gpt-5.1-codex, gpt-5-mini, gemini-2.5-pro, gemini-3-pro-preview
_OTHER_STYLE = re.compile(r"^(gpt|gemini)-(\d+)(?:\.(\d+))?((?:-[a-z]+)*?)(?:-preview)?(?:-\d{2}-\d{4}|-\d{4}-\d{2}-\d{2})?$")


@dataclass(frozen=True)
class Usage:
    """The four token figures of one request, as the Messages API reports them."""

    input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    output_tokens: int = 0
    cache_write_1h_tokens: int = 0  # of cache_creation_input_tokens, those written for an hour
    #: "5m" | "1h": the lifetime the request's writes had (its ``cache_creation`` split; a usage without one
    #: is the API's default, 5 minutes); None when the request wrote nothing
    lifetime: str | None = None

    @property
    def prompt_tokens(self) -> int:
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens


#: A provider's date and version at the end of an id: ``-20250929`` (the API's), Bedrock's ``-20250929-v1:0``,
#: Vertex AI's ``@20250514`` and ``-v2@20241022``
_DATED = re.compile(r"(?:-v\d+)?(?:[-@]\d{8})?(?:-v\d+(?::\d+)?)?$")


def normalize_model(model: str) -> str:
    """The table key a model id is looked up under: no provider prefix, no date, no ``[1m]``, dashes
    between a version's numbers (:func:`ctxkit.tokens.models.spelled_as_the_api`)."""
    name = spelled_as_the_api(model)[0]
    if "claude-" in name and not name.startswith("claude-"):
        name = name[name.index("claude-"):]
    if "/" in name and "claude-" not in name:  # openai/gpt-5, google/gemini-2.5-pro (OpenRouter, OpenCode)
        name = name.rsplit("/", 1)[1]
    name = _DATED.sub("", name)
    if name.startswith(("gpt-", "gemini-")):  # gemini-3-pro-preview, gemini-2.5-flash-preview-09-2025, gpt-5-2025-08-07
        name = re.sub(r"(-preview)?(-\d{2}-\d{4}|-\d{4}-\d{2}-\d{2})?$", "", name)
    return name


def family_and_version(model: str) -> tuple[str, tuple[int, int]] | None:
    """``("opus", (4, 5))`` for ``claude-opus-4-5``; None when the id names no known family."""
    m = _NEW_STYLE.match(model)
    if m and m.group(1) in _FAMILIES:
        return m.group(1), (int(m.group(2)), int(m.group(3) or 0))
    m = _OLD_STYLE.match(model)
    if m and m.group(3) in _FAMILIES:
        return m.group(3), (int(m.group(1)), int(m.group(2) or 0))
    return None


def other_family(model: str) -> tuple[str, tuple[int, int]] | None:
    """``("gpt-codex", (5, 1))`` for ``gpt-5.1-codex``, ``("gemini-pro", (3, 0))`` for
    ``gemini-3-pro-preview``: OpenAI's and Google's models, by line (the suffix) and version."""
    m = _OTHER_STYLE.match(model)
    return (m.group(1) + m.group(4), (int(m.group(2)), int(m.group(3) or 0))) if m else None


UNKNOWN_RATES = dict.fromkeys(RATE_KEYS, 0.0)


class PriceTable:
    """A pricing table: ``price(model)`` gives the rates, ``cost(model, usage)`` the USD of a request."""

    def __init__(self, doc: dict[str, Any], source: str):
        self.source = source
        self.as_of = doc.get("as_of")
        self.models: dict[str, dict[str, Any]] = {normalize_model(k): v for k, v in doc["models"].items()}
        self.warnings: list[str] = []
        self._resolved: dict[str, str] = {}

    def resolve(self, model: str) -> str:
        """The table entry ``model`` is priced as (warns once when it is not the model's own)."""
        if model in self._resolved:
            return self._resolved[model]
        name = normalize_model(model)
        if name in self.models:
            chosen = name
        elif name.startswith("claude-") and (row := model_row(name, self.models)) is not None:
            # claude-3-7-sonnet-latest, claude-sonnet-4-5-thinking, a relay's claude-opus-4.6-fast: that model, not
            # the newest of a family (Sonnet 5.5 for all three, and the relay's Opus at 40% of its price)
            chosen = row
            if name[len(row):] != "-latest":  # (the API's own alias of that model; a relay's -fast may cost more)
                self.warnings.append(f"no price for model {quote(model)} in {self.source}; priced as {chosen}, the "
                                     "model its name starts with")
        elif (other := other_family(name)) is not None or "claude" not in name and family_and_version(name) is None:
            same = [(f[1], k) for k in self.models if (f := other_family(k)) and other and f[0] == other[0]]
            chosen = max(same)[1] if same else ""
            self.warnings.append("the session names no model; its requests are priced as unknown: they count 0 USD "
                                 "(their tokens are counted)" if not name else
                                 f"no price for model {quote(model)} in {self.source}; " + (
                f"priced as {chosen}, the newest {other[0]} model there" if other and same else  # type: ignore[index]
                "priced as unknown: its requests count 0 USD (their tokens are counted)"))
        else:
            fam = family_and_version(name)
            same = [(v, k) for k in self.models if (f := family_and_version(k)) and f[0] == (fam[0] if fam else None)
                    for v in [f[1]]]
            if same:
                chosen = max(same)[1]
                self.warnings.append(f"no price for model {quote(model)} in {self.source}; priced as {chosen}, the "
                                     f"newest {fam[0]} model there")
            else:
                newest = [(v[1], k) for k in self.models if (v := family_and_version(k))]
                chosen = max(newest)[1] if newest else next(iter(self.models))
                self.warnings.append(f"no price for model {quote(model)} in {self.source} and no model of its family; "
                                     f"priced as {chosen}")
        self._resolved[model] = chosen
        return chosen

    def rates(self, model: str, prompt_tokens: int = 0) -> dict[str, float]:
        chosen = self.resolve(model)
        if not chosen:  # priced as unknown
            return dict(UNKNOWN_RATES)
        entry = self.models[chosen]
        long = entry.get("long_prompt")
        if long and prompt_tokens > int(long["threshold_tokens"]):
            return {k: float(long[k]) for k in RATE_KEYS}
        return {k: float(entry[k]) for k in RATE_KEYS}

    def cost(self, model: str, usage: Usage) -> float:
        """USD of one request: each kind of token at its rate (cache writes split 5m / 1h)."""
        r = self.rates(model, usage.prompt_tokens)
        write_1h = min(usage.cache_write_1h_tokens, usage.cache_creation_input_tokens)
        write_5m = usage.cache_creation_input_tokens - write_1h
        return (usage.input_tokens * r["input"] + usage.output_tokens * r["output"]
                + write_5m * r["cache_write_5m"] + write_1h * r["cache_write_1h"]
                + usage.cache_read_input_tokens * r["cache_read"]) / 1_000_000


def _bad_rates(entry: Any, extra: tuple[str, ...] = ()) -> list[str]:
    """The keys of a price entry that are not a finite number >= 0 (true/false, NaN and -1 are no price)."""
    if not isinstance(entry, dict):
        return [*extra, *RATE_KEYS]
    return [k for k in (*extra, *RATE_KEYS)
            if isinstance(entry.get(k), bool) or not isinstance(entry.get(k), (int, float))
            or not math.isfinite(entry[k]) or entry[k] < 0]


def load_pricing(path: str | Path | None = None) -> PriceTable:
    """The shipped table, or the one in ``path`` (``--pricing FILE``), checked for its shape."""
    target = Path(path) if path is not None else PRICING_FILE
    where = str(path) if path is not None else "the shipped pricing table"
    try:
        raw = read_side_text(target, "--pricing") if path is not None else target.read_text(encoding="utf-8")
        doc = parse_json(raw or "")
    except OSError as exc:
        raise UsageError(f"--pricing {quote(str(target))}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise UsageError(f"--pricing {quote(str(target))}: not JSON: {exc}") from None
    models = doc.get("models") if isinstance(doc, dict) else None
    if not isinstance(models, dict) or not models:
        raise UsageError(f"--pricing {quote(str(target))}: expected an object with \"models\": {{MODEL: {{"
                         + ", ".join(f'"{k}": USD' for k in RATE_KEYS) + "}}} (per million tokens)")
    for name, entry in models.items():
        missing = _bad_rates(entry)
        if missing:
            raise UsageError(f"--pricing {quote(str(target))}: model {quote(name)} has no number for "
                             f"{', '.join(missing)}")
        long = entry.get("long_prompt")
        if long is not None:
            missing = _bad_rates(long, ("threshold_tokens",))
            if missing:
                raise UsageError(f"--pricing {quote(str(target))}: model {quote(name)}: long_prompt has no number "
                                 f"for {', '.join(missing)}")
    return PriceTable(doc, where if path is None else quote(str(path)))
