"""How a value is judged: whether a name holds a secret, whether a value may be one rather than code, a path
or a placeholder, how random it looks, and where a token found in part ends. The rules of
:mod:`ctxkit.summarize.secret_rules` and the formats of :mod:`ctxkit.summarize.secret_formats` ask these."""
from __future__ import annotations

import functools
import re

MARKER = "[REDACTED:{kind}]"
#: A marker already in the text (an earlier run's summary): never a secret itself.
MARKER_RE = re.compile(r"\[REDACTED:[a-z0-9-]+\]")

#: A value found by one rule is searched for everywhere else only when it is at least this long and
#: :func:`_distinctive` (others, e.g. a two-letter URL password, are redacted where they were found only).
MIN_KNOWN_LENGTH = 8



# -- telling secrets from code and placeholders ------------------------------------------------------------

#: What makes a variable secret-named: a name part (``DB_PWD``) or words in the joined parts
#: (``apiKey``, ``client_secret``). The weak parts (``key``, ``token``, ``auth``) also name
#: ordinary things (``key=lambda x: ...``, ``token = "music"`` in a tokenizer), so a value under them
#: is taken only when it looks random (:func:`_distinctive`).
_STRONG_PARTS = {"pwd", "creds", "pass"}
_STRONG_WORDS = ("password", "passwd", "passphrase", "secret", "credential", "apikey", "privatekey", "accesskey",
                 "accesstoken", "authtoken", "refreshtoken", "sessiontoken", "bearertoken", "authorization")
_WEAK_PARTS = {"key", "token", "auth"}
#: Parts that make a secret-sounding name ordinary (a sort key, a public key, a token count...).
_ORDINARY_PARTS = {"public", "publishable", "primary", "foreign", "sort", "cache", "partition", "hash", "range",
                   "idempotency", "unique", "lookup", "row", "column", "index", "group", "dedup", "max", "min",
                   "count", "type", "id", "ids", "name", "names", "path", "file", "dir", "url", "uri", "endpoint",
                   "env", "var", "field", "prefix", "suffix", "pattern", "length", "size", "len", "format", "method",
                   "mode", "provider", "header", "scheme", "required", "enabled", "expiry", "expires", "ttl",
                   "limit", "budget", "usage", "fingerprint", "hint", "label", "arn", "region"}
_NAME_SPLIT = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_NAME_WORDS = ("key", "token", "secret", "pass", "pwd", "cred", "auth")
_NOT_SECRET_VALUES = {"true", "false", "none", "null", "nil", "undefined", "yes", "no", "on", "off", "required",
                      "optional", "str", "string", "int", "bytes", "bool", "any", "secret", "password", "passwd",
                      "token", "key", "changeme", "example", "empty", "unset", "redacted", "hidden", "dummy",
                      "placeholder", "your-key", "your_key", "todo", "fixme", "env", "self", "lambda", "bearer", "basic",
                      "digest", "hashed", "encrypted"}
_CODE_VALUE = re.compile(r"""^(?:[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+|(?:self|this|cls|os|process|env)\b.*)$""")
#: a run of mask characters: a value a tool printed masked (``gho_****...``, ``sk-****abcd``), not the secret
#: (when the mask is most of it: :func:`_masked`)
_MASK_CHARS = "*\u2022\u25cf"
_MASKED = re.compile(f"[{re.escape(_MASK_CHARS)}]{{4,}}")
#: a reference to a variable or a member, not a value: ``$request->password`` (PHP: the value read up to ``->``),
#: ``$DB_PASSWORD``, ``static::$password``, ``self::$key``
_REFERENCE = re.compile(r"^(?:\$[A-Za-z_]\w*(?:->|::|\[|-$|$)|[A-Za-z_]\w*::\$?[A-Za-z_])")
#: a list of validation rules, as Laravel writes them: ``required|string|min:8|confirmed`` (one of them a rule
#: Laravel names, :data:`_VALIDATION_RULES`: ``hunter|secret`` is a password)
_RULE_LIST = re.compile(r"^[a-z_]+(?::[\w.,]+)?(?:\|[a-z_]+(?::[\w.,]+)?)+$")
_VALIDATION_RULES = {"required", "nullable", "sometimes", "bail", "string", "confirmed", "min", "max", "size",
                     "between", "email", "numeric", "integer", "boolean", "array", "alpha_num", "alpha_dash",
                     "current_password", "different", "same", "unique", "exists", "filled", "present"}
_PLACEHOLDER = re.compile(r"""^(?:\$\{?[\w.]+\}?|\{\{.*\}\}|\{[\w.]*\}|%\(?\w*\)?s|<[^<>]*>|\[[^\[\]]*\]|(.)\1{2,})$""")


@functools.lru_cache(maxsize=4096)  # asked for every key of every tool input: the same few names
def secret_name(name: str) -> str | None:
    """Whether a variable (or key) named ``name`` holds a secret: ``"strong"`` (``AWS_SECRET_ACCESS_KEY``,
    ``db.password``, ``apiKey``), ``"weak"`` (``KEY``, ``auth``) or None (``MAX_TOKENS``, ``sort_key``,
    ``PUBLIC_KEY``, ``token_type``, ``AUTHOR``)."""
    parts = [p.lower() for p in _NAME_SPLIT.findall(name)]
    if not parts or any(p in _ORDINARY_PARTS for p in parts):
        return None
    joined = "".join(parts)
    if any(p in _STRONG_PARTS for p in parts) or any(w in joined for w in _STRONG_WORDS):
        return "strong"
    return "weak" if any(p in _WEAK_PARTS for p in parts) else None


def plausible_secret(value: str, *, min_length: int = 4, literal: bool = False) -> bool:
    """Whether ``value`` may be a secret rather than code, a path, a number or a placeholder.

    A dotted name (``config.password``, ``settings.SECRET_KEY``) is code, unless one of its parts looks
    random (``Hunter2.Secret99``, ``hvs.CAESIJ4l...``, ``SG.<22>.<43>``) or it is ``literal``: where it
    stands a value is a string, never an expression (``DB_PASSWORD=a.b`` in a shell, a properties file,
    a YAML scalar, a detect-secrets hit)."""
    v = value.strip()
    if len(v) < min_length or MARKER_RE.search(v):
        return False
    if v.lower() in _NOT_SECRET_VALUES or _PLACEHOLDER.match(v) or _masked(v) or _rule_list(v) \
            or (not literal and _REFERENCE.match(v)) or _looks_like_code(v, literal=literal) or _template_words(v):
        return False
    if re.fullmatch(r"[\d.,:_+-]+", v):  # numbers, versions, ports, dates
        return False
    if v.startswith(("/", "~/", "./", "../", "http://", "https://", "file:")) or re.match(r"[A-Za-z]:\\", v):
        return False
    return True


def _masked(value: str) -> bool:
    """Whether ``value`` is printed masked: a run of four mask characters, and the mask at least half of it
    (``gho_****...``, ``sk-****...abcd``, ``••••••••``). A password with ``****`` among as many other characters
    (``Pa$$w0rd****!``, ``Hunter2****``) is a password."""
    if not _MASKED.search(value):
        return False
    masked = sum(c in _MASK_CHARS for c in value)
    return masked >= len(value) - masked


def _rule_list(value: str) -> bool:
    """Whether ``value`` is a list of Laravel validation rules: ``|``-joined words, one of them a rule's name."""
    return bool(_RULE_LIST.match(value)) and any(r.partition(":")[0] in _VALIDATION_RULES for r in value.split("|"))


_CODE_PREFIX = re.compile(r"(?:self|this|cls|os|process|env)\b")
_WORDS_ONLY = re.compile(r"[A-Za-z][A-Za-z0-9_.:-]*")
#: Word pairs by which a template tells the reader to put their own value in its place
_TEMPLATE_PAIRS = {("change", "me"), ("change", "this"), ("replace", "me"), ("replace", "this"), ("replace", "with"),
                   ("generate", "with"), ("generate", "one")}


def _template_words(value: str) -> bool:
    """Whether ``value`` is a template's stand-in written in words, which a pasted ``.env.example`` or setup
    guide holds: ``your-super-secret-jwt-key-change-this``, ``change-me-in-production``,
    ``base64:GENERATE_WITH_php_artisan_key:generate`` (redacted, held-out prompts lost the line the user asked
    about). At least three words, no digits but ``base64``/``sha256``'s and a filler number (``12345``), and the
    words say "put yours here": they open with "your", end with "here", or hold "change me", "replace with",
    "generate with"... A passphrase of words (``correct-horse-battery-staple``, ``change-the-world``) says none
    of these and stays a secret."""
    if not _WORDS_ONLY.fullmatch(value):
        return False
    words = [w.lower() for w in _NAME_SPLIT.findall(value)]
    numbers = [k for k, w in enumerate(words) if w.isdigit()]
    fillers = [k for k in numbers if _filler_number(words[k])]
    if len(words) - len(numbers) < 3 or any(k not in fillers and (k == 0 or words[k - 1] not in ("base", "sha"))
                                            for k in numbers):
        return False
    if fillers and not _STAND_IN_NOUNS.intersection(words):
        return False  # ``Your-Dog-Rex-123``: a password; a template's filler stands in for a key or a secret
    return words[0] == "your" or words[-1] == "here" or "changeme" in words \
        or any(pair in _TEMPLATE_PAIRS for pair in zip(words, words[1:], strict=False))


#: What a template's stand-in with a filler number says it stands for (``YOUR_SECRET_INSTALL_KEY_12345``)
_STAND_IN_NOUNS = {"key", "secret", "token", "password", "pass", "api", "credential", "credentials"}


def _filler_number(word: str) -> bool:
    """A number a template puts in to look like a value: a run of digits counting up (``12345``) or one digit
    repeated (``0000``), as in ``YOUR_SECRET_INSTALL_KEY_12345`` (held-out ``a8b4f8bf``). Only beside a word
    naming what it stands for (:data:`_STAND_IN_NOUNS`): ``Your-Dog-Rex-123`` is a password."""
    return len(word) >= 3 and ("0123456789".find(word) >= 0 or len(set(word)) == 1)


def _looks_like_code(value: str, *, literal: bool = False) -> bool:
    """Whether ``value`` reads as an expression: ``self.x``, ``os.environ[...]``, or (unless ``literal``)
    a dotted name none of whose parts looks random."""
    if not _CODE_VALUE.match(value):
        return False
    if _CODE_PREFIX.match(value):
        return True
    return not literal and not any(_random_part(part) for part in value.split("."))


def _random_part(part: str) -> bool:
    """A part of a dotted value that no one names a variable: digits among letters of both cases
    (``Hunter2``, ``CAESIJ4lZ9``), or a long run of both cases (``abcDEFghiJKLmnoPQRstu``)."""
    lower, upper = any(c.islower() for c in part), any(c.isupper() for c in part)
    if not (lower and upper):
        return False
    return any(c.isdigit() for c in part) or (len(part) >= 20 and sum(c.isupper() for c in part) >= 4)


def _distinctive(value: str) -> bool:
    """Whether a found value looks random enough to be redacted wherever it occurs: long, one word, and
    more than letters of one case with ``_-.`` (``production`` found as ``SECRET=production``, or an
    identifier like ``tool_use_id``, must not vanish from every sentence)."""
    if len(value) < MIN_KNOWN_LENGTH or any(c.isspace() for c in value):
        return False
    classes = (any(c.islower() for c in value), any(c.isupper() for c in value), any(c.isdigit() for c in value),
               any(not c.isalnum() and c not in "_-." for c in value))
    return sum(classes) >= 2


def random_under_weak_name(value: str) -> bool:
    """Whether a value under a weak name (``key``, ``token``, ``auth``) is taken for a secret: :func:`_distinctive`,
    and no camelCase name (``{Key: "createdAt", Value: 1}``, a MongoDB index in Go, is a field's name: taken
    for a secret, every ``createdAt`` of a held-out session's summary was redacted, its prompt "lets use
    createdAt" among them). A password under a strong name is taken whatever it reads like."""
    return _distinctive(value) and not _camel_case_name(value)


_CAMEL_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]{2,}(?![a-z])")


def _camel_case_name(value: str) -> bool:
    """Whether ``value`` is letters only and reads as words run together (``createdAt``, ``customerId``,
    ``HTTPServerError``): each word of two letters or more, three and more on average. A random token of
    letters alone falls apart into ones and twos (``xKqPzWmTrB``: x, Kq, Pz, Wm, Tr, B)."""
    if not value.isalpha() or not value.isascii():
        return False
    words = _CAMEL_WORD.findall(value)
    return "".join(words) == value and all(len(w) >= 2 for w in words) and len(value) >= 3 * len(words)


def _has_digit_and_letter(value: str) -> bool:
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)



_TOKEN_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


def whole_token(text: str, start: int, end: int) -> tuple[int, int]:
    """The span ``start:end`` of ``text`` widened to the whole token it is part of: over letters, digits,
    ``_`` and ``-`` on both sides, and over a ``.`` followed by more of them when the token is dotted
    (a JWT: ``header.payload.signature``), and its ``=`` padding."""
    dotted = "." in text[start:end]
    while start > 0 and text[start - 1] in _TOKEN_CHARS:
        start -= 1
    n = len(text)
    while end < n:
        c = text[end]
        if not (c in _TOKEN_CHARS or (c == "." and dotted and end + 1 < n and text[end + 1] in _TOKEN_CHARS)):
            break
        end += 1
    while end < n and text[end] == "=":
        end += 1
    return start, end


