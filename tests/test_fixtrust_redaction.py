"""Review fixes for redaction: a GitLab token, a Slack webhook, HTTP basic auth, passwords on command
lines (curl -u, mysql -p, --password VALUE) and tokens in URL queries are redacted; ordinary code and
prose that look a little like them are left alone. The secrets here are made up."""
from __future__ import annotations

import base64
import json
import shlex
import sys
from pathlib import Path

import pytest

from ctxkit.cli.main import app
from ctxkit.summarize.redact import Redactor

BASIC = base64.b64encode(b"admin:Xk9mP2vL7qR4").decode()
CASES = [
    ("export GITLAB_TOKEN=glpat-Ab1dEfGh2jKlMnOpQr12", "export GITLAB_TOKEN=[REDACTED:gitlab-token]"),
    ("push with glpat-Ab1dEfGh2jKlMnOpQr12 now", "push with [REDACTED:gitlab-token] now"),
    ("post to https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
     "post to https://hooks.slack.com/services/[REDACTED:slack-webhook]"),
    (f"Authorization: Basic {BASIC}", "Authorization: Basic [REDACTED:basic-auth]"),
    (f'curl -H "Authorization: Basic {BASIC}" https://x', 'curl -H "Authorization: Basic [REDACTED:basic-auth]" https://x'),
    ("curl -u admin:Xk9mP2vL7qR4 https://api.example.com", "curl -u admin:[REDACTED:password] https://api.example.com"),
    ("curl -s --user 'admin:Xk9mP2vL7qR4' https://x", "curl -s --user 'admin:[REDACTED:password]' https://x"),
    ("mysql -u root -pS3cr3tPassw0rd app", "mysql -u root -p[REDACTED:password] app"),
    ("mysqldump -pS3cr3tPassw0rd app > dump.sql", "mysqldump -p[REDACTED:password] app > dump.sql"),
    ("deploy --password Xk9mP2vL7qR4 --env prod", "deploy --password [REDACTED:secret-assignment] --env prod"),
    ("gh --api-token Xk9mP2vL7qR4zz", "gh --api-token [REDACTED:secret-assignment]"),
    ("GET https://api.example.com/v1/me?access_token=AbC123dEf456GhI789&format=json",
     "GET https://api.example.com/v1/me?access_token=[REDACTED:secret-assignment]&format=json"),
    ("https://x.example/cb?code=1&client_secret=AbCdEf123456", "https://x.example/cb?code=1&client_secret=[REDACTED:secret-assignment]"),
]
NEGATIVES = [
    "Basic authentication is required", "HTTP Basic auth with a username", "sort -u names.txt",
    "curl -u $USER:$PASS https://x", "curl -u \"${USER}:${PASSWORD}\" https://x", "mysql -p -u root",
    "mysql -p", "--password-file /etc/pw", "--token $TOKEN", "--password-stdin", "?page=2&sort=key",
    "see ?access_token=<token>", "use the glpat- prefix", "docker login --password-stdin < pw.txt",
    "git commit --author Jane", "--api-key-file ./key.txt", "--token-limit 4096", "--key value",
    "https://hooks.slack.com/services/", "the webhook is at hooks.slack.com", "?key=value",
    "npm --auth-type=web login", "--secret-name prod/db", "--password secret",
]


@pytest.mark.parametrize("text,expected", CASES)
def test_each_secret_is_replaced_by_its_marker(text, expected):
    assert Redactor().text(text) == expected


@pytest.mark.parametrize("text", NEGATIVES)
def test_lookalikes_in_ordinary_code_and_prose_are_left_alone(text):
    r = Redactor()
    assert r.text(text) == text
    assert r.summary()["secrets"] == 0


def test_a_command_summarizer_receives_none_of_them(runner, tmp_path):
    lines = [{"role": "user", "content": "Set up the deploy"}]
    lines.append({"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash",
                                                    "input": {"command": "cat notes.txt"}}]})
    lines.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                               "content": "\n".join(text for text, _ in CASES)}]})
    lines.append({"role": "assistant", "content": [{"type": "text", "text": "Done."}]})
    Path("s.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    Path("summarize.py").write_text("import sys, pathlib\npathlib.Path('received.txt').write_text(sys.stdin.read())\n"
                                    "print('<summary>\\n1. Primary Request and Intent:\\n   deploy\\n</summary>')\n")
    command = f"{shlex.quote(sys.executable)} summarize.py"
    Path("p.yaml").write_text(f"summarizer:\n  use: command\n  command: {json.dumps(command)}\n"
                              "stages:\n  - id: autocompact\n")
    result = runner.invoke(app, ["compact", "--force", "s.jsonl", "-o", "o.jsonl", "--policy", "p.yaml"])
    assert result.exit_code == 0, result.stderr
    received = Path("received.txt").read_text()
    for secret in ("glpat-Ab1dEfGh2jKlMnOpQr12", "XXXXXXXXXXXXXXXXXXXXXXXX", BASIC, "Xk9mP2vL7qR4", "S3cr3tPassw0rd",
                   "AbC123dEf456GhI789", "AbCdEf123456"):
        assert secret not in received, secret
    assert "mysql -u root -p[REDACTED:password] app" in received
