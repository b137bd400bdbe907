"""What counts as a secret: ctxkit's own rules and the detect-secrets plugins used beside them (loaded only
when a run redacts); the checks that tell a secret from code and placeholders are in
:mod:`ctxkit.summarize.secret_values`, the formats that hide them in :mod:`ctxkit.summarize.secret_formats`.
:mod:`ctxkit.summarize.redact` applies them (its docstring lists what is found, in which order).

Over 400 lines: the rules are one ordered table (precedence matters), and each check sits beside the rule
that uses it; the plugin loading at the end is what the table's detect-secrets half needs."""
from __future__ import annotations

import functools
import importlib
import re
import sys
import threading
import types
from collections.abc import Callable
from typing import Any, NamedTuple

from .secret_formats import (
    cli_flag,
    command_before,
    cookie_values,
    kubernetes_secret_values,
    literal_value,
    on_command_line,
)
from .secret_values import (
    _NAME_WORDS,
    _NOT_SECRET_VALUES,
    _PLACEHOLDER,
    MARKER_RE,
    _distinctive,
    _has_digit_and_letter,
    _random_part,
    plausible_secret,
    random_under_weak_name,
    secret_name,
)


class Rule(NamedTuple):
    """One way to find a secret: a regex, the group that holds the secret, an optional check.

    ``check(match, text)`` answers the kind, or None when the match is not a secret after all.
    A ``lowered`` rule runs on the text lowercased (much faster than ``re.IGNORECASE`` for an
    alternation of words); positions are the same, values are read from the original text.
    ``spans(match, text)``, when given, names several secrets in one match (the values of a
    ``Cookie:`` header) as ``(start, end)`` pairs, instead of the group. A rule with ``triggers`` (lowercase
    words) runs only on a text that holds one of them: a regex that starts with an alternation of words
    is tried at every position (10-30 ms per MB each), a substring test is not.
    """

    kind: str
    regex: re.Pattern[str]
    group: int | str | Callable[[re.Match[str]], int | str] = 0  # a callable picks the group per match
    check: Callable[[re.Match[str], str], str | None] | None = None
    lowered: bool = False
    spans: Callable[[re.Match[str], str], list[tuple[int, int]]] | None = None
    triggers: tuple[str, ...] = ()


# -- ctxkit's own rules -----------------------------------------------------------------------------------

_PEM = re.compile(
    r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
    r"(?:.*?-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"  # the whole block, across lines
    # unterminated (a clipped quote): its base64 lines, separated by whitespace or escaped newlines
    r"|(?:(?:\s|\\[nr])*[A-Za-z0-9+/=]{8,})*[A-Za-z0-9+/=]*)",
    re.DOTALL,
)
#: ``NAME=value``: found from the secret word in the name (on the lowercased text), the name's start
#: found by scanning back; then ``=``, ``:``, ``:=`` or ``=>`` and a quoted or bare value.
_ASSIGNMENT = re.compile(
    r"""(?P<tail>(?:key|token|secret|pass|pwd|cred|auth)[\w.-]*)\\?["']?[ \t]*(?P<sep>:=|=>|=|:)[ \t]*"""
    r"""(?:\\?"(?P<dq>(?:[^"\\\n]|\\[^"\n])*)\\?"|\\?'(?P<sq>[^'\\\n]*)\\?'"""
    r"""|(?P<bare>[^\s"'`,;(){}\[\]<>\\&]+)(?=[\s"'`,;)}\]>\\&]|$))"""
)
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_AWS_SECRET_NAME = re.compile(r"aws.*secret|secret.?access.?key", re.IGNORECASE)


def _value_group(m: re.Match[str]) -> str:
    return next(g for g in ("dq", "sq", "bare") if m.group(g) is not None)


def _assignment(m: re.Match[str], text: str) -> str | None:
    """The kind of a ``NAME=value`` match, or None when it is not a secret."""
    start = m.start()
    # (a name starts after an escape too: ``\nPGPASSWORD=x`` in a command quoted as JSON)
    while start > 0 and text[start - 1] in _NAME_CHARS and not (start > 1 and text[start - 2] == "\\"
                                                                and text[start - 1] in "ntr"):
        start -= 1
    if start > 0 and text[start - 1] == "$":  # ``$TOKEN``: a reference, not an assignment
        return None
    name = text[start:m.end("tail")]
    strength = secret_name(name)
    group = _value_group(m)
    value = text[m.start(group):m.end(group)]
    before = text[text.rfind("\n", 0, start) + 1:start]  # (the line up to the name)
    random_looking = _has_digit_and_letter(value) or _random_part(value)
    if m.group("sep") == ":" and before.rstrip(" \t\"'").endswith("?") and not random_looking:
        # ``ok ? 'PASS' : 'FAIL'``: a conditional's two values, not a key and its value (but a random-looking
        # one is a secret whatever precedes it: ``dev ? 'password' : 'Xk29pLm'``, ``Which? password: Hunter2``)
        return None
    # a quoted value after a quoted key (``"password": "JsonPw.v2"``, JSON) is a string, never code
    literal = literal_value(m, text, start, name) or (group == "dq" and text[m.end("tail")] in "\"'")
    # a shell's or .env's single quotes expand nothing: ``PASSWORD='$ecret99'`` is a password, not ``$ecret99``'s
    # value (``'$DB_PASS'``, a name in capitals, is read as the reference it was likely meant to be)
    unexpanded = group == "sq" and literal and m.group("sep") == "=" and value.startswith("$") \
        and not re.fullmatch(r"\$[A-Z_][A-Z0-9_]*", value)
    # where a value is a string, a short one is a password too (``DB_PASSWORD=a.b``)
    if strength is None or not plausible_secret(value[unexpanded:], literal=literal, min_length=3 if literal else 4):
        return None
    if strength == "weak" and not random_under_weak_name(value):
        return None
    if group == "bare":
        # ``token=token``, ``password=new_password``: code, not a value (but ``DB_PASSWORD=Hunter2.Secret99``
        # and ``DB_PASSWORD=PgPw.Secret.Val`` in a shell are: a literal dotted value is a string)
        if re.fullmatch(r"[\w.]+", value) and any(w in value.lower() for w in _NAME_WORDS) \
                and not (literal and ("." in value or any(_random_part(p) for p in value.split(".")))):
            return None
        if m.group("sep") != ":":
            # ``util._assertion_pass = saved_hooks``: in code (a name not in capitals, not a --flag) a bare
            # identifier is a variable; ``DB_PASS=hunter2`` (shell, .env), ``--password=x``, an INI or
            # properties line, a connection string's ``Password=x;`` and ``Sup3rS3cretPw`` are values
            if (re.fullmatch(r"[A-Za-z_]\w*", value) and not name.isupper() and not name.startswith("-")
                    and not literal and not _random_part(value)):
                return None
        elif name.lower().endswith("authorization") and text[m.end():m.end() + 1] in (" ", "\t"):
            return None  # ``Authorization: <scheme> <credentials>``: the scheme is no secret (the rules above)
        else:
            # ``token: str`` in code or prose: a bare value after a colon counts only on a YAML line that
            # it ends (``password: hunter2``), after a quoted key (``"password": hunter2``) or in a quoted
            # header (``-H "X-Api-Key: abc123"``)
            line_end = text.find("\n", m.end())
            after = text[m.end():line_end if line_end >= 0 else len(text)].strip()
            quoted_key = text[m.end("tail"):m.start("sep")].strip().startswith(('"', "'"))
            yaml_line = not before.strip(" \t-") and (not after or after.startswith("#"))
            # (a header ends its quoted string, perhaps escaped as JSON quotes it, or holds a random-looking
            # value: ``'PASS: Stage count'`` is a check's label and words)
            header = before.endswith(('"', "'")) and (re.match(r"(?:\\[rn])*\\?" + before[-1], after) is not None
                                                      or random_looking)
            if not (yaml_line or quoted_key or header):
                return None
    return "aws-secret-key" if _AWS_SECRET_NAME.search(name) else "secret-assignment"


def _url_password(m: re.Match[str], text: str) -> str | None:
    value = m.group("secret")
    if MARKER_RE.search(value) or _PLACEHOLDER.match(value) or value.lower() in _NOT_SECRET_VALUES:
        return None
    return "url-password"


def _random_looking(kind: str, *, word_start: bool = False) -> Callable[[re.Match[str], str], str | None]:
    """A check: the secret group must hold a digit and a letter (and, with ``word_start``, the match must
    not start inside a word: ``risk-assessment-2024-...`` is not an ``sk-`` key)."""
    def check(m: re.Match[str], text: str) -> str | None:
        if word_start and m.start() > 0 and text[m.start() - 1].isalnum():
            return None
        return kind if _has_digit_and_letter(m.group("secret")) else None

    return check


def _word_start(kind: str) -> Callable[[re.Match[str], str], str | None]:
    def check(m: re.Match[str], text: str) -> str | None:
        return None if m.start() > 0 and text[m.start() - 1].isalnum() else kind

    return check


def _basic_auth(m: re.Match[str], text: str) -> str | None:
    """``Authorization: Basic <base64>``: a secret only when it decodes to ``user:password`` ("Basic
    authentication is required" is prose)."""
    import base64
    import binascii

    value = text[m.start("secret"):m.end("secret")]  # the rule runs on the lowercased text
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    return "basic-auth" if ":" in decoded and decoded.isprintable() else None


#: Schemes with rules of their own (Basic, Bearer), or whose value is a list of named fields (Digest, AWS).
_SCHEMES_ELSEWHERE = {"basic", "bearer", "digest", "aws4-hmac-sha256"}


def _authorization(m: re.Match[str], text: str) -> str | None:
    """``Authorization: <scheme> <credentials>`` for the schemes no other rule reads: the credentials when
    they look like a token (random-looking or 16 characters and more), not a word."""
    if m.group("scheme") in _SCHEMES_ELSEWHERE:
        return None
    value = text[m.start("secret"):m.end("secret")]
    return "authorization" if plausible_secret(value) and (_distinctive(value) or len(value) >= 16) else None


def _plausible(kind: str) -> Callable[[re.Match[str], str], str | None]:
    """A check: the secret group must not be a placeholder, a variable or a path (``curl -u $USER:$PASS``)."""
    def check(m: re.Match[str], text: str) -> str | None:
        return kind if plausible_secret(text[m.start("secret"):m.end("secret")]) else None

    return check


def _named(kind: str) -> Callable[[re.Match[str], str], str | None]:
    """A check for ``--name value`` and ``?name=value``: the name must be secret-named (a weak one,
    ``--token``, only with a random-looking value) and the value plausible."""
    def check(m: re.Match[str], text: str) -> str | None:
        name, value = m.group("name"), text[m.start("secret"):m.end("secret")]
        strength = secret_name(name)
        if strength is None or not plausible_secret(value) or value.startswith("-"):
            return None
        return kind if strength == "strong" or random_under_weak_name(value) else None

    return check


def _cli(commands: str, flag: str, *, attached: bool = False, triggers: tuple[str, ...] = ()) -> Rule:
    """The rule for a password given to a command-line tool: ``commands ... flag VALUE``."""
    return Rule("password", cli_flag(flag, attached=attached), group="secret",
                check=_after_command("password", commands), triggers=triggers)


def _after_command(kind: str, commands: str) -> Callable[[re.Match[str], str], str | None]:
    """A check: the flag is on a command line of ``commands`` (:func:`command_before`), and its value is
    plausible (not ``$PASS``, a placeholder, a number: ``docker run -p 8080:80``). A value after a password
    flag is a string, never code: ``sshpass -p Ssh.Pass.Word`` is a password however dotted."""
    command = on_command_line(commands)

    def check(m: re.Match[str], text: str) -> str | None:
        if "secret" in m.re.groupindex and not plausible_secret(text[m.start("secret"):m.end("secret")],
                                                                literal=True):
            return None
        return kind if command_before(command, text, m.start()) else None

    return check


#: ctxkit's own rules, in order of precedence. Each starts with a literal where it can: a leading
#: ``\b`` or ``(?i)`` makes Python's ``re`` try every position (40 times slower on a large history).
RULES: tuple[Rule, ...] = (
    Rule("private-key", _PEM),
    Rule("anthropic-key", re.compile(r"sk-ant-[A-Za-z0-9_-]{16,}")),
    Rule("openai-key", re.compile(r"sk-(?:proj-|svcacct-|admin-)?(?P<secret>[A-Za-z0-9_-]{32,})"),
         group=0, check=_random_looking("openai-key", word_start=True)),
    Rule("stripe-access-key", re.compile(r"(?:sk|rk)_(?:live|test)_[0-9a-zA-Z]{16,}(?![0-9a-zA-Z])"),
         check=_word_start("stripe-access-key"), triggers=("k_live_", "k_test_")),
    Rule("vault-token", re.compile(r"hv[sbr]\.[A-Za-z0-9_-]{20,}(?![A-Za-z0-9_-])"), check=_word_start("vault-token"), triggers=("hvs.", "hvb.", "hvr.")),
    Rule("aws-access-key", re.compile(r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}(?![A-Za-z0-9])"),
         check=_word_start("aws-access-key")),
    Rule("github-token", re.compile(r"(?:gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{22,255})(?!\w)"),
         check=_word_start("github-token")),
    Rule("url-password", re.compile(r"://[^\s:/?#@\"'<>]*:(?P<secret>[^\s/?#@\"'<>]+)@"), group="secret",
         check=_url_password),
    # detect-secrets reports only the "glpat" prefix of a GitLab token, and drops a Slack webhook as a URL
    Rule("gitlab-token", re.compile(r"gl(?:pat|dt|rt|ptt|cbt|oas|ft|imt|soat|sst|agent)-[A-Za-z0-9_-]{20,}(?![\w-])"),
         check=_word_start("gitlab-token")),
    Rule("slack-webhook", re.compile(r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<secret>[A-Za-z0-9_/-]{16,})"),
         group="secret"),
    Rule("basic-auth", re.compile(r"basic[ \t]+(?P<secret>[a-z0-9+/]{8,}={0,2})(?![a-z0-9+/=])"), group="secret",
         check=_basic_auth, lowered=True),
    # passwords on command lines: curl -u user:password, mysql -pPASSWORD, sshpass -p PASSWORD...
    _cli("curl", r"(?:-u|--user)[ \t]+['\"]?[^\s:'\"]+:", attached=True, triggers=("curl",)),
    _cli("mysql|mysqldump|mysqladmin|mariadb", "-p", attached=True, triggers=("mysql", "mariadb")),
    _cli("sshpass", "-p", triggers=("sshpass",)),
    _cli(r"(?:docker|podman|nerdctl|buildah|skopeo|helm|oras|crane)[ \t][^\n]*?login", "-p", triggers=("login",)),
    _cli("7z|7za|7zz|7zr|rar|unrar", "-p", attached=True, triggers=("7z", "rar")),
    _cli("unzip|zip|zipcloak|sqlcmd|bcp|isql", "-P", triggers=("zip", "sqlcmd", "bcp", "isql")),
    _cli("mongo|mongosh|mongodump|mongorestore|mongoexport|mongoimport", "-p", triggers=("mongo",)),
    _cli("redis-cli", "-a", triggers=("redis-cli",)),
    _cli("ldapsearch|ldapadd|ldapmodify|ldapdelete|ldapwhoami|ldappasswd", "-w", triggers=("ldap",)),
    _cli("openssl", r"-pass(?:in|out)?[ \t]+pass:", attached=True, triggers=("openssl",)),
    # smbclient -U user%password, lftp -u user,password
    _cli("smbclient|rpcclient|smbmap|smbget|smbcacls|crackmapexec|netexec|nxc|net",
         r"-(?:U|-user(?:name)?)(?:[ \t]+|=)?['\"]?[^\s%'\"]*%", attached=True, triggers=("%",)),
    _cli("lftp", r"-u[ \t]+['\"]?[^\s,'\"]+,", attached=True, triggers=("lftp",)),
    # htpasswd -b[c] FILE USER PASSWORD; a .netrc's "machine HOST login USER password PASSWORD"
    Rule("password", re.compile(r"htpasswd(?:[ \t]+-[a-zA-Z]+)*?[ \t]+-[a-zA-Z]*b[a-zA-Z]*(?:[ \t]+-[a-zA-Z]+)*"
                                r"(?:[ \t]+[^\s-][^\s]*){2}[ \t]+['\"]?(?P<secret>[^\s'\"`]+)"),
         group="secret", check=_plausible("password"), triggers=("htpasswd",)),
    Rule("password", re.compile(r"machine[ \t]+\S+(?:\s+login[ \t]+\S+)?\s+password[ \t]+(?P<secret>[^\s'\"`]+)"),
         group="secret", check=_plausible("password"), triggers=("machine",)),
    Rule("kubernetes-secret", re.compile(r"data\"?[ \t]*:"), lowered=True, spans=kubernetes_secret_values,
         triggers=("secret",)),
    Rule("cookie", re.compile(r"cookie:[ \t]*"), lowered=True, spans=cookie_values),
    Rule("cookie", re.compile(r"-(?:b|-cookie)[ \t]+['\"]?"), lowered=True, check=_after_command("cookie", "curl"),
         spans=cookie_values, triggers=("curl",)),
    Rule("secret-assignment", re.compile(r"--(?P<name>[a-z0-9-]*(?:pass|pwd|secret|token|key|cred|auth)[a-z0-9-]*)"
                                         r"[ \t]+(?P<secret>[^\s'\"`;|&<>]+)"),
         group="secret", check=_named("secret-assignment"), lowered=True),
    Rule("secret-assignment", re.compile(r"[?&](?P<name>[\w.-]*(?:token|key|secret|pass|pwd|sig|auth|cred)[\w.-]*)"
                                         r"=(?P<secret>[^\s&#\"'<>`)]+)"),
         group="secret", check=_named("secret-assignment"), lowered=True),
    Rule("bearer-token", re.compile(r"bearer\s+(?P<secret>[a-z0-9._~+/-]{12,}=*)"), group="secret",
         check=_random_looking("bearer-token"), lowered=True),
    # ``Authorization: Token <x>`` (GitHub, Django REST framework), ``SSWS``, ``ApiKey``, ``Negotiate``...
    Rule("authorization", re.compile(r"authorization:[ \t]*(?P<scheme>[a-z][a-z0-9_.-]*)[ \t]+"
                                     r"(?P<secret>[^\s\"',;]{8,})"), group="secret", check=_authorization, lowered=True),
    Rule("secret-assignment", _ASSIGNMENT, group=_value_group, check=_assignment, lowered=True),
)

#: The detect-secrets plugins used, as ``module:Class``: its regex detectors whose values are worth
#: redacting. Left out: the high-entropy and keyword plugins (they flag commit hashes and ordinary
#: code; the assignment rule above does the keyword work), the IP one, the private-key one (it
#: reports the header, not the key: the PEM rule takes the block), and the Artifactory, Cloudant,
#: IBM and SoftLayer ones (an order of magnitude slower than the rest, each; their ``name = value``
#: forms are caught by the assignment rule).
DETECT_SECRETS_PLUGINS = (
    "aws:AWSKeyDetector", "azure_storage_key:AzureStorageKeyDetector", "basic_auth:BasicAuthDetector",
    "discord:DiscordBotTokenDetector", "github_token:GitHubTokenDetector", "gitlab_token:GitLabTokenDetector",
    "jwt:JwtTokenDetector", "mailchimp:MailchimpDetector", "npm:NpmDetector", "openai:OpenAIDetector",
    "pypi_token:PypiTokenDetector", "sendgrid:SendGridDetector", "slack:SlackDetector",
    "square_oauth:SquareOAuthDetector", "stripe:StripeDetector", "telegram_token:TelegramBotTokenDetector",
    "twilio:TwilioKeyDetector",
)


#: Words (lowercase) without which a plugin cannot match: the plugin is skipped on a text that lacks
#: them all. Only for plugins whose regexes start with a character class (which Python's ``re``
#: tries at every position: 0.05-0.2 s per MB each); the first AWS regex is ctxkit's own rule too.
_PLUGIN_TRIGGERS = {
    "AWSKeyDetector": ("aws",), "MailchimpDetector": ("-us",), "SlackDetector": ("xox", "hooks.slack.com"),
    "DiscordBotTokenDetector": (".",), "StripeDetector": ("k_live_",),
}


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "secret"


def _plugin_kind(plugin: Any, value: str) -> str:
    """The marker kind for a detect-secrets finding (its AWS plugin calls secret keys "AWS Access Key" too)."""
    if plugin.secret_type == "AWS Access Key" and not value.startswith(("AKIA", "ASIA", "ABIA", "ACCA", "A3T")):
        return "aws-secret-key"
    return _slug(plugin.secret_type)


def load_detect_secrets_plugins() -> list[Any]:
    """Instances of :data:`DETECT_SECRETS_PLUGINS`; their classes are imported on first use, once per
    process (:func:`_plugin_classes`)."""
    return [cls() for cls in _plugin_classes()]


@functools.lru_cache(maxsize=1)
def _plugin_classes() -> tuple[type, ...]:
    """The plugin classes, loaded without what only detect-secrets' scanner uses. Two costs are skipped,
    each about as long as loading the plugins:

    * its plugin modules ``import requests`` at their top, for the ``verify`` methods (asking a service
      whether a key is live) that ctxkit never calls. While they load, ``requests`` is a stand-in module
      that imports the real one the first time any of its attributes is used.
    * the package's ``__init__`` imports its scanner (``SecretsCollection``: multiprocessing, logging,
      filters). While the plugins load, ``detect_secrets`` is a bare package of the same folder.

    Both stand-ins, and the modules loaded under the bare package, are taken out of ``sys.modules``
    again (the classes keep what they use), so a later ``import detect_secrets`` or ``import requests``
    elsewhere in the process gets the real, whole package (whose plugin classes are then other objects
    than these: ctxkit's plugins are its own)."""
    with _loading:
        loaded_before = set(sys.modules)
        stand_in = bare = None
        if "requests" not in sys.modules:
            stand_in = sys.modules["requests"] = _deferred("requests")
        if "detect_secrets" not in sys.modules:
            bare = _bare_package("detect_secrets")
            if bare is not None:
                sys.modules["detect_secrets"] = bare
        try:
            classes = []
            for spec in DETECT_SECRETS_PLUGINS:
                module, cls = spec.split(":")
                classes.append(getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), cls))
            return tuple(classes)
        finally:
            if stand_in is not None and sys.modules.get("requests") is stand_in:
                del sys.modules["requests"]
            if bare is not None:
                for name in [m for m in sys.modules if m.partition(".")[0] == "detect_secrets" and m not in loaded_before]:
                    del sys.modules[name]


def _bare_package(name: str) -> types.ModuleType | None:
    """A package module for ``name``'s folder whose ``__init__`` is not run (None when not installed)."""
    import importlib.util

    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    module = types.ModuleType(name)
    module.__spec__ = spec
    module.__path__ = list(spec.submodule_search_locations)
    return module


_loading = threading.Lock()


def _deferred(name: str) -> types.ModuleType:
    """A module named ``name`` that imports the real one when one of its attributes is first read."""
    stand_in = types.ModuleType(name)

    def __getattr__(attr: str) -> Any:  # noqa: N807 - a module's own __getattr__ (PEP 562)
        if sys.modules.get(name) is stand_in:
            del sys.modules[name]
        return getattr(importlib.import_module(name), attr)

    stand_in.__getattr__ = __getattr__  # type: ignore[attr-defined]
    return stand_in
