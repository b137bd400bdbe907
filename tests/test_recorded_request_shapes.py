"""What Claude Code recorded of its requests (``api-request``, ``api-request-shape``) may hold anything.

Found by the fuzzer (bench/fuzz.py, ``report``): an ``api-request`` whose ``params`` is not an object
made ``ctxkit report`` and ``ctxkit view --to anthropic-request`` an internal error (exit 4,
AttributeError). Those settings are now ignored when they are not an object, as if not recorded
(the reader checks an ``api-request-shape``'s fields itself: a bad line, exit 3).
"""
from __future__ import annotations

import json

import pytest
from conftest import CORPUS

from ctxkit.cli.main import app

SESSION = CORPUS / "claude-code-2.1.328" / "explore-edit" / "session.jsonl"

pytestmark = pytest.mark.skipif(not SESSION.exists(), reason="shared corpus not found")


def _set(entry: dict, path: tuple[str, ...], value) -> None:
    for key in path[:-1]:
        entry = entry[key]
    entry[path[-1]] = value


MUTATIONS = [
    ("api-request", ("params",), ["not", "an", "object"]),
    ("api-request", ("params", "thinking"), "enabled"),
    ("api-request", ("params", "thinking"), ["adaptive"]),
]


@pytest.mark.parametrize("kind,path,value", MUTATIONS, ids=[f"{k}.{'.'.join(p)}" for k, p, _ in MUTATIONS])
@pytest.mark.parametrize("command", [["view", "--to", "anthropic-request"], ["report", "-o", "report.html"]])
def test_a_recorded_request_of_the_wrong_shape_is_ignored_not_a_crash(runner, tmp_path, kind, path, value, command):
    lines = []
    for line in SESSION.read_text().splitlines():
        entry = json.loads(line)
        if entry.get("type") == kind:
            _set(entry, path, value)
        lines.append(json.dumps(entry))
    (tmp_path / "s.jsonl").write_text("\n".join(lines) + "\n")
    result = runner.invoke(app, [command[0], "s.jsonl", *command[1:]])
    assert result.exit_code == 0, result.stderr
    if command[0] == "view":
        body = json.loads(result.stdout)
        assert body["messages"] and isinstance(body.get("tools", []), list)
