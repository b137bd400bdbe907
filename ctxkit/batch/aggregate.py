"""``ctxkit stats`` over many sessions: where a fleet's tokens go, and how its views sit against the thresholds.

Each session's figures are those of ``ctxkit stats FILE --json``; this folds them into one document
(the same keys where they add up, so a table of one session reads like a table of many):

- ``sessions``, ``messages``, ``tokens`` (the views' total), ``tokens_after`` (what the policy's
  stages would leave);
- ``by_role``, ``by_kind``, ``by_block``, ``by_tool``: summed over the sessions, largest first;
- ``levels``: how many sessions are at each level (ok, warning, autocompact, blocking);
- ``view_tokens``: the distribution of view sizes (min, median, 90th and 99th percentile, max, mean);
- ``share_of_autocompact``: how many views are within each quarter of their autocompact threshold,
  and over it;
- ``stages``: per stage id, how many sessions got each action, and the tokens it would free;
- ``refused``: how many sessions ``ctxkit compact`` would refuse before any work (exit 2: the policy's
  thresholds do not fit the window, or sit below the session's system prompt and tools); no stage is
  counted for them;
- ``largest``: the ten largest views, with their files.

Everything is summed in the batch's input order, so the document is the same whatever engine ran it.
"""
from __future__ import annotations

from typing import Any

LEVELS = ("ok", "warning", "autocompact", "blocking")
SHARES = (("0-25%", 0.25), ("25-50%", 0.5), ("50-75%", 0.75), ("75-100%", 1.0))
OVER = "100%+"
LARGEST = 10


def _sum_into(total: dict[str, int], part: dict[str, Any]) -> None:
    for key, n in part.items():
        total[key] = total.get(key, 0) + int(n)


def _largest_first(d: dict[str, int]) -> dict[str, int]:
    return dict(sorted(d.items(), key=lambda kv: (-kv[1], kv[0])))


def _percentile(sorted_values: list[int], q: float) -> int:
    """Nearest-rank percentile: a value some session really has."""
    if not sorted_values:
        return 0
    rank = max(1, -(-len(sorted_values) * q // 100))
    return sorted_values[int(rank) - 1]


def aggregate_stats(sessions: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """One document for many ``(file, stats)`` pairs, in the order given."""
    by: dict[str, dict[str, int]] = {key: {} for key in ("by_role", "by_kind", "by_block", "by_tool")}
    levels = {level: 0 for level in LEVELS}
    shares = {name: 0 for name, _ in SHARES} | {OVER: 0}
    stages: dict[str, dict[str, Any]] = {}
    sizes: list[int] = []
    estimators: list[str] = []
    messages = tokens_after = 0
    for _file, s in sessions:
        messages += int(s.get("messages", 0))
        tokens = int(s.get("tokens", 0))
        sizes.append(tokens)
        tokens_after += int(s.get("tokens_after", tokens))
        if s.get("estimator") not in estimators:
            estimators.append(s.get("estimator"))
        for key in by:
            _sum_into(by[key], s.get(key) or {})
        levels[s.get("level", "ok")] = levels.get(s.get("level", "ok"), 0) + 1
        threshold = (s.get("budget") or {}).get("autocompact_threshold") or 0
        share = tokens / threshold if threshold else float("inf")
        shares[next((name for name, top in SHARES if share < top), OVER)] += 1
        for stage in s.get("stages") or []:
            row = stages.setdefault(stage["id"], {"actions": {}, "tokens_freed": 0})
            row["actions"][stage["action"]] = row["actions"].get(stage["action"], 0) + 1
            row["tokens_freed"] += int(stage.get("tokens_freed") or 0)
    ordered = sorted(sizes)
    largest = sorted(((s.get("tokens", 0), f) for f, s in sessions), key=lambda x: (-x[0], x[1]))[:LARGEST]
    return {
        "sessions": len(sessions),
        "messages": messages,
        "tokens": sum(sizes),
        "tokens_after": tokens_after,
        "estimator": ", ".join(str(e) for e in estimators),
        "levels": levels,
        "view_tokens": {"min": ordered[0] if ordered else 0, "p50": _percentile(ordered, 50),
                        "p90": _percentile(ordered, 90), "p99": _percentile(ordered, 99),
                        "max": ordered[-1] if ordered else 0,
                        "mean": round(sum(sizes) / len(sizes)) if sizes else 0},
        "share_of_autocompact": shares,
        **{key: _largest_first(value) for key, value in by.items()},
        "refused": sum(1 for _, s in sessions if s.get("refused")),
        "stages": {sid: {"actions": dict(sorted(row["actions"].items())), "tokens_freed": row["tokens_freed"]}
                   for sid, row in stages.items()},
        "largest": [{"file": f, "tokens": t} for t, f in largest],
    }
