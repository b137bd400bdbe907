"""The library's entry points check their arguments: a wrong one is a ctxkit error naming the argument,
never a traceback from deep inside a stage, and its problems name the arguments, not CLI options."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from datetime import datetime, timezone

import pytest
from conftest import ROOT

import ctxkit
from ctxkit.errors import PolicyError, UsageError

EXAMPLE = ROOT / "examples" / "session.jsonl"


def run_library(tmp_path, script: str) -> subprocess.CompletedProcess:
    """``script`` run by a fresh Python in ``tmp_path``, as a library user runs it."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)


def test_now_as_an_iso_string_is_the_instant_it_names_end_to_end(tmp_path):
    # the session's last reply is 2026-11-20: ten days before `now`, microcompact clears as the CLI's --now does
    r = run_library(tmp_path, f"""
        from ctxkit import load_policy, compile_pipeline, read_transcript, make_context
        policy = load_policy("no-llm")
        ctx = make_context(policy, store_dir=".ctxkit", now="2026-11-30T12:00:00Z")
        result = compile_pipeline(policy).run(read_transcript({str(EXAMPLE)!r}), ctx)
        for report in result.reports:
            print(report.stage_id, report.action, report.reason)
        """)
    assert (r.returncode, r.stderr) == (0, "")
    assert "microcompact applied cleared 3 old tool result(s)\n" in r.stdout
    # a warm cache (one minute after the last reply) clears nothing: the string was read as that instant
    warm = run_library(tmp_path, f"""
        from ctxkit import load_policy, compile_pipeline, read_transcript, make_context
        policy = load_policy("no-llm")
        ctx = make_context(policy, store_dir="warm", now="2026-11-20T11:01:00+00:00")
        print([r.action for r in compile_pipeline(policy).run(read_transcript({str(EXAMPLE)!r}), ctx).reports
               if r.stage_id == "microcompact"])
        """)
    assert (warm.returncode, warm.stdout) == (0, "['nothing-to-do']\n"), warm.stderr


def test_a_naive_datetime_is_utc(tmp_path):
    policy = ctxkit.load_policy("no-llm")
    ctx = ctxkit.make_context(policy, store_dir=tmp_path / "s", now=datetime(2026, 11, 30, 12))
    assert ctx.clock.now() == datetime(2026, 11, 30, 12, tzinfo=timezone.utc)
    assert ctx.inputs.now_has_offset is False


@pytest.mark.parametrize("arguments, message", [
    ({"now": "tomorrow"}, "make_context: now must be an ISO-8601 instant like 2026-11-29T23:06:25Z, got 'tomorrow'"),
    ({"now": 1764504000}, "make_context: now must be a datetime or an ISO-8601 string, got int"),
    ({"force": "yes"}, "make_context: force must be True or False, got str"),
    ({"context_window": "200k"}, "make_context: context_window must be a positive number of tokens, got '200k'"),
    ({"snip_ids": "abc"}, "make_context: snip_ids must be a sequence of message ids (strings), got 'abc'"),
    ({"session_memory": 5}, "make_context: session_memory must be a path, got int"),
    ({"store_dir": None}, "make_context: store_dir must be a path, got NoneType"),
])
def test_wrong_arguments_are_usage_errors_naming_them(tmp_path, arguments, message):
    policy = ctxkit.load_policy("no-llm")
    with pytest.raises(UsageError) as caught:
        ctxkit.make_context(policy, **{"store_dir": tmp_path / "s", **arguments})
    assert str(caught.value) == message


def test_unknown_input_and_a_policy_that_is_not_one(tmp_path):
    with pytest.raises(UsageError, match=r"^make_context: unknown input 'keep_recent' \(known: context_window, "):
        ctxkit.make_context(ctxkit.load_policy("no-llm"), store_dir=tmp_path, keep_recent=3)
    with pytest.raises(UsageError, match=r"^make_context: policy must be a Policy \(from ctxkit.load_policy\), got str$"):
        ctxkit.make_context("no-llm", store_dir=tmp_path)


def test_a_wrong_argument_is_one_clear_line_not_a_traceback_end_to_end(tmp_path):
    r = run_library(tmp_path, """
        import sys
        from ctxkit import load_policy, make_context
        from ctxkit.errors import CtxkitError
        try:
            make_context(load_policy("no-llm"), now=20261130)
        except CtxkitError as exc:
            sys.exit(f"error: {exc} (exit code {exc.exit_code})")
        """)
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr == "error: make_context: now must be a datetime or an ISO-8601 string, got int (exit code 2)\n"


def test_library_policy_problems_name_the_arguments_not_cli_options(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    with pytest.raises(PolicyError) as caught:
        ctxkit.load_policy("no-lm", ["thresholds.autocompact_bufer=1", "model"])
    assert str(caught.value).splitlines() == [
        "policy argument:1:1: error: no built-in policy named 'no-lm' (did you mean 'no-llm'?)",
        "setting:1:1: error: unknown key 'autocompact_bufer' in thresholds (did you mean 'autocompact_buffer'?)",
        "setting:1:1: error: malformed setting 'model': no '=' (expected PATH=VALUE, "
        "e.g. thresholds.autocompact_buffer=20000)"]
    assert ctxkit.load_policy("no-llm", ["thresholds.warning_buffer=1000"]).origins["thresholds.warning_buffer"] \
        == "setting:1"


def test_the_cli_still_names_its_options(tmp_path):
    r = subprocess.run([sys.executable, "-m", "ctxkit.cli.main", "compact", str(EXAMPLE), "--policy", "no-lm", "--set", "model"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120,
                       env={"PATH": "/usr/bin:/bin", "XDG_CONFIG_HOME": str(tmp_path / "xdg"), "HOME": str(tmp_path)})
    assert r.returncode == 2
    assert r.stderr.splitlines()[:2] == [
        "--policy:1:1: error: no built-in policy named 'no-lm' (did you mean 'no-llm'?)",
        "--set:1:1: error: malformed --set 'model': no '=' (expected PATH=VALUE, e.g. thresholds.autocompact_buffer=20000)"]
