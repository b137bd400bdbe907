"""Many inputs at once (docs/batch.md): folders and globs, --out-dir/--in-place, -j, exit codes, reports."""
from __future__ import annotations

import json
import os
import pty
import select
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from builders import session
from conftest import CC_CORPUS, PUBLIC_CORPUS, needs_corpus

from ctxkit.batch.inputs import expand_inputs, output_for
from ctxkit.cli.main import app
from ctxkit.errors import UsageError

NOW = "2026-11-30T12:00:00Z"
CORPUS_PICK = ["explore-edit", "big-outputs", "parallel-tools"]

pytestmark = pytest.mark.usefixtures("no_overhead")  # their sessions are sized against small windows


def invoke(runner, args):
    return runner.invoke(app, args)


def corpus_folder(root: Path) -> list[str]:
    """A folder of corpus transcripts (three sessions, two public ones), a hidden one, and a bad one;
    returns the paths (below ``root``) of the readable ones."""
    rels = []
    for name in CORPUS_PICK:
        (root / name).mkdir(parents=True)
        shutil.copy(CC_CORPUS / name / "session.jsonl", root / name / "session.jsonl")
        rels.append(f"{name}/session.jsonl")
    (root / "public").mkdir()
    for name in ("short.jsonl", "tool_heavy.jsonl"):
        shutil.copy(PUBLIC_CORPUS / "spotter" / name, root / "public" / name)
        rels.append(f"public/{name}")
    (root / ".hidden").mkdir()
    shutil.copy(PUBLIC_CORPUS / "spotter" / "short.jsonl", root / ".hidden" / "skipped.jsonl")
    (root / "broken").mkdir()
    (root / "broken" / "bad.jsonl").write_text('{"type": "user", "message": {"role": "user", "content": "hi"}}\n'
                                               "this is not json\n")
    return sorted(rels)


@needs_corpus
def test_compact_dir_out_dir_j2_writes_for_each_what_compact_file_writes(runner, tmp_path):
    good = corpus_folder(tmp_path / "in")
    r = invoke(runner, ["compact", "in", "--out-dir", "out", "-j", "2", "--policy", "no-llm", "--now", NOW])
    assert r.exit_code == 3, r.stderr
    assert "ctxkit: error: in/broken/bad.jsonl:2: " in r.stderr  # the bad file, named with its line
    assert r.stdout == ""
    written = sorted(p.relative_to(tmp_path / "out").as_posix() for p in (tmp_path / "out").rglob("*"))
    assert [w for w in written if w.endswith(".jsonl")] == good  # hidden folder skipped, bad one not written
    batch = {rel: (tmp_path / "out" / rel).read_bytes() for rel in good}
    # each store is beside its input; remove them, then run each file alone: the same bytes
    stores = sorted(p.relative_to(tmp_path).as_posix() for p in (tmp_path / "in").rglob(".ctxkit"))
    assert "in/big-outputs/.ctxkit" in stores and not list((tmp_path / "out").rglob(".ctxkit"))
    for store in (tmp_path / "in").rglob(".ctxkit"):
        shutil.rmtree(store)
    for rel in good:
        alone = invoke(runner, ["compact", f"in/{rel}", "--policy", "no-llm", "--now", NOW])
        assert alone.exit_code == 0, alone.stderr
        assert alone.stdout_bytes == batch[rel], rel


def test_exit_code_is_the_most_severe(runner, tmp_path):
    """3 if any transcript was bad, else 1 if any check failed, else 0; the others are still checked."""
    (tmp_path / "d").mkdir()
    session(tmp_path / "d" / "big.jsonl", rounds=8)
    session(tmp_path / "d" / "small.jsonl", rounds=1, size=10)
    small = invoke(runner, ["check", "d/small.jsonl", "d/small.jsonl", "--context-window", "40000"])
    assert (small.exit_code, small.stdout) == (0, "d/small.jsonl: 52 tokens; autocompact threshold 7000; "
                                                  "level warning\n")  # named twice, checked once
    r = invoke(runner, ["check", "d", "--context-window", "40000", "-j", "1"])
    assert r.exit_code == 1
    assert r.stdout.splitlines() == [
        "d/big.jsonl: 21963 tokens; autocompact threshold 7000; level blocking",
        "d/small.jsonl: 52 tokens; autocompact threshold 7000; level warning"]
    (tmp_path / "d" / "bad.jsonl").write_text('{"role": "user", "content": "a"}\n{oops\n')
    r = invoke(runner, ["check", "d", "--context-window", "40000", "-j", "2"])
    assert r.exit_code == 3
    assert r.stdout.splitlines() == [  # the bad one has no line on stdout, its error is on stderr
        "d/big.jsonl: 21963 tokens; autocompact threshold 7000; level blocking",
        "d/small.jsonl: 52 tokens; autocompact threshold 7000; level warning"]
    assert r.stderr.startswith("ctxkit: error: d/bad.jsonl:2: not valid JSON")
    as_json = invoke(runner, ["check", "d", "--context-window", "40000", "--json"])
    lines = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert [(d["file"], d["tokens"], d["failed"]) for d in lines] == [("d/big.jsonl", 21963, True),
                                                                      ("d/small.jsonl", 52, False)]


def test_report_json_one_object_per_file_then_the_totals(runner, tmp_path):
    (tmp_path / "d").mkdir()
    session(tmp_path / "d" / "a.jsonl", rounds=1, size=10)
    (tmp_path / "d" / "b.jsonl").write_text("{oops\n")
    r = invoke(runner, ["compact", "d", "--out-dir", "o", "--report", "json", "-j", "1", "--now", NOW])
    assert r.exit_code == 3
    lines = [json.loads(line) for line in r.stderr.splitlines()]
    for doc in lines[:2]:
        assert doc.pop("seconds") >= 0
    assert lines[0] == {"file": "d/a.jsonl", "output": "o/a.jsonl", "status": "ok", "exit_code": 0,
                        "bytes": (tmp_path / "d" / "a.jsonl").stat().st_size, "tokens_before": 52,
                        "tokens_after": 52, "stages": lines[0]["stages"], "messages": []}
    assert [s["id"] for s in lines[0]["stages"]] == ["tool-result-budget", "microcompact", "autocompact"]
    assert lines[1] == {"file": "d/b.jsonl", "output": "o/b.jsonl", "status": "bad-transcript", "exit_code": 3,
                        "bytes": 6, "messages": ["ctxkit: error: d/b.jsonl:1: not valid JSON: "
                                                 "unexpected character, expected a string key"]}
    totals = lines[2]["totals"]
    assert totals.pop("seconds") >= 0
    size = lines[0]["bytes"]
    assert totals == {"files": 2, "bytes": size + 6, "tokens_before": 52, "tokens_after": 52, "exit_code": 3,
                      "by_status": {"ok": {"files": 1, "bytes": size, "tokens_before": 52, "tokens_after": 52},
                                    "bad-transcript": {"files": 1, "bytes": 6, "tokens_before": 0,
                                                       "tokens_after": 0}}}
    assert len(lines) == 3


def test_report_file_and_the_summary_table(runner, tmp_path):
    (tmp_path / "d").mkdir()
    session(tmp_path / "d" / "a.jsonl", rounds=1, size=10)
    session(tmp_path / "d" / "b.jsonl", rounds=2, size=10)
    r = invoke(runner, ["stats", "d", "--report-file", "report.jsonl", "--now", NOW])
    assert r.exit_code == 0, r.stderr
    docs = [json.loads(line) for line in (tmp_path / "report.jsonl").read_text().splitlines()]
    assert sorted(d["file"] for d in docs[:-1]) == ["d/a.jsonl", "d/b.jsonl"]  # as each finished
    assert list(docs[-1]) == ["totals"]
    assert docs[-1]["totals"]["files"] == 2
    table = r.stderr.splitlines()
    assert table[0].startswith("ctxkit stats: 2 file(s) in ")
    assert [row.split() for row in table if row.startswith("│")] == [
        ["│", "ok", "│", "2", "│", f"{docs[-1]['totals']['bytes']:,}", "│", "137", "│", "137", "│"],
        ["│", "total", "│", "2", "│", f"{docs[-1]['totals']['bytes']:,}", "│", "137", "│", "137", "│"]]


def test_stats_over_many_sessions_aggregates(runner, tmp_path):
    (tmp_path / "d").mkdir()
    session(tmp_path / "d" / "a.jsonl", rounds=1, size=10)
    session(tmp_path / "d" / "b.jsonl", rounds=8)
    one = [json.loads(invoke(runner, ["stats", f"d/{n}.jsonl", "--json", "--now", NOW]).stdout) for n in "ab"]
    r = invoke(runner, ["stats", "d", "--json", "--now", NOW, "--context-window", "200000"])
    many = json.loads(r.stdout)
    assert many["sessions"] == 2
    assert many["tokens"] == one[0]["tokens"] + one[1]["tokens"]
    assert many["by_tool"] == {"Bash": one[0]["by_tool"]["Bash"] + one[1]["by_tool"]["Bash"]}
    assert many["by_kind"] == {k: one[0]["by_kind"].get(k, 0) + one[1]["by_kind"].get(k, 0)
                               for k in sorted(one[1]["by_kind"], key=lambda k: -(one[0]["by_kind"].get(k, 0)
                                                                                  + one[1]["by_kind"][k]))}
    assert many["levels"] == {"ok": 2, "warning": 0, "autocompact": 0, "blocking": 0}
    assert many["view_tokens"]["min"] == one[0]["tokens"] and many["view_tokens"]["max"] == one[1]["tokens"]
    assert many["largest"] == [{"file": "d/b.jsonl", "tokens": one[1]["tokens"]},
                               {"file": "d/a.jsonl", "tokens": one[0]["tokens"]}]
    small = json.loads(invoke(runner, ["stats", "d", "--json", "--now", NOW, "--context-window", "40000"]).stdout)
    assert small["levels"] == {"ok": 0, "warning": 1, "autocompact": 0, "blocking": 1}  # warning: threshold < 0
    assert small["share_of_autocompact"] == {"0-25%": 1, "25-50%": 0, "50-75%": 0, "75-100%": 0, "100%+": 1}
    text = invoke(runner, ["stats", "d", "--now", NOW])
    assert text.stdout.splitlines()[0] == (f"2 sessions, {many['messages']:,} messages, {many['tokens']:,} tokens in "
                                           f"their views (rough estimate); the policy would leave "
                                           f"{many['tokens_after']:,}")


@pytest.mark.parametrize("args, message", [
    (["compact", "a.jsonl", "b.jsonl"], "ctxkit: error: with several inputs, ctxkit compact writes each output "
     "under --out-dir DIR, or over its input with --in-place\n"),
    (["compact", "a.jsonl", "b.jsonl", "-o", "x.jsonl"], "ctxkit: error: -o names one output; with several inputs, "
     "ctxkit compact writes under --out-dir DIR or over each input with --in-place\n"),
    (["compact", "a.jsonl", "b.jsonl", "--in-place", "--out-dir", "o"], "ctxkit: error: --out-dir and --in-place: "
     "choose one\n"),
    (["check", "a.jsonl", "b.jsonl", "--out-dir", "o"], "ctxkit: error: no such option: --out-dir\n"
     "Try 'ctxkit check -h' for help.\n"),
    (["check", "a.jsonl", "nope.jsonl"], "ctxkit: error: no such file or folder: 'nope.jsonl'\n"),
    (["check", "a.jsonl", "-"], "ctxkit: error: - (standard input) is one transcript: the batch options need "
     "files, folders or globs\n"),
    (["check", "*.txt"], "ctxkit: error: no transcript matches '*.txt'\n"),
    (["compact", "a.jsonl", "sub/a.jsonl", "--out-dir", "o"], "ctxkit: error: 'a.jsonl' and 'sub/a.jsonl' would "
     "both be written to 'o/a.jsonl'; name their folder instead, so each keeps its path below it\n"),
])
def test_batch_usage_errors(runner, tmp_path, args, message):
    session(tmp_path / "a.jsonl", rounds=1, size=10)
    session(tmp_path / "b.jsonl", rounds=1, size=10)
    (tmp_path / "sub").mkdir()
    session(tmp_path / "sub" / "a.jsonl", rounds=1, size=10)
    r = invoke(runner, args)
    assert (r.exit_code, r.stderr, r.stdout) == (2, message, "")
    assert not (tmp_path / "o").exists()


def test_in_place_and_expand_over_many_give_the_inputs_back(runner, tmp_path):
    """compact --in-place replaces each input with what compact writes for it; expand --out-dir restores them."""
    (tmp_path / "d" / "x").mkdir(parents=True)
    session(tmp_path / "d" / "a.jsonl", rounds=3, size=12_000)  # tool outputs over the budget: to the store
    session(tmp_path / "d" / "x" / "b.jsonl", rounds=2, size=12_000)
    original = {n: (tmp_path / "d" / n).read_bytes() for n in ("a.jsonl", "x/b.jsonl")}
    alone = {n: invoke(runner, ["compact", f"d/{n}", "--now", NOW]).stdout_bytes for n in original}
    r = invoke(runner, ["compact", "d", "--in-place", "--now", NOW])
    assert r.exit_code == 0, r.stderr
    for n in original:
        now = (tmp_path / "d" / n).read_bytes()
        assert now == alone[n] and now != original[n]
    r = invoke(runner, ["expand", "d", "--out-dir", "restored", "--report", "json"])
    assert r.exit_code == 0, r.stderr
    for n, data in original.items():
        restored = (tmp_path / "restored" / n).read_bytes()
        assert restored == invoke(runner, ["expand", f"d/{n}"]).stdout_bytes
        assert [json.loads(x) for x in restored.splitlines()] == [json.loads(x) for x in data.splitlines()]
    docs = [json.loads(line) for line in r.stderr.splitlines()]
    assert sorted((d["file"], d["restored"]) for d in docs[:2]) == [("d/a.jsonl", 3), ("d/x/b.jsonl", 2)]


def test_inputs_folders_globs_and_hidden_folders(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for rel in ("logs/a.jsonl", "logs/day/b.jsonl", "logs/.ctxkit/blobs/c.jsonl", "logs/.git/d.jsonl",
                "logs/notes.txt", "out/e.jsonl", ".f.jsonl"):
        Path(rel).parent.mkdir(parents=True, exist_ok=True)
        Path(rel).write_text("{}\n")
    items = expand_inputs(["logs"])
    assert [(i.source, i.rel) for i in items] == [("logs/a.jsonl", "a.jsonl"), ("logs/day/b.jsonl", "day/b.jsonl")]
    items = expand_inputs(["logs/**/*.jsonl", "logs/a.jsonl", ".f.jsonl"])
    assert [(i.source, i.rel) for i in items] == [("logs/a.jsonl", "a.jsonl"), ("logs/day/b.jsonl", "day/b.jsonl"),
                                                  (".f.jsonl", ".f.jsonl")]  # named: taken, hidden or not
    # hidden folders are skipped (not hidden files); so is the output folder (a second run would read its outputs)
    assert [i.source for i in expand_inputs(["."], out_dir="out")] == [".f.jsonl", "logs/a.jsonl", "logs/day/b.jsonl"]
    assert [i.source for i in expand_inputs(["."])][-1] == "out/e.jsonl"
    assert output_for(items[1], "o", False) == os.path.join("o", "day", "b.jsonl")
    assert output_for(items[1], "s3://bucket/o/", False) == "s3://bucket/o/day/b.jsonl"
    assert output_for(items[1], None, True) == "logs/day/b.jsonl"
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match=r"^no session file under 'empty'$"):
        expand_inputs(["empty"])


def _stderr_on_a_terminal(args: list[str], cwd: Path) -> tuple[int, str]:
    """Run ctxkit with stderr on a pseudo-terminal (stdout a pipe); return (exit code, what the terminal got)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "ctxkit.cli.main", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=slave, env={**os.environ, "COLUMNS": "120", "TERM": "xterm"})
    os.close(slave)
    seen = b""
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the terminal closed: the process is done
            break
        if not chunk:
            break
        seen += chunk
    proc.wait(timeout=60)
    os.close(master)
    return proc.returncode, seen.decode("utf-8", "replace")


def test_progress_bar_only_when_stderr_is_a_terminal(tmp_path):
    (tmp_path / "d").mkdir()
    for k in range(3):
        session(tmp_path / "d" / f"s{k}.jsonl", rounds=2, size=10)
    code, terminal = _stderr_on_a_terminal(["check", "d", "-j", "1"], tmp_path)
    assert code == 0
    assert "ctxkit check" in terminal and "/3 files" in terminal  # the bar: its label and files done
    piped = subprocess.run([sys.executable, "-m", "ctxkit.cli.main", "check", "d", "-j", "1"], cwd=tmp_path,
                           capture_output=True, text=True)
    assert piped.returncode == 0
    assert "/3 files" not in piped.stderr and "\x1b[" not in piped.stderr


def test_scheduler_without_the_dask_extra_says_how_to_install_it(runner, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # as if `pip install 'ctxkit[dask]'` had not been run
    session(tmp_path / "a.jsonl", rounds=1, size=10)
    r = invoke(runner, ["stats", "a.jsonl", "--scheduler", "tcp://127.0.0.1:8786"])
    assert (r.exit_code, r.stdout, r.stderr) == (2, "", "ctxkit: error: --scheduler needs the dask extra: "
                                                        "pip install 'ctxkit[dask]'\n")


def test_a_policy_changed_between_two_batches_is_read_again(runner, tmp_path, monkeypatch):
    """A batch loads its policy once (per worker), never for a later batch: -j 1 runs in this process."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    session(tmp_path / "a.jsonl", rounds=1, size=10)
    session(tmp_path / "b.jsonl", rounds=1, size=10)
    (tmp_path / "p.yaml").write_text("extends: no-llm\ncontext_window: 40000\n")
    first = invoke(runner, ["check", "a.jsonl", "b.jsonl", "-j", "1", "--policy", "p.yaml"])
    (tmp_path / "p.yaml").write_text("extends: no-llm\ncontext_window: 60000\n")
    second = invoke(runner, ["check", "a.jsonl", "b.jsonl", "-j", "1", "--policy", "p.yaml"])
    assert first.stdout.splitlines()[0] == "a.jsonl: 52 tokens; autocompact threshold 7000; level warning"
    assert second.stdout.splitlines()[0] == "a.jsonl: 52 tokens; autocompact threshold 27000; level ok"


def test_a_warning_many_files_share_is_printed_once_then_counted(runner, tmp_path):
    for name in ("a", "b", "c"):
        session(tmp_path / f"{name}.jsonl", rounds=1, size=10)
    r = invoke(runner, ["stats", "a.jsonl", "b.jsonl", "c.jsonl", "--set", "model=gpt-9", "--json", "-j", "1"])
    assert r.exit_code == 0
    warning = ("unknown model 'gpt-9': assuming a 200,000 token context window (set context_window in the policy; "
               "did you mean 'gpt-5'?)")
    assert [line for line in r.stderr.splitlines() if line.startswith("ctxkit: ")] == [
        f"ctxkit: warning: a.jsonl: {warning}", f"ctxkit: warning: 2 more file(s): {warning}"]
