"""Secret redaction: nothing sent to a summarizer (extractive, command, Anthropic) and no summary written
holds a secret; the report counts them; the allowlist, extra patterns and bad regexes in the policy; the
store keeps the originals for `ctxkit expand`; and ordinary code is left alone.

Every secret here is fake: AWS's documented example keys, and tokens and a PEM body made of
pseudo-random characters at test time (so that no string in this file looks like a live credential).
"""
from __future__ import annotations

import base64
import hashlib
import json
import shlex
import string
import sys
from pathlib import Path

import pytest
from builders import Call, Turn, conversation, write
from hypothesis import given, settings
from hypothesis import strategies as st
from mock_messages_api import MockMessagesAPI

from ctxkit.cli.main import app
from ctxkit.policy.model import Redaction
from ctxkit.policy.schema import static_schema
from ctxkit.stages.collapse.stage import Collapse
from ctxkit.summarize.redact import RedactingSummarizer, Redactor, secret_name
from ctxkit.transcript import read_transcript
from ctxkit.transcript.collapse_view import SUMMARY_HEAD


def fake(n: int, seed: str, alphabet: str = string.ascii_letters + string.digits) -> str:
    """``n`` pseudo-random characters, the same every run."""
    return "".join(alphabet[b % len(alphabet)] for b in hashlib.shake_256(seed.encode()).digest(n))


AWS_KEY_ID = "AKIAIOSFODNN7EXAMPLE"  # AWS's documented example access key id
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"  # ... and secret access key
ANTHROPIC_KEY = "sk-ant-api03-" + fake(93, "anthropic", string.ascii_letters + string.digits + "-_") + "AA"
GITHUB_TOKEN = "ghp_" + fake(36, "github")
GITHUB_PAT = "github_pat_11" + fake(20, "pat-a") + "_" + fake(59, "pat-b")
URL_PASSWORD = "Tr0ub4dor-3xample"
ENV_PASSWORD = "n0t-a-real-passw0rd!"
PEM_BODY = base64.encodebytes(hashlib.shake_256(b"ctxkit-fake-rsa").digest(1190)).decode().replace("\n", "")
PEM_LINES = [PEM_BODY[i:i + 64] for i in range(0, len(PEM_BODY), 64)]
PEM = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(PEM_LINES) + "\n-----END RSA PRIVATE KEY-----\n"
LICENSE = "ACME-LIC-9F86D081884C7D65"  # not a known kind of secret: only a policy pattern finds it

#: what must never reach a summarizer or a summary (the PEM by its header and body lines)
SECRETS = [AWS_KEY_ID, AWS_SECRET, ANTHROPIC_KEY, GITHUB_TOKEN, GITHUB_PAT, URL_PASSWORD, ENV_PASSWORD,
           "BEGIN RSA PRIVATE KEY", *PEM_LINES]
KINDS = {"anthropic-key": 1, "aws-access-key": 1, "aws-secret-key": 1, "github-token": 2, "private-key": 1,
         "secret-assignment": 1, "url-password": 1}

DOTENV = (f"ANTHROPIC_API_KEY={ANTHROPIC_KEY}\nAWS_ACCESS_KEY_ID={AWS_KEY_ID}\nAWS_SECRET_ACCESS_KEY={AWS_SECRET}\n"
          f"GITHUB_TOKEN={GITHUB_TOKEN}\nDATABASE_URL=postgres://billing:{URL_PASSWORD}@db.internal:5432/billing\n"
          f'DB_PASSWORD="{ENV_PASSWORD}"\n')
DEPLOY_LOG = "".join(f"2026-11-29T09:{i // 60:02d}:{i % 60:02d}Z deploy step {i}: ok\n" for i in range(1800))
GIT_PUSH = f"git push https://x-access-token:{GITHUB_PAT}@github.com/acme/billing.git main"
TURNS = [
    Turn(f"Deploy the billing service to staging. The deploy user's key id is {AWS_KEY_ID}; the release needs "
         f"license {LICENSE}.", [
        [Call("Bash", {"command": "cat .env && cat logs/deploy.log"}, DOTENV + DEPLOY_LOG)],  # > 50,000: stored
        [Call("Read", {"file_path": "/srv/billing/deploy/id_rsa"}, PEM)],
        [Call("Bash", {"command": GIT_PUSH}, "remote: Permission to acme/billing.git denied to deploy-bot.\n"
                                             "fatal: The requested URL returned error: 403", is_error=True)],
        [Call("Bash", {"command": f"AWS_SECRET_ACCESS_KEY={AWS_SECRET} aws s3 cp dist/ s3://acme-billing/ "
                                  "--recursive"}, "upload: dist/app.tar.gz to s3://acme-billing/app.tar.gz")],
    ], f"Deployed. The GitHub token {GITHUB_TOKEN} from .env cannot push, and {AWS_SECRET} is the key in use."),
    Turn("Thanks. Now run the tests.", [[Call("Bash", {"command": "pytest -q"}, "3 passed in 0.41s")]],
         "All 3 tests pass."),
]


def leaked(text: str) -> list[str]:
    return [s for s in SECRETS if s in text]


@pytest.fixture
def session(tmp_path) -> Path:
    return write(tmp_path / "session.jsonl", conversation(TURNS))


def policy_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    return path


def compact(runner, session: Path, policy: Path, *extra: str, env: dict | None = None):
    out = session.parent / "out.jsonl"
    r = runner.invoke(app, ["compact", str(session), "-o", str(out), "--force", "--policy", str(policy), *extra],
                      env=env)
    return r, out


def summary_text(out: Path) -> str:
    """The text of the compaction summary written into a Claude Code transcript."""
    for line in out.read_text().splitlines():
        entry = json.loads(line)
        if entry.get("isCompactSummary"):
            content = entry["message"]["content"]
            return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)
    raise AssertionError("no compaction summary in the output")


def view_json(out: Path) -> str:
    """What the model is sent next: the compacted transcript's view."""
    return json.dumps(read_transcript(out).view().api_messages(), ensure_ascii=False)


REPORT_LINE = ("redacted 8 secrets (anthropic-key 1, aws-access-key 1, aws-secret-key 1, github-token 2, "
               "private-key 1, secret-assignment 1, url-password 1) from what went to the summarizer and the "
               "summaries written")


# -- (a) the extractive summary ------------------------------------------------------------------------------
def test_the_extractive_summary_quotes_no_secret_and_the_report_counts_them(runner, tmp_path, session):
    r, out = compact(runner, session, policy_file(tmp_path, "summarizer: {use: extractive}\n"))
    assert r.exit_code == 0, r.stderr
    summary = summary_text(out)
    assert leaked(summary) == []
    assert leaked(view_json(out)) == []
    # the quotes are still there, with markers where the secrets were
    assert f"The deploy user's key id is [REDACTED:aws-access-key]; the release needs license {LICENSE}." in summary
    assert "git push https://x-access-token:[REDACTED:github-token]@github.com/acme/billing.git main" in summary
    assert "The GitHub token [REDACTED:github-token] from .env cannot push" in summary
    assert REPORT_LINE in r.stderr.splitlines()


def test_without_redaction_the_extractive_summary_quotes_the_secrets(runner, tmp_path, session):
    """What the policy switch turns off (and what ctxkit did before it redacted)."""
    r, out = compact(runner, session, policy_file(tmp_path, "summarizer: {use: extractive}\nredact: {enabled: false}\n"))
    assert r.exit_code == 0, r.stderr
    assert AWS_KEY_ID in summary_text(out) and GITHUB_PAT in summary_text(out)
    assert "redacted" not in r.stderr


def test_the_json_report_counts_the_secrets_by_kind(runner, tmp_path, session):
    r, _ = compact(runner, session, policy_file(tmp_path, "summarizer: {use: extractive}\n"), "--report", "json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stderr)["redacted"] == {"enabled": True, "secrets": 8, "kinds": KINDS}


# -- (b) a command summarizer ------------------------------------------------------------------------------
SUMMARIZE_SCRIPT = """\
import pathlib, sys
pathlib.Path(sys.argv[1]).write_text(sys.stdin.read())
# a summarizer that also reads files on its own: its answer quotes the .env file it found
print("<summary>\\n1. Primary Request and Intent:\\n   Deploy billing. Settings on disk:\\n"
      + pathlib.Path(sys.argv[2]).read_text() + "</summary>")
"""


def test_a_command_summarizer_receives_no_secret_and_its_answer_is_redacted(runner, tmp_path, session):
    (tmp_path / "summarize.py").write_text(SUMMARIZE_SCRIPT)
    (tmp_path / ".env").write_text(DOTENV)
    command = f"{shlex.quote(sys.executable)} summarize.py received.txt .env"
    policy = policy_file(tmp_path, f"summarizer:\n  use: command\n  command: {json.dumps(command)}\n")
    r, out = compact(runner, session, policy)
    assert r.exit_code == 0, r.stderr
    received = (tmp_path / "received.txt").read_text()
    assert leaked(received) == []
    assert "AWS_SECRET_ACCESS_KEY=[REDACTED:aws-secret-key] aws s3 cp" in received
    assert "[REDACTED:private-key]" in received and 'DB_PASSWORD="[REDACTED:secret-assignment]"' in received
    summary = summary_text(out)
    assert "Settings on disk:" in summary and "GITHUB_TOKEN=[REDACTED:github-token]" in summary
    assert leaked(summary) == [] and leaked(view_json(out)) == []
    assert REPORT_LINE in r.stderr.splitlines()


# -- (c) the Anthropic API ---------------------------------------------------------------------------------
def test_the_anthropic_summarizer_sends_no_secret_and_its_answer_is_redacted(runner, tmp_path, session):
    with MockMessagesAPI(default_text=None) as api:
        api.reply_text(f"<summary>\n1. Primary Request and Intent:\n   Deploy billing with {GITHUB_TOKEN}.\n</summary>")
        policy = policy_file(tmp_path, "summarizer: {use: anthropic, max_retries: 0}\n")
        r, out = compact(runner, session, policy, env={"ANTHROPIC_API_KEY": "test-key",
                                                        "ANTHROPIC_BASE_URL": api.base_url})
        assert r.exit_code == 0, r.stderr
        assert len(api.message_requests) == 1
        sent = json.dumps(api.message_requests[0].body, ensure_ascii=False)
    assert leaked(sent) == []
    assert "[REDACTED:anthropic-key]" in sent and "[REDACTED:url-password]@db.internal" in sent
    summary = summary_text(out)
    assert "Deploy billing with [REDACTED:github-token]." in summary and leaked(summary) == []
    assert REPORT_LINE in r.stderr.splitlines()


# -- the policy ----------------------------------------------------------------------------------------------
def test_an_allowlisted_value_passes_through(runner, tmp_path, session):
    policy = policy_file(tmp_path, "summarizer: {use: extractive}\nredact:\n  allowlist:\n"
                                   f"    - {AWS_KEY_ID}\n    - {{regex: 'Tr0ub4dor-[0-9a-z]+'}}\n")
    r, out = compact(runner, session, policy)
    assert r.exit_code == 0, r.stderr
    summary = summary_text(out)
    assert f"The deploy user's key id is {AWS_KEY_ID};" in summary
    assert leaked(summary) == [AWS_KEY_ID]
    assert "redacted 6 secrets (anthropic-key 1, aws-secret-key 1, github-token 2, private-key 1, " \
           "secret-assignment 1) from" in r.stderr


def test_a_policy_pattern_is_redacted(runner, tmp_path, session):
    policy = policy_file(tmp_path, "summarizer: {use: extractive}\nredact:\n  patterns:\n"
                                   "    - {regex: 'ACME-LIC-[0-9A-F]{16}', name: acme-license}\n")
    r, out = compact(runner, session, policy, "--report", "json")
    assert r.exit_code == 0, r.stderr
    summary = summary_text(out)
    assert LICENSE not in summary and "the release needs license [REDACTED:acme-license]." in summary
    assert json.loads(r.stderr)["redacted"]["kinds"] == {**KINDS, "acme-license": 1}


def test_a_bad_regex_is_a_policy_error_with_its_place(runner, tmp_path, session):
    policy = policy_file(tmp_path, "summarizer: {use: extractive}\nredact:\n  patterns:\n    - 'ACME-LIC-([0-9A-F]{16}'\n"
                                   "  allowlist:\n    - {regex: '*.example'}\n")
    r, out = compact(runner, session, policy)
    assert r.exit_code == 2
    assert r.stderr.splitlines()[:2] == [
        "policy.yaml:4:7: error: redact.patterns[0] is not a valid regular expression: missing ), unterminated "
        "subpattern at position 9 (Python re syntax)",
        "policy.yaml:6:15: error: redact.allowlist[0].regex is not a valid regular expression: nothing to repeat at "
        "position 0 (Python re syntax)",
    ]
    assert not out.exists()


def test_the_schema_states_the_same_defaults_as_the_policy_model():
    props = static_schema()["properties"]["redact"]["properties"]
    assert {k: v["default"] for k, v in props.items()} == {"enabled": Redaction.enabled, "patterns": [],
                                                            "allowlist": []}
    assert Redaction() == Redaction.from_mapping({}) == Redaction(True, (), ())


# -- the store keeps the originals ---------------------------------------------------------------------------
def test_expand_restores_the_original_secrets_from_the_store(runner, tmp_path, session):
    r, out = compact(runner, session, policy_file(tmp_path, "summarizer: {use: extractive}\n"))
    assert r.exit_code == 0, r.stderr
    assert DEPLOY_LOG not in out.read_text()  # the 60,000-character result went to the store
    back = tmp_path / "back.jsonl"
    r = runner.invoke(app, ["expand", str(out), "-o", str(back)])
    assert r.exit_code == 0, r.stderr
    results = [b["content"] for line in back.read_text().splitlines()
               for b in (json.loads(line).get("message") or {}).get("content") or []
               if isinstance(b, dict) and b.get("type") == "tool_result"]
    assert DOTENV + DEPLOY_LOG in results and PEM in results


# -- the other ways text reaches a summarizer ----------------------------------------------------------------
def test_session_memory_notes_hold_no_secret(runner, tmp_path, session):
    r = runner.invoke(app, ["memory", "update", str(session), "--session-memory", str(tmp_path / "notes.md"),
                            "--policy", str(policy_file(tmp_path, "summarizer: {use: extractive}\n"))])
    assert r.exit_code == 0, r.stderr
    notes = (tmp_path / "notes.md").read_text()
    assert "[REDACTED:aws-access-key]" in notes and leaked(notes) == []
    assert r.stderr.splitlines()[-1] == (
        "redacted 8 secrets (anthropic-key 1, aws-access-key 1, aws-secret-key 1, github-token 2, private-key 1, "
        "secret-assignment 1, url-password 1) from what went to the summarizer and the summaries written")


class RecordingSummarizer:
    """A model stand-in for collapse's LLM path: records its prompts, answers with a secret it 'found'."""

    name = "recording"

    def __init__(self):
        self.prompts: list[str] = []

    def complete(self, messages, *, system, max_tokens):
        self.prompts.append(json.dumps(messages))
        return f"The .env holds GITHUB_TOKEN={GITHUB_TOKEN}; the key is in deploy/id_rsa."

    def summarize(self, messages, *, instructions=None):  # pragma: no cover - collapse does not call it
        raise AssertionError("not used")


def test_collapse_sends_no_secret_to_its_summarizer_and_writes_none(tmp_path, make_context):
    url = f"https://deploy:{URL_PASSWORD}@artifacts.internal/billing/latest"
    turns = [Turn("find the credentials", [[Call("Read", {"file_path": "/srv/billing/.env"}, DOTENV * 40)],
                                           [Call("WebFetch", {"url": url}, "release 1.4.2\n" * 200),
                                            Call("Read", {"file_path": "/srv/billing/deploy/id_rsa"}, PEM * 4)]],
                  "Found them."),
             Turn("now deploy", [[Call("Bash", {"command": "make deploy"}, "ok")]], "Deployed.")]
    t = read_transcript(write(tmp_path / "t.jsonl", conversation(turns)))
    rule = Collapse("collapse", {}).run(t, make_context(force=True))
    rule_summaries = [b["text"] for m in rule.transcript.view().messages for b in m.content
                      if b.get("type") == "text" and b["text"].startswith(SUMMARY_HEAD)]
    assert rule_summaries and leaked("\n".join(rule_summaries)) == []
    assert "WebFetch https://deploy:[REDACTED:url-password]@artifacts.internal" in "\n".join(rule_summaries)

    tokens = make_context().tokens.count_messages(t.view().api_messages())
    ctx = make_context({"context_window": int(tokens / 0.95) + 10, "max_output_tokens": 10})
    model = RecordingSummarizer()
    ctx.summarizer_factory = lambda policy, c: model
    out = Collapse("collapse", {}).run(t, ctx)
    assert {r["by"] for r in out.report.details["committed"]} == {"llm"}
    assert model.prompts and leaked("\n".join(model.prompts)) == []
    written = json.dumps(out.transcript.view().api_messages())
    assert "GITHUB_TOKEN=[REDACTED:github-token]; the key is in deploy/id_rsa." in written
    assert ctx.redactor.summary()["secrets"] >= 6


# -- the redactor itself ------------------------------------------------------------------------------------
@pytest.mark.parametrize("text,expected", [
    (f"export AWS_ACCESS_KEY_ID={AWS_KEY_ID}", "export AWS_ACCESS_KEY_ID=[REDACTED:aws-access-key]"),
    (f"aws_secret_access_key = {AWS_SECRET}", "aws_secret_access_key = [REDACTED:aws-secret-key]"),
    (f'{{"SecretAccessKey": "{AWS_SECRET}", "SessionToken": "FwoGZXIvYXdzEBYaDK1234abcd"}}',
     '{"SecretAccessKey": "[REDACTED:aws-secret-key]", "SessionToken": "[REDACTED:secret-assignment]"}'),
    (f"key: {ANTHROPIC_KEY}", "key: [REDACTED:anthropic-key]"),
    (f"GH {GITHUB_TOKEN} and {GITHUB_PAT}.", "GH [REDACTED:github-token] and [REDACTED:github-token]."),
    (f"mysql://root:{URL_PASSWORD}@10.0.0.5/app", "mysql://root:[REDACTED:url-password]@10.0.0.5/app"),
    ("redis://:pw@cache:6379", "redis://:[REDACTED:url-password]@cache:6379"),
    (f"before\n{PEM}after", "before\n[REDACTED:private-key]\nafter"),
    (json.dumps({"content": PEM}), json.dumps({"content": "[REDACTED:private-key]\n"})),
    (f"-----BEGIN OPENSSH PRIVATE KEY----- {PEM_LINES[0]} {PEM_LINES[1][:20]} [… 900 more characters omitted]",
     "[REDACTED:private-key] [… 900 more characters omitted]"),  # a clipped quote, as the extractive summary cuts
    ("PASSWORD=hunter22", "PASSWORD=[REDACTED:secret-assignment]"),
    ("export DB_PASS='s3cr3t value'", "export DB_PASS='[REDACTED:secret-assignment]'"),
    ('password: "correct horse battery staple"', 'password: "[REDACTED:secret-assignment]"'),
    ("  client_secret: abcDEF123456ghiJKL", "  client_secret: [REDACTED:secret-assignment]"),
    ("--password=Tr0ub4dor", "--password=[REDACTED:secret-assignment]"),
    ('curl -H "X-Api-Key: abc123XYZ789" https://api.example.com',
     'curl -H "X-Api-Key: [REDACTED:secret-assignment]" https://api.example.com'),
    ("Authorization: Bearer 9f8e7d6c5b4a39281706f5e4d3c2b1a0", "Authorization: Bearer [REDACTED:bearer-token]"),
    # letters alone, but no words run together: random (a camelCase name under a weak name is not)
    ('key: "xKqPzWmTrBjLs"', 'key: "[REDACTED:secret-assignment]"'),
    ('password: "ThisIsPasswordManualEntry"', 'password: "[REDACTED:secret-assignment]"'),
    # a passphrase of words is a secret, whichever words (a template's stand-in says "put yours here": below)
    ("PASSWORD=correct-horse-battery-staple", "PASSWORD=[REDACTED:secret-assignment]"),
    ("PASSWORD=change-the-world", "PASSWORD=[REDACTED:secret-assignment]"),
    ("PASSWORD=YourDog2024", "PASSWORD=[REDACTED:secret-assignment]"),
    ("SLACK=xoxb-1234567890-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "SLACK=[REDACTED:slack-token]"),
    # what the rules for masked values, rule lists, filler numbers, conditionals and headers must not let through:
    # a password with ``****`` among as many other characters is no masked value
    ('secret = "Pa$$w0rd****!"', 'secret = "[REDACTED:secret-assignment]"'),
    ("DB_PASSWORD=Hunter2****", "DB_PASSWORD=[REDACTED:secret-assignment]"),
    ("TOKEN=ghp_****abcd1234abcd1234abcd1234abcd1234", "TOKEN=[REDACTED:secret-assignment]"),
    # ``|``-joined words no validation rule names
    ("PASSWORD=hunter|secret", "PASSWORD=[REDACTED:secret-assignment]"),
    ("'password' => 'secret|pass'", "'password' => '[REDACTED:secret-assignment]'"),
    # a number counting up in words that stand for no key or secret
    ("PASSWORD=Your-Dog-Rex-123", "PASSWORD=[REDACTED:secret-assignment]"),
    # a question in prose before an assignment, and a conditional whose value looks random
    ("What's the password? PASSWORD=Sup3rS3cret", "What's the password? PASSWORD=[REDACTED:secret-assignment]"),
    ('huh? "password": "Sup3rS3cret"', 'huh? "password": "[REDACTED:secret-assignment]"'),
    ("dev ? 'TOKEN': 'Zx81secretValue99'", "dev ? 'TOKEN': '[REDACTED:secret-assignment]'"),
    # a header in a command quoted as JSON (its quotes escaped), ending in an escaped line end, or with a space
    ('{"command": "curl -H \\"X-Api-Key: abc123def456\\" https://api.example.com"}',
     '{"command": "curl -H \\"X-Api-Key: [REDACTED:secret-assignment]\\" https://api.example.com"}'),
    ('"X-Api-Key: abc123def456\\r\\n"', '"X-Api-Key: [REDACTED:secret-assignment]\\r\\n"'),
    ('curl -H "X-Api-Key: abc123 def456"', 'curl -H "X-Api-Key: [REDACTED:secret-assignment] def456"'),
    # single quotes expand nothing in a shell or .env: the ``$`` is part of the password
    ("export PGPASSWORD='$ecret99'", "export PGPASSWORD='[REDACTED:secret-assignment]'"),
])
def test_each_kind_of_secret_is_replaced_by_its_marker(text, expected):
    assert Redactor().text(text) == expected


@pytest.mark.parametrize("text", [
    "max_tokens=20000", "MAX_TOKENS = 4096", "PWD=/home/alice/project", 'author = "Jane Doe"',
    "def f(api_key: Optional[str] = None):", "    api_key: Optional[str] = None", "token: str",
    "sorted(results, key=lambda x: x['score'])", "thread_key = tool_use_id || 'unmatched'",
    'test_token = "music"', "password=new_password", "self.token = token", "db_password = os.environ['DB_PASSWORD']",
    "PUBLIC_KEY=ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ", "token_type=bearer", "input_tokens: 5000",
    'TOKEN="${GITHUB_TOKEN}"', 'api_key="<your api key>"', "see postgres://user:password@localhost/db",
    "commit 3f2a9c1e0b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39", "id 123e4567-e89b-12d3-a456-426614174000",
    "risk-assessment-2024-quarterly-report-final-version", "Bearer authentication is required",
    "TOKEN=[REDACTED:secret-assignment]", "https://user:[REDACTED:url-password]@host",
    # a field's name under a weak one: a MongoDB index in Go (held-out 9ec57d73: taken for a secret, every
    # "createdAt" of the summary was redacted, the user's prompt "lets use createdAt" among them)
    'Keys: bson.D{{Key: "customerId", Value: 1}, {Key: "createdAt", Value: 1}}', 'key: "HTTPServerError"',
    # a template's stand-in in words, as a pasted .env.example holds (held-out prompts lost these lines)
    "JWT_SECRET=your-super-secret-jwt-key-change-this", "SECRET_KEY=change-me-in-production",
    "APP_KEY=base64:GENERATE_WITH_php_artisan_key:generate", "API_KEY=your-api-key-here",
    # a value a tool printed masked (held-out 9ec57d73: `gh auth status` pasted as a prompt lost its line)
    "  - Token: gho_************************************", "OPENAI_API_KEY=sk-****************************abcd",
    "password: ••••••••",
    # Laravel code a pasted spec held (held-out a8b4f8bf: each value found once was redacted wherever it
    # occurred, `$request->user()` in the user's 85,571-character prompt among them)
    "'password' => $request->password,", "'password' => Hash::make($request->password),",
    "            'password' => static::$password ??= Hash::make('password'),",
    "'password' => 'required|string|min:8|confirmed',", "'password' => 'hashed',",
    "Visit: `https://example.com/install.php?key=YOUR_SECRET_INSTALL_KEY_12345&action=migrate`",
    # a check's output, not a password (held-out 9eeec93d: "Stage", "Idle" and "FAIL" were redacted wherever
    # they occurred, the user's prompt quoting "PASS: stage count 10" among them)
    "console.log('PASS: Stage count', stageCount, '>= 6');", "console.log(sc >= 6 ? 'PASS' : 'FAIL', 'stage count:', sc);", "hit `https://example.com/cron/run?key=YOUR_CRON_SECRET_KEY`",
    "password: ab••••cd", "PASSWORD='$DB_PASS'",
])
def test_ordinary_code_and_prose_are_left_alone(text):
    r = Redactor()
    assert r.text(text) == text
    assert r.summary()["secrets"] == 0


def test_a_value_found_once_is_redacted_where_it_is_quoted_bare_and_counted_once():
    r = Redactor()
    first, second = r.texts([f"the key is {AWS_SECRET}, keep it", f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}"])
    assert first == "the key is [REDACTED:aws-secret-key], keep it"
    assert r.text(f"later: {AWS_SECRET}") == "later: [REDACTED:aws-secret-key]"
    assert r.summary() == {"enabled": True, "secrets": 1, "kinds": {"aws-secret-key": 1}}


def test_redacting_twice_changes_nothing_more():
    r = Redactor()
    once = r.text(DOTENV + PEM + GIT_PUSH)
    assert Redactor().text(once) == once


def test_tool_inputs_under_secret_named_keys_are_redacted_whole_and_thinking_is_dropped():
    messages = [{"role": "assistant", "content": [
        {"type": "thinking", "thinking": f"the password is {ENV_PASSWORD}", "signature": "sig"},
        {"type": "tool_use", "id": "t1", "name": "configure",
         "input": {"api_key": "Zx81-secret-value", "region": "eu-west-1", "nested": [{"password": ENV_PASSWORD}]}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [
            {"type": "text", "text": f"configured with {ENV_PASSWORD}"}]}]}]
    r = Redactor()
    assert r.messages(messages) == [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "configure", "input": {
            "api_key": "[REDACTED:secret-assignment]", "region": "eu-west-1",
            "nested": [{"password": "[REDACTED:secret-assignment]"}]}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [
            {"type": "text", "text": "configured with [REDACTED:secret-assignment]"}]}]}]
    assert messages[0]["content"][0]["type"] == "thinking"  # the caller's messages are not changed


def test_messages_without_secrets_reach_the_summarizer_in_the_same_shape_as_redacted_ones():
    """Where nothing is redacted the messages are handed on as they are (not copied), with the same
    normalizing as ever: thinking left out, a tool call without an input given ``"input": None`` (the
    command summarizer's prompt shows ``null``), a null item of a content list left out."""
    call = {"type": "tool_use", "id": "t1", "name": "Bash"}
    text = {"type": "text", "text": "please fix the parser"}
    messages = [{"role": "user", "content": [text, None]},
                {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": "s"}, call]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [text, None]}]},
                {"role": "user", "content": "plain words"}]
    out = Redactor().messages(messages)
    assert out == [{"role": "user", "content": [text]},
                   {"role": "assistant", "content": [{**call, "input": None}]},
                   {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [text]}]},
                   {"role": "user", "content": "plain words"}]
    assert out[3] is messages[3]  # nothing to change: the caller's own message


@pytest.mark.parametrize("name,strength", [
    ("AWS_SECRET_ACCESS_KEY", "strong"), ("apiKey", "strong"), ("db.password", "strong"), ("DB_PWD", "strong"),
    ("GITHUB_TOKEN", "weak"), ("KEY", "weak"), ("auth", "weak"), ("MAX_TOKENS", None), ("sort_key", None),
    ("PUBLIC_KEY", None), ("token_type", None), ("AUTHOR", None), ("keyboard", None),
])
def test_which_names_hold_secrets(name, strength):
    assert secret_name(name) == strength


def test_the_wrapper_forwards_everything_but_the_secrets():
    class Inner:
        name = "inner"
        stats = "inner stats"

        def summarize(self, messages, *, instructions=None):
            return f"{messages[0]['content']} / {instructions}"

    wrapped = RedactingSummarizer(Inner(), Redactor())
    assert wrapped.name == "inner" and wrapped.stats == "inner stats"
    assert wrapped.summarize([{"role": "user", "content": f"GITHUB_TOKEN={GITHUB_TOKEN}"}],
                             instructions=f"focus on {GITHUB_TOKEN}") == \
        "GITHUB_TOKEN=[REDACTED:github-token] / focus on [REDACTED:github-token]"


SNIPPETS = [AWS_KEY_ID, ANTHROPIC_KEY, GITHUB_TOKEN, GITHUB_PAT, PEM, f"postgres://billing:{URL_PASSWORD}@db:5432",
            f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}", f'DB_PASSWORD="{ENV_PASSWORD}"']


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(SNIPPETS),
                          st.text(alphabet=" \n\t.,;:()[]{}<>abcXYZ019-_=/\"'\\", max_size=24)), max_size=12))
def test_no_secret_survives_whatever_surrounds_it_and_redacting_again_changes_nothing(parts):
    text = " ".join(parts)
    r = Redactor()
    once = r.text(text)
    assert leaked(once) == []
    assert r.text(once) == once and Redactor().text(once) == once


def test_a_text_redacted_again_in_a_run_is_scanned_once_and_redacted_as_the_first_time(monkeypatch):
    """A compaction redacts the history for its summary, then again to measure what the summary kept: a
    text the run's redactor scanned before is not scanned again, and comes out as it did (the secrets
    it holds still counted once)."""
    text = f"deploy with aws_secret_access_key = {AWS_SECRET} and id {AWS_KEY_ID}"
    plain = "nothing to hide here"
    redactor = Redactor()
    scanned: list[str] = []
    find = Redactor._find
    monkeypatch.setattr(Redactor, "_find", lambda self, t, depth=0: scanned.append(t) or find(self, t, depth))
    first = redactor.texts([text, plain])
    again = redactor.messages([{"role": "user", "content": [{"type": "text", "text": text}]}])
    assert scanned.count(text) == 1 and scanned.count(plain) == 1
    assert AWS_SECRET not in first[0] and again[0]["content"][0]["text"] == first[0]
    assert first == Redactor().texts([text, plain]) and redactor.summary()["secrets"] == 2
