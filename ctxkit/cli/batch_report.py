"""What a batch says on stderr while it runs and at its end: progress, problems, the JSON report, the summary.

- **Progress**: a rich bar (files and bytes done, rate, time left) while stderr is a terminal; never
  in a pipe or a log file.
- **Problems**: each file's ``ctxkit: error: ...`` and warnings, naming the file, as the file
  finishes; a warning that many files share is printed for the first and counted at the end.
- ``--report json``: one JSON object per file as it finishes (file, output, status, exit code,
  bytes, seconds, tokens before and after, its messages), then ``{"totals": ...}``; on stderr, or in
  ``--report-file``.
- **Summary** (text): a table per status, files, bytes and tokens before/after, and the totals.
"""
from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any

from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)
from rich.table import Table

from ..batch.inputs import Item, is_url
from ..batch.results import FileResult
from .app import rich_stderr_console

if TYPE_CHECKING:
    from .batch_cli import BatchCommand


def _size(item: Item) -> int:
    if is_url(item.source):
        return 0
    try:
        return os.path.getsize(item.source)
    except OSError:
        return 0


class Reporter:
    """Receives each file's result as it finishes (in the command's process) and says so."""

    def __init__(self, command: BatchCommand, params: dict[str, Any], items: list[Item], report_file: Any):
        self.command = command
        self.mode = params.get("batch_report") or params.get("report") or "text"
        if self.mode not in ("text", "json", "none"):
            self.mode = "text"
        self.report_file = report_file
        self.items = items
        self.results: list[FileResult] = []
        self.console = rich_stderr_console()
        self.warned: dict[str, int] = {}
        self.progress: Progress | None = None
        self._task = None

    def start(self) -> None:
        if not sys.stderr.isatty():
            return
        sizes = [_size(i) for i in self.items]
        by_bytes = all(sizes) and sum(sizes) > 0
        self.progress = Progress(
            TextColumn("{task.description}"), BarColumn(),
            TextColumn("{task.fields[files]}/{task.fields[total_files]} files"),
            *((DownloadColumn(), TransferSpeedColumn()) if by_bytes else ()), TimeRemainingColumn(),
            console=self.console, transient=True)
        self._task = self.progress.add_task(f"ctxkit {self.command.name}",
                                            total=sum(sizes) if by_bytes else len(self.items),
                                            files=0, total_files=len(self.items))
        self._by_bytes = by_bytes
        self.progress.start()

    def stop(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None

    def _say(self, line: str) -> None:
        (self.progress.console if self.progress else self.console).print(line, markup=False)

    def add(self, result: FileResult) -> None:
        result.figures = self.command.figures(result)
        self.results.append(result)
        if self.mode == "json" or self.report_file is not None:
            self._json(self._per_file(result))
        if self.mode != "json":
            for line in diagnostics(result):
                if line.startswith("ctxkit: warning: "):
                    text = line.split(": ", 3)[-1]
                    self.warned[text] = self.warned.get(text, 0) + 1
                    if self.warned[text] > 1:
                        continue
                self._say(line)
        if self.progress is not None:
            self.progress.update(self._task, advance=result.size if self._by_bytes else 1,
                                 files=len(self.results))

    def _per_file(self, r: FileResult) -> dict[str, Any]:
        doc = {"file": r.source, "output": r.output, "status": r.status, "exit_code": r.exit_code,
               "bytes": r.size, "seconds": round(r.seconds, 3)}
        doc.update({k: v for k, v in r.figures.items() if not k.startswith("_")})
        doc["messages"] = diagnostics(r)
        return doc

    def _json(self, doc: dict[str, Any]) -> None:
        line = json.dumps(doc, ensure_ascii=False)
        if self.report_file is not None:
            self.report_file.write(line.encode("utf-8") + b"\n")
        else:
            self._say(line)

    def finish(self, summary: dict[str, Any]) -> None:
        if self.mode == "json" or self.report_file is not None:
            self._json({"totals": summary})
        if self.mode == "json" or self.mode == "none":
            return
        for text, n in self.warned.items():
            if n > 1:
                self.console.print(f"ctxkit: warning: {n - 1} more file(s): {text}", markup=False)
        table = Table(title=f"ctxkit {self.command.name}: {summary['files']} file(s) in {summary['seconds']:.1f} s")
        for col in ("status", "files", "bytes", "tokens before", "tokens after"):
            table.add_column(col, justify="left" if col == "status" else "right")
        for status, row in summary["by_status"].items():
            table.add_row(status, f"{row['files']:,}", f"{row['bytes']:,}", f"{row['tokens_before']:,}",
                          f"{row['tokens_after']:,}")
        table.add_row("total", f"{summary['files']:,}", f"{summary['bytes']:,}", f"{summary['tokens_before']:,}",
                      f"{summary['tokens_after']:,}")
        self.console.print(table)


def diagnostics(result: FileResult) -> list[str]:
    """A file's ``ctxkit: LEVEL: ...`` lines, each naming the file (inserted when the message does not)."""
    lines = []
    for line in result.stderr.splitlines():
        if not line.startswith("ctxkit: "):
            continue
        head, _, message = line[len("ctxkit: "):].partition(": ")
        if not message:
            head, message = "note", line[len("ctxkit: "):]
        if not message.startswith(result.source):
            message = f"{result.source}: {message}"
        lines.append(f"ctxkit: {head}: {message}")
    return lines
