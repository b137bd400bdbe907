"""Secrets a second attack still got past redaction: dotted tokens (``SG.x.y``, ``hvs.…``, ``Hunter2.Secret99``),
lowercase config keys (properties, INI, connection strings), partial matches (a JWT's signature, a Stripe key's
tail), passwords on command lines and in cookies, secrets in base64 and Kubernetes Secrets; images that must reach
a summarizer as a placeholder; and error messages that quoted a bad line's secret into CI logs. Ordinary code that
looks a little like them is left alone. Every secret here is made up, put together at test time.
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
from mock_messages_api import MockMessagesAPI

from ctxkit.cli.main import app
from ctxkit.summarize.redact import Redactor


def fake(n: int, seed: str, alphabet: str = string.ascii_letters + string.digits) -> str:
    """``n`` pseudo-random characters, the same every run."""
    return "".join(alphabet[b % len(alphabet)] for b in hashlib.shake_256(seed.encode()).digest(n))


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


SENDGRID = "SG." + fake(22, "sg-a") + "." + fake(43, "sg-b")
VAULT = "hvs." + fake(24, "vault")
DOTTED_PASSWORD = "Hunter2.Secret99"
JWT = ".".join(base64.urlsafe_b64encode(part).decode().rstrip("=") for part in (
    b'{"alg":"HS256","typ":"JWT"}', b'{"sub":"1234567890","name":"Jane"}', hashlib.sha256(b"sig").digest()))
JWT_SIGNATURE = JWT.rsplit(".", 1)[1]
STRIPE = "sk_" + "live_" + fake(24, "stripe") + "Tail99"  # longer than the 24 characters detect-secrets takes
STRIPE_RESTRICTED = "rk_" + "live_" + fake(30, "stripe-rk")
PW = "Xk9mP2vL7qR4"  # one made-up password, on many command lines
ENV = f"DB_HOST=db.internal\nDB_PASSWORD={DOTTED_PASSWORD}\nSTRIPE_KEY={STRIPE}\n"

#: text -> what the summarizer must be shown instead
CASES = [
    (f"SENDGRID_API_KEY={SENDGRID}", "SENDGRID_API_KEY=[REDACTED:secret-assignment]"),
    (f"export VAULT_TOKEN={VAULT}", "export VAULT_TOKEN=[REDACTED:vault-token]"),
    (f"vault login {VAULT}", "vault login [REDACTED:vault-token]"),
    (f"DB_PASSWORD={DOTTED_PASSWORD}", "DB_PASSWORD=[REDACTED:secret-assignment]"),
    (f"password: {DOTTED_PASSWORD}", "password: [REDACTED:secret-assignment]"),
    (f"spring.datasource.password={PW}", "spring.datasource.password=[REDACTED:secret-assignment]"),
    ("spring.datasource.password=hunter2", "spring.datasource.password=[REDACTED:secret-assignment]"),
    ("[client]\nuser=root\npassword=hunter2\n", "[client]\nuser=root\npassword=[REDACTED:secret-assignment]\n"),
    ("[client]\npassword = correcthorse\n", "[client]\npassword = [REDACTED:secret-assignment]\n"),
    ("Server=db;Database=app;User Id=sa;Password=hunter2;", "Server=db;Database=app;User Id=sa;Password=[REDACTED:secret-assignment];"),
    ('"ConnectionStrings": {"Db": "Server=db;User Id=sa;Password=correcthorse;Encrypt=true"}',
     '"ConnectionStrings": {"Db": "Server=db;User Id=sa;Password=[REDACTED:secret-assignment];Encrypt=true"}'),
    ("  password: hunter2", "  password: [REDACTED:secret-assignment]"),
    ('{"password": "hunter2"}', '{"password": "[REDACTED:secret-assignment]"}'),
    (f"the token is {JWT} here", "the token is [REDACTED:json-web-token] here"),
    (f"id_token={JWT}.", "id_token=[REDACTED:json-web-token]."),
    (f"charge with {STRIPE} and {STRIPE_RESTRICTED}.", "charge with [REDACTED:stripe-access-key] and [REDACTED:stripe-access-key]."),
    (f"sshpass -p {PW} ssh root@10.0.0.5", "sshpass -p [REDACTED:password] ssh root@10.0.0.5"),
    (f"sshpass -p '{PW}' scp a b:", "sshpass -p '[REDACTED:password]' scp a b:"),
    (f"docker login -u deploy -p {PW} registry.acme.io", "docker login -u deploy -p [REDACTED:password] registry.acme.io"),
    (f"docker login --password {PW} registry.acme.io", "docker login --password [REDACTED:secret-assignment] registry.acme.io"),
    (f"7z x backup.7z -p{PW} -o/tmp", "7z x backup.7z -p[REDACTED:password] -o/tmp"),
    (f"unzip -P {PW} backup.zip", "unzip -P [REDACTED:password] backup.zip"),
    (f"smbclient //fs/share -U alice%{PW}", "smbclient //fs/share -U alice%[REDACTED:password]"),
    (f"mysql -h db -u root -p{PW} app", "mysql -h db -u root -p[REDACTED:password] app"),
    (f"curl -u alice:{PW} https://api.acme.io", "curl -u alice:[REDACTED:password] https://api.acme.io"),
    (f"redis-cli -h cache -a {PW} ping", "redis-cli -h cache -a [REDACTED:password] ping"),
    (f"ldapsearch -x -D cn=admin -w {PW} -b dc=acme", "ldapsearch -x -D cn=admin -w [REDACTED:password] -b dc=acme"),
    (f"openssl enc -d -aes256 -pass pass:{PW} -in x.enc", "openssl enc -d -aes256 -pass pass:[REDACTED:password] -in x.enc"),
    (f"htpasswd -bc /etc/nginx/.htpasswd alice {PW}", "htpasswd -bc /etc/nginx/.htpasswd alice [REDACTED:password]"),
    (f"htpasswd -b -B .htpasswd alice '{PW}'", "htpasswd -b -B .htpasswd alice '[REDACTED:password]'"),
    (f"machine api.acme.io login alice password {PW}\n", "machine api.acme.io login alice password [REDACTED:password]\n"),
    (f"machine ftp.acme.io\n  login alice\n  password {PW}\n",
     "machine ftp.acme.io\n  login alice\n  password [REDACTED:password]\n"),
    ("Set-Cookie: session=3f9a8b7c6d5e4f3a2b1c0d9e; Path=/; HttpOnly; Secure",
     "Set-Cookie: session=[REDACTED:cookie]; Path=/; HttpOnly; Secure"),
    ('curl -H "Cookie: sessionid=3f9a8b7c6d5e4f3a2b1c; theme=dark" https://x',
     'curl -H "Cookie: sessionid=[REDACTED:cookie]; theme=dark" https://x'),
    ("curl -b 'sid=Zk3pQ9rT2vX8yW1a' https://x", "curl -b 'sid=[REDACTED:cookie]' https://x"),
    (f"Authorization: Bearer {JWT}", "Authorization: Bearer [REDACTED:bearer-token]"),
    ("Authorization: Token 9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b", "Authorization: Token [REDACTED:authorization]"),
    ('curl -H "authorization: SSWS 00QCjAl4MlV-WPXM6xVp4kg1fS_0Gh0JB3pGMGa1b7" https://acme.okta.com',
     'curl -H "authorization: SSWS [REDACTED:authorization]" https://acme.okta.com'),
    (f"Authorization: Basic {b64('alice:' + PW)}", "Authorization: Basic [REDACTED:basic-auth]"),
    # base64 that decodes to a secret: an .env piped through base64, a URL with a password
    (f"echo {b64(ENV)} | base64 -d > .env", "echo [REDACTED:base64-secret] | base64 -d > .env"),
    (base64.encodebytes((ENV * 3).encode()).decode(), "[REDACTED:base64-secret]\n"),
    (f"DATABASE_URL_B64: {b64('postgres://app:' + PW + '@db:5432/app')}", "DATABASE_URL_B64: [REDACTED:base64-secret]"),
    # a Kubernetes Secret: every value of its data, whatever the key
    (f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: api\ndata:\n  endpoint: {b64('https://api.acme.io')}\n"
     f"  api: {b64(PW)}\ntype: Opaque\n",
     "apiVersion: v1\nkind: Secret\nmetadata:\n  name: api\ndata:\n  endpoint: [REDACTED:kubernetes-secret]\n"
     "  api: [REDACTED:kubernetes-secret]\ntype: Opaque\n"),
    (json.dumps({"apiVersion": "v1", "data": {"api": b64(PW)}, "kind": "Secret"}),
     json.dumps({"apiVersion": "v1", "data": {"api": "[REDACTED:kubernetes-secret]"}, "kind": "Secret"})),
]
#: what stays as it is: code, placeholders, prose and data that only look a little like the above
NEGATIVES = [
    "password = get_password()", "token = tokens[i]", "self.secret = secret", "password = user.password",
    "API_KEY = config.API_KEY", "secret = settings.SECRET_KEY", "api_key = self.api_key", "token = response.json()",
    "spring.datasource.password=${DB_PASSWORD}", "[client]\npassword=\n", "docker run -p 8080:80 nginx",
    "docker run -p ${PORT}:80 nginx", "docker login -u deploy --password-stdin", "7z a -p backup.7z dir",
    "sshpass -p $SSHPASS ssh host", "unzip -P \"$ZIP_PASSWORD\" x.zip", "smbclient -U alice%$PASS //fs/share",
    "Cookie: theme=dark; lang=en", "htpasswd -c .htpasswd alice", "htpasswd -bc .htpasswd alice $PASSWORD",
    "the machine has a password prompt", "Authorization: Token required", "authorization: none given here", "Set-Cookie: lang=en; Path=/", "kind: SecretProviderClass\ndata:\n  a: b1c2d3\n",
    "kind: ConfigMap\ndata:\n  color: blue2\n", f"echo {b64('hello there, nothing to see in this text')} | base64 -d",
    "sha256:" + hashlib.sha256(b"x").hexdigest(), "AbstractSingletonProxyFactoryBean", "connection.password.setter",
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
]
#: what must never reach a summarizer from CASES
SECRETS = [SENDGRID, VAULT, DOTTED_PASSWORD, JWT_SIGNATURE, STRIPE[-12:], STRIPE_RESTRICTED[-12:], PW, "hunter2",
           "correcthorse", "3f9a8b7c6d5e4f3a2b1c", "Zk3pQ9rT2vX8yW1a", b64(ENV)[:40], b64(PW)]


@pytest.mark.parametrize("text,expected", CASES)
def test_each_secret_is_replaced_whole_by_its_marker(text, expected):
    assert Redactor().text(text) == expected


@pytest.mark.parametrize("text", NEGATIVES)
def test_code_placeholders_and_plain_data_are_left_alone(text):
    r = Redactor()
    assert r.text(text) == text
    assert r.summary()["secrets"] == 0


def test_a_jwt_found_in_one_text_is_redacted_whole_where_another_quotes_it():
    r = Redactor()
    assert r.texts([f"got {JWT}", f"it was {JWT}, signed"]) == ["got [REDACTED:json-web-token]",
                                                               "it was [REDACTED:json-web-token], signed"]


# -- through compact: the summarizer is still called, with the secrets replaced --------------------------------
def _session(tmp_path: Path, result) -> Path:
    turns = [Turn("Set up the deploy", [[Call("Bash", {"command": "cat notes.txt"}, result)]], "Done."),
             Turn("Now the tests.", [[Call("Bash", {"command": "pytest -q"}, "3 passed")]], "All pass.")]
    return write(tmp_path / "s.jsonl", conversation(turns))


NOTES = "\n".join(text for text, _ in CASES)


RECORDER = ("import sys, pathlib\npathlib.Path('received.txt').write_text(sys.stdin.read())\n"
            "print('<summary>\\n1. Primary Request and Intent:\\n   deploy\\n</summary>')\n")


def compact_with_command(runner, session: Path) -> str:
    """What a ``command`` summarizer reads on its standard input when ``session`` is compacted (in the
    runner's working directory)."""
    Path("summarize.py").write_text(RECORDER)
    command = f"{shlex.quote(sys.executable)} summarize.py"
    Path("p.yaml").write_text(f"summarizer:\n  use: command\n  command: {json.dumps(command)}\n")
    r = runner.invoke(app, ["compact", "--force", str(session), "-o", "o.jsonl", "--policy", "p.yaml"])
    assert r.exit_code == 0, r.stderr
    return Path("received.txt").read_text()


def compact_with_api(runner, session: Path) -> str:
    """The one request the Anthropic summarizer sends (to the mock Messages API) when ``session`` is compacted."""
    Path("a.yaml").write_text("summarizer: {use: anthropic, max_retries: 0}\n")
    with MockMessagesAPI() as api:
        r = runner.invoke(app, ["compact", "--force", str(session), "-o", "o.jsonl", "--policy", "a.yaml"],
                          env={"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": api.base_url})
        assert r.exit_code == 0, r.stderr
        assert len(api.message_requests) == 1
        return json.dumps(api.message_requests[0].body, ensure_ascii=False)


def test_a_command_summarizer_is_called_with_the_secrets_replaced(runner, tmp_path):
    received = compact_with_command(runner, _session(tmp_path, NOTES))
    assert "Set up the deploy" in received  # the summarizer was called, with the history
    assert [s for s in SECRETS if s in received] == []
    for _, expected in CASES:
        assert expected.strip() in received


def test_the_anthropic_summarizer_is_sent_the_secrets_replaced(runner, tmp_path):
    sent = compact_with_api(runner, _session(tmp_path, NOTES))
    assert "Set up the deploy" in sent
    assert [s for s in SECRETS if s in sent] == []
    assert "sshpass -p [REDACTED:password] ssh root@10.0.0.5" in sent


# -- images reach a summarizer as a placeholder, never as their bytes ------------------------------------------
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + hashlib.shake_256(b"pixels").digest(3000)).decode()
IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}


def test_an_image_reaches_the_summarizers_as_a_placeholder(runner, tmp_path):
    session = _session(tmp_path, [{"type": "text", "text": "screenshot:"}, IMAGE])
    received = compact_with_command(runner, session)
    assert "screenshot:" in received and "[image]" in received and PNG[:40] not in received
    sent = compact_with_api(runner, session)
    assert "[image]" in sent and PNG[:40] not in sent and '"image"' not in sent


# -- a bad line's error quotes no secret ---------------------------------------------------------------------
AWS_KEY_ID = "AKIAIOSFODNN7EXAMPLE"  # AWS's documented example key id
BAD_VALUES = [f"AWS_SECRET_ACCESS_KEY={fake(40, 'aws')}", f"{AWS_KEY_ID}", {"token": VAULT}, [SENDGRID], PW]


def _bad_session(tmp_path: Path, value) -> Path:
    good = conversation([Turn("hi", [], "hello")])
    good[0]["message"]["content"] = [{"type": "text", "text": "hi"}, value]  # a block must be an object
    return write(tmp_path / "bad.jsonl", good)


def _leaks(value, text: str) -> bool:
    parts = [value] if isinstance(value, str) else [json.dumps(value)] + [str(v) for v in (
        value.values() if isinstance(value, dict) else value)]
    return any(p in text for p in parts) or PW in text or AWS_KEY_ID in text


@pytest.mark.parametrize("value", BAD_VALUES, ids=["aws-secret", "aws-key-id", "object", "list", "password"])
def test_a_bad_lines_error_says_what_the_value_is_not_the_value(runner, tmp_path, value):
    path = _bad_session(tmp_path, value)
    r = runner.invoke(app, ["compact", str(path), "-o", str(tmp_path / "o.jsonl")])
    assert r.exit_code == 3
    assert r.stderr.startswith(f"ctxkit: error: {path}:1: message.content[1] must be a content block (an object with a string type), got ")
    assert not _leaks(value, r.stderr), r.stderr

    r = runner.invoke(app, ["check", str(path), "--output-format", "github"])
    assert r.exit_code == 3 and "::error file=" in r.stdout
    assert not _leaks(value, r.stdout + r.stderr)

    r = runner.invoke(app, ["stats", str(path), "--on-bad-line", "skip", "--json"])
    assert r.exit_code == 0, r.stderr
    assert "skipped 1 unreadable line(s)" in r.stderr
    assert not _leaks(value, r.stdout + r.stderr)

    r = runner.invoke(app, ["compact", str(path), "--on-bad-line", "skip", "-o", str(tmp_path / "o.jsonl"),
                            "--report", "json"])
    assert r.exit_code == 0, r.stderr
    warnings = json.loads(r.stderr)["warnings"]
    assert any("skipped 1 unreadable line(s)" in w for w in warnings)
    assert not _leaks(value, r.stderr)


def test_an_orphan_tool_results_id_is_quoted_only_when_it_looks_like_an_id(runner, tmp_path):
    lines = [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"DB_PASSWORD={PW}", "content": "x"}]}]
    (tmp_path / "o.jsonl").write_text(json.dumps(lines[0]) + "\n")
    r = runner.invoke(app, ["view", str(tmp_path / "o.jsonl")])
    assert r.exit_code == 3
    assert r.stderr.startswith(f"ctxkit: error: {tmp_path / 'o.jsonl'}:1: tool_result a string of 24 characters "
                               "answers no tool_use before it")
    (tmp_path / "o.jsonl").write_text(json.dumps(lines[0]).replace(f"DB_PASSWORD={PW}", "toolu_01AbCdEf") + "\n")
    r = runner.invoke(app, ["view", str(tmp_path / "o.jsonl")])
    assert "tool_result 'toolu_01AbCdEf' answers no tool_use before it" in r.stderr


def test_a_documents_title_reaches_a_summarizer_redacted():
    """The summarizers show a document as ``[document: its title]``: the title is redacted like any text."""
    doc = {"type": "document", "title": f"DB_PASSWORD={PW}", "source": {"type": "base64", "data": PNG}}
    out = Redactor().messages([{"role": "user", "content": [doc]}])
    assert out[0]["content"][0]["title"] == "DB_PASSWORD=[REDACTED:secret-assignment]"


def test_a_summarizers_error_that_quotes_its_answer_quotes_no_secret(runner, tmp_path):
    """A command that reads the .env itself and prints it instead of a summary: the run fails (no summary
    is better than a wrong one), and the error that quotes the answer has the secret redacted."""
    session = _session(tmp_path, "nothing secret here")
    Path(".env").write_text(f"DB_PASSWORD={DOTTED_PASSWORD}\n")
    command = f"{shlex.quote(sys.executable)} -c \"print(open('.env').read())\""
    Path("p.yaml").write_text(f"summarizer:\n  use: command\n  command: {json.dumps(command)}\n")
    r = runner.invoke(app, ["compact", "--force", str(session), "-o", "o.jsonl", "--policy", "p.yaml"])
    assert r.exit_code == 1
    assert "malformed summary" in r.stderr and "it reads: 'DB_PASSWORD=[REDACTED:secret-assignment]'" in r.stderr
    assert DOTTED_PASSWORD not in r.stderr


@pytest.mark.parametrize("text", ["docker login -p x1y2 " * 5000, "sshpass -p x1y2 ssh h " * 5000, "curl -b a=b1c2 " * 5000,
                                  "Cookie: a=b1c2; " * 5000, "DB_PASSWORD=x1y2 " * 5000, "mysql -px1y2 " * 5000,
                                  "kind: Secret\ndata:\n  a: b1c2\n" * 5000, '{"kind": "Secret", "data": {"a": "b1"}} ' * 5000],
                         ids=["docker", "sshpass", "curl-cookie", "cookie", "assignment", "mysql", "secrets", "json-secrets"])
def test_a_long_line_of_repeated_commands_is_redacted_in_bounded_time(text):
    """Each command-line rule looks back from its flag a bounded distance, and each cookie list or line is read
    a bounded distance: a one-line text of 5,000 commands is not read 5,000 times over (it took minutes)."""
    import time

    started = time.perf_counter()
    out = Redactor().text(text)
    assert time.perf_counter() - started < 10
    assert "[REDACTED:" in out


# -- a third attack: dotted passwords where a value is a string, never code ------------------------------------
#: after a password flag, in a shell or .env assignment, and as a quoted JSON value: a dotted value with no
#: digit is still the password (the "looks like code" test is for code)
LITERAL_CASES = [
    ("sshpass -p Ssh.Pass.Word ssh host", "sshpass -p [REDACTED:password] ssh host"),
    ("docker login -u me -p Dock.Er.Pw", "docker login -u me -p [REDACTED:password]"),
    ("unzip -P Un.Zip.Pw a.zip", "unzip -P [REDACTED:password] a.zip"),
    ("smbclient -U alice%Smb.Pw.X //h/s", "smbclient -U alice%[REDACTED:password] //h/s"),
    ("curl -u admin:Curl.Pw.Dotted https://x", "curl -u admin:[REDACTED:password] https://x"),
    ("mysql -uroot -pMy.Dotted.Pw db", "mysql -uroot -p[REDACTED:password] db"),
    ("DB_PASSWORD=a.b", "DB_PASSWORD=[REDACTED:secret-assignment]"),
    ("PGPASSWORD=PgPw.Secret.Val", "PGPASSWORD=[REDACTED:secret-assignment]"),
    ("export DB_PASSWORD=PgPw.Secret.Val", "export DB_PASSWORD=[REDACTED:secret-assignment]"),
    ('"password":"JsonPw.v2"', '"password":"[REDACTED:secret-assignment]"'),
    ('{"password":"JsonPw.v2"}', '{"password":"[REDACTED:secret-assignment]"}'),
    ('{"db_password": "a.b"}', '{"db_password": "[REDACTED:secret-assignment]"}'),
    ('{"api_key": "settings.API_KEY"}', '{"api_key": "[REDACTED:secret-assignment]"}'),
]
#: the same dotted names as code stay as they are
LITERAL_NEGATIVES = ['{"password": settings.PASSWORD}', "password = config.db.password",
                     "db_password = settings.DB_PASSWORD", "headers = {\"api_key\": self.api_key}"]


@pytest.mark.parametrize("text,expected", LITERAL_CASES)
def test_a_dotted_password_where_a_value_is_a_string_is_redacted(text, expected):
    assert Redactor().text(text) == expected


@pytest.mark.parametrize("text", LITERAL_NEGATIVES)
def test_a_dotted_name_in_code_is_still_left_alone(text):
    assert Redactor().text(text) == text


def test_a_command_summarizer_is_not_sent_a_dotted_password(runner, tmp_path):
    received = compact_with_command(runner, _session(tmp_path, "\n".join(text for text, _ in LITERAL_CASES)))
    assert "Set up the deploy" in received
    for secret in ("Ssh.Pass.Word", "Dock.Er.Pw", "Un.Zip.Pw", "Smb.Pw.X", "Curl.Pw.Dotted", "My.Dotted.Pw",
                   "DB_PASSWORD=a.b", "PgPw.Secret.Val", "JsonPw.v2", '"a.b"', "settings.API_KEY"):
        assert secret not in received
    for _, expected in LITERAL_CASES:
        assert expected in received


# -- Python's single quotes and an undotted PGPASSWORD, as a summarizer is shown them -------------------------
PYTHON_SOURCE = ("import psycopg2\n\nDATABASES = {'default': {'NAME': 'app', 'PASSWORD': 'Pg4dminPw'}}\n"
                 "config = {'password': 'hunter2', 'user': 'app'}\n"
                 "conn = psycopg2.connect(host='db', user='app', password='s3cr3tPw')\n"
                 "client = Client(api_key='ak_live_Zq81vX', timeout=3)\n")
#: what the summarizer must be shown instead (a command quoted as JSON: its lines joined by ``\n`` escapes)
QUOTED_CASES = [
    ("{'password': 'hunter2'}", "{'password': '[REDACTED:secret-assignment]'}"),
    ("connect(host='db', password='s3cr3tPw')", "connect(host='db', password='[REDACTED:secret-assignment]')"),
    ("{\\'password\\': \\'hunter2\\'}", "{\\'password\\': \\'[REDACTED:secret-assignment]\\'}"),
    ("PGPASSWORD=word psql", "PGPASSWORD=[REDACTED:secret-assignment] psql"),
    ('"command": "cd /app\\nPGPASSWORD=word psql -h db"',
     '"command": "cd /app\\nPGPASSWORD=[REDACTED:secret-assignment] psql -h db"'),
    ('"cd /app\\n\\tPGPASSWORD=word psql"', '"cd /app\\n\\tPGPASSWORD=[REDACTED:secret-assignment] psql"'),
]


@pytest.mark.parametrize("text,expected", QUOTED_CASES)
def test_python_quoted_and_escaped_passwords_are_redacted(text, expected):
    assert Redactor().text(text) == expected


QUOTED_SECRETS = ("Pg4dminPw", "hunter2", "s3cr3tPw", "ak_live_Zq81vX", "PGPASSWORD=word", "PgWord77", "taskword")
#: a file that is JSON: the script in it is one string, its lines joined by ``\n`` escapes
TASKS = json.dumps({"tasks": [{"label": "db", "command": "cd /app\nPGPASSWORD=taskword psql -h db"}]}, indent=2)


def _python_session(tmp_path: Path) -> Path:
    turns = [Turn("Why does the app not connect?", [[Call("Read", {"file_path": "/w/settings.py"}, PYTHON_SOURCE)],
                                                    [Call("Read", {"file_path": "/w/.vscode/tasks.json"}, TASKS)],
                                                    [Call("Bash", {"command": "cd /app\nPGPASSWORD=word psql -h db -U app"},
                                                          "psql: connection refused")],
                                                    [Call("Bash", {"command": "export PGPASSWORD=PgWord77; pg_dump app"},
                                                          "ok")]],
                   "The host is down."),
             Turn("Now the tests.", [[Call("Bash", {"command": "pytest -q"}, "3 passed")]], "All pass.")]
    return write(tmp_path / "py.jsonl", conversation(turns))


def test_single_quoted_python_passwords_and_an_undotted_pgpassword_reach_no_summarizer(runner, tmp_path):
    received = compact_with_command(runner, _python_session(tmp_path))
    assert "Why does the app not connect?" in received  # the summarizer was called, with the history
    assert [s for s in QUOTED_SECRETS if s in received] == []
    assert "'password': '[REDACTED:" in received and "password='[REDACTED:" in received
    assert "PGPASSWORD=[REDACTED:" in received
    assert "'user': 'app'" in received  # what is no secret is still there
    sent = compact_with_api(runner, _python_session(tmp_path))
    assert "Why does the app not connect?" in sent
    assert [s for s in QUOTED_SECRETS if s in sent] == []
