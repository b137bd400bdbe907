"""What the prompt that starts a Claude Code turn sets for every request of it, and what a change of it
does to the prompt cache: the thinking budget (Claude Code 1.x), the working directory and the model.

**Thinking.** The API keys its cache of the messages on the request's thinking parameters: a request
whose thinking is turned on or off, or given another budget, than the request before reads the tools
and the system prompt from the cache and writes every message again (Anthropic's prompt-caching
documentation, "What invalidates the cache": changes to thinking parameters invalidate the messages,
not the tools or the system prompt). The entries written under the earlier parameters stay in the cache
for their lifetime, so a later request with those parameters again reads them. Claude Code 1.x chose
the budget of a turn from the words of the prompt that started it: "ultrathink", "think harder",
"think very hard" and the like 31,999 tokens; "think hard", "megathink", "think deeply", "think more"
10,000; "think" 4,000; none without them ("I think" and "we think" do not count). Claude Code 2.x asks
for thinking by a setting (its prompt lines carry ``thinkingMetadata``); only the 1.x rule is modelled,
and only its English words (1.x also reads a few in other languages).

**Working directory.** Claude Code 1.x's system prompt names the directory the session works in, as it
is when a turn starts; every line of the transcript records it (``cwd``). A turn that starts in another
directory than the turn before has another system prompt from that line on: the request reads the
prefix shared with other sessions (the tools and the static system prompt) and writes the session's own
part again; the part written for a directory stays cached for its lifetime. Claude Code 2.x names the
directory it was started in whatever the shell's is now (``4thehalibit/omarchy-backup``, 2.1.97: turns
begun in two other directories read everything), so the rule is 1.x's only.

**Model.** The system prompt names the model too ("You are powered by the model named ..."), the one
the turn began with: when Claude Code falls back to another model within a turn ("Claude Opus limit
reached, now using Sonnet 4"), the rest of the turn sends the first model's system prompt to the
second, and the next turn, which names the second, finds its own part of the prefix not cached
(``8bc71cde``: the turn after the fallback read only the 11,459 shared tokens).

Measured on real 1.0.80-1.0.90 sessions (``SWORDIntel/claude-backups``, docs/simulate.md):
``78b51334``, two "ultrathink" prompts read everything, the next prompt without it read 14,513 of the
28,108 tokens the request before had sent (its tools and system prompt); ``0c45b0a6``, each prompt
after the agent had moved to another directory read only the 11,704 tokens shared with other sessions.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..transcript.model import Transcript
from .cache_model import Piece, remade
from .pricing import normalize_model
from .session_prefix import WARM
from .usage import RecordedRequest

#: Claude Code 1.x's thinking budgets by the English words of a prompt, the largest first
BUDGETS: tuple[tuple[int, tuple[str, ...]], ...] = (
    (31_999, ("think harder", "think intensely", "think longer", "think really hard", "think super hard",
              "think very hard", "ultrathink")),
    (10_000, ("think about it", "think a lot", "think deeply", "think hard", "think more", "megathink")),
    (4_000, ("think",)),
)
_PATTERNS = tuple((budget, re.compile("|".join(rf"\b{re.escape(w)}\b" for w in words))) for budget, words in BUDGETS)


@dataclass(frozen=True)
class TurnSetting:
    """What a turn's prompt set: the thinking budget (0: none), the working directory ("": the first turn's)
    and the model its system prompt names ("": the request's own)."""

    budget: int = 0
    cwd: str = ""
    model: str = ""


def prompt_budget(text: str) -> int:
    """The thinking budget Claude Code 1.x gives a turn whose prompt is ``text``."""
    text = text.lower().replace("i think", "").replace("we think", "")
    return next((budget for budget, pattern in _PATTERNS if pattern.search(text)), 0)


def _prompt_text(entry: dict) -> str | None:
    """The text of a main-chain user line that starts a turn (not a tool-result carrier), else None."""
    if entry.get("type") != "user" or entry.get("isSidechain") or entry.get("isMeta") or entry.get("isCompactSummary"):
        return None
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    if not isinstance(content, list) or any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
        return None
    return " ".join(b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text"
                    and isinstance(b.get("text"), str))


def _setting(entry: dict, text: str) -> TurnSetting:
    version = entry.get("version")
    old = isinstance(version, str) and version.startswith("1.")  # (Claude Code 1.x)
    keywords = old and "thinkingMetadata" not in entry
    cwd = entry.get("cwd") if old else None
    return TurnSetting(prompt_budget(text) if keywords else 0, cwd if isinstance(cwd, str) else "")


def turn_settings(t: Transcript, points: list[RecordedRequest]) -> list[TurnSetting]:
    """For each request (``points``, in order), the setting of the turn it belongs to: that of the last
    prompt written before it (a blank setting before any, and for every request of another agent's file)."""
    if t.format != "claude-code":
        return [TurnSetting()] * len(points)
    out: list[TurnSetting] = []
    turn_model: list[str] = []
    setting, model, k = TurnSetting(), "", 0
    for i in t.live_indexes():
        while k < len(points) and points[k].first_entry <= i:
            model = model or points[k].model  # the turn's first request: the model its system prompt names
            out.append(setting)
            turn_model.append(model)
            k += 1
        if k == len(points):
            break
        entry = t.peek(i)
        text = _prompt_text(entry)
        if text is not None:
            setting, model = _setting(entry, text), ""
    for point in points[len(out):]:
        model = model or point.model
        out.append(setting)
        turn_model.append(model)
    first = next((s.cwd for s in out if s.cwd), "")
    # the first turn's directory is the one the session's own prefix was estimated with: its pieces as they are;
    # a request to the model its turn began with finds that model's own system prompt: its pieces as they are
    return [TurnSetting(s.budget, "" if s.cwd == first else s.cwd,
                        m if normalize_model(m) != normalize_model(p.model) else "")
            for s, m, p in zip(out, turn_model, points, strict=True)]


def with_turn(pieces: list[Piece], setting: TurnSetting, memo: dict) -> list[Piece]:
    """``pieces`` as the cache knows them in a turn of ``setting``: under a thinking budget the messages
    are another prefix, and so is the session's own part of the system prompt in another directory than
    the first turn's (the tools and the part shared with other sessions stay as they are). ``memo``: kept
    across a replay's requests."""
    if not setting.budget and not setting.cwd and not setting.model:
        return pieces
    shared = bool(pieces) and pieces[0].digest == WARM
    own = 1 if shared and len(pieces) > 1 else None  # the session's own part of the overhead, after the shared one
    salt = b"thinking%d" % setting.budget
    place = b"cwd" + setting.cwd.encode() + b"model" + setting.model.encode()

    def keyed(p: Piece) -> Piece:
        return p.keyed(salt)

    def moved(p: Piece) -> Piece:
        return p.keyed(place)

    out = []
    for k, p in enumerate(pieces):
        if k == own:
            # the session's own part: its system prompt (another in another directory) and the context
            # Claude Code adds to the first message (a message: keyed on the thinking too)
            p = remade(memo, p, ("cwd", setting.cwd, setting.model), moved) if setting.cwd or setting.model else p
            p = remade(memo, p, ("own", setting.budget), keyed) if setting.budget else p
        elif not p.lead and setting.budget:
            p = remade(memo, p, setting.budget, keyed)
        out.append(p)
    return out
