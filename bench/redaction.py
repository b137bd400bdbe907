#!/usr/bin/env python3
"""How long secret redaction takes on a history of tool results: this repository's sources, docs and tests,
read as files, up to 3.3 MB (the size docs/security.md quotes). Prints the median of three runs.

    python bench/redaction.py
"""
from __future__ import annotations

import statistics
import time
from pathlib import Path

from ctxkit.summarize.redact import Redactor

ROOT = Path(__file__).resolve().parent.parent
SIZE = 3_300_000


def history() -> tuple[list[dict], int]:
    files = sorted((ROOT / "ctxkit").rglob("*.py")) + sorted((ROOT / "docs").rglob("*.md")) + sorted((ROOT / "tests").glob("*.py"))
    texts = [f.read_text(encoding="utf-8") for f in files]
    messages, size, i = [], 0, 0
    while size < SIZE:
        text = texts[i % len(texts)] + f"\n# copy {i // len(texts)}\n"
        messages.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": "Read",
                                                           "input": {"file_path": str(files[i % len(files)])}}]})
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": text}]})
        size, i = size + len(text), i + 1
    return messages, size


def main() -> None:
    messages, size = history()
    Redactor().text("load the detect-secrets plugins once")
    times = []
    for _ in range(3):
        redactor = Redactor()
        started = time.perf_counter()
        redactor.messages(messages)
        times.append(time.perf_counter() - started)
    print(f"{size / 1e6:.1f} MB in {len(messages)} messages: {statistics.median(times):.2f} s "
          f"(median of 3; {redactor.summary()['secrets']} secrets)")


if __name__ == "__main__":
    main()
