#!/usr/bin/env python3
"""Record genuine Claude Code sessions from scenario files, for the request and summary checks.

    nice python bench/record_cc_sessions.py bench/cc_scenarios OUT_DIR [NAME ...]
    nice python bench/record_cc_sessions.py --check OUT_DIR
    CTXKIT_EXTRA_CC_SESSIONS=OUT_DIR pytest tests/test_claude_code_requests.py tests/test_offline_summary.py

Why: the done-when checks of issue 27 (``view --to anthropic-request`` equals the body Claude Code
sent before each ``api-request`` entry; an offline ``compact --force`` quotes every typed prompt) are
graded on sessions ctxkit has not seen. The six shared corpus sessions cover a few tools; these
scenarios add resumed prompts, a subagent, TodoWrite, a failing Bash, big and image Reads, a
background Bash and its notification, slash and custom commands, unicode and long prompts, prompts
of several lines with thinking answers, CLAUDE.md files, hooks that add context, and work after an
autocompaction or a ``/compact``; and (the second set) prompts that mention an image, a folder, a
missing file and, in later turns, a big file, a line range, a PDF and a notebook (``mentions``), a file the user changed
or deleted between runs (``file-changed-on-disk``), plan mode and ExitPlanMode (``plan-mode``), tools
denied by ``--disallowedTools`` or not allowed, then allowed in the next run (``denied-tools``), tool
calls with invalid input and an unknown tool (``invalid-input``), answers cut at ``max_tokens``
(``max-tokens``), ``--append-system-prompt`` changing between runs, ``--system-prompt``, ``--add-dir``
and ``--effort`` (``append-system-prompt``, ``system-prompt-add-dir``), ``--continue`` with
``--model haiku`` and ``opus`` (``continue-models``), a stdio MCP server from ``--mcp-config`` with an
empty and a failing tool (``mcp-server``), a project skill called and typed (``skills``), output
styles (``output-style``), CLAUDE.md imports, CLAUDE.local.md, rules and a nested memory file
(``memory-imports``), a notebook read and edited, Globs and Greps that find nothing, empty outputs
and a 40,000-character line (``notebook-search-empty``), a PDF and parallel calls with a failure
(``pdf-parallel``), a git repository with a branch (``git-repo``), hooks that block a Bash call and
a prompt (``hooks-block``), ``--max-turns`` (``max-turns``), a custom agent (``custom-agent``),
``--fork-session`` (``fork-session``; only the bodies sent while the final session ran are kept), a
prompt starting with a path, one with reminder tags typed in it (``odd-prompts``), CLAUDE.md files
changed between runs and TodoWrite updates (``memory-changed``), a Bash timeout, a Read of a folder
and past the end, ``replace_all`` and control bytes (``tool-errors``), ``/compact`` after a
mention and an edit (``compact-after-mention``), API errors retried (529, 500: ``api-errors``) and a
"prompt is too long" compacted after (``prompt-too-long``), task tools with thinking and text between
tool calls (``tasks-thinking``), ``/model`` and ``/context`` typed as prompts (``model-command``), and hooks that answer in JSON
(deny, allow with context, block after an edit and at the stop) with a permission rule that denies a
Read (``hooks-json``).

Other versions: ``CC_VERSION=2.1.332`` (fetched once with ``npm pack
@anthropic-ai/claude-code-linux-x64@VERSION`` into the cache, as ``run-claude.sh`` does); Claude Code
records its requests from 2.1.300 on (2.1.282 to 2.1.299 only with ``CLAUDE_CODE_ELEGANT_MEADOW=1``,
which passes through to the CLI), so older versions leave the request check nothing to compare.

How: the genuine CLI (``$CC_HARNESS_CACHE/<CC_VERSION>/package/claude``, default 2.1.328 under
``~/.cache/cc-harness``) runs ``claude -p`` against a stand-in API on loopback (``cc_stand_in.py``:
the shared harness's, ``/work/shared/tools/cc-harness``, that also knows a second compaction's
request), in a fresh fixture project. A scenario is::

    {"files": {"REL": "text" | {"line": "...", "times": N} | {"png": [W, H]}},
     "tools": ["Bash", ...],            # --allowedTools (default: the harness's list plus Agent, TodoWrite)
     "runs": [{"prompt": "...", "steps": [...], "summary": "...", "args": ["--model", "sonnet"],
               "before": "shell command", "continue": true}, ...]}

``steps`` and ``summary`` are the stand-in's (see its docstring; a step may set ``stop_reason``);
``args`` go to that run's ``claude`` (another model); ``before`` runs in the project folder first (the
user at work between runs: a file edited or deleted, a commit); ``continue`` resumes with
``--continue`` in place of ``--resume ID``; a file named ``WORKDIR-lib/...`` is written beside the
project (a folder for ``--add-dir``); ``CC_RUN_ARGS`` (split as a shell would) goes to every run before them, e.g.
``CC_RUN_ARGS="--model claude-haiku-4-5"`` records every scenario on a model that takes no system
messages (a run's own ``--model`` still wins); every run after the first resumes the session (``--resume``); ``WORKDIR`` in a scenario stands for the project folder. OUT_DIR/NAME/
gets ``session.jsonl``, ``subagents/`` and ``tool-results/`` when written, ``requests.jsonl.gz`` (every
body sent, oldest first, as the shared corpus holds it) and ``workdir/``. Nothing recorded is
committed: the sessions stay outside the repository.

``--check OUT_DIR``: the other commands on each recorded session, one row per session: ``stats
--json`` (exit 0), ``doctor`` (0 or 1: findings), ``simulate --json`` (exit 0; the stand-in's usage
makes replayed against recorded meaningless, only no error counts), ``compact --force -p no-llm``
then ``expand`` (the compaction is appended, as Claude Code appends its own: the session must come
back as the expanded file's first bytes, byte for byte, and the compacted one must differ).
"""
from __future__ import annotations

import gzip
import json
import os
import shlex
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

from cc_turn_after_compaction import free_port, wait_for_port  # the same stand-in start-up

HARNESS = Path(os.environ.get("CC_HARNESS", "/work/shared/tools/cc-harness"))
STAND_IN = Path(__file__).resolve().parent / "cc_stand_in.py"
VERSION = os.environ.get("CC_VERSION", "2.1.328")
CLI = Path(os.environ.get("CC_HARNESS_CACHE", Path.home() / ".cache/cc-harness")) / VERSION / "package/claude"
TOOLS = ["Bash", "Read", "Grep", "Glob", "Edit", "Write", "Agent", "Task", "TodoWrite"]
#: The shared corpus's fixture project, so the scenarios read like its sessions.
FIXTURE = {
    "app/__init__.py": "",
    "app/models.py": "class User:\n    def __init__(self, name):\n        self.name = name\n\n\nclass Order:\n"
                     "    def total(self, items):\n        return sum(i.price for i in items)\n",
    "app/views.py": "from app.models import User, Order\n\n\ndef show_user(u):\n    return f\"<b>{u.name}</b>\"\n",
    "README.md": "# shop\n\nA tiny shop used as a fixture.\n",
    "tests/test_models.py": "from app.models import Order\n\n\ndef test_total_empty():\n    assert Order().total([]) == 0\n",
}


def png(width: int, height: int) -> bytes:
    """A valid RGB PNG of a gradient (the Read tool sends an image file as an image block)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    rows = b"".join(b"\0" + b"".join(bytes((x * 7 % 256, y * 5 % 256, 128)) for x in range(width))
                    for y in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def make_project(files: dict) -> Path:
    work = Path(tempfile.mkdtemp(prefix="cc-more-"))
    for rel, spec in {**FIXTURE, **files}.items():
        path = work / rel.replace("WORKDIR", str(work))  # (WORKDIR-lib/x: a folder beside the project)
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(spec, str):
            path.write_text(spec.replace("WORKDIR", str(work)), encoding="utf-8")
        elif "png" in spec:
            path.write_bytes(png(*spec["png"]))
        else:
            path.write_text("".join(spec["line"].replace("{n}", str(n)) + "\n" for n in range(spec["times"])),
                            encoding="utf-8")
    return work



def run_cli(run: dict, work: Path, raw: Path, tools: list[str], session: str | None, k: int) -> str:
    """One ``claude -p`` run against a fresh stand-in; returns the session id the CLI reports."""
    step_file = raw / f"run{k}.json"
    step_file.write_text(json.dumps({key: v for key, v in run.items() if key in ("steps", "summary")}))
    port = free_port()
    mock = subprocess.Popen([sys.executable, str(STAND_IN), str(port), str(step_file),
                             str(raw / "requests.jsonl")])
    try:
        wait_for_port(port)
        env = {**os.environ, "HOME": str(raw / "home"), "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}",
               "ANTHROPIC_API_KEY": "sk-ant-harness", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
               "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1"}
        if run.get("before"):  # the user at work between runs (a file changed on disk)
            subprocess.run(run["before"], shell=True, cwd=work, env=env, check=True, timeout=60)
        resume = (["--continue"] if run.get("continue") else ["--resume", session]) if session else []
        args = [str(CLI), "-p", run["prompt"], "--output-format", "json", "--allowedTools", ",".join(tools),
                *resume,
                *shlex.split(os.environ.get("CC_RUN_ARGS", "")), *run.get("args", [])]
        done = subprocess.run(args, cwd=work, env=env, capture_output=True, text=True,
                              timeout=float(os.environ.get("CC_TIMEOUT", 300)))
    finally:
        mock.kill()
        mock.wait()
    if done.returncode != 0 and not done.stdout.strip():
        raise RuntimeError(f"run {k} failed ({done.returncode}): {done.stderr[-2000:]}")
    result = json.loads(done.stdout)
    return result["session_id"]


def record(path: Path, out_root: Path) -> None:
    name = path.stem
    out = out_root / name
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    spec = json.loads(path.read_text(encoding="utf-8"))
    work = make_project(spec.get("files", {}))
    runs = json.loads(json.dumps(spec["runs"]).replace("WORKDIR", str(work)))
    raw = Path(tempfile.mkdtemp(prefix=f"cc-{name}-out-"))
    (raw / "home").mkdir()
    session = None
    sent_by = []  # (session id, how many bodies the log held after the run): a forked run starts another session
    for k, run in enumerate(runs):
        session = run_cli(run, work, raw, spec.get("tools", TOOLS), session, k)
        with open(raw / "requests.jsonl", "rb") as log:
            sent_by.append((session, sum(1 for _ in log)))
    project = next((raw / "home/.claude/projects").iterdir())
    shutil.copy(project / f"{session}.jsonl", out / "session.jsonl")
    for extra in ("tool-results", "subagents"):
        if (project / session / extra).is_dir():
            shutil.copytree(project / session / extra, out / extra)
    # the bodies sent while the run's session was the final one (a fork's file has no entries of the earlier)
    bodies = (raw / "requests.jsonl").read_bytes().splitlines(keepends=True)
    kept = [line for k, (sid, end) in enumerate(sent_by) if sid == session
            for line in bodies[(sent_by[k - 1][1] if k else 0):end]]
    with gzip.open(out / "requests.jsonl.gz", "wb") as dst:
        dst.write(b"".join(kept))
    shutil.copytree(work, out / "workdir")
    lines = (out / "session.jsonl").read_text(encoding="utf-8").count("\n")
    print(f"{name}: session {session}, {lines} entries, raw output in {raw}")


def ctxkit(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """This checkout's ctxkit CLI, as a user runs it."""
    return subprocess.run([sys.executable, "-c", "from ctxkit.cli.main import run; run()", *args], cwd=cwd,
                          capture_output=True, timeout=600)


def check(out_root: Path) -> bool:
    """The ``--check`` table (see the module docstring); False when a session failed a check."""
    ok_all = True
    print(f"{'session':24} stats doctor simulate compact expand")
    for folder in sorted(p for p in out_root.iterdir() if (p / "session.jsonl").is_file()):
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            src = work / "session.jsonl"
            shutil.copy(folder / "session.jsonl", src)
            stats = ctxkit(["stats", "--json", str(src)], work)
            doctor = ctxkit(["doctor", str(src)], work)
            sim = ctxkit(["simulate", "--json", str(src)], work)
            compact = ctxkit(["compact", "--force", "-p", "no-llm", "--store", "S", str(src), "-o", "c.jsonl"], work)
            expand = ctxkit(["expand", "--store", "S", "c.jsonl", "-o", "e.jsonl"], work)
            original = src.read_bytes()
            back = (work / "e.jsonl").read_bytes() if (work / "e.jsonl").exists() else b""
            compacted = (work / "c.jsonl").read_bytes() if (work / "c.jsonl").exists() else b""
            try:
                json.loads(sim.stdout)
                sim_ok = sim.returncode == 0
            except ValueError:
                sim_ok = False
            row = {"stats": stats.returncode == 0, "doctor": doctor.returncode in (0, 1), "simulate": sim_ok,
                   "compact": compact.returncode == 0 and compacted != original,
                   "expand": expand.returncode == 0 and back.startswith(original)}
            ok_all &= all(row.values())
            print(f"{folder.name:24} " + " ".join(f"{'ok' if v else 'FAIL':>{len(k)}}" for k, v in row.items()))
            for run in (stats, doctor, sim, compact, expand):
                if b"Traceback" in run.stderr:
                    print(run.stderr.decode(errors="replace")[-1500:], file=sys.stderr)
    return ok_all


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        sys.exit(0 if check(Path(sys.argv[2])) else 1)
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    if not CLI.exists():
        sys.exit(f"no Claude Code CLI at {CLI} (run {HARNESS}/run-claude.sh once to fetch it)")
    scenario_dir, out_root = Path(sys.argv[1]), Path(sys.argv[2])
    names = sys.argv[3:]
    for path in sorted(scenario_dir.glob("*.json")):
        if not names or path.stem in names:
            try:
                record(path, out_root)
            except (RuntimeError, subprocess.TimeoutExpired, subprocess.CalledProcessError, json.JSONDecodeError,
                    StopIteration) as e:
                print(f"{path.stem}: FAILED: {e}", file=sys.stderr)


if __name__ == "__main__":
    main()
