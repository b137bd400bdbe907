"""Claude Code's prompt-too-long retry: when the summarizer cannot take the history, drop the
oldest API rounds (by the overflow the error names, else a fifth) and ask again."""
from __future__ import annotations

import math
from typing import Any

from ...errors import LLMError

#: The synthetic first message of a summarizing request whose oldest rounds were dropped.

#: The user message put first in a truncated retry (the API wants a user message first).
PTL_RETRY_MARKER = "[earlier conversation truncated for compaction retry]"

# -- prompt-too-long retry ------------------------------------------------------------------------------
def group_by_round(messages: list[dict]) -> list[list[dict]]:
    """API rounds: each assistant message starts a group that holds the user messages after it
    (its tool results, then any prompt); what comes before the first assistant message is group 0."""
    groups: list[list[dict]] = []
    for m in messages:
        if m.get("role") == "assistant" or not groups:
            groups.append([m])
        else:
            groups[-1].append(m)
    return groups


def truncate_for_retry(messages: list[dict], overflow_tokens: int | None, count, drop_fraction: float = 0.2
                       ) -> tuple[list[dict], int] | None:
    """The summarizing request's messages with the oldest rounds dropped, and how many were dropped.

    Drops enough rounds to cover ``overflow_tokens`` when known, else
    ``drop_fraction`` of them (at least one); always leaves one. A first
    message that is not the user's gets the synthetic marker in front. None
    when there is nothing left to drop.
    """
    if messages and messages[0].get("role") == "user" and messages[0].get("content") == PTL_RETRY_MARKER:
        messages = messages[1:]
    groups = group_by_round(messages)
    if len(groups) < 2:
        return None
    if overflow_tokens:
        drop, freed = 0, 0
        while drop < len(groups) - 1 and freed < overflow_tokens:
            freed += count(groups[drop])
            drop += 1
    else:
        drop = max(1, math.floor(len(groups) * drop_fraction))
    drop = min(drop, len(groups) - 1)
    rest = [m for g in groups[drop:] for m in g]
    if rest[0].get("role") != "user":
        rest = [{"role": "user", "content": PTL_RETRY_MARKER}, *rest]
    return rest, drop


def summarize_with_retry(summarizer: Any, messages: list[dict], *, instructions: str | None, count,
                         max_retries: int = 3, drop_fraction: float = 0.2) -> tuple[str, dict[str, Any]]:
    """The summary of ``messages``, retrying a prompt-too-long error on fewer, newer rounds."""
    attempt, dropped = 0, 0
    current = messages
    while True:
        try:
            summary = summarizer.summarize(current, instructions=instructions)
            return summary, {"ptl_retries": attempt, "dropped_rounds": dropped}
        except LLMError as exc:
            if not exc.prompt_too_long or attempt >= max_retries:
                if exc.prompt_too_long:
                    raise LLMError(f"{exc.message} (still too long after dropping the {dropped} oldest rounds in "
                                   f"{attempt} retries)", prompt_too_long=True) from exc
                raise
            cut = truncate_for_retry(current, exc.overflow_tokens, count, drop_fraction)
            if cut is None:
                raise LLMError(f"{exc.message} (nothing older left to drop)", prompt_too_long=True) from exc
            current, n = cut
            dropped += n
            attempt += 1
