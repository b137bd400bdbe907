"""What the genuine Claude Code CLI sends in the turn after a turn that compacted itself.

The question (docs/simulate.md, spotter ``4d5611e5``): after an automatic compaction in the middle of
a turn, is the last request of that turn a prefix (``cache_control`` aside) of the first request of
the next turn in the same process? If not, the next turn writes the cache again after the tools and
system prompt, and simulate's cache model would have to say so. This runs the real CLI (cached
under ``~/.cache/cc-harness/<version>``) against the cc-harness stand-in API on loopback, gives it
two turns in one process, and compares those two requests.

Modes: ``stream`` (``-p --input-format stream-json``, the second prompt written once the first
turn's result is out) and ``pty`` (the interactive REPL on a pseudo-terminal, prompts typed).
Scenarios: ``auto`` (turn 1 compacts itself after its 2nd answer, then makes 2 more tool calls, then
a typed turn 2), ``bg`` (the same, turn 1 opening with a background Bash whose
``<task-notification>`` is turn 2, as in spotter), ``bgearly`` (that notification queued before the
compaction, as spotter's was), ``none`` (no compaction: a control) and ``manual`` (turn 1,
``/compact``, turn 2: a control whose next turn must not share the messages) and ``parallel`` (no
compaction; turn 1 makes two Bash calls in one answer: where each hook context goes). ``--opus`` runs
``claude-opus-4-6`` with a thinking block opening each answer, ``--hooks`` adds SessionStart hooks
(``startup`` and ``compact``) that print context and a Stop hook with output, ``--post-tool-context``
a PostToolUse hook that adds context (``additionalContext``) to each result: spotter's settings ran
hooks of each kind; ``--command-turn`` opens turn 2 with a custom slash command (``/second``).

usage: python bench/cc_turn_after_compaction.py VERSION MODE SCENARIO [OUTDIR] [--opus] [--hooks]
       [--post-tool-context] [--command-turn]
prints one JSON object: whether the last request of turn 1 is a prefix of the first of turn 2, and
if not the first message where they part.
"""
from __future__ import annotations

import argparse
import json
import os
import pty
import select
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("CTXKIT_SHARED", ROOT.parent / "shared"))
MOCK = SHARED / "tools" / "cc-harness" / "mock_anthropic.py"
CACHE = Path(os.environ.get("CC_HARNESS_CACHE", Path.home() / ".cache" / "cc-harness"))
FIRST, SECOND = "Inspect the app please", "Now the second turn please"
SUMMARY = ("<analysis>Notes.</analysis>\n<summary>\n1. Primary Request and Intent: inspect app/models.py.\n"
           "9. Optional Next Step: grep for def.\n</summary>")
SCENARIOS = ("auto", "bg", "bgearly", "none", "manual", "parallel")
MODELS = "class User:\n    def __init__(self, name):\n        self.name = name\n\n\nclass Order:\n    def total(self, items):\n        return sum(i.price for i in items)\n"


def tool(name: str, usage: dict | None = None, **tool_input) -> dict:
    step: dict = {"blocks": [{"type": "tool_use", "name": name, "input": tool_input}]}
    if usage:
        step["usage"] = usage
    return step


def text(s: str) -> dict:
    return {"blocks": [{"type": "text", "text": s}]}


def steps(scenario: str, work: Path, opus: bool = False) -> list[dict]:
    """The stand-in's answers to the main-loop requests, both turns in one list (it counts them)."""
    big = {"input_tokens": 990000} if scenario in ("auto", "bg", "bgearly") else None
    if scenario == "bg":  # the next turn is the background task's notification, as in spotter 4d5611e5
        first = [tool("Bash", command="sleep 5; echo bg-done", description="Background", run_in_background=True)]
    elif scenario == "bgearly":  # and queued before the compaction, as there (queue-operation line 459)
        first = [tool("Bash", command="echo bg-done", description="Background", run_in_background=True),
                 tool("Bash", command="sleep 3; echo waited", description="Wait")]
    else:
        first = [tool("Read", file_path=str(work / "app" / "models.py"))]
    if scenario == "parallel":  # two Bash calls in one answer (with --post-tool-context: a context each)
        calls = [tool("Bash", command=f"echo {word}", description=word.title()) for word in ("alpha", "beta")]
        turn1 = [{"blocks": [b for call in calls for b in call["blocks"]]}, text("Turn one done.")]
    else:
        turn1 = [*first,
                 tool("Bash", big, command="seq 1 300", description="Some output"),
                 tool("Grep", pattern="def ", path=str(work), output_mode="content"),
                 tool("Bash", command="sleep 7; echo after-compaction", description="More"),
                 text("Turn one done.")]
    turn2 = [tool("Bash", command="echo turn-two", description="Turn two"), text("Turn two done.")]
    if opus:  # as spotter 4d5611e5's answers: each opens with a signed thinking block
        for k, step in enumerate(turn1 + turn2):
            step["blocks"].insert(0, {"type": "thinking", "thinking": f"Step {k}: thinking it over.",
                                      "signature": "c2lnbmF0dXJl"})
    return turn1 + turn2


def cli(version: str) -> list[str]:
    package = CACHE / version / "package"
    return [str(package / "claude")] if (package / "claude").exists() else ["node", str(package / "cli.js")]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_mock(out: Path, scenario: str, work: Path, opus: bool) -> tuple[subprocess.Popen, int]:
    doc = {"steps": steps(scenario, work, opus), "summary": SUMMARY}
    (out / "scenario.json").write_text(json.dumps(doc))
    port = free_port()
    with open(out / "stand-in.log", "w") as errors:  # it reports each connection the CLI drops on exit
        mock = subprocess.Popen([sys.executable, str(MOCK), str(port), str(out / "scenario.json"),
                                 str(out / "requests.jsonl")], stderr=errors)
    wait_for_port(port)
    return mock, port


def wait_for_port(port: int) -> None:
    """Wait (up to about 30 s) until something listens on loopback ``port``: the stand-in has started."""
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)


def env_for(out: Path, port: int) -> dict:
    env = dict(os.environ, HOME=str(out / "home"), ANTHROPIC_BASE_URL=f"http://127.0.0.1:{port}",
               ANTHROPIC_API_KEY="sk-ant-harness", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
               DISABLE_TELEMETRY="1", DISABLE_AUTOUPDATER="1", TERM="xterm-256color",
               CLAUDE_CODE_ENABLE_PROMPT_SUGGESTION="false")
    return env


def claude_args(opus: bool) -> list[str]:
    return ["--allowedTools", "Bash,Read,Grep,Glob,Edit,Write", *(["--model", "claude-opus-4-6"] if opus else [])]


POST_TOOL_CONTEXT = "Captured the call."


def write_hooks(home: Path, session: bool, post_tool: bool) -> None:
    """Hooks shaped like spotter's (its transcript names them, not what they printed): ``session``,
    SessionStart ones whose output is context (one after compaction) and a Stop one with output;
    ``post_tool``, a PostToolUse one adding context to each result."""
    def hook(command: str, matcher: str | None = None) -> dict:
        entry: dict = {"hooks": [{"type": "command", "command": command}]}
        if matcher:
            entry["matcher"] = matcher
        return entry
    hooks: dict = {}
    if session:
        hooks["SessionStart"] = [hook("echo 'Primed at startup: 3 open issues.'", "startup"),
                                 hook("echo \"Primed after compaction at $(date +%s%N): 3 open issues.\"", "compact")]
        hooks["Stop"] = [hook("echo 'Stop hook: nothing to test.'")]
    if post_tool:
        hooks["PostToolUse"] = [hook("echo '{\"hookSpecificOutput\": {\"hookEventName\": \"PostToolUse\", "
                                     f"\"additionalContext\": \"{POST_TOOL_CONTEXT}\"}}}}'", "Bash|Read|Grep")]
    (home / ".claude").mkdir(parents=True, exist_ok=True)
    (home / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}))


def run_stream(version: str, scenario: str, work: Path, out: Path, env: dict, args: list[str],
               second: str = SECOND) -> None:
    proc = subprocess.Popen([*cli(version), "-p", "--input-format", "stream-json", "--output-format", "stream-json",
                             "--verbose", *args], cwd=work, env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    prompts = [FIRST, "/compact", second] if scenario == "manual" else [FIRST, second]

    def send(s: str) -> None:
        proc.stdin.write(json.dumps({"type": "user", "message": {"role": "user", "content": s},
                                     "parent_tool_use_id": None, "session_id": ""}) + "\n")
        proc.stdin.flush()

    send(prompts.pop(0))
    deadline = time.time() + 300
    with open(out / "stdout.jsonl", "w") as log:
        for line in proc.stdout:
            log.write(line)
            if time.time() > deadline:
                break
            if line.startswith("{") and json.loads(line).get("type") == "result":
                if not prompts:
                    break
                send(prompts.pop(0))
    proc.stdin.close()
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()


def run_pty(version: str, scenario: str, work: Path, out: Path, env: dict, args: list[str],
            second: str = SECOND) -> None:
    home = out / "home"
    (home / ".claude.json").write_text(json.dumps({
        "hasCompletedOnboarding": True, "theme": "dark", "customApiKeyResponses": {"approved": ["sk-ant-harness"[-20:]]},
        "projects": {str(work): {"hasTrustDialogAccepted": True, "allowedTools": []}}}))
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(work)
        os.execvpe(cli(version)[0], [*cli(version), *args], env)
    screen = bytearray()

    def pump(seconds: float) -> None:
        end = time.time() + seconds
        while time.time() < end:
            if select.select([fd], [], [], 0.2)[0]:
                try:
                    screen.extend(os.read(fd, 65536))
                except OSError:
                    return

    def mains() -> int:
        path = out / "requests.jsonl"
        if not path.exists():
            return 0
        bodies = [json.loads(x)["body"] for x in path.read_text().splitlines()]
        return sum(1 for b in bodies if b.get("tools") and not is_side_request(b))

    def wait_turn(expect: int, seconds: float = 90) -> None:
        """Until the stand-in has answered ``expect`` conversation requests and the CLI has settled."""
        end = time.time() + seconds
        while time.time() < end and mains() < expect:
            pump(1)
        pump(6)

    def type_(s: str) -> None:
        for ch in s:
            os.write(fd, ch.encode())
            time.sleep(0.01)
        pump(1)
        os.write(fd, b"\r")

    pump(8)
    type_(FIRST)
    wait_turn(6 if scenario == "bgearly" else 5)  # turn 1's answers (the last is its closing text)
    if scenario == "manual":
        type_("/compact")
        pump(15)
    if not scenario.startswith("bg"):
        type_(second)
    wait_turn(8 if scenario == "bgearly" else 7)
    (out / "screen.txt").write_bytes(bytes(screen))
    os.kill(pid, 9)
    os.waitpid(pid, 0)


def strip(value):
    """A message list without its cache_control marks (they move every request)."""
    if isinstance(value, dict):
        return {k: strip(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [strip(v) for v in value]
    return value


def as_blocks(message: dict) -> dict:
    """A message whose content is a string, as the one text block the API reads it as."""
    content = message.get("content")
    return dict(message, content=[{"type": "text", "text": content}]) if isinstance(content, str) else message


def opens_turn2(message: dict) -> bool:
    """The second turn's prompt: the typed one, or the background task's notification."""
    return message["role"] == "user" and any(s in json.dumps(message.get("content")) for s in (SECOND, "<task-notification>"))


def is_side_request(body: dict) -> bool:
    """A compaction's summary request or a prompt suggestion: not a step of the conversation."""
    last = json.dumps(body["messages"][-1:])
    return "<analysis>" in last or "[SUGGESTION MODE" in last


def compare(out: Path) -> dict:
    bodies = [json.loads(x)["body"] for x in (out / "requests.jsonl").read_text().splitlines()]
    main = [b for b in bodies if b.get("tools") and not is_side_request(b)]
    i2 = next((i for i, b in enumerate(main) if any(opens_turn2(m) for m in b["messages"])), None)
    if not i2:
        raise SystemExit(f"no second turn in {out / 'requests.jsonl'} (the CLI delivered it within turn 1, or stopped)")
    last1, first2 = strip(main[i2 - 1]), strip(main[i2])
    a, b = last1["messages"], first2["messages"]
    part = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
    same_text = next((k for k in range(min(len(a), len(b))) if as_blocks(a[k]) != as_blocks(b[k])), min(len(a), len(b)))
    params = sorted(k for k in set(last1) | set(first2) if k not in ("messages", "metadata")
                    and last1.get(k) != first2.get(k))
    report = {"requests": len(bodies), "main_requests": len(main), "turn2_first": i2,
              "params_differ": {k: [last1.get(k), first2.get(k)] for k in params if k != "system"},
              "compacted": any("<analysis>" in json.dumps(x["messages"][-1:]) for x in bodies),
              "system_same": last1.get("system") == first2.get("system"),
              "tools_same": last1.get("tools") == first2.get("tools"),
              "last1_messages": len(a), "first2_messages": len(b), "prefix": part == len(a), "part_at": part,
              "prefix_as_blocks": same_text == len(a)}
    if part < len(a):
        report["last1_at"] = a[part]
        report["first2_at"] = b[part] if part < len(b) else None
    return report


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("version", help="a Claude Code version cached under ~/.cache/cc-harness")
    parser.add_argument("mode", choices=("stream", "pty"))
    parser.add_argument("scenario", choices=SCENARIOS)
    parser.add_argument("outdir", nargs="?", type=Path)
    parser.add_argument("--opus", action="store_true", help="claude-opus-4-6, each answer opening with thinking")
    parser.add_argument("--hooks", action="store_true", help="SessionStart (startup, compact) and Stop hooks")
    parser.add_argument("--post-tool-context", action="store_true",
                        help="a PostToolUse hook adding context (additionalContext) to each result")
    parser.add_argument("--command-turn", action="store_true",
                        help="turn 2 is a custom slash command (/second) whose text is the second prompt")
    a = parser.parse_args(argv)
    if not MOCK.exists():
        parser.error(f"the cc-harness stand-in is not at {MOCK} (set CTXKIT_SHARED)")
    if not any((CACHE / a.version / "package" / name).exists() for name in ("claude", "cli.js")):
        parser.error(f"Claude Code {a.version} is not cached under {CACHE / a.version}")
    out = a.outdir or Path(tempfile.mkdtemp(prefix=f"ccturn-{a.version}-{a.mode}-{a.scenario}-"))
    (out / "home").mkdir(parents=True, exist_ok=True)
    work = out / "work"
    (work / "app").mkdir(parents=True, exist_ok=True)
    (work / "app" / "models.py").write_text(MODELS)
    work = work.resolve()
    if a.hooks or a.post_tool_context:
        write_hooks(out / "home", a.hooks, a.post_tool_context)
    if a.command_turn:
        (work / ".claude" / "commands").mkdir(parents=True, exist_ok=True)
        # (described apart: the command list the first message holds must not read as turn 2)
        (work / ".claude" / "commands" / "second.md").write_text(f"---\ndescription: Turn two\n---\n{SECOND}\n")
    mock, port = start_mock(out, a.scenario, work, a.opus)
    try:
        run = run_stream if a.mode == "stream" else run_pty
        run(a.version, a.scenario, work, out, env_for(out, port), claude_args(a.opus),
            "/second" if a.command_turn else SECOND)
    finally:
        mock.kill()
        mock.wait()
    report = compare(out)
    report.update(version=a.version, mode=a.mode, scenario=a.scenario, opus=a.opus, hooks=a.hooks,
                  post_tool_context=a.post_tool_context, command_turn=a.command_turn, out=str(out))
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
