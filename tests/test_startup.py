"""Start-up: a command imports what it uses, and what it skips is still checked somewhere.

``ctxkit compact`` runs after every agent turn, so its start-up is most of its time on a short
transcript (docs/benchmarks.md). These tests run the CLI in a fresh interpreter and look at what it
imported; the built-in policies, which runs no longer check against the schema, are checked here.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ctxkit import resources, validate_policy_file

#: Runs the CLI in this interpreter, then prints its exit code and the modules it imported.
_PROBE = r"""
import json, runpy, sys
import ctxkit.cli.quick_exit
ctxkit.cli.quick_exit.enable = lambda: None  # end as usual: the probe prints after the command
sys.argv = ["ctxkit", *sys.argv[1:]]
try:
    runpy.run_module("ctxkit.cli.main", run_name="__main__")
    code = 0
except SystemExit as exc:
    code = exc.code
sys.__stdout__.write("\n" + json.dumps({"code": code, "modules": sorted(sys.modules)}) + "\n")
"""

#: Never needed to compact a short transcript under a built-in policy with nothing to do.
NOT_FOR_A_TINY_COMPACT = (
    "anthropic", "tiktoken", "jsonschema", "pydantic", "rich", "httpx",
    "ctxkit.stages.attachments", "ctxkit.stages.snip", "ctxkit.stages.collapse",
    "ctxkit.stages.autocompact.compaction", "ctxkit.stages.autocompact.reinject", "ctxkit.summarize.retention",
    "ctxkit.summarize.anthropic", "ctxkit.summarize.client", "ctxkit.summarize.command",
    "ctxkit.summarize.redact", "ctxkit.summarize.secret_rules", "ctxkit.store.expand", "ctxkit.reports.stats",
)


def _imports(args: list[str], cwd: Path, home: Path) -> tuple[int, set[str], str]:
    """(exit code, modules imported, stdout before the probe's line) of ``ctxkit ARGS`` in ``cwd``."""
    env = {**os.environ, "XDG_CONFIG_HOME": str(home), "HOME": str(home)}  # no user policy
    r = subprocess.run([sys.executable, "-c", _PROBE, *args], cwd=cwd, env=env, capture_output=True, text=True,
                       timeout=120)
    data, _, report = r.stdout.rstrip("\n").rpartition("\n")
    probe = json.loads(report)
    return probe["code"], set(probe["modules"]), data


def _loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(name for name in names if name in modules or any(m.startswith(name + ".") for m in modules))


@pytest.fixture
def tiny(tmp_path):
    """A three-line Claude Code session in a folder with no policy of its own."""
    lines = [
        {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s1", "timestamp": "2026-11-30T10:00:00Z",
         "message": {"role": "user", "content": "hello"}},
        {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "sessionId": "s1", "timestamp": "2026-11-30T10:00:01Z",
         "message": {"role": "assistant", "id": "msg_1", "content": [{"type": "text", "text": "hi"}]}},
        {"type": "user", "uuid": "u2", "parentUuid": "a1", "sessionId": "s1", "timestamp": "2026-11-30T10:00:02Z",
         "message": {"role": "user", "content": "thanks"}},
    ]
    path = tmp_path / "work" / "tiny.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    (tmp_path / "home").mkdir()
    return path


def test_compact_of_a_tiny_transcript_imports_only_what_it_uses(tiny, tmp_path):
    """No SDK, no tokenizer, no schema validator, no pydantic, no unused stage or summarizer."""
    out = tmp_path / "out.jsonl"
    code, modules, _ = _imports(["compact", str(tiny), "-o", str(out), "--store", str(tmp_path / "store")],
                                tiny.parent, tmp_path / "home")
    assert code == 0
    assert out.read_bytes() == tiny.read_bytes()  # nothing to do: the same bytes
    assert _loaded(modules, NOT_FOR_A_TINY_COMPACT) == []
    assert {"ctxkit.stages.tool_result_budget", "ctxkit.stages.microcompact", "ctxkit.stages.autocompact"} <= modules


def test_help_imports_no_stage_nor_validator(tiny, tmp_path):
    code, modules, text = _imports(["--help"], tiny.parent, tmp_path / "home")
    assert code == 0 and "compact" in text
    assert _loaded(modules, ("jsonschema", "pydantic", "anthropic", "tiktoken", "ctxkit.stages.autocompact",
                             "ctxkit.stages.attachments", "rich.table")) == []


def test_a_policy_someone_wrote_is_still_checked_against_the_schema(tiny, tmp_path):
    """Only the built-ins are trusted: a repository's policy is validated, problems and all."""
    (tiny.parent / ".ctxkit.yaml").write_text("thresholds:\n  autocompact_buffer: lots\n")
    r = subprocess.run([sys.executable, "-m", "ctxkit.cli.main", "compact", str(tiny)], cwd=tiny.parent,
                       env={**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "home")}, capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr.splitlines()[0] == ".ctxkit.yaml:2:23: error: thresholds.autocompact_buffer must be an integer, got 'lots'"


@pytest.mark.parametrize("name", resources.builtin_policy_names())
def test_every_builtin_policy_fits_the_schema(name):
    """What a run no longer checks (ctxkit.policy.loader.assemble trusts the built-ins) is checked here,
    against the full schema with every stage's options."""
    assert validate_policy_file(resources.policies_dir() / f"{name}.yaml") == []


def test_a_builtin_layer_is_not_validated_but_a_file_layer_is(monkeypatch):
    """The loader skips the schema for the built-ins only (the test above stands in for it)."""
    from ctxkit import load_policy
    from ctxkit.policy import schema

    checked = []
    real = schema.schema_problems
    monkeypatch.setattr(schema, "schema_problems", lambda doc, *a, **k: checked.append(doc.file) or real(doc, *a, **k))
    load_policy("no-llm", cwd=Path("/"), user_config=Path("/nonexistent/policy.yaml"))
    assert checked == []
    load_policy(str(resources.policies_dir() / "no-llm.yaml"), ["thresholds.autocompact_buffer=20000"], cwd=Path("/"),
                user_config=Path("/nonexistent/policy.yaml"))
    assert checked[-1] == "setting" and any(f.endswith("no-llm.yaml") for f in checked)


def test_plain_values_convert_as_typer_would():
    """The quick conversion (ctxkit.cli.quick_values) gives what typer's own gives, or defers to it."""
    import typer.main

    from ctxkit.cli.main import app
    from ctxkit.cli.quick_values import QuickValues

    samples = ["-", "", "x", "auto", "claude-code", "openai", "skip", "json", "1000", "+1000", "999", "0", "1_000",
               "2000000", " 5000", "a/b.jsonl", "/dev/null", "~/x", "é", "AUTO"]
    group = typer.main.get_command(app)
    ctx = group.make_context("ctxkit", ["compact"], resilient_parsing=True)
    compared = 0
    for name in ("compact", "view", "stats", "check", "expand"):
        for param in group.commands[name].params:
            if not hasattr(param, "type_descriptor") or param.type_descriptor.annotation is bool:
                continue
            quick, typer_own = QuickValues(param), param.get_runtime_param()
            many = param.multiple or param.nargs == -1
            for sample in samples:
                value = (sample, sample) if many else sample
                assert _outcome(quick, value, param, ctx) == _outcome(typer_own, value, param, ctx), (name, param.name,
                                                                                                      sample)
                compared += 1
    assert compared > 300


def _outcome(converter, value, param, ctx):
    try:
        return "ok", converter.coerce(value, param=param, ctx=ctx)
    except Exception as exc:  # noqa: BLE001 - the message is what is compared
        return "error", type(exc).__name__, str(exc)


def test_the_builtin_forms_are_current():
    """policies/builtin-forms.json is what the built-in policies parse to (else: run the command below)."""
    from ctxkit.policy.builtin_forms import FORMS_FILE, build_forms

    assert (resources.policies_dir() / FORMS_FILE).read_bytes() == build_forms(), \
        "a built-in policy changed: run `python -m ctxkit.policy.builtin_forms`"


def test_a_builtin_policy_edited_since_its_form_is_read_from_its_yaml(tmp_path, monkeypatch):
    """A form is used only for the exact bytes it was made from: an edited built-in is parsed as written."""
    from ctxkit import load_policy

    folder = tmp_path / "policies"
    shutil.copytree(resources.policies_dir(), folder)
    text = (folder / "no-llm.yaml").read_text()
    (folder / "no-llm.yaml").write_text(text + "\nmax_output_tokens: 12345\n")
    monkeypatch.setattr(resources, "policies_dir", lambda: folder)
    monkeypatch.setattr("ctxkit.policy.builtin_forms._forms", None)
    policy = load_policy("no-llm", cwd=tmp_path, user_config=tmp_path / "none.yaml")
    assert policy.max_output_tokens == 12345
    assert policy.origins["max_output_tokens"] == f"<builtin>/no-llm.yaml:{text.count(chr(10)) + 2}"


def test_detect_secrets_loads_without_importing_requests_until_it_is_used():
    """Its plugins import requests for the verify() calls ctxkit never makes (~0.15 s per redacting run)."""
    probe = r"""
import json, sys
from ctxkit.summarize.redact import Redactor
found = Redactor().text("key: ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8")
before = {m: m in sys.modules for m in ("requests", "urllib3")}
import requests  # the real package, for whoever asks
import detect_secrets.plugins.base as base
print(json.dumps({"found": found, "before": before, "real": hasattr(requests, "Session"),
                  "plugins_see_it": base.requests.Session is requests.Session}))
"""
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert "[REDACTED:" in out["found"]
    assert out["before"] == {"requests": False, "urllib3": False}
    assert out["real"] and out["plugins_see_it"]


def test_a_command_runs_without_the_cycle_collector_and_a_batch_with_it():
    """Parsed transcripts hold no cycles; scanning them again and again cost a fifth of a large run."""
    import gc

    from ctxkit.cli.app import cycle_collector, handle_errors

    seen = []
    handle_errors(lambda: seen.append(gc.isenabled()))()
    with cycle_collector(on=False):
        with cycle_collector(on=True):  # a batch inside a command: on while it runs
            seen.append(gc.isenabled())
            handle_errors(lambda: seen.append(gc.isenabled()))()  # each file's command: off
            seen.append(gc.isenabled())
        seen.append(gc.isenabled())
    assert seen == [False, True, False, True, False]
    assert gc.isenabled()


@pytest.mark.parametrize("text", ["ctxkit: warning: plain", "a\ttab", "wide 漢字\tthen", "e\u0301\tx", "cr\rand bell\x07",
                                  "esc \x1b[31mred\x1b[0m", "[red]not markup[/red] :smile:", "two\nlines\twith tab",
                                  "trailing  ", "", "\x0b\x0c"])
def test_messages_print_as_riches_console_printed_them(text, capsys):
    """Messages go to stderr without loading rich: the text each shows is the one rich's console showed."""
    import io

    from rich.console import Console

    from ctxkit.cli.app import stderr_console

    buf = io.StringIO()
    Console(file=buf, soft_wrap=True, highlight=False, markup=False, emoji=False).print(text, markup=False)
    stderr_console().print(text, markup=False)
    assert capsys.readouterr().err == buf.getvalue()
