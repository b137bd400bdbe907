"""What the genuine-agent resume tests share: a session the agent recorded, named by `stats` as its
format and compacted in place as a user would between two runs of the agent."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def compact_in_place(session: Path, fmt: str, store: Path) -> None:
    """Check ``stats`` names ``fmt``, then ``compact --force -p no-llm`` onto the file itself: the compaction
    is applied and the agent's own lines stay as they were, the new ones appended."""
    before = session.read_bytes()
    stats = subprocess.run([sys.executable, "-m", "ctxkit.cli.main", "stats", "--json", str(session)],
                           capture_output=True, text=True, timeout=120)
    assert json.loads(stats.stdout)["format"] == fmt
    done = subprocess.run([sys.executable, "-m", "ctxkit.cli.main", "compact", "--force", "-p", "no-llm", "--store",
                           str(store), str(session), "-o", str(session)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "autocompact: applied" in done.stderr, done.stderr
    assert session.read_bytes().startswith(before)
