"""Hostile or odd input meets bounded reading and plain, short messages.

A policy is read by every command run in its repository, so a policy that blows up
(aliases, nesting, control characters, tags) must be a policy error at its position,
quickly. Messages print exactly the text they hold (no emoji codes, no markup) and
quote user values within a bound. A home or config folder that cannot be read is
no user policy, and a session id of any length or shape never fails as a file name.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import ROOT

from ctxkit.cli.main import app
from ctxkit.filenames import file_name_part
from ctxkit.quoting import quote

EXAMPLE = ROOT / "examples" / "session.jsonl"
PROBLEMS_1 = "ctxkit: 1 problem in the policy\n"

# The classic "billion laughs": nine lines that stand for 9**9 strings.
ALIAS_BOMB = """\
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""


def ctxkit(args, *, cwd, input=None, env=None, timeout=60, **kwargs) -> subprocess.CompletedProcess:
    """The real command in a child process (for timeouts and for another user or environment)."""
    base = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "XDG_CONFIG_HOME", "CTXKIT_DEBUG")}
    return subprocess.run([sys.executable, "-m", "ctxkit.cli.main", *args], cwd=cwd, input=input,
                          capture_output=True, timeout=timeout, env={**base, **(env or {})}, **kwargs)


def invoke(runner, args, input=None):
    return runner.invoke(app, args, input=input)


# -- YAML limits ----------------------------------------------------------------------------------------
def test_an_alias_bomb_in_the_repository_policy_is_refused_at_once(tmp_path):
    (tmp_path / ".ctxkit.yaml").write_text(ALIAS_BOMB)
    r = ctxkit(["check", "-"], cwd=tmp_path, input=EXAMPLE.read_bytes(), env={"XDG_CONFIG_HOME": str(tmp_path)},
               timeout=30)
    assert r.returncode == 2
    assert r.stderr.decode() == (
        ".ctxkit.yaml:5:8: error: invalid YAML: aliases would expand the document past 10,000 values "
        "(20 written so far) (an alias may repeat a small block, not multiply the document)\n" + PROBLEMS_1)
    assert r.stdout == b""


def test_aliases_that_share_a_small_block_still_work(runner, tmp_path):
    (tmp_path / "p.yaml").write_text("tools:\n  compactable: &t [Read, Grep]\n  collapsible: *t\n")
    r = invoke(runner, ["policy", "show", "--policy", "p.yaml"])
    assert r.exit_code == 0, r.stderr


DEEP = "[" * 3000 + "]" * 3000


@pytest.mark.parametrize("text, problem", [
    ('model: "a\0b"\n',
     "p.yaml:1:10: error: invalid YAML: the character U+0000 is not allowed "
     "(YAML holds printable characters, tab and newline)"),
    ("model: !!int x\n", "p.yaml:1:8: error: invalid YAML: 'x' is not a valid !!int"),
    ("model: !!python/object:os.system echo\n",
     "p.yaml:1:8: error: invalid YAML: the tag '!!python/object:os.system' is not allowed in a policy "
     "(a policy holds plain data: strings, numbers, true/false, null, lists and mappings)"),
    ("model: !env HOME\n",
     "p.yaml:1:8: error: invalid YAML: the tag '!env' is not allowed in a policy "
     "(a policy holds plain data: strings, numbers, true/false, null, lists and mappings)"),
    ("tools: !!set {Read: null}\n",
     "p.yaml:1:8: error: invalid YAML: the tag '!!set' is not allowed on a mapping in a policy "
     "(a policy holds plain data: remove the tag)"),
    # the top-level mapping is the first level: the 100th bracket is the 101st
    (f"model: {DEEP}\n", "p.yaml:1:107: error: invalid YAML: nested more than 100 levels deep"),
    ("a: &a [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n"
     "b: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[*a]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n",
     "p.yaml:2:56: error: invalid YAML: nested more than 100 levels deep once aliases are expanded"),
])
def test_a_policy_file_that_is_not_plain_bounded_yaml_is_a_policy_error(runner, tmp_path, text, problem):
    (tmp_path / "p.yaml").write_text(text)
    r = invoke(runner, ["check", "--policy", "p.yaml", str(EXAMPLE)])
    assert (r.exit_code, r.stderr) == (2, problem + "\n" + PROBLEMS_1)
    assert r.stdout == ""


@pytest.mark.parametrize("item, problem", [
    ("model=!!int x", "--set model:1:1: error: invalid YAML: 'x' is not a valid !!int"),
    ("model=!!python/object:os.system echo",
     "--set model:1:1: error: invalid YAML: the tag '!!python/object:os.system' is not allowed in a policy "
     "(a policy holds plain data: strings, numbers, true/false, null, lists and mappings)"),
    (f"tools.compactable={DEEP}", "--set tools.compactable:1:101: error: invalid YAML: nested more than 100 levels deep"),
    ("model=a\udcffb", "--set model:1:2: error: invalid YAML: the byte 0xFF is not UTF-8"),
    ("model=a\x01b", "--set model:1:2: error: invalid YAML: the character U+0001 is not allowed "
                     "(YAML holds printable characters, tab and newline)"),
    ("model=[unclosed", "--set model:1:10: error: invalid YAML: expected ',' or ']', but got '<stream end>' "
                        "(while parsing a flow sequence)"),
])
def test_a_set_value_is_read_under_the_same_limits_and_named_by_its_key(runner, item, problem):
    r = invoke(runner, ["check", "--set", item, str(EXAMPLE)])
    assert (r.exit_code, r.stderr) == (2, problem + "\n" + PROBLEMS_1)


def test_every_problem_of_a_file_is_reported_at_once(runner, tmp_path):
    (tmp_path / "p.yaml").write_text("model: !!int x\nestimator: !!float y\n")
    r = invoke(runner, ["policy", "validate", "p.yaml"])
    assert r.exit_code == 2
    assert r.stderr.splitlines()[:2] == ["p.yaml:1:8: error: invalid YAML: 'x' is not a valid !!int",
                                         "p.yaml:2:12: error: invalid YAML: 'y' is not a valid !!float"]


# -- plain, bounded messages ------------------------------------------------------------------------------
def test_a_line_number_is_printed_as_a_number_not_an_emoji(runner, tmp_path):
    lines = ['{"role": "user", "content": "hi"}'] * 99 + ['{"role": "user", "content": "hi"']
    (tmp_path / "t.jsonl").write_text("\n".join(lines) + "\n")
    r = invoke(runner, ["compact", "t.jsonl"])
    assert (r.exit_code, r.stderr) == (3, "ctxkit: error: t.jsonl:100: not valid JSON: unexpected end of data\n")


def test_markup_in_a_value_is_printed_as_written(runner):
    r = invoke(runner, ["compact", "--report", "[bold]:thumbs_up:[/bold]", str(EXAMPLE)])
    assert (r.exit_code, r.stderr) == (2, "ctxkit: error: invalid value for '--report': '[bold]:thumbs_up:[/bold]' "
                                          "is not one of 'text', 'json', 'none'\nTry 'ctxkit compact -h' for help.\n")


MB = "x" * 1_000_000
SHORT = f"'{'x' * 160}'... (1,000,000 characters)"


def test_a_one_megabyte_value_gives_a_short_transcript_error(runner, tmp_path):
    (tmp_path / "t.jsonl").write_text(json.dumps({"role": MB, "content": "hi"}) + "\n")
    r = invoke(runner, ["compact", "t.jsonl"])
    assert (r.exit_code, r.stderr) == (3, "ctxkit: error: t.jsonl:1: role must be one of user, assistant, system, "
                                          "got a string of 1,000,000 characters\n")
    assert len(r.stderr) < 300


def test_a_one_megabyte_value_gives_a_short_policy_error(runner, tmp_path):
    (tmp_path / "p.yaml").write_text(f"estimator: {MB}\n")
    r = invoke(runner, ["check", "--policy", "p.yaml", str(EXAMPLE)])
    assert (r.exit_code, r.stderr) == (2, f"p.yaml:1:12: error: estimator must be one of rough, tiktoken, "
                                          f"anthropic, got {SHORT}\n" + PROBLEMS_1)


@pytest.mark.parametrize("args", [["stats", "--now", MB, str(EXAMPLE)], ["check", "--format", MB, str(EXAMPLE)],
                                  ["check", "--set", f"{MB}=1", str(EXAMPLE)], ["check", "--policy", MB]])
def test_a_one_megabyte_value_on_the_command_line_gives_a_short_error(runner, args):
    r = invoke(runner, args)
    assert r.exit_code == 2
    # the value is cut to 200 characters; some lines add a hint listing the known names
    assert r.stderr and all(len(line) < 400 for line in r.stderr.splitlines()), r.stderr[:1000]
    assert "(1,000,000 characters)" in r.stderr


def test_quote_escapes_control_characters_and_bounds_any_value():
    assert quote("a\x1b[31mb\n") == "'a\\x1b[31mb\\n'"
    assert len(quote(list(range(100_000)))) <= 210
    assert quote({"k": "v" * 1000}).startswith("{'k': 'vvv")


# -- an unreadable home or config folder is no user policy ------------------------------------------------
@pytest.mark.parametrize("env", [
    {"HOME": "{tmp}/a-file"},
    {"HOME": "{tmp}/does-not-exist"},
    {"XDG_CONFIG_HOME": "{tmp}/a-file"},
])
def test_an_odd_home_or_config_folder_is_no_user_policy(tmp_path, env):
    (tmp_path / "a-file").write_text("not a folder")
    env = {k: v.format(tmp=tmp_path) for k, v in env.items()}
    r = ctxkit(["check", "-"], cwd=tmp_path, input=EXAMPLE.read_bytes(), env=env)
    assert (r.returncode, r.stderr) == (0, b"")
    assert r.stdout.endswith(b"level ok\n")


def test_a_config_folder_path_too_long_to_look_at_is_no_user_policy(tmp_path):
    r = ctxkit(["check", "-"], cwd=tmp_path, input=EXAMPLE.read_bytes(), env={"XDG_CONFIG_HOME": "/" + "x" * 5000})
    assert (r.returncode, r.stderr) == (0, b"")


SETPRIV = shutil.which("setpriv")
as_other_user = pytest.mark.skipif(not SETPRIV or not hasattr(os, "geteuid") or os.geteuid() != 0,
                                   reason="runs a child as another user (root and setpriv needed)")


def minimal_env(**extra: str) -> dict[str, str]:
    """PATH (and PYTHONPATH, when the suite runs against another copy of ctxkit) and ``extra``."""
    keep = {k: os.environ[k] for k in ("PATH", "PYTHONPATH") if k in os.environ}
    return {**keep, **extra}


def as_user(uid: int) -> list[str]:
    return [SETPRIV, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", sys.executable, "-m", "ctxkit.cli.main"]


@pytest.fixture
def shared_dir():
    """A folder other users can enter (pytest's tmp_path is private to root)."""
    path = Path(tempfile.mkdtemp(prefix="ctxkit-test-"))
    path.chmod(0o777)
    yield path
    for p in path.rglob("*"):
        p.chmod(0o777)
    shutil.rmtree(path)


@as_other_user
def test_a_config_folder_that_cannot_be_read_is_no_user_policy(shared_dir):
    config = shared_dir / "config"
    (config / "ctxkit").mkdir(parents=True)
    (config / "ctxkit" / "policy.yaml").write_text("model: !!int x\n")
    config.chmod(0o000)  # permission denied for anyone but root
    r = subprocess.run([*as_user(65534), "check", "-"], cwd=shared_dir, input=EXAMPLE.read_bytes(),
                       capture_output=True, timeout=60,
                       env=minimal_env(XDG_CONFIG_HOME=str(config), HOME=str(shared_dir)))
    assert (r.returncode, r.stderr) == (0, b"")


@as_other_user
def test_no_home_folder_at_all_is_no_user_policy(shared_dir):
    # a user with no passwd entry and no HOME: there is no ~ to look in (nor a plan file under it)
    r = subprocess.run([*as_user(12345), "compact", "--force", "--plan-mode", "--store", str(shared_dir / "store"),
                        "--report", "none", "-"], cwd=shared_dir, input=EXAMPLE.read_bytes(), capture_output=True,
                       timeout=60, env=minimal_env())
    assert (r.returncode, r.stderr) == (0, b"")
    assert r.stdout.count(b"\n") > 1


# -- session ids as file names -----------------------------------------------------------------------------
LONG_ID = ("ab/../c" * 800)[:5000]


def _with_session_id(sid: str) -> str:
    out = []
    for line in EXAMPLE.read_text().splitlines():
        entry = json.loads(line)
        if "sessionId" in entry:
            entry["sessionId"] = sid
        entry.pop("slug", None)
        out.append(json.dumps(entry))
    return "\n".join(out) + "\n"


def test_a_five_thousand_character_session_id_with_slashes_compacts(runner, tmp_path):
    (tmp_path / "t.jsonl").write_text(_with_session_id(LONG_ID))
    # autocompact alone: after microcompact the summary (which names the store by its long absolute path)
    # is no smaller than the view, and a compaction that would not be smaller is declined
    r = invoke(runner, ["compact", "t.jsonl", "--force", "--plan-mode", "--stage", "autocompact", "-o", "out.jsonl",
                        "--store", "st", "--report", "none"])
    assert (r.exit_code, r.stderr) == (0, "")
    plans = {json.loads(line).get("attachment", {}).get("planFilePath") for line in (tmp_path / "out.jsonl").open()}
    plans.discard(None)
    assert plans == {f"~/.claude/plans/{file_name_part(LONG_ID)}.md"}
    assert len(file_name_part(LONG_ID)) <= 80 and "/" not in file_name_part(LONG_ID)

    r = invoke(runner, ["memory", "update", "t.jsonl", "--session-memory", "notes.md", "--store", "st"])
    assert r.exit_code == 0, r.stderr
    r = invoke(runner, ["compact", "t.jsonl", "--force", "--plan-mode", "--session-memory", "notes.md",
                        "--stage", "autocompact", "-o", "out2.jsonl", "--store", "st", "--report", "none"])
    assert (r.exit_code, r.stderr) == (0, "")
    state = json.loads((tmp_path / "st" / "state.json").read_text())
    assert LONG_ID in state  # the store keeps the id itself, as a JSON key, never as a path
    # only the store's own names: nothing named after the session id (lines/, when there, holds input lines
    # written with spaces that the output rewrote)
    names = {p.name for p in (tmp_path / "st").iterdir()}
    assert {".ctxkit-store", "checkpoints", "state.json"} <= names
    assert names <= {".ctxkit-store", ".lock", "blobs", "checkpoints", "ledger.json", "lines", "state.json"}


@pytest.mark.parametrize("name, expected", [
    ("7d1c2a9e-4b5f-4e8a-9c3d-2f6e8a1b0c4d", "7d1c2a9e-4b5f-4e8a-9c3d-2f6e8a1b0c4d"),
    ("quiet-lake", "quiet-lake"),
    ("../../etc/passwd", "etc-passwd-3754d6cb3a38"),
    ("..", "5ec1f7e700f3"),
    (".hidden", "hidden-1692419006a8"),
])
def test_file_name_part_keeps_ordinary_names_and_confines_the_rest(name, expected):
    assert file_name_part(name) == expected
