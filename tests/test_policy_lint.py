"""``ctxkit policy lint``: each finding with its position and exact words, and the exit codes."""
from __future__ import annotations

from pathlib import Path

import pytest

from ctxkit.cli.main import app
from ctxkit.policy.model import Policy
from ctxkit.resources import builtin_policy_names

COMPACTS_AGAIN = (
    "error: the autocompact threshold ({t}) is at or below what a compaction may leave behind ({left}: the "
    "{reserve}-token summary reserve, up to {kept} of kept tail and re-injected files and skills, and about 10,000 "
    "of system prompt and tools): it would compact again every turn (lower the 'autocompact' keep_tail / reinject "
    "budgets or thresholds.summary_reserve, or use a larger context_window)")


def lint(runner, text: str | None, name: str = "policy.yaml", *args: str):
    if text is not None:
        Path(name).write_text(text)
    result = runner.invoke(app, ["policy", "lint", *([name] if text is not None else []), *args])
    return result.exit_code, result.stderr.splitlines()


def test_the_constants_are_the_ones_the_messages_name():
    assert (Policy.from_mapping({}).overhead_tokens, Policy.from_mapping({}).cache_minutes) == (10_000, 60)


@pytest.mark.parametrize("name", builtin_policy_names())
def test_the_built_in_policies_lint_clean(runner, name):
    result = runner.invoke(app, ["policy", "lint", name])
    assert (result.exit_code, result.stderr) == (0, f"<builtin>/{name}.yaml: ok\n")


def test_a_threshold_a_compaction_cannot_get_under(runner):
    code, lines = lint(runner, "model: claude-sonnet-4-5\ncontext_window: 60000\n")
    assert code == 1
    assert lines == [
        "policy.yaml:2:1: " + COMPACTS_AGAIN.format(t="27,000 tokens", left="43,500 tokens", reserve="20,000",
                                                    kept="13,500"),
        "ctxkit: 1 error, 0 warnings in policy.yaml"]


def test_the_threshold_points_at_the_value_this_file_sets_and_counts_the_reinject_budgets(runner):
    # 90,000 tokens: threshold 57,000; 20,000 + min(20,000 + 50,000 + 25,000, 28,500) + 10,000 = 58,500
    code, lines = lint(runner, "context_window: 90000\n")
    assert code == 1 and lines[0] == "policy.yaml:1:1: " + COMPACTS_AGAIN.format(
        t="57,000 tokens", left="58,500 tokens", reserve="20,000", kept="28,500")
    # smaller re-injection budgets fit: the same window lints clean
    code, lines = lint(runner, "context_window: 90000\nstages:\n  - id: autocompact\n    options:\n"
                               "      reinject: {files_max_tokens: 10000, skills_max_tokens: 0}\n"
                               "      keep_tail: {max_tokens: 5000}\n")
    assert (code, lines) == (0, ["policy.yaml: ok"])
    # a file that sets only the budgets is pointed at them
    Path("policy.yaml").rename("base.yaml")  # the clean policy above, as the base of another file
    code, lines = lint(runner, "extends: ./base.yaml\nstages:\n  - id: autocompact\n    options:\n"
                               "      reinject: {files_max_tokens: 40000}\n", "top.yaml")
    assert (code, lines[0]) == (1, "top.yaml:5:18: " + COMPACTS_AGAIN.format(
        t="57,000 tokens", left="58,500 tokens", reserve="20,000", kept="28,500"))


def test_a_threshold_below_the_system_prompt_and_tools(runner):
    code, lines = lint(runner, "context_window: 40000\nthresholds:\n  autocompact_buffer: 13000\n"
                               "  summary_reserve: 20000\n")
    assert code == 1
    assert lines == [
        "policy.yaml:1:1: error: the autocompact threshold (7,000 tokens: the 40,000-token window, less 20,000 "
        "reserved for output and the 13,000-token autocompact buffer) is below the system prompt and tools (about "
        "10,000 tokens): every request would be over it (use a larger context_window, or lower "
        "thresholds.summary_reserve or thresholds.autocompact_buffer)",
        "ctxkit: 1 error, 0 warnings in policy.yaml"]


def test_a_collapse_threshold_below_the_overhead_and_an_api_trigger_above_the_window(runner):
    code, lines = lint(runner, "proactive: collapse\nstages:\n  - id: collapse\n    enabled: true\n"
                               "    options: {commit_ratio: 0.05}\n  - id: microcompact\n    options:\n"
                               "      mode: both\n      api_native:\n        clear_tool_uses: {enabled: true, trigger: 500000}\n")
    assert code == 1
    assert lines == [
        "policy.yaml:5:15: error: stage 'collapse' acts at 9,000 tokens (commit_ratio 0.05 of the 180,000-token "
        "effective window), below the system prompt and tools (about 10,000 tokens): it would act on every request "
        "(raise commit_ratio or use a larger context_window)",
        "policy.yaml:10:42: warning: stage 'microcompact': the clear_tool_uses trigger (500,000 tokens) is above "
        "the context window (200,000 tokens): the API never clears (set it below the window, e.g. at the "
        "autocompact threshold)",
        "ctxkit: 1 error, 1 warning in policy.yaml"]


def test_a_microcompact_gap_shorter_than_the_cache_and_keep_recent_0_are_warnings(runner):
    code, lines = lint(runner, "stages:\n  - id: microcompact\n    options:\n      gap_minutes: 5\n"
                               "      keep_recent: 0\n")
    assert code == 0  # warnings only
    assert lines == [
        "policy.yaml:4:7: warning: stage 'microcompact': gap_minutes (5) is shorter than the prompt cache's "
        "lifetime (60 minutes): it would clear tool results while the cache is still warm, and the next request "
        "writes the whole prefix to the cache again (set gap_minutes to 60 or more; 5 suits an agent that uses the "
        "5-minute cache)",
        "policy.yaml:5:7: warning: stage 'microcompact': keep_recent is 0: once the cache is cold it clears every "
        "compactable tool result, even the newest one, which the model has not answered yet (keep at least 1; "
        "Claude Code keeps 5)",
        "ctxkit: 0 errors, 2 warnings in policy.yaml"]
    # api-native mode does not rewrite the transcript: the gap is not used
    code, lines = lint(runner, "stages:\n  - id: microcompact\n    options: {gap_minutes: 5, mode: api-native}\n")
    assert (code, lines) == (0, ["policy.yaml: ok"])


def test_two_proactive_compactors(runner):
    code, lines = lint(runner, "stages:\n  - id: autocompact-2\n    use: autocompact\n")
    assert code == 1
    assert lines == [
        "policy.yaml:2:5: error: stages 'autocompact' and 'autocompact-2' (use: autocompact) both compact "
        "proactively: each would compact again what the one before it just compacted, on the same turn (disable "
        "all but one, or set 'proactive' so that the other waits)",
        "ctxkit: 1 error, 0 warnings in policy.yaml"]
    # with proactive: collapse, autocompact waits for the blocking limit: one proactive compactor
    code, lines = lint(runner, "proactive: collapse\nstages:\n  - id: collapse\n    enabled: true\n")
    assert (code, lines) == (0, ["policy.yaml: ok"])
    # collapse and autocompact both on without 'proactive' is not even a valid policy
    code, lines = lint(runner, "stages:\n  - id: collapse\n    enabled: true\n")
    assert code == 2 and lines[-1] == "ctxkit: 1 problem in the policy"
    assert lines[0].startswith("policy.yaml:3:5: error: stages 'collapse' and 'autocompact' are both enabled")


def test_stages_ordered_so_a_later_one_undoes_an_earlier_one(runner):
    code, lines = lint(runner, "stages:\n  - id: attachments\n    enabled: true\n    before: autocompact\n"
                               "  - id: microcompact\n    after: autocompact\n  - id: tool-result-budget\n"
                               "    after: autocompact\n")
    assert code == 1
    assert lines == [
        "policy.yaml:4:5: error: stage 'attachments' runs before 'autocompact': a compaction would summarize away "
        "the state attachments just announced, and they would not announce it again (move 'attachments' after "
        "'autocompact')",
        "policy.yaml:6:5: error: stage 'microcompact' runs after 'autocompact': it would clear the tool results "
        "that autocompact just kept word for word in its tail (move 'microcompact' before 'autocompact')",
        "policy.yaml:8:5: warning: stage 'tool-result-budget' runs after 'autocompact': autocompact decides before "
        "oversized tool results are moved to the store, so it compacts sooner than it needs to (move "
        "'tool-result-budget' before 'autocompact')",
        "ctxkit: 2 errors, 1 warning in policy.yaml"]


def test_collapse_after_autocompact(runner):
    code, lines = lint(runner, "proactive: collapse\nstages:\n  - id: collapse\n    enabled: true\n"
                               "    after: autocompact\n")
    assert code == 1 and lines == [
        "policy.yaml:5:5: error: stage 'collapse' runs after 'autocompact': it would fold the read/search calls "
        "that autocompact just kept word for word in its tail (move 'collapse' before 'autocompact')",
        "ctxkit: 1 error, 0 warnings in policy.yaml"]


def test_an_invalid_policy_is_reported_as_validate_reports_it_with_exit_2(runner):
    code, lines = lint(runner, "stages:\n  - id: microcompact\n    options: {gap_minutes: -1}\n")
    assert (code, lines) == (2, [
        "policy.yaml:3:28: error: stages[microcompact].options.gap_minutes must be greater than 0, got -1",
        "ctxkit: 1 problem in the policy"])
    result = runner.invoke(app, ["policy", "lint", "missing.yaml"])
    assert (result.exit_code, result.stderr.splitlines()) == (2, [
        "missing.yaml:1:1: error: policy file 'missing.yaml' not found", "ctxkit: 1 problem in the policy"])


def test_without_a_file_it_lints_the_repository_policy_a_run_would_read(runner):
    assert lint(runner, None) == (0, ["<builtin>/default.yaml: ok"])
    Path(".ctxkit.yaml").write_text("context_window: 60000\n")
    code, lines = lint(runner, None)
    assert code == 1 and lines[0].startswith(".ctxkit.yaml:1:1: error: the autocompact threshold (27,000 tokens)")
    assert runner.invoke(app, ["policy", "lint", "--help"]).stdout  # documented


def test_set_and_context_window_are_linted_with_the_file(runner):
    result = runner.invoke(app, ["policy", "lint", "default", "--context-window", "40000",
                                 "--set", "thresholds.summary_reserve=5000"])
    assert (result.exit_code, result.stderr.splitlines()) == (1, [
        "--set:1:1: " + COMPACTS_AGAIN.format(t="22,000 tokens", left="26,000 tokens", reserve="5,000",
                                              kept="11,000"),
        "ctxkit: 1 error, 0 warnings in <builtin>/default.yaml"])
    result = runner.invoke(app, ["policy", "lint", "default", "--set", "stages.microcompact.options.gap_minutes=30"])
    assert result.exit_code == 0
    assert result.stderr.splitlines()[0].startswith("--set:1:1: warning: stage 'microcompact': gap_minutes (30) is "
                                                    "shorter than the prompt cache's lifetime (60 minutes)")


def test_the_microcompact_gap_is_held_to_the_cache_lifetime_the_policy_asks_for(runner):
    # a 5-minute cache is cold after 5 minutes: a 10-minute gap does not break it
    code, lines = lint(runner, "request: {cache_ttl: 5m}\nstages:\n  - id: microcompact\n    options: {gap_minutes: 10}\n")
    assert (code, lines) == (0, ["policy.yaml: ok"])
    code, lines = lint(runner, "request: {cache_ttl: 5m}\nstages:\n  - id: microcompact\n    options: {gap_minutes: 3}\n")
    assert code == 0
    assert lines == [
        "policy.yaml:4:15: warning: stage 'microcompact': gap_minutes (3) is shorter than the prompt cache's "
        "lifetime (5 minutes): it would clear tool results while the cache is still warm, and the next request "
        "writes the whole prefix to the cache again (set gap_minutes to 5 or more)",
        "ctxkit: 0 errors, 1 warning in policy.yaml"]
