"""Fuzzing ctxkit through its commands: real transcripts and policies with fields of the wrong type.

Shared by ``tests/test_fuzz.py`` (a derandomized few thousand cases in CI) and
``bench/fuzz.py`` (long runs that print what they find, shrunk by hypothesis).

A case is a *seed* (a window of lines of a real transcript from the shared
corpus, a transcript ctxkit compacted itself, with its records and store, or a
plain Anthropic / OpenAI message list), one to three *mutations* that keep the
JSON structure but break a type (a value replaced by null, a list, an object, a
number, a bool, another or a huge string; a key deleted; an id copied from
another line; a line duplicated; a ``blob`` pointed at a file that is not JSON),
and one *command* run in-process with its usual options (some also with a side file, ``--state``,
``--queued``, ``--session-memory``, ``--system``, ``--tools`` or ``--pricing``, of drawn bytes). What a command may
do with such input: exit 0 to 3, with a message on stderr when nonzero; never
exit 4 (an internal error), never raise, never hang.
"""
from __future__ import annotations

import io
import os
import re
import shutil
import signal
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import orjson
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("CTXKIT_SHARED", ROOT.parent / "shared"))
CORPUS = SHARED / "corpus"
NOW = "2026-11-30T12:00:00Z"
WINDOW = 24  # lines of a seed transcript per case (whole files are slow to run thousands of times)
WINDOW_TOKENS = "50000"  # small enough that the stages work on a window of lines, large enough to be valid
#: with a summary reserve a compaction fits under in that window (compact refuses a window its policy cannot fit)
FITS = ["--set", "thresholds.summary_reserve=5000"]
CASE_TIMEOUT = int(os.environ.get("CTXKIT_FUZZ_TIMEOUT", "30"))  # seconds before a case counts as a hang

# -- seeds ------------------------------------------------------------------------------------------------
_ANTHROPIC_SEED = [
    {"role": "user", "content": "Fix the failing test in app/models.py"},
    {"role": "assistant", "content": [{"type": "thinking", "thinking": "Look first.", "signature": "sig"},
                                      {"type": "text", "text": "Reading it."},
                                      {"type": "tool_use", "id": "toolu_1", "name": "Read",
                                       "input": {"file_path": "/w/app/models.py"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                  "content": [{"type": "text", "text": "class User:\n    pass\n" * 40}]}]},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_2", "name": "Grep",
                                       "input": {"pattern": "User"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_2", "content": "app/models.py:1",
                                  "is_error": False}, {"type": "text", "text": "and run the tests"}]},
    {"role": "assistant", "content": "Done: the test passes."},
]
_OPENAI_SEED = [
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": "Fix the failing test"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": "{\"path\": \"a.py\"}"}},
        {"id": "call_2", "type": "function", "function": {"name": "grep", "arguments": "{\"q\": \"x\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "print('hi')\n" * 50},
    {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "a.py:1"}]},
    {"role": "assistant", "content": "Fixed."},
    {"role": "user", "content": [{"type": "text", "text": "thanks"},
                                 {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]},
]


def _lines(path: Path) -> list[bytes]:
    return [x for x in path.read_bytes().splitlines() if x.strip()]


def corpus_files() -> list[Path]:
    """The real Claude Code transcripts of the shared corpus (every version there is)."""
    if not CORPUS.is_dir():
        return []
    return sorted(CORPUS.rglob("*.jsonl"))


@dataclass
class Seeds:
    """Everything the cases are drawn from, built once per process."""

    transcripts: list[tuple[str, list[bytes]]]  # (name, lines)
    store: Path  # a store holding the blobs and ledger of the compacted seed
    not_json: Path  # a file that is not JSON (a blob an archive record may name)


_SEEDS: Seeds | None = None


def seeds() -> Seeds:
    """Corpus windows, plain seeds, and a transcript compacted by ctxkit (records + store)."""
    global _SEEDS
    if _SEEDS is not None:
        return _SEEDS
    work = Path(tempfile.mkdtemp(prefix="ctxkit-fuzz-seeds-"))
    out: list[tuple[str, list[bytes]]] = [
        ("anthropic", [orjson.dumps(m) for m in _ANTHROPIC_SEED]),
        ("openai", [orjson.dumps(m) for m in _OPENAI_SEED]),
    ]
    files = corpus_files()
    for p in files:
        out.append((str(p.relative_to(CORPUS)), _lines(p)))
    store = work / "store"
    compacted = _compacted_seed(files, work, store)
    if compacted:
        out.append(("compacted", compacted))
    not_json = work / "not-json.txt"
    not_json.write_bytes(b"this is a tool output, not JSON\n")
    _SEEDS = Seeds(out, store, not_json)
    return _SEEDS


def _compacted_seed(files: list[Path], work: Path, store: Path) -> list[bytes]:
    """A small corpus session compacted with a tiny window: ctxkit's own records (archive, collapse,
    compaction, snip) and a store whose blobs they name."""
    small = [p for p in files if p.name == "session.jsonl" and "explore-edit" in str(p)] or \
        [p for p in files if p.stat().st_size < 200_000]
    if not small:
        return []
    src = work / "seed.jsonl"
    shutil.copyfile(small[0], src)
    code, out, _ = run_cli(["compact", str(src), "--policy", "no-llm", "--now", NOW, "--context-window", WINDOW_TOKENS,
                            *FITS, "--store", str(store), "--force"])
    lines = [x for x in out.splitlines() if x.strip()]
    if code not in (0, 1) or not lines:
        return []
    # ctxkit's other records, written by its own functions: an archive (with its blob), a snip, a collapse
    from ctxkit.store.disk import Store
    from ctxkit.transcript import read_transcript
    from ctxkit.transcript.claude_code.entries import record_entry
    from ctxkit.transcript.edits import archive_entries

    done = work / "compacted.jsonl"
    done.write_bytes(b"\n".join(lines) + b"\n")
    t = read_transcript(str(done))
    entries = [orjson.loads(x) for x in lines]
    uuids = [e["uuid"] for e in entries if e.get("type") in ("user", "assistant") and e.get("uuid")]
    tool_ids = [b["id"] for e in entries if e.get("type") == "assistant"
                for b in (e.get("message") or {}).get("content") or [] if isinstance(b, dict) and b.get("type") == "tool_use"]
    s = Store(store)
    t, _ = archive_entries(t, s, {i: t.entry(i) for i in range(t.n_entries) if t.entry(i).get("uuid") in uuids[-2:]},
                           NOW, "fuzz seed")
    extra = [record_entry(t, "snip", NOW, removedUuids=uuids[-4:-3], ids=["abc123"], toolUseIds=[])]
    if tool_ids:
        extra.append(record_entry(t, "collapse", NOW, runs=[{"key": tool_ids[-1], "toolUseIds": tool_ids[-1:],
                                                             "summary": "[Earlier tool calls, collapsed: read 1 file]",
                                                             "by": "rule"}]))
    t = t.with_edits(append=extra)
    buf = io.BytesIO()
    t.write(buf)
    s.flush()
    t.close()
    return [x for x in buf.getvalue().splitlines() if x.strip()]


# -- mutations --------------------------------------------------------------------------------------------
HUGE = "x" * 300_000
_REPLACEMENTS = st.sampled_from([None, True, False, 0, -1, 1.5, 2**63 - 1, 1e300, "", "text", "../../etc/passwd", HUGE,
                                 [], ["a"], [None], [1, 2], {}, {"type": "text"}, {"x": 1}, [{}], [[]]])


def _paths(value, prefix=()):
    """Every (path, value) in a JSON value, containers included (the root excluded)."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield (*prefix, k), v
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for k, v in enumerate(value):
            yield (*prefix, k), v
            yield from _paths(v, (*prefix, k))


def _get(value, path):
    for k in path:
        value = value[k]
    return value


@st.composite
def mutated_lines(draw, lines: list[bytes], not_json: Path) -> list[bytes]:
    """The lines with one to three type-breaking mutations (structure kept, JSON still valid)."""
    lines = list(lines)
    for _ in range(draw(st.integers(1, 3))):
        k = draw(st.integers(0, len(lines) - 1))
        try:
            entry = orjson.loads(lines[k])
        except orjson.JSONDecodeError:
            continue
        kind = draw(st.sampled_from(["replace", "replace", "replace", "delete", "dup-id", "dup-line", "blob",
                                     "root"]))
        paths = [p for p, _ in _paths(entry)]
        if kind == "root":
            lines[k] = orjson.dumps(draw(_REPLACEMENTS))
            continue
        if kind == "dup-line":
            lines.insert(draw(st.integers(0, len(lines))), lines[k])
            continue
        if kind == "blob":
            paths = [p for p in paths if p[-1] == "blob"] or paths
        if not paths:
            continue
        path = draw(st.sampled_from(paths))
        parent = _get(entry, path[:-1])
        if kind == "replace":
            parent[path[-1]] = draw(_REPLACEMENTS)
        elif kind == "blob":
            parent[path[-1]] = str(not_json)
        elif kind == "delete":
            if isinstance(parent, dict):
                del parent[path[-1]]
            else:
                parent.pop(path[-1])
        elif kind == "dup-id":
            ids = [v for p, v in _paths_of_all(lines) if p and p[-1] in ("id", "uuid", "tool_use_id", "parentUuid",
                                                                           "tool_call_id") and isinstance(v, str)]
            if ids:
                parent[path[-1]] = draw(st.sampled_from(ids))
        lines[k] = orjson.dumps(entry)
    return lines


def _paths_of_all(lines: list[bytes]):
    for raw in lines[:200]:
        try:
            yield from _paths(orjson.loads(raw))
        except orjson.JSONDecodeError:
            continue


# -- policies (values of the wrong type; YAML syntax limits are fuzzed elsewhere) ----------------------------
_POLICY_BASE = {
    "extends": "no-llm",
    "model": "claude-sonnet-4-5",
    "context_window": 8000,
    "thresholds": {"autocompact_buffer": 1000},
    "stages": [{"id": "tool-result-budget", "use": "tool-result-budget"},
               {"id": "microcompact", "use": "microcompact", "options": {"keep_recent": 2}},
               {"id": "collapse", "use": "collapse"}],
}


@st.composite
def policies(draw) -> str:
    """A policy document (as YAML text, written as JSON, which YAML reads) with one value of the wrong type."""
    doc = orjson.loads(orjson.dumps(_POLICY_BASE))
    paths = [p for p, _ in _paths(doc)]
    path = draw(st.sampled_from(paths))
    parent = _get(doc, path[:-1])
    if draw(st.booleans()):
        parent[path[-1]] = draw(_REPLACEMENTS.filter(lambda v: v is not HUGE))
    elif isinstance(parent, dict):
        del parent[path[-1]]
    return orjson.dumps(doc).decode()


# -- commands ---------------------------------------------------------------------------------------------
COMMANDS = ("compact", "compact-force", "compact-openai", "view", "view-openai", "view-request", "stats", "check",
            "expand", "snip", "memory", "compact-skip", "policy-validate", "policy-show", "simulate", "report",
            "compact-side-files", "view-request-system", "view-request-tools", "simulate-pricing")
#: the commands that also read a side file (``Case.side``: --state, --queued, --session-memory, --system,
#: --tools, --pricing), whose bytes are drawn by :func:`side_files`
SIDE_FILE_COMMANDS = ("compact-side-files", "view-request-system", "view-request-tools", "simulate-pricing")

_JSON = st.recursive(st.none() | st.booleans() | st.integers(-(2 ** 63), 2 ** 63 - 1) | st.floats(allow_nan=False) | st.text(max_size=20),
                     lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
                     max_leaves=12)
#: keys the side files are read for, so drawn objects often have the right names with values of the wrong type
_SIDE_KEYS = ("deferred_tools", "agents", "mcp_servers", "tasks", "prompt", "mode", "origin", "value", "name",
              "description", "input_schema", "models", "input", "output", "cache_read", "cache_write", "type")


@st.composite
def side_files(draw) -> bytes:
    """The bytes of a side file: JSON of the shapes the options read with values of the wrong type,
    any JSON, markdown notes, text, or bytes that are not UTF-8."""
    kind = draw(st.sampled_from(["object", "list", "json", "text", "bytes", "empty"]))
    if kind == "object":
        keys = st.sampled_from(_SIDE_KEYS) | st.text(max_size=8)
        return orjson.dumps(draw(st.dictionaries(keys, _JSON | st.lists(st.dictionaries(keys, _JSON, max_size=4),
                                                                          max_size=4), max_size=5)))
    if kind == "list":
        return orjson.dumps(draw(st.lists(_JSON | st.dictionaries(st.sampled_from(_SIDE_KEYS), _JSON, max_size=4),
                                          max_size=6)))
    if kind == "json":
        return orjson.dumps(draw(_JSON))
    if kind == "text":
        return draw(st.text(max_size=400)).encode("utf-8", "surrogatepass")
    if kind == "bytes":
        return draw(st.binary(max_size=200))
    return b""


@dataclass
class Case:
    seed: str
    lines: list[bytes]
    command: str
    policy: str | None = None
    side: bytes | None = None  # the side file's bytes (SIDE_FILE_COMMANDS)

    def __repr__(self) -> str:  # what a failing example prints: enough to repeat it by hand
        body = b"\n".join(x if len(x) < 2000 else x[:2000] + b"...<cut>" for x in self.lines).decode("utf-8", "replace")
        side = f", side={self.side[:2000]!r}" if self.side is not None else ""
        return f"Case(seed={self.seed!r}, command={self.command!r}, policy={self.policy!r}{side}, lines=\n{body}\n)"


@st.composite
def cases(draw) -> Case:
    s = seeds()
    command = draw(st.sampled_from(COMMANDS))
    name, lines = draw(st.sampled_from(s.transcripts))
    if len(lines) > WINDOW:  # a prefix (a whole chain) or any window (orphan results: bad lines)
        start = 0 if draw(st.booleans()) else draw(st.integers(0, len(lines) - WINDOW))
        lines = lines[start:start + WINDOW]
    policy = draw(policies()) if command.startswith("policy") or draw(st.integers(0, 9)) == 0 else None
    if not command.startswith("policy"):
        lines = draw(mutated_lines(lines, s.not_json))
    side = draw(side_files()) if command in SIDE_FILE_COMMANDS else None
    return Case(name, lines, command, policy, side)


def _args(case: Case, path: Path, store: Path, policy: Path | None) -> list[str]:
    p = ["--policy", str(policy)] if policy else ["--policy", "no-llm"]
    common = ["--store", str(store), "--now", NOW]
    c = case.command
    if c == "policy-validate":
        return ["policy", "validate", str(policy)]
    if c == "policy-show":
        return ["policy", "show", *p]
    if c == "compact":
        return ["compact", str(path), *p, *common, "--context-window", WINDOW_TOKENS, *FITS]
    if c == "compact-force":
        return ["compact", str(path), *p, *common, "--force"]
    if c == "compact-openai":
        return ["compact", str(path), *p, *common, "--to", "openai", "--context-window", WINDOW_TOKENS, *FITS]
    if c == "compact-skip":
        return ["compact", str(path), *p, *common, "--on-bad-line", "skip", "--context-window", WINDOW_TOKENS, *FITS]
    if c == "view":
        return ["view", str(path), *p, "--now", NOW, "--tag-ids"]
    if c == "view-openai":
        return ["view", str(path), *p, "--to", "openai"]
    if c == "view-request":
        return ["view", str(path), *p, "--to", "anthropic-request"]
    if c == "stats":
        return ["stats", str(path), *p, "--store", str(store), "--json"]
    if c == "check":
        return ["check", str(path), *p, "--context-window", WINDOW_TOKENS]
    if c == "expand":
        return ["expand", str(path), "--store", str(store)]
    if c == "snip":
        return ["snip", str(path), *p, *common, "--ids", "abc123,000000"]
    if c == "memory":
        return ["memory", "update", str(path), *p, *common, "--session-memory", str(path.parent / "notes.md")]
    if c == "simulate":
        return ["simulate", str(path), *p, "--json"]
    if c == "report":
        return ["report", str(path), *p, "-o", str(path.parent / "report.html")]
    side = str(path.parent / "side")
    if c == "compact-side-files":
        return ["compact", str(path), *p, *common, "--force", "--state", side, "--queued", side,
                "--session-memory", side]
    if c in ("view-request-system", "view-request-tools"):
        return ["view", str(path), *p, "--to", "anthropic-request", "--" + c.rsplit("-", 1)[1], side]
    if c == "simulate-pricing":
        return ["simulate", str(path), *p, "--json", "--pricing", side]
    raise ValueError(c)


def _build(app):
    from typer.main import get_command

    return get_command(app)


class Hang(Exception):
    """A case ran longer than CASE_TIMEOUT."""


@contextmanager
def time_limit(seconds: int):
    """Raise :class:`Hang` in the main thread after ``seconds`` (SIGALRM; a no-op where it is missing)."""
    if not hasattr(signal, "SIGALRM") or seconds <= 0:
        yield
        return

    def on_alarm(signum, frame):
        raise Hang(f"no answer after {seconds} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def run_cli(args: list[str]) -> tuple[int, bytes, str]:
    """Run ``ctxkit ARGS`` in-process: (exit code, stdout bytes, stderr text).

    With ``CTXKIT_DEBUG`` set the CLI re-raises what it would report as an internal error (exit 4), so
    a crash propagates here with its traceback (where it happened is what a fuzz run groups by)."""
    from typer import testing

    from ctxkit.cli.main import app

    if not hasattr(testing._get_command, "cached"):
        # typer builds the click command tree again on every invoke (~60 ms, half a case): build it once
        built = testing._get_command(app)
        testing._get_command = lambda a: built if a is app else _build(a)  # noqa: E731
        testing._get_command.cached = True
    result = testing.CliRunner().invoke(app, args, catch_exceptions=True, env={"ANTHROPIC_API_KEY": "", "CTXKIT_DEBUG": "1"})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout_bytes, result.stderr


def run_case(case: Case) -> tuple[int, str]:
    """Run one case in a fresh folder; (exit code, stderr). Raises on a crash, :class:`Hang` on a hang."""
    work = Path(tempfile.mkdtemp(prefix="ctxkit-fuzz-"))
    cwd = os.getcwd()
    try:
        os.chdir(work)
        path = work / "t.jsonl"
        path.write_bytes(b"\n".join(case.lines) + b"\n")
        store = work / "store"
        s = seeds()
        if s.store.is_dir():
            shutil.copytree(s.store, store)
        if case.side is not None:
            (work / "side").write_bytes(case.side)
        policy = None
        if case.policy is not None:
            policy = work / "policy.yaml"
            policy.write_text(case.policy)
        with time_limit(CASE_TIMEOUT), unraisable_raised():
            code, _, err = run_cli(_args(case, path, store, policy))
        return code, err
    finally:
        os.chdir(cwd)
        shutil.rmtree(work, ignore_errors=True)


@contextmanager
def unraisable_raised():
    """Run the block, then collect its garbage, raising the first exception a finalizer raised.

    A command runs with the cycle collector off (``ctxkit.cli.app.cycle_collector``), so an object
    whose finalizer raises would be collected during a *later* case, and Python's default hook would
    print "Exception ignored in ... Traceback" into that case's stderr: collected here, it is charged
    to the case that made it, with its own traceback."""
    import gc
    import sys

    caught: list = []
    old = sys.unraisablehook
    sys.unraisablehook = caught.append
    try:
        yield
        # the young generations only: the case's garbage is there (the collector was off while it ran);
        # a full collection walks every object the test process holds (5 s a case late in a suite)
        gc.collect(1)
    finally:
        sys.unraisablehook = old
    if caught:
        u = caught[0]
        u.exc_value.add_note(f"raised in a finalizer: {u.err_msg or 'Exception ignored in'} {u.object!r}")
        raise u.exc_value


def problem(case: Case) -> str | None:
    """What is wrong with how ctxkit handled ``case`` (None when it behaved)."""
    code, err = run_case(case)
    if code not in (0, 1, 2, 3):
        return f"exit {code}: {err.strip()[-2000:]}"
    if code != 0 and not err.strip() and not (case.command == "check" and code == 1):  # check's verdict: stdout
        return f"exit {code} with nothing on stderr"
    if re.search(r"^Traceback \(most recent call last\):", err, re.MULTILINE):  # (a quoted value may say
        # "Traceback": tool outputs hold them; quoted values are JSON, so never at the start of a line)
        return f"traceback on stderr (exit {code})"
    return None


