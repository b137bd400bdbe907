"""Policies: layers, merge by stage id, provenance, and every error as the user reads it."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
import yaml
from jsonschema import Draft202012Validator

from ctxkit import policy as policy_pkg
from ctxkit import resources
from ctxkit.errors import PolicyError
from ctxkit.policy import find_repo_policy, render_policy
from ctxkit.policy.layers import user_config_path
from ctxkit.policy.schema import static_schema
from ctxkit.stages import base as stage_base

# -- fixtures -----------------------------------------------------------------

FAKE_OPTIONS = {
    "tool-result-budget": {
        "max_result_chars": {"type": "integer", "minimum": 1, "default": 50_000},
        "exempt_tools": {"type": "array", "items": {"type": "string"}, "default": ["Read"]},
    },
    "microcompact": {
        "keep_recent": {"type": "integer", "minimum": 0, "default": 5},
        "gap_minutes": {"type": "integer", "minimum": 1, "default": 60},
    },
    "snip": {},
    "collapse": {},
    "autocompact": {},
    "attachments": {},
}


def _fake_stage(name: str, properties: dict) -> type[stage_base.Stage]:
    schema = {"type": "object", "additionalProperties": False, "properties": properties}
    return type(f"Fake_{name}", (stage_base.Stage,), {"name": name, "options_schema": schema})


#: The six stages of the built-in policies, with small known option schemas, and nothing else (the
#: policy package is handed its stages: these tests hand it fakes).
FAKE_STAGES = {name: _fake_stage(name, props) for name, props in FAKE_OPTIONS.items()}


def load_policy(*args, **kwargs):
    return policy_pkg.load_policy(*args, stages=FAKE_STAGES, **kwargs)


def validate_file(path):
    return policy_pkg.validate_file(path, stages=FAKE_STAGES)


def effective_schema():
    return policy_pkg.effective_schema(FAKE_STAGES)


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """An empty working directory (a repository), and no user file unless a test writes one."""
    root = tmp_path / "repo"
    root.mkdir()
    monkeypatch.chdir(root)
    return root


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def load(repo: Path, **kwargs):
    kwargs.setdefault("user_config", repo.parent / "user" / "policy.yaml")
    return load_policy(cwd=kwargs.pop("cwd", repo), **kwargs)


def rendered_problems(repo: Path, **kwargs) -> list[str]:
    with pytest.raises(PolicyError) as excinfo:
        load(repo, **kwargs)
    return [p.render() for p in excinfo.value.problems]


def stage_ids(policy) -> list[tuple[str, bool]]:
    return [(s.id, s.enabled) for s in policy.stages]


# -- the schema -----------------------------------------------------------------


def test_schema_file_is_draft_2020_12_and_documents_every_property():
    schema = static_schema()
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["title"] and schema["description"]
    assert set(schema["properties"]) == {
        "extends", "model", "context_window", "max_output_tokens", "estimator", "overhead_tokens", "thresholds", "tools",
        "attachments", "summarizer", "request", "proactive", "stages", "redact",
    }

    def undocumented(node, where):
        missing = []
        for key, sub in node.get("properties", {}).items():
            if "description" not in sub:
                missing.append(f"{where}.{key}")
            missing += undocumented(sub, f"{where}.{key}")
        return missing

    assert undocumented(schema, "") + undocumented(schema["$defs"]["stage"], "stage") == []


def test_effective_schema_limits_use_and_checks_each_stages_options():
    schema = effective_schema()
    Draft202012Validator.check_schema(schema)
    assert schema["$defs"]["stage"]["properties"]["use"]["enum"] == sorted(FAKE_OPTIONS)
    checker = Draft202012Validator(schema)

    def errors(stage):
        return [e.message for e in checker.iter_errors({"stages": [stage]})]

    assert errors({"id": "budget", "use": "tool-result-budget", "options": {"max_result_chars": 10}}) == []
    assert errors({"id": "budget", "use": "tool-result-budget", "options": {"max_result_chars": "x"}}) != []
    # without 'use', the id names the stage
    assert errors({"id": "microcompact", "options": {"keep_recent": "x"}}) != []
    assert errors({"id": "microcompact", "options": {"nope": 1}}) != []
    assert errors({"id": "other", "options": {"anything": 1}}) == []  # an override: checked by the loader


# -- built-in policies ----------------------------------------------------------


def test_builtin_names():
    assert {"default", "no-llm"} <= set(resources.builtin_policy_names())


def test_default_is_what_claude_code_runs(repo):
    policy = load(repo)
    assert policy.model == "claude-sonnet-4-5"
    assert policy.estimator == "rough"
    assert (policy.thresholds.summary_reserve, policy.thresholds.autocompact_buffer,
            policy.thresholds.warning_buffer, policy.thresholds.blocking_buffer) == (20000, 13000, 20000, 3000)
    assert "Read" in policy.tools.compactable
    assert [s.id for s in policy.enabled_stages()] == ["tool-result-budget", "microcompact", "autocompact"]
    assert [s.id for s in policy.stages] == [
        "tool-result-budget", "snip", "microcompact", "collapse", "autocompact", "attachments"]
    assert policy.summarizer["use"] == "auto"
    assert policy.origins["model"] == "schema default"  # default.yaml states only its own choices


def test_policy_option_names_a_builtin(repo):
    policy = load(repo, policy="no-llm")
    assert policy.summarizer == {"use": "extractive", "max_output_tokens": 20000, "total_timeout_seconds": 300}
    assert policy.origins["summarizer.use"] == "<builtin>/no-llm.yaml:14"
    assert policy.origins["summarizer.max_output_tokens"] == "schema default"
    assert "extends" not in policy.merged


def test_policy_option_errors(repo):
    assert rendered_problems(repo, policy="missing.yaml") == [
        "--policy:1:1: error: policy file 'missing.yaml' not found"]
    assert rendered_problems(repo, policy="no-lm") == [
        "--policy:1:1: error: no built-in policy named 'no-lm' (did you mean 'no-llm'?)"]
    assert rendered_problems(repo, policy="strict") == [
        "--policy:1:1: error: no built-in policy named 'strict' "
        "(built-in policies: claude-code-full, default, no-llm; or give a file path)"]


# -- layers ---------------------------------------------------------------------


def test_layers_apply_lowest_first_and_record_who_set_what(repo, tmp_path):
    user = write(tmp_path / "user" / "policy.yaml", """
        model: claude-opus-4-1
        estimator: tiktoken
        thresholds:
          warning_buffer: 15000
        """)
    write(repo / ".ctxkit.yaml", """
        model: claude-haiku-4-5
        thresholds:
          autocompact_buffer: 10000
        """)
    write(repo / "ci.yaml", """
        estimator: anthropic
        """)
    policy = load(repo, user_config=user, policy="ci.yaml", sets=["thresholds.blocking_buffer=1000"])
    assert policy.model == "claude-haiku-4-5"
    assert policy.estimator == "anthropic"
    assert policy.thresholds.warning_buffer == 15000
    assert policy.thresholds.autocompact_buffer == 10000
    assert policy.thresholds.blocking_buffer == 1000
    assert policy.thresholds.summary_reserve == 20000
    assert policy.origins["model"] == ".ctxkit.yaml:1"
    assert policy.origins["estimator"] == "ci.yaml:1"
    assert policy.origins["thresholds.warning_buffer"] == f"{user}:4"
    assert policy.origins["thresholds.autocompact_buffer"] == ".ctxkit.yaml:3"
    assert policy.origins["thresholds.blocking_buffer"] == "--set:1"
    assert policy.origins["thresholds.summary_reserve"] == "schema default"


def test_repo_policy_is_found_walking_up(repo):
    nested = repo / "src" / "pkg"
    nested.mkdir(parents=True)
    write(repo / ".ctxkit.yaml", "model: claude-haiku-4-5\n")
    assert find_repo_policy(nested) == repo / ".ctxkit.yaml"
    policy = load(repo, cwd=nested)
    assert policy.origins["model"] == "../../.ctxkit.yaml:1"


def test_no_repo_policy(repo):
    assert find_repo_policy(repo) is None


def test_user_config_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert user_config_path() == tmp_path / "xdg" / "ctxkit" / "policy.yaml"
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/is/ignored")
    assert user_config_path() == Path.home() / ".config" / "ctxkit" / "policy.yaml"


def test_lists_replace(repo):
    write(repo / ".ctxkit.yaml", "tools:\n  compactable: [Read]\n")
    policy = load(repo)
    assert policy.tools.compactable == frozenset({"Read"})
    assert policy.origins["tools.compactable"] == ".ctxkit.yaml:2"


# -- extends --------------------------------------------------------------------


def test_extends_a_file_relative_to_the_file(repo, tmp_path):
    write(tmp_path / "shared" / "team.yaml", "extends: no-llm\nmodel: claude-opus-4-1\n")
    write(repo / ".ctxkit.yaml", "extends: ../shared/team.yaml\nestimator: tiktoken\n")
    policy = load(repo)
    assert (policy.model, policy.estimator, policy.summarizer["use"]) == ("claude-opus-4-1", "tiktoken", "extractive")
    assert policy.origins["model"] == f"{tmp_path / 'shared' / 'team.yaml'}:2"


def test_a_base_without_extends_replaces_default(repo):
    write(repo / "base.yaml", """
        model: m
        stages:
          - id: microcompact
        """)
    write(repo / ".ctxkit.yaml", "extends: base.yaml\n")
    policy = load(repo)
    assert stage_ids(policy) == [("microcompact", True)]


def test_extends_cycle(repo):
    write(repo / "a.yaml", "extends: b.yaml\n")
    write(repo / "b.yaml", "extends: a.yaml\n")
    write(repo / ".ctxkit.yaml", "extends: a.yaml\n")
    assert rendered_problems(repo) == [
        "b.yaml:1:10: error: 'extends' cycle: .ctxkit.yaml -> a.yaml -> b.yaml -> a.yaml"]


def test_builtin_extends_cycle(repo, tmp_path, monkeypatch):
    builtins = tmp_path / "builtins"
    write(builtins / "default.yaml", "extends: other\n")
    write(builtins / "other.yaml", "extends: default\n")
    monkeypatch.setattr(resources, "policies_dir", lambda: builtins)
    assert rendered_problems(repo) == [
        "<builtin>/other.yaml:1:10: error: 'extends' cycle: "
        "<builtin>/default.yaml -> <builtin>/other.yaml -> <builtin>/default.yaml"]


def test_extends_unknown(repo):
    write(repo / ".ctxkit.yaml", "extends: defualt\n")
    assert rendered_problems(repo) == [
        ".ctxkit.yaml:1:10: error: no built-in policy named 'defualt' (did you mean 'default'?)"]
    write(repo / ".ctxkit.yaml", "extends: ./gone.yaml\n")
    assert rendered_problems(repo) == [
        ".ctxkit.yaml:1:10: error: policy file './gone.yaml' not found "
        "(paths are relative to the file that names them)"]


# -- stages merge by id -----------------------------------------------------------


def test_stage_override_merges_in_place(repo, tmp_path):
    user = write(tmp_path / "user" / "policy.yaml", """
        stages:
          - id: microcompact
            options: {keep_recent: 3, gap_minutes: 30}
        """)
    write(repo / ".ctxkit.yaml", """
        stages:
          - id: microcompact
            options:
              keep_recent: 8
          - id: autocompact
            enabled: false
        """)
    policy = load(repo, user_config=user)
    assert policy.stage("microcompact").options == {"keep_recent": 8, "gap_minutes": 30}
    assert policy.stage("autocompact") is None
    assert [s.id for s in policy.stages][2:5] == ["microcompact", "collapse", "autocompact"]  # places kept
    assert policy.origins["stages.microcompact.options.keep_recent"] == ".ctxkit.yaml:4"
    assert policy.origins["stages.microcompact.options.gap_minutes"] == f"{user}:3"
    assert policy.origins["stages.autocompact.enabled"] == ".ctxkit.yaml:6"
    assert policy.origins["stages.autocompact.id"] == "<builtin>/default.yaml:55"


def test_new_stages_append_or_go_before_or_after(repo):
    write(repo / ".ctxkit.yaml", """
        stages:
          - id: last-budget
            use: tool-result-budget
          - id: early
            use: tool-result-budget
            before: tool-result-budget
          - id: mid
            use: microcompact
            after: microcompact
          - id: attachments
            after: early
        """)
    assert [s.id for s in load(repo).stages] == [
        "early", "attachments", "tool-result-budget", "snip", "microcompact", "mid", "collapse", "autocompact",
        "last-budget"]


def test_override_options_are_checked_against_the_inherited_stage(repo, tmp_path):
    user = write(tmp_path / "user" / "policy.yaml", """
        stages:
          - id: budget
            use: tool-result-budget
        """)
    write(repo / ".ctxkit.yaml", """
        stages:
          - id: budget
            options:
              max_result_chars: 0
              max_chars: 5
        """)
    assert rendered_problems(repo, user_config=user) == [
        ".ctxkit.yaml:4:25: error: stages[budget].options.max_result_chars must be at least 1, got 0",
        ".ctxkit.yaml:5:7: error: unknown key 'max_chars' in stages[budget].options "
        "(did you mean 'max_result_chars'?)",
    ]


# -- --set ------------------------------------------------------------------------


def test_set_forms(repo):
    policy = load(repo, sets=[
        "model=claude-opus-4-1",
        "context_window=500000",
        "tools.collapsible=[Read, Grep]",
        "stages.microcompact.options.keep_recent=2",
        "stages.autocompact.enabled=false",
        "stages.snip={enabled: true, options: {}}",
        "attachments.date_change.enabled=false",
    ])
    assert policy.model == "claude-opus-4-1"
    assert policy.context_window == 500000
    assert policy.tools.collapsible == frozenset({"Read", "Grep"})
    assert policy.stage("microcompact").options == {"keep_recent": 2}
    assert policy.stage("autocompact") is None
    assert policy.stage("snip") is not None
    assert policy.attachments["date_change"] == {"enabled": False}
    assert policy.origins["stages.microcompact.options.keep_recent"] == "--set:1"


@pytest.mark.parametrize("item, message", [
    ("model", "malformed --set 'model': no '='"),
    ("thresholds..x=1", "malformed --set 'thresholds..x=1': 'thresholds..x' is not a dotted path"),
    ("stages.snip=true", "malformed --set 'stages.snip=true': a stage takes a mapping, "
                         "e.g. stages.snip={enabled: false}"),
])
def test_malformed_set(repo, item, message):
    assert rendered_problems(repo, sets=[item]) == [
        f"--set:1:1: error: {message} (expected PATH=VALUE, e.g. thresholds.autocompact_buffer=20000)"]


def test_set_values_are_validated(repo):
    assert rendered_problems(repo, sets=["thresholds.autocompact_buffer=lots", "stages.microcompat.enabled=false"]) == [
        "--set:1:1: error: thresholds.autocompact_buffer must be an integer, got 'lots'",
        "--set:1:1: error: stage 'microcompat' names no known stage and has no 'use' "
        "(did you mean 'microcompact'?)",
    ]


# -- errors, each as the user reads it ------------------------------------------------


@pytest.mark.parametrize("text, expected", [
    ("tresholds:\n  warning_buffer: 1\n",
     ".ctxkit.yaml:1:1: error: unknown key 'tresholds' (did you mean 'thresholds'?)"),
    ("thresholds:\n  warning_bufer: 1\n",
     ".ctxkit.yaml:2:3: error: unknown key 'warning_bufer' in thresholds (did you mean 'warning_buffer'?)"),
    ("colour: red\n",
     ".ctxkit.yaml:1:1: error: unknown key 'colour' (known keys: extends, model, context_window, "
     "max_output_tokens, estimator, overhead_tokens, thresholds, tools, attachments, summarizer, redact, request, "
     "proactive, stages)"),
    ("thresholds:\n  autocompact_buffer: lots\n",
     ".ctxkit.yaml:2:23: error: thresholds.autocompact_buffer must be an integer, got 'lots'"),
    ("estimator: tiktokn\n",
     ".ctxkit.yaml:1:12: error: estimator must be one of rough, tiktoken, anthropic, got 'tiktokn' "
     "(did you mean 'tiktoken'?)"),
    ("estimator: exact\n",
     ".ctxkit.yaml:1:12: error: estimator must be one of rough, tiktoken, anthropic, got 'exact'"),
    ("context_window: 500\n",
     ".ctxkit.yaml:1:17: error: context_window must be at least 1000, got 500"),
    ("model: ''\n",
     ".ctxkit.yaml:1:8: error: model must not be empty"),
    ("tools:\n  compactable: [Read, Bash, Read]\n",
     ".ctxkit.yaml:2:16: error: tools.compactable lists 'Read' more than once"),
    ("attachments:\n  date_chnage: {enabled: true}\n",
     ".ctxkit.yaml:2:3: error: unknown key 'date_chnage' in attachments (did you mean 'date_change'?)"),
    ("attachments:\n  plan_mode: {enabled: 1}\n",
     ".ctxkit.yaml:2:24: error: attachments.plan_mode.enabled must be true or false, got 1"),
    ("summarizer:\n  use: command\n",
     ".ctxkit.yaml:2:3: error: summarizer.use is 'command' but no summarizer.command is set "
     "(add summarizer.command: the shell command that writes the summary)"),
    ("proactive: both\n",
     ".ctxkit.yaml:1:12: error: proactive must be one of collapse, autocompact, got 'both'"),
    ("- model: x\n",
     ".ctxkit.yaml:1:1: error: the policy must be a mapping, got a list"),
    ("stages:\n  - use: snip\n",
     ".ctxkit.yaml:2:5: error: stages[0] is missing required key 'id'"),
    ("stages:\n  - id: Budget\n    use: snip\n",
     ".ctxkit.yaml:2:9: error: stages[Budget].id must match ^[a-z][a-z0-9-]*$, got 'Budget'"),
    ("stages:\n  - id: x\n    use: snip\n    optoins: {}\n",
     ".ctxkit.yaml:4:5: error: unknown key 'optoins' in stages[x] (did you mean 'options'?)"),
    ("stages:\n  - id: x\n    use: microcompcat\n",
     ".ctxkit.yaml:3:10: error: unknown stage 'microcompcat' in 'use' (did you mean 'microcompact'?)"),
    ("stages:\n  - id: x\n    use: shrink\n",
     ".ctxkit.yaml:3:10: error: unknown stage 'shrink' in 'use' (known stages: attachments, autocompact, "
     "collapse, microcompact, snip, tool-result-budget)"),
    ("stages:\n  - id: x\n    use: 7\n",
     ".ctxkit.yaml:3:10: error: stages[x].use must be a string, got 7"),
    ("stages:\n  - id: microcompact\n    options: {keep_recent: -1}\n",
     ".ctxkit.yaml:3:28: error: stages[microcompact].options.keep_recent must be at least 0, got -1"),
    ("stages:\n  - id: budget\n    use: tool-result-budget\n    options:\n      max_result_chars: many\n",
     ".ctxkit.yaml:5:25: error: stages[budget].options.max_result_chars must be an integer, got 'many'"),
    ("stages:\n  - id: shrink\n",
     ".ctxkit.yaml:2:9: error: stage 'shrink' names no known stage and has no 'use' "
     "(set 'use' to one of: attachments, autocompact, collapse, microcompact, snip, tool-result-budget)"),
    ("stages:\n  - id: late\n    use: snip\n    after: autocompcat\n",
     ".ctxkit.yaml:4:12: error: stage 'late' is placed after 'autocompcat', which is not a stage id "
     "(did you mean 'autocompact'?)"),
    ("stages:\n  - id: late\n    use: snip\n    after: snip\n    before: snip\n",
     ".ctxkit.yaml:2:5: error: stage 'late' sets both 'before' and 'after' (use one of them)"),
    ("stages:\n  - id: a\n    use: snip\n  - id: a\n    use: snip\n",
     ".ctxkit.yaml:4:9: error: duplicate stage id 'a' (first at line 2)"),
    ("model: a\nmodel: b\n",
     ".ctxkit.yaml:2:1: error: duplicate key 'model' (first at line 1)"),
    ("model: [unclosed\n",
     ".ctxkit.yaml:2:1: error: invalid YAML: expected ',' or ']', but got '<stream end>' "
     "(while parsing a flow sequence)"),
    ("thresholds:\n  warning_buffer: 1\n bad: 2\n",
     ".ctxkit.yaml:3:2: error: invalid YAML: expected <block end>, but found '<block mapping start>' "
     "(while parsing a block mapping)"),
])
def test_each_error_as_rendered(repo, text, expected):
    write(repo / ".ctxkit.yaml", text)
    assert rendered_problems(repo) == [expected]


def test_all_problems_at_once_across_layers(repo, tmp_path):
    user = write(tmp_path / "user" / "policy.yaml", """
        model: 7
        tresholds: {}
        """)
    write(repo / ".ctxkit.yaml", """
        estimator: exact
        stages:
          - id: microcompact
            options: {keep_recent: x}
        """)
    assert rendered_problems(repo, user_config=user, sets=["max_output_tokens=0"]) == [
        f"{user}:1:8: error: model must be a string, got 7",
        f"{user}:2:1: error: unknown key 'tresholds' (did you mean 'thresholds'?)",
        ".ctxkit.yaml:1:12: error: estimator must be one of rough, tiktoken, anthropic, got 'exact'",
        ".ctxkit.yaml:4:28: error: stages[microcompact].options.keep_recent must be an integer, got 'x'",
        "--set:1:1: error: max_output_tokens must be at least 1, got 0",
    ]


def test_malformed_layers_are_reported_not_crashed_on(repo, tmp_path):
    user = write(tmp_path / "user" / "policy.yaml", """
        thresholds: [1, 2]
        stages:
          - just-a-string
          - id: [microcompact]
          - id: microcompact
            use: [x]
        """)
    write(repo / ".ctxkit.yaml", """
        thresholds:
          warning_buffer: 1
        stages: 5
        """)
    assert rendered_problems(repo, user_config=user) == [
        f"{user}:1:13: error: thresholds must be a mapping, got a list",
        f"{user}:3:5: error: stages[0] must be a mapping, got 'just-a-string'",
        f"{user}:4:9: error: stages[1].id must be a string, got a list",
        f"{user}:6:10: error: stages[microcompact].use must be a string, got a list",
        ".ctxkit.yaml:3:9: error: stages must be a list, got 5",
    ]


def test_empty_file_is_an_empty_layer(repo):
    write(repo / ".ctxkit.yaml", "# nothing yet\n")
    assert load(repo).model == "claude-sonnet-4-5"


# -- proactive: collapse or autocompact ------------------------------------------------


PROACTIVE_MESSAGE = (
    "stages 'collapse' and 'autocompact' are both enabled; set 'proactive' to collapse or autocompact "
    "to choose which one compacts proactively (reactive compaction stays available either way)")


def test_collapse_with_autocompact_needs_proactive(repo):
    write(repo / ".ctxkit.yaml", """
        stages:
          - id: collapse
            enabled: true
        """)
    assert rendered_problems(repo) == [f".ctxkit.yaml:3:5: error: {PROACTIVE_MESSAGE}"]
    assert load(repo, sets=["proactive=collapse"]).proactive == "collapse"
    assert load(repo, sets=["stages.autocompact.enabled=false"]).stage("collapse") is not None


def test_proactive_rule_names_stages_by_id_and_use(repo):
    assert rendered_problems(repo, sets=["stages.fold={use: collapse}"]) == [
        "--set:1:1: error: stages 'fold' (use: collapse) and 'autocompact' are both enabled; set 'proactive' "
        "to collapse or autocompact to choose which one compacts proactively "
        "(reactive compaction stays available either way)"]


# -- validate_file, render ---------------------------------------------------------------


def test_validate_file(repo):
    write(repo / "p.yaml", "estimator: exact\nthresholds:\n  autocompact_buffer: lots\n")
    assert [p.render() for p in validate_file("p.yaml")] == [
        "p.yaml:1:12: error: estimator must be one of rough, tiktoken, anthropic, got 'exact'",
        "p.yaml:3:23: error: thresholds.autocompact_buffer must be an integer, got 'lots'",
    ]
    write(repo / "ok.yaml", "extends: no-llm\nstages:\n  - id: microcompact\n    options: {keep_recent: 1}\n")
    assert validate_file(repo / "ok.yaml") == []
    assert [p.render() for p in validate_file("gone.yaml")] == ["gone.yaml:1:1: error: policy file 'gone.yaml' not found"]
    assert [p.render() for p in validate_file(Path("gone.yaml"))] == ["gone.yaml:1:1: error: no such file"]  # a Path is a file


def test_render_policy_shows_each_value_and_its_file(repo):
    write(repo / "base.yaml", """
        model: claude-sonnet-4-5
        thresholds:
          autocompact_buffer: 13000
        tools:
          compactable: [Read, Bash]
        stages:
          - id: microcompact
            options: {keep_recent: 5}
          - id: autocompact
        """)
    write(repo / ".ctxkit.yaml", """
        extends: base.yaml
        thresholds:
          warning_buffer: 1000
        stages:
          - id: autocompact
            enabled: false
        """)
    policy = load(repo, sets=["stages.microcompact.options.gap_minutes=10"])
    text = render_policy(policy)
    assert text == textwrap.dedent("""\
        model: claude-sonnet-4-5  # from base.yaml:1
        max_output_tokens: 32000  # from schema default
        estimator: rough  # from schema default
        thresholds:
          summary_reserve: 20000  # from schema default
          autocompact_buffer: 13000  # from base.yaml:3
          warning_buffer: 1000  # from .ctxkit.yaml:3
          blocking_buffer: 3000  # from schema default
        tools:
          compactable: [Read, Bash]  # from base.yaml:5
          collapsible: [Read, Grep, Glob, LS, WebSearch, WebFetch, NotebookRead]  # from schema default
          state_changing: [Edit, Write, MultiEdit, NotebookEdit, SendMessage, TodoWrite]  # from schema default
        summarizer:
          use: auto  # from schema default
          max_output_tokens: 20000  # from schema default
          total_timeout_seconds: 300  # from schema default
        stages:
          - id: microcompact  # from base.yaml:7
            options:
              keep_recent: 5  # from base.yaml:8
              gap_minutes: 10  # from --set:1
          - id: autocompact  # from base.yaml:9
            enabled: false  # from .ctxkit.yaml:6
        """)
    assert yaml.safe_load(text) == json.loads(json.dumps(dict(policy.merged)))
    assert render_policy(load(repo, sets=["stages.microcompact.options.gap_minutes=10"])) == text


def test_render_default_round_trips(repo):
    policy = load(repo)
    text = render_policy(policy)
    assert yaml.safe_load(text) == dict(policy.merged)
    assert "  - id: microcompact  # from <builtin>/default.yaml:" in text
