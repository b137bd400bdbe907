"""``ctxkit hooks install/uninstall``: ctxkit's entries go into Claude Code's settings.json and come out
again, everything else untouched: byte for byte back after uninstall, whatever the file held."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from ctxkit.cli.main import app
from ctxkit.integrations.claude_code_settings import ENTRIES, SettingsError, merged, unmerged

OURS = {event: group for event, group in ENTRIES}


@pytest.fixture(autouse=True)
def ctxkit_on_path(monkeypatch):
    """The ``ctxkit`` command beside this interpreter is on the PATH (else install warns)."""
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")

SETTINGS = [
    pytest.param("{}", id="empty-object"),
    pytest.param("{}\n", id="empty-object-newline"),
    pytest.param('{\n  "model": "opus",\n  "permissions": {"allow": ["Bash(git *)"]}\n}\n', id="other-keys"),
    pytest.param('{\n    "hooks": {\n        "PreCompact": [\n            {"hooks": [{"type": "command", '
                 '"command": "echo saved"}]}\n        ]\n    },\n    "env": {"A": "1"}\n}\n',
                 id="same-event-hook-four-spaces"),
    pytest.param('{\n\t"hooks": {\n\t\t"PostToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", '
                 '"command": "fmt"}]}]\n\t}\n}', id="other-event-tabs-no-final-newline"),
    pytest.param('{"hooks": {}, "z": 1}', id="empty-hooks-one-line"),
    pytest.param('{"hooks": {"SessionStart": [ ]}}\n', id="empty-event-list"),
    pytest.param('{\n  "hooks": {\n    "SessionStart": [\n      {\n        "matcher": "startup",\n        '
                 '"hooks": [{"type": "command", "command": "echo hi"}]\n      }\n    ]\n  },\n  "statusLine": '
                 '{"type": "command", "command": "x"}\n}\n', id="session-start-startup"),
    pytest.param('{"a": "é ✓ \\u00e9", "b": [1, 2.50, true, null]}\n', id="unicode-and-numbers-as-written"),
]


@pytest.mark.parametrize("text", SETTINGS)
def test_install_then_uninstall_gives_the_file_back_byte_for_byte(text):
    installed = merged(text, "settings.json")
    doc = json.loads(installed)
    before = json.loads(text)
    for event, group in ENTRIES:
        assert doc["hooks"][event][-1] == group
        assert doc["hooks"][event][:-1] == (before.get("hooks") or {}).get(event, [])
    # everything else is there, in the same order
    assert [k for k in doc if k != "hooks"] == [k for k in before if k != "hooks"]
    assert {k: v for k, v in doc.items() if k != "hooks"} == {k: v for k, v in before.items() if k != "hooks"}
    assert merged(installed, "settings.json") == installed  # idempotent
    assert unmerged(installed, "settings.json") == text


def test_a_file_install_created_is_removed_by_uninstall():
    created = merged(None, "settings.json")
    assert json.loads(created) == {"hooks": {event: [group] for event, group in ENTRIES}}
    assert unmerged(created, "settings.json") is None


def test_uninstall_leaves_what_the_user_added_after_install():
    installed = merged('{\n  "model": "opus"\n}\n', "settings.json")
    doc = json.loads(installed)
    doc["hooks"]["PreCompact"].append({"hooks": [{"type": "command", "command": "echo mine"}]})
    mine = dict(OURS["SessionStart"], hooks=[*OURS["SessionStart"]["hooks"], {"type": "command", "command": "x"}])
    doc["hooks"]["SessionStart"][0] = mine  # a group of ctxkit's the user edited is the user's now
    edited = json.dumps(doc, indent=2) + "\n"
    left = json.loads(unmerged(edited, "settings.json"))
    assert left == {"model": "opus", "hooks": {"PreCompact": [{"hooks": [{"type": "command", "command": "echo mine"}]}],
                                               "SessionStart": [mine]}}


def test_uninstall_of_a_file_without_ctxkit_changes_nothing():
    text = '{\n  "hooks": {\n    "PreCompact": [{"hooks": [{"type": "command", "command": "echo"}]}]\n  }\n}\n'
    assert unmerged(text, "settings.json") == text


@pytest.mark.parametrize("text, where, says", [
    ('{\n  "model": "opus",\n  "hooks": {\n}', "settings.json:4:2", "not valid JSON"),
    ('{\n  "a": 1,\n}\n', "settings.json:3:1", "not valid JSON"),
    ("[1, 2]\n", "settings.json:1:1", "must be a JSON object"),
    ('{"hooks": []}', "settings.json:1:11", '"hooks" must be an object'),
    ('{"hooks": {"PreCompact": {}}}', "settings.json:1:26", '"hooks"."PreCompact" must be a list'),
])
def test_settings_ctxkit_cannot_edit_are_refused_naming_file_and_line(text, where, says):
    with pytest.raises(SettingsError) as exc:
        merged(text, "settings.json")
    assert exc.value.message.startswith(where + ": ")
    assert says in exc.value.message


# -- the commands -------------------------------------------------------------------------------------
def test_install_writes_the_git_roots_settings_and_uninstall_restores_them(runner, tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    sub = tmp_path / "src" / "pkg"
    sub.mkdir(parents=True)
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    original = b'{\n  "permissions": {\n    "allow": ["Read"]\n  }\n}\n'
    settings.write_bytes(original)
    monkeypatch.chdir(sub)
    r = runner.invoke(app, ["hooks", "install"])
    assert r.exit_code == 0, r.stderr
    assert r.stdout == ""
    assert r.stderr == f"installed: '{settings}'\n"
    assert json.loads(settings.read_text())["hooks"]["PreCompact"] == [OURS["PreCompact"]]
    r = runner.invoke(app, ["hooks", "install", "--project"])
    assert (r.exit_code, r.stderr) == (0, f"already installed: '{settings}'\n")
    r = runner.invoke(app, ["hooks", "uninstall"])
    assert (r.exit_code, r.stderr) == (0, f"removed: '{settings}'\n")
    assert settings.read_bytes() == original
    r = runner.invoke(app, ["hooks", "uninstall"])
    assert (r.exit_code, r.stderr) == (0, f"not installed: '{settings}'\n")


def test_outside_a_repository_the_working_folder_is_the_project(runner, tmp_path):
    r = runner.invoke(app, ["hooks", "install"])
    settings = tmp_path / ".claude" / "settings.json"
    assert r.exit_code == 0, r.stderr
    assert settings.is_file()
    r = runner.invoke(app, ["hooks", "uninstall"])
    assert (r.exit_code, r.stderr) == (0, f"deleted: '{settings}'\n")
    assert not settings.exists()


def test_user_scope_edits_the_users_settings(runner, tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    r = runner.invoke(app, ["hooks", "install", "--user"])
    assert r.exit_code == 0, r.stderr
    assert (home / ".claude" / "settings.json").is_file()
    assert not (tmp_path / ".claude").exists()
    r = runner.invoke(app, ["hooks", "install", "--user", "--project"])
    assert r.exit_code == 2
    assert r.stderr == "ctxkit: error: --project and --user name different settings files: give one\n"


def test_invalid_settings_exit_2_and_nothing_is_written(runner, tmp_path):
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_bytes(b'{\n  "model": "opus",\n  "hooks": {\n')
    r = runner.invoke(app, ["hooks", "install"])
    assert r.exit_code == 2
    assert r.stderr.startswith(f"ctxkit: error: {settings}:4:1: not valid JSON: ")
    assert "nothing was written" in r.stderr
    assert settings.read_bytes() == b'{\n  "model": "opus",\n  "hooks": {\n'
    assert os.listdir(settings.parent) == ["settings.json"]  # no temporary file left
    settings.write_bytes(b'{"a": "\xff"}')
    r = runner.invoke(app, ["hooks", "uninstall"])
    assert (r.exit_code, r.stderr) == (2, f"ctxkit: error: {settings}:1: not UTF-8 text; nothing was written\n")


def test_a_symlinked_settings_file_is_edited_through_the_link(runner, tmp_path):
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    target = dotfiles / "claude-settings.json"
    original = b'{\n  "model": "opus"\n}\n'
    target.write_bytes(original)
    link = tmp_path / ".claude" / "settings.json"
    link.parent.mkdir()
    link.symlink_to(target)
    assert runner.invoke(app, ["hooks", "install"]).exit_code == 0
    assert link.is_symlink()
    assert "ctxkit hooks pre-compact" in target.read_text()
    assert runner.invoke(app, ["hooks", "uninstall"]).exit_code == 0
    assert link.is_symlink()
    assert target.read_bytes() == original


def test_install_warns_when_claude_code_would_not_find_ctxkit(runner, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    r = runner.invoke(app, ["hooks", "install"])
    assert r.exit_code == 0
    assert r.stderr == (f"installed: '{tmp_path / '.claude' / 'settings.json'}'\n"
                        "ctxkit: warning: no 'ctxkit' command on this PATH: Claude Code runs the hooks as 'ctxkit "
                        "hooks ...', so put the folder of ctxkit's command (the virtualenv's bin) on the PATH it "
                        "starts with\n")
