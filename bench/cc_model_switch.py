#!/usr/bin/env python3
"""What the genuine Claude Code CLI sends each model, after a change of model and on a first run, against
what ``ctxkit view --to anthropic-request`` builds at the same point of the session.

    nice python bench/cc_model_switch.py OUT_DIR            # record, then compare
    nice python bench/cc_model_switch.py --compare OUT_DIR  # compare sessions recorded before

Why: the request for a session whose model changed (``--resume ID --model M``, ``/model``, a fallback)
must carry what Claude Code sends M (issue 27): its thinking (adaptive or a budget), its effort, its
``max_tokens``. How: ``record_cc_sessions.py`` runs the CLI (2.1.328 by default, ``CC_VERSION``) against
the stand-in on loopback for each scenario of :data:`SCENARIOS` (a first run, then a run resumed with
``--model``; or one run with ``--model``); then each session is cut before each of its ``api-request``
entries and the model-dependent fields of ctxkit's request (:data:`FIELDS`) are compared with the body
the CLI sent there. Prints each request that differs and ``N/M requests: model-dependent fields equal``.
Nothing recorded is committed (docs/formats.md, "After a change of model", has the figures).
"""
from __future__ import annotations

import gzip
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIELDS = ("model", "max_tokens", "thinking", "output_config", "context_management")
#: name -> the ``args`` of each run (every run after the first resumes the session)
SCENARIOS: dict[str, list[list[str]]] = {
    **{f"switch-{m}": [[], ["--model", m]] for m in (
        "claude-haiku-4-5", "claude-sonnet-4-5", "claude-sonnet-4-6", "claude-opus-4-5", "claude-opus-4-6",
        "claude-opus-4-8", "claude-sonnet-5", "claude-sonnet-5-5", "claude-opus-5-5")},
    "haiku-4-5-to-opus-5-5": [["--model", "claude-haiku-4-5"], ["--model", "claude-opus-5-5"]],
    "sonnet-4-5-to-opus-4-5": [["--model", "claude-sonnet-4-5"], ["--model", "claude-opus-4-5"]],
    **{f"fresh-{m}": [["--model", m]] for m in (
        "claude-3-5-sonnet", "claude-3-7-sonnet", "claude-haiku-4-5", "claude-haiku-5-5", "claude-sonnet-4-5",
        "claude-sonnet-4-6", "claude-sonnet-5", "claude-sonnet-5-5", "claude-opus-4-5", "claude-opus-4-6",
        "claude-opus-4-7", "claude-opus-5-5", "claude-fable-5", "claude-mythos-5", "claude-opus-9-9")},
    # an effort chosen by --effort is the run's: the next run on another model sends that model's default
    "effort": [["--effort", "high"], ["--model", "claude-sonnet-5-5"], ["--model", "claude-opus-4-6", "--effort", "low"],
               ["--model", "claude-haiku-4-5", "--effort", "low"]],
}


def write_scenarios(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, runs in SCENARIOS.items():
        doc = {"runs": [{"prompt": f"Say hello ({k + 1})", "steps": [{"blocks": [{"type": "text", "text": "Hello."}]}],
                         **({"args": args} if args else {})} for k, args in enumerate(runs)]}
        (folder / f"{name}.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")


def sent_bodies(session: Path) -> list[dict]:
    """The bodies the CLI sent the model, oldest first (no token counts, no compaction requests: none here)."""
    with gzip.open(session / "requests.jsonl.gz", "rt", encoding="utf-8") as f:
        return [row["body"] for row in map(json.loads, f) if "count_tokens" not in row.get("path", "")]


def compare(out: Path) -> tuple[int, int]:
    """(requests whose fields are equal, requests) over every session under ``out``."""
    equal = total = 0
    for session in sorted(p for p in out.iterdir() if (p / "session.jsonl").exists()):
        lines = (session / "session.jsonl").read_bytes().splitlines(keepends=True)
        cuts = [i for i, line in enumerate(lines) if json.loads(line).get("type") == "api-request"]
        bodies = sent_bodies(session)
        if len(bodies) != len(cuts):
            print(f"{session.name}: {len(bodies)} bodies sent, {len(cuts)} recorded: left out")
            continue
        for k, (cut, sent) in enumerate(zip(cuts, bodies, strict=True)):
            with tempfile.NamedTemporaryFile("wb", suffix=".jsonl") as f:
                f.write(b"".join(lines[:cut]))
                f.flush()
                done = subprocess.run([sys.executable, "-c", "from ctxkit.cli.main import run; run()", "view", "--to",
                                       "anthropic-request", "--now", json.loads(lines[cut])["timestamp"], f.name],
                                      capture_output=True, text=True)
            total += 1
            if done.returncode != 0:
                print(f"{session.name} request {k}: exit {done.returncode}: {done.stderr[-300:]}")
                continue
            body = json.loads(done.stdout.splitlines()[0])
            differ = {x: {"ctxkit": body.get(x), "sent": sent.get(x)} for x in FIELDS if body.get(x) != sent.get(x)}
            if differ:
                print(f"{session.name} request {k}: {json.dumps(differ)}")
            else:
                equal += 1
    return equal, total


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--compare":
        out = Path(sys.argv[2])
    elif len(sys.argv) == 2:
        out = Path(sys.argv[1])
        write_scenarios(out / "scenarios")
        subprocess.run([sys.executable, str(HERE / "record_cc_sessions.py"), str(out / "scenarios"), str(out)], check=True)
    else:
        sys.exit(__doc__)
    equal, total = compare(out)
    print(f"{equal}/{total} requests: model-dependent fields equal")


if __name__ == "__main__":
    main()
