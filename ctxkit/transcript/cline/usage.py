"""What the API reported a Cline request used: an assistant message's ``metrics.tokens``.

``ClineMessageMetricsInfo`` (cline/cline ``src/shared/messages/metrics.ts``): ``tokens.prompt`` (every
input token, cached ones included, by its type), ``tokens.completion``, ``tokens.cached`` (a part of
``prompt``), and ``cost``. Older histories, and Roo Code's, record none: their size is estimated.

Through the Anthropic provider ``prompt`` is the API's ``input_tokens``, which leaves the cache reads
out: a real history's messages hold ``prompt: 10, cached: 66105``. A ``cached`` above ``prompt`` cannot be
a part of it, so it is added to it (the cache writes such a request made are recorded nowhere, and stay
uncounted).
"""
from __future__ import annotations

from ...side_files import parse_json
from ..claude_code.session import RecordedSettings
from ..interface import RequestUsage, UsageWriter, reported
from ..lineindex import BAD
from ..model import Transcript


def _count(v) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


def _input(tokens: dict) -> tuple[int, int]:
    """(every input token, the cached ones among them) of a message's ``metrics.tokens``."""
    prompt, cached = _count(tokens.get("prompt")) or 0, _count(tokens.get("cached")) or 0
    return (prompt + cached if cached > prompt else prompt), cached


def message_usage(t: Transcript, entries: list[int]) -> int | None:
    """Every input token plus ``completion`` of the message an assistant view message was made of."""
    for i in reversed(entries):
        if i < 0:
            continue
        metrics = t.entry(i).get("metrics")
        tokens = metrics.get("tokens") if isinstance(metrics, dict) else None
        if not isinstance(tokens, dict):
            continue
        prompt, completion = _count(tokens.get("prompt")), _count(tokens.get("completion"))
        if prompt is not None or completion is not None:
            return _input(tokens)[0] + (completion or 0)
    return None


def recorded_settings(t: Transcript) -> RecordedSettings:
    """The model the task ran with: the newest message's ``modelInfo.modelId`` (Cline), else the newest
    ``model_usage`` entry of the ``task_metadata.json`` beside the history (``model_id``; cline/cline
    ``src/core/context/context-tracking/ContextTrackerTypes.ts``), when there is one."""
    for i in range(t.n_entries - 1, -1, -1):
        if i in t.removed or i < t.n_lines and t.lines.flags[i] & BAD:
            continue
        info = t.entry(i).get("modelInfo")
        if isinstance(info, dict) and isinstance(info.get("modelId"), str) and info["modelId"]:
            return RecordedSettings(model=info["modelId"], model_source="message modelInfo")
    path = t.source.path
    meta = path.parent / "task_metadata.json" if path is not None else None
    try:
        data = parse_json(meta.read_bytes()) if meta is not None and meta.is_file() else None
    except (OSError, ValueError):
        data = None
    usage = data.get("model_usage") if isinstance(data, dict) else None
    for entry in reversed(usage if isinstance(usage, list) else []):
        if isinstance(entry, dict) and isinstance(entry.get("model_id"), str) and entry["model_id"]:
            return RecordedSettings(model=entry["model_id"], model_source="task_metadata.json")
    return RecordedSettings()


def request_usage(t: Transcript, entries: list[int]) -> RequestUsage | None:
    """The message's ``metrics.tokens`` (every input token, ``cached``, ``completion``) and its
    ``modelInfo.modelId``."""
    for i in reversed(entries):
        d = t.entry(i)
        metrics = d.get("metrics")
        tokens = metrics.get("tokens") if isinstance(metrics, dict) else None
        if isinstance(tokens, dict):
            total, cached = _input(tokens)
            info = d.get("modelInfo") if isinstance(d.get("modelInfo"), dict) else {}
            model = info.get("modelId") if isinstance(info.get("modelId"), str) else None
            return RequestUsage(input_tokens=total - cached, cache_read_input_tokens=cached,
                                output_tokens=reported(tokens.get("completion")), model=model)
    return None


def replace_usage(entry: dict, usage: RequestUsage) -> bool:
    """A message's ``metrics.tokens`` report ``usage``'s input (``prompt``, the cached ones included,
    ``cached`` the cache reads); ``completion`` and ``cost`` kept."""
    metrics = entry.get("metrics")
    tokens = metrics.get("tokens") if isinstance(metrics, dict) else None
    if entry.get("role") != "assistant" or not isinstance(tokens, dict):
        return False
    held = usage.prompt_tokens
    metrics["tokens"] = {**tokens, "prompt": held, "cached": usage.cache_read_input_tokens}
    return True


USAGE_WRITER = UsageWriter(b'"tokens"', replace_usage)
