"""What the prompt that starts a Claude Code turn sets for every request of it, and what a change of it
does to the prompt cache: the thinking budget (Claude Code 1.x), the working directory and the model.

**Thinking.** The API keys its cache of the messages on the request's thinking parameters: a request
whose thinking is turned on or off, or given another budget, than the request before reads the tools
and the system prompt from the cache and writes every message again (Anthropic's prompt-caching
documentation, "What invalidates the cache": changes to thinking parameters invalidate the messages,
not the tools or the system prompt). The entries written under the earlier parameters stay in the cache
for their lifetime, so a later request with those parameters again reads them. Claude Code 1.x chose
the budget of a turn from the words of the prompt that started it, as 1.0.98's cli.js does
(:data:`BUDGETS`): the text blocks of the prompt joined with nothing between them, lower-cased, "i think"
and "we think" taken out, then the highest tier any language's word of which is found ("ultrathink",
"think harder", "think very hard" and the like 31,999 tokens; "think hard", "megathink", "think deeply"
10,000; "think" 4,000; none without them). A word marked so must stand alone as a JavaScript regular
expression without the ``u`` flag sees it: ``\\b`` between an ASCII word character (``[A-Za-z0-9_]``) and
anything else, so "thinké" and "思考think" count and "rethink" does not; the Japanese, Chinese and Korean
words count anywhere ("想" alone gives 4,000). A slash command's prompt (a ``<command-name>`` line, the
text it expands to on the meta line after it) has the higher of the two budgets. Only the interactive
REPL's rule is modelled: ``claude -p`` reads the words of the conversation before the prompt, not of
the prompt, and a 1.x transcript does not say which ran. Claude Code 2.x asks for thinking by a setting
(its prompt lines carry ``thinkingMetadata``).

**Working directory.** Claude Code 1.x's system prompt names the directory the session works in, as it
is when a turn starts; every line of the transcript records it (``cwd``). A turn that starts in another
directory than the turn before has another system prompt from that line on: the request reads the
prefix shared with other sessions (the tools and the static system prompt) and writes the session's own
part again; the part written for a directory stays cached for its lifetime. Claude Code 2.x names the
directory it was started in whatever the shell's is now (``4thehalibit/omarchy-backup``, 2.1.97: turns
begun in two other directories read everything), so the rule is 1.x's only. The shared prefix, measured
in the first turn's directory, can hold that directory's part too: where the turns begun elsewhere read
less of it, what they read is its shorter part (:attr:`ctxkit.reports.session_prefix.SharedPrefix.inner`)
and the rest is keyed by the directory as well.

**Model.** The system prompt names the model too ("You are powered by the model named ..."), the one
the turn began with: when Claude Code falls back to another model within a turn ("Claude Opus limit
reached, now using Sonnet 4"), the rest of the turn sends the first model's system prompt to the
second, and the next turn, which names the second, finds its own part of the prefix not cached
(``8bc71cde``: the turn after the fallback read only the 11,459 shared tokens). In a session with no part
shared with other sessions measured (its first request read nothing), the whole overhead is its own
(``95c8727c``, 1.0.90: the turn after its fallback read only its 12,671 tokens of tools, and wrote the rest).

Measured on real 1.0.80-1.0.90 sessions (``SWORDIntel/claude-backups``, docs/simulate.md):
``78b51334``, two "ultrathink" prompts read everything, the next prompt without it read 14,513 of the
28,108 tokens the request before had sent (its tools and system prompt); ``0c45b0a6``, each prompt
after the agent had moved to another directory read only the 11,704 tokens shared with other sessions.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from ..transcript.model import Transcript
from .api_cache import TAIL
from .cache_model import Piece, remade
from .pricing import normalize_model
from .session_prefix import is_context, is_directory_part, warm_count
from .usage import RecordedRequest

#: Claude Code 1.0.98's thinking budgets (cli.js ``xh1``) and the words that set them in each language it
#: reads, the largest first: ``(word, whether it must stand alone)`` as its ``needsWordBoundary`` says
BUDGETS: tuple[tuple[int, tuple[tuple[str, bool], ...]], ...] = (
    (31_999, tuple((w, True) for w in (
        "think harder", "think intensely", "think longer", "think really hard", "think super hard", "think very hard",
        "ultrathink", "piensa más", "piensa mucho", "piensa profundamente", "réfléchis plus", "réfléchis beaucoup",
        "réfléchis profondément", "denk mehr", "denk gründlich", "denk tief", "pensa di più", "pensa a lungo",
        "pensa profondamente", "rifletti a fondo")) + tuple((w, False) for w in (
        "熟考", "深く考えて", "しっかり考えて", "多想一会", "深思", "仔细思考", "더 오래 생각", "깊이 생각", "심사숙고", "곰곰이 생각"))),
    (10_000, tuple((w, True) for w in (
        "think about it", "think a lot", "think deeply", "think hard", "think more", "megathink", "piensa",
        "réfléchis", "denk nach", "denk", "pensa", "pensa molto", "rifletti")) + tuple((w, False) for w in (
        "もっと考えて", "たくさん考えて", "よく考えて", "長考", "多想想", "好好想", "많이 생각", "더 생각", "잘 생각"))),
    (4_000, tuple((w, True) for w in (
        "think", "pienso", "pensando", "pense", "réfléchir", "denke", "nachdenken", "penso", "pensare", "riflettere"))
     + tuple((w, False) for w in ("考えて", "想", "思考", "생각"))),
)
# cli.js tests ``new RegExp(`\\b${word}\\b`)``: no ``u`` flag, so ``\b`` knows ASCII word characters only
_PATTERNS = tuple((budget, tuple(re.compile(rf"\b{w}\b", re.ASCII) if alone else re.compile(w) for w, alone in words))
                  for budget, words in BUDGETS)
#: what a slash command's prompt line holds (its expansion follows as a meta line)
_COMMAND = "<command-name>"


@dataclass(frozen=True)
class TurnSetting:
    """What a turn's prompt set: the thinking budget (0: none), the working directory ("": the first turn's)
    and the model its system prompt names ("": the request's own)."""

    budget: int = 0
    cwd: str = ""
    model: str = ""


def prompt_budget(text: str) -> int:
    """The thinking budget Claude Code 1.x gives a turn whose prompt is ``text`` (its text blocks joined
    with nothing between them)."""
    text = text.lower().replace("i think", "").replace("we think", "")
    return next((budget for budget, patterns in _PATTERNS if any(p.search(text) for p in patterns)), 0)


def _prompt_text(entry: dict) -> str | None:
    """The text of a main-chain user line that is no tool-result carrier and no compact summary (a prompt,
    or a meta line), else None."""
    if entry.get("type") != "user" or entry.get("isSidechain") or entry.get("isCompactSummary"):
        return None
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    if not isinstance(content, list) or any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
        return None
    # (cli.js joins the text blocks with nothing between them: a word split across two is one word)
    return "".join(b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text"
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
    command = False  # whether the prompt is a slash command whose expansion (a meta line) has not come yet
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
        if text is None:
            continue
        if not entry.get("isMeta"):
            setting, model, command = _setting(entry, text), "", _COMMAND in text
        elif command:
            # what a slash command expands to: cli.js gives the turn the higher of its budget and the prompt's
            setting = dataclasses.replace(setting, budget=max(setting.budget, _setting(entry, text).budget))
            command = False
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


def turn_starts(t: Transcript, points: list[RecordedRequest]) -> frozenset[int]:
    """The requests (indexes into ``points``) that begin a turn: a prompt (no meta line, no tool result) was written
    after the response to the request before them (for the first, anywhere before it). Between an answer and
    the next prompt Claude Code may send requests of its own, which no line records; within a turn its tool
    calls leave it none to send (:mod:`ctxkit.reports.cache_events`)."""
    if t.format != "claude-code":
        return frozenset()
    out, k, prompted = set(), 0, False
    for i in t.live_indexes():
        while k < len(points) and points[k].first_entry <= i:
            if prompted:
                out.add(k)
            prompted, k = False, k + 1
        if k == len(points):
            break
        entry = t.peek(i)
        prompted = prompted or (_prompt_text(entry) is not None and not entry.get("isMeta"))
    return frozenset(out)


def with_turn(pieces: list[Piece], setting: TurnSetting, memo: dict) -> list[Piece]:
    """``pieces`` as the cache knows them in a turn of ``setting``: under a thinking budget the messages
    are another prefix, and so is the session's own part of the system prompt in another directory than
    the first turn's (the tools and the part shared with other sessions stay as they are). ``memo``: kept
    across a replay's requests."""
    if not setting.budget and not setting.cwd and not setting.model:
        return pieces
    shared = warm_count(pieces)
    # the session's own part of the overhead, after the shared; with none measured, the overhead is all its own
    # (its tools too: nothing tells where they end), which names the directory and the model all the same
    own = shared if len(pieces) > shared and (shared or setting.cwd or setting.model) else None
    salt = b"thinking%d" % setting.budget
    place = b"cwd" + setting.cwd.encode() + b"model" + setting.model.encode()

    def keyed(p: Piece) -> Piece:
        return p.keyed(salt)

    def moved(p: Piece) -> Piece:
        return p.keyed(place)

    out = []
    for k, p in enumerate(pieces):
        if setting.cwd and is_directory_part(p.digest):
            # the shared prefix beyond its shorter part, as measured in the first turn's directory: that
            # directory's part of the system prompt (SharedPrefix.inner)
            p = remade(memo, p, ("shared-cwd", setting.cwd), moved)
        elif k == own:
            # the session's own part: its system prompt (another in another directory) and the context
            # Claude Code adds to the first message (a message: keyed on the thinking too), or where reads showed
            # where the system prompt ends, the system prompt's part only (the context the piece after it)
            split = k + 1 < len(pieces) and is_context(pieces[k + 1].digest)
            p = remade(memo, p, ("cwd", setting.cwd, setting.model), moved) if setting.cwd or setting.model else p
            p = remade(memo, p, ("own", setting.budget), keyed) if setting.budget and shared and not split else p
        elif own is not None and k == own + 1 and is_context(p.digest):
            p = remade(memo, p, ("own", setting.budget), keyed) if setting.budget else p
        elif not p.lead and setting.budget and p.digest != TAIL:  # (the uncached tail: no message, see with_rewrites)
            p = remade(memo, p, setting.budget, keyed)
        out.append(p)
    return out
