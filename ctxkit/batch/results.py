"""What one file's run gave, and what a whole batch comes to: statuses, totals, the exit code."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import ExitCode

# a status per exit code, in the words of the summary table and the JSON report
STATUS = {
    ExitCode.OK: "ok",
    ExitCode.CHECK_FAILED: "check-failed",
    ExitCode.USAGE: "error",
    ExitCode.BAD_TRANSCRIPT: "bad-transcript",
    ExitCode.INTERNAL: "internal-error",
}

# the most severe first: a bug, then a problem the user must fix (a store or an output that cannot be
# written), then a transcript that cannot be read, then a failed check
SEVERITY = (ExitCode.INTERNAL, ExitCode.USAGE, ExitCode.BAD_TRANSCRIPT, ExitCode.CHECK_FAILED, ExitCode.OK)


@dataclass
class FileResult:
    """One file's run of a command: what it printed and how it exited.

    ``stdout`` is the command's data (bytes, as it wrote them); ``stderr`` its diagnostics. The figures
    the CLI reads out of them (tokens before and after...) go in ``figures``."""

    index: int
    source: str
    output: str | None
    exit_code: int
    stdout: bytes = b""
    stderr: str = ""
    seconds: float = 0.0
    size: int = 0
    figures: dict[str, Any] = field(default_factory=dict)

    @property
    def status(self) -> str:
        return status_of(self.exit_code)


def status_of(code: int) -> str:
    try:
        return STATUS[ExitCode(code)]
    except ValueError:
        return "internal-error"


def most_severe(codes) -> int:
    """The batch's exit code: 4 if any run hit a bug, else 2 if any had a usage/store/write problem,
    else 3 if any transcript was bad, else 1 if any check failed, else 0."""
    present = {int(c) for c in codes}
    for code in SEVERITY:
        if int(code) in present:
            return int(code)
    return int(ExitCode.INTERNAL) if present else int(ExitCode.OK)


def totals(results: list[FileResult], seconds: float) -> dict[str, Any]:
    """The figures of the summary table and of the last line of ``--report json``."""
    by_status: dict[str, dict[str, int]] = {}
    for r in results:
        row = by_status.setdefault(r.status, {"files": 0, "bytes": 0, "tokens_before": 0, "tokens_after": 0})
        row["files"] += 1
        row["bytes"] += r.size
        row["tokens_before"] += int(r.figures.get("tokens_before") or 0)
        row["tokens_after"] += int(r.figures.get("tokens_after") or 0)
    order = [STATUS[c] for c in reversed(SEVERITY)]
    by_status = {s: by_status[s] for s in order if s in by_status}
    return {
        "files": len(results),
        "bytes": sum(r.size for r in results),
        "tokens_before": sum(row["tokens_before"] for row in by_status.values()),
        "tokens_after": sum(row["tokens_after"] for row in by_status.values()),
        "by_status": by_status,
        "seconds": round(seconds, 3),
        "exit_code": most_severe(r.exit_code for r in results),
    }
