"""``ctxkit doctor``: what in a session would make the agent's next request fail, or its resume fail or crawl.

Each finding names the 1-based line where the breakage is, the problem, what the API (or the agent)
would answer, and the fix ``doctor --fix`` makes, in the words of its row of the table of the API's
rules and limits (:mod:`ctxkit.api_rules`). The problems are found where the repairs that mend them
live (:func:`ctxkit.stages.repair.problems.find_problems`: a policy can run the repairs without this
report); this module adds what only a report needs: whether the agent can still send or compact the
view (against the policy's window), and bloat: bytes the agent reads on ``--resume`` and never sends
(harness-only ``toolUseResult`` copies, ``file-history-snapshot`` lines, history behind the last
compact boundary; what ``--slim`` would move to the store), as notes.

Severity ``error`` findings make ``ctxkit doctor`` exit 1; notes are reported only. Nothing here changes
the transcript: the repairs are stages (:mod:`ctxkit.stages.repair`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..api_rules import Rule, rule
from ..stages.repair.problems import Problem, find_problems, line_of
from ..transcript.model import Transcript
from ..transcript.view import View


@dataclass(frozen=True)
class Finding:
    """One problem, at the 1-based line where it is (a whole-file note: the first line it is about; never 0)."""

    line: int
    rule: str
    severity: str  # "error" (the next request or the resume fails) | "note"
    problem: str
    api_error: str
    fix: str

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "problem": self.problem, "api_error": self.api_error, "fix": self.fix,
                "rule": self.rule, "severity": self.severity}


@dataclass
class Diagnosis:
    """Every finding of one session, in line order, and the bytes ``--slim`` would move to the store."""

    findings: list[Finding]
    size: int
    slim_bytes: int = 0

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    def to_json(self) -> dict[str, Any]:
        return {"findings": [f.to_json() for f in self.findings], "bytes": self.size,
                "slim_would_save": self.slim_bytes}


def _finding(r: Rule, line: int, **values: Any) -> Finding:
    return Finding(line, r.id, r.severity, r.render("problem", **values), r.render("api_error", **values),
                   r.render("fix", **values))


def finding(p: Problem) -> Finding:
    """A problem of :func:`ctxkit.stages.repair.problems.find_problems`, in the words of its row of the table."""
    if p.rule == "interrupted-turn":
        return Finding(p.line, p.rule, "note", f"the session ends with tool_use {p.values['ids']} unanswered (a turn "
                       "in progress, or cut off at the end)", "",
                       "none needed: the agent answers it as interrupted when it resumes")
    r = rule(p.rule)
    return Finding(p.line, r.id, r.severity, r.render("problem", **p.values), r.render("api_error", **p.values),
                   r.render("fix", **p.values))


def diagnose(t: Transcript, *, view_tokens: int | None = None, context_window: int | None = None,
             effective_window: int | None = None) -> Diagnosis:
    """Every finding of transcript ``t`` (read with ``check_pairing=False``, ``on_bad_line="skip"``).

    ``view_tokens`` and the windows, when given, check that the agent can still send or compact the view."""
    found = [finding(p) for p in _problems(t)]
    view = t.view()
    if view_tokens is not None and context_window is not None and effective_window is not None \
            and view_tokens > effective_window:
        found.append(_finding(rule("prompt-too-long"), _last_line(t, view), tokens=f"{view_tokens:,}",
                              limit=f"{effective_window:,}", window=f"{context_window:,}"))
    slim = 0
    if t.format == "claude-code":
        bloat, slim = _bloat(t, view)
        found += bloat
    found = [f if f.line > 0 else Finding(1, f.rule, f.severity, f.problem, f.api_error, f.fix) for f in found]
    found.sort(key=lambda f: (f.line, f.severity != "error"))
    return Diagnosis(found, t.lines.end, slim)


def _problems(t: Transcript) -> list[Problem]:
    """The problems of ``t``, and those its relinked chain brings to light (what the agent resumes once a lost
    line's successor is linked again, e.g. the unanswered call of a lost result's line): ``--fix`` repairs
    both, so both are reported before it."""
    from ..stages.repair.stage import relinked

    found = find_problems(t)
    whole = relinked(t, found) if t.format == "claude-code" else None
    if whole is not None:
        seen = {(p.rule, p.line) for p in found}
        found += [p for p in find_problems(whole) if (p.rule, p.line) not in seen
                  and p.rule not in ("parent-missing", "parent-cycle", "forked-chain")]
        found.sort(key=lambda p: p.line)
    return found


def _last_line(t: Transcript, view: View) -> int:
    for m in reversed(view.messages):
        for i in reversed(m.entries):
            if t.line_no(i):
                return t.line_no(i)
    return t.n_lines


# -- bloat ----------------------------------------------------------------------------------------------
def _bloat(t: Transcript, view: View) -> tuple[list[Finding], int]:
    """Bytes the agent reads on --resume and never sends: the notes, and about what --slim would move (what
    the ``slim`` stage would rewrite: :func:`ctxkit.stages.repair.slim.slim_estimate`)."""
    from ..stages.repair.slim import BEHIND, COPY, SNAPSHOT, slim_estimate

    total = max(1, t.lines.end)
    found = slim_estimate(t)
    saved = {why: found.get(why, (0, 0, None))[1] for why in (BEHIND, SNAPSHOT, COPY)}
    lines = {why: found.get(why, (0, 0, None))[0] for why in (BEHIND, SNAPSHOT, COPY)}
    first_behind = found[BEHIND][2] if BEHIND in found else None

    def first(why: str) -> int:  # the 1-based line of the first line the note is about
        i = found[why][2] if why in found else None
        return i + 1 if isinstance(i, int) else 1
    out = []

    def share(n: int) -> str:
        return f"{100 * n / total:.0f}%"

    if saved[COPY]:
        out.append(_finding(rule("bloat-tool-use-result"), first(COPY), bytes=f"{saved[COPY]:,}", share=share(saved[COPY])))
    if saved[SNAPSHOT]:
        out.append(_finding(rule("bloat-file-history-snapshot"), first(SNAPSHOT), bytes=f"{saved[SNAPSHOT]:,}",
                            lines=lines[SNAPSHOT], share=share(saved[SNAPSHOT])))
    if saved[BEHIND]:
        out.append(_finding(rule("bloat-behind-boundary"), first_behind + 1, bytes=f"{saved[BEHIND]:,}",
                            share=share(saved[BEHIND])))
    big = rule("bloat-oversized-output")
    for m in view.messages:
        for b, ref in zip(m.content, m.refs, strict=False):
            if b.get("type") == "tool_result":
                chars = _chars(b.get("content"))
                if big.max is not None and chars > big.max:
                    out.append(_finding(big, line_of(t, ref, m), chars=f"{chars:,}"))
    return out, sum(saved.values())


def _chars(content: Any) -> int:
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        return sum(len(b.get("text", "")) for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))
    return 0
