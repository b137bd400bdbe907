"""Secret redaction: nothing ctxkit sends to a summarizer, and no summary it writes, carries a secret.

Transcripts hold secrets: an ``.env`` file the agent read, an ``export
AWS_SECRET_ACCESS_KEY=...`` it ran, a token pasted by the user. Compaction
hands the history to a summarizer (the Messages API, or any shell command) and
writes a summary into the transcript; the extractive summary quotes messages
verbatim. A :class:`Redactor` replaces each secret it finds with a marker,
``[REDACTED:<kind>]`` (``[REDACTED:aws-access-key]``), in

* every message given to a summarizer (:class:`RedactingSummarizer` wraps the
  summarizer a run uses, so every path — autocompact, collapse's LLM
  summaries, ``ctxkit memory update`` — goes through it), and
* every summary written (the summarizer's answer, the extractive summary,
  session-memory notes used as a summary, collapse's rule-based summaries).

Only that text is scanned: the transcript itself and the store keep the
originals (they never leave the machine), and ``ctxkit expand`` restores
them.

What is found, in this order (earlier kinds win where matches overlap):

* ctxkit's own rules (:data:`RULES`): whole PEM private-key blocks, across
  lines (an unterminated one up to the end of its base64 body); Anthropic,
  OpenAI, AWS access key ids, GitHub, Stripe and Vault keys; passwords in URLs
  (``scheme://user:password@host``, the user is kept) and on command lines
  (``sshpass -p``, ``docker login -p``, ``7z -p``, ``smbclient -U user%pw``...);
  bearer tokens; session cookies; the values of a Kubernetes Secret; and
  the values of secret-named variables (a name with a part such as key,
  token, secret, password, passwd, pwd, credential, auth; AWS secret keys
  are found this way) in ``NAME=value``, ``export NAME="value"``,
  ``"name": "value"``, YAML ``name: value``, INI, properties and
  connection-string forms, quoted or not, and in tool inputs
  (``{"api_key": ...}``) — unless the value looks like code, a path, a
  number or a placeholder (``$VAR``, ``<your-key>``, ``****``);
* the policy's extra ``redact.patterns``;
* the regex plugins of `detect-secrets <https://github.com/Yelp/detect-secrets>`_
  (:data:`DETECT_SECRETS_PLUGINS`: Slack, Stripe, JWT, GitLab, npm, PyPI,
  SendGrid, Twilio... tokens), run over each text, each hit widened to the
  whole token; its high-entropy and keyword plugins are left out (they flag
  commit hashes and ordinary code);
* base64 blobs that decode to text in which any of the above is found
  (redacted whole, ``base64-secret``).

A value found once is redacted wherever it occurs in the same batch of text
and in every later text of the run, even where nothing around it says it is
a secret. Values the policy's ``redact.allowlist`` matches are kept.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple

from ..errors import LLMError
from .secret_formats import MAX_BASE64_DEPTH, base64_blobs, decode_base64_text
from .secret_rules import (
    _AWS_SECRET_NAME,
    _PLUGIN_TRIGGERS,
    RULES,
    Rule,
    _plugin_kind,
    _slug,
    load_detect_secrets_plugins,
)
from .secret_values import (
    MARKER,
    MARKER_RE,
    MIN_KNOWN_LENGTH,
    _distinctive,
    plausible_secret,
    random_under_weak_name,
    secret_name,
    whole_token,
)
from .summarizer_input import walk_messages

# -- the redactor -----------------------------------------------------------------------------------------

class Span(NamedTuple):
    start: int
    end: int
    kind: str
    rank: int  # lower wins an overlap


class Redactor:
    """Finds secrets and replaces them with ``[REDACTED:<kind>]``; remembers what it redacted in a run.

    ``patterns`` are extra regexes (strings, or mappings ``{regex, name}``): a match is redacted,
    or its group named ``secret`` (else its first group) when it has groups. ``allowlist`` entries
    are literal values (strings) or ``{regex: ...}`` mappings whose regex must match the whole
    value: such values are kept. ``detectors`` replaces the detect-secrets plugins (tests).
    """

    def __init__(self, *, enabled: bool = True, patterns: Sequence[str | Mapping[str, Any]] = (),
                 allowlist: Sequence[str | Mapping[str, Any]] = (), detectors: Sequence[Any] | None = None):
        self.enabled = enabled
        rules = list(RULES)
        for item in patterns:
            regex, name = (item, "custom") if isinstance(item, str) else (item["regex"], item.get("name", "custom"))
            compiled = re.compile(regex)
            group: int | str = "secret" if "secret" in compiled.groupindex else (1 if compiled.groups else 0)
            rules.append(Rule(_slug(str(name)), compiled, group))
        self._rules = rules
        self._allow_values = frozenset(a for a in allowlist if isinstance(a, str))
        self._allow_regexes = [re.compile(a["regex"]) for a in allowlist if not isinstance(a, str)]
        self._detectors = list(detectors) if detectors is not None else None
        self.found: dict[str, str] = {}  # every secret value redacted in this run -> its kind
        self._known: list[str] = []
        self._known_size = 0
        #: each text's spans, found once in a run: a compaction redacts the history for its summary, then
        #: again to measure what the summary kept (the found values are recorded the first time)
        self._spans: dict[str, list[Span]] = {}

    # -- what was redacted -------------------------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        """Distinct secrets redacted so far, by kind."""
        out: dict[str, int] = {}
        for kind in self.found.values():
            out[kind] = out.get(kind, 0) + 1
        return dict(sorted(out.items()))

    def summary(self) -> dict[str, Any]:
        """For the report: ``{"enabled": true, "secrets": 3, "kinds": {"aws-access-key": 1, ...}}``."""
        return {"enabled": self.enabled, "secrets": len(self.found), "kinds": self.counts()}

    # -- redacting -----------------------------------------------------------------------------------------
    def text(self, text: str) -> str:
        """``text`` with every secret replaced by its marker."""
        return self.texts([text])[0]

    def texts(self, texts: Sequence[str]) -> list[str]:
        """Each text redacted. All are scanned before any is rewritten, so that a value found in one
        (``TOKEN=abc123...``) is also redacted where another quotes it bare."""
        if not self.enabled:
            return list(texts)
        unique = list(dict.fromkeys(t for t in texts if t))
        spans = {t: list(self._found_spans(t)) for t in unique}  # (copies: applying them adds the known values')
        known = self._known_values()
        done = {t: self._apply(t, spans[t], known) for t in unique}
        return [done.get(t, t) for t in texts]

    def messages(self, messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """API-shaped ``messages`` with the secrets in their text, tool inputs and tool results redacted.
        Thinking is dropped (no summarizer uses it); images are left as they are (the summarizers show
        them as ``[image]``), a document's title is redacted (they show it). What held no secret is
        the caller's own object, not a copy (copy on write): read them, do not change them."""
        if not self.enabled:
            return [dict(m) for m in messages]
        strings: list[str] = []
        copied = walk_messages(messages, lambda s: strings.append(s) or s, self._keyed)
        redacted = self.texts(strings)
        if all(a is b for a, b in zip(strings, redacted, strict=True)):
            return copied  # no text held a secret (the usual case): no second walk
        mapping = dict(zip(strings, redacted, strict=True))
        return walk_messages(messages, lambda s: mapping.get(s, s), self._keyed)

    def _keyed(self, key: str, value: str) -> str | None:
        """A tool input's value under a secret-named key (``{"api_key": "..."}``): its marker, or None."""
        strength = secret_name(key)
        if strength is None or not plausible_secret(value) or self._allowed(value):
            return None
        if strength == "weak" and not random_under_weak_name(value):
            return None
        kind = "aws-secret-key" if _AWS_SECRET_NAME.search(key) else "secret-assignment"
        self._record(value, kind)
        return MARKER.format(kind=kind)

    # -- inside ----------------------------------------------------------------------------------------
    def _allowed(self, value: str) -> bool:
        return value in self._allow_values or any(r.fullmatch(value) for r in self._allow_regexes)

    def _record(self, value: str, kind: str) -> None:
        self.found.setdefault(value, kind)

    def _found_spans(self, text: str) -> list[Span]:
        """:meth:`_find`'s spans of ``text``, found once in a run (see ``_spans``)."""
        found = self._spans.get(text)
        if found is None:
            found = self._spans[text] = self._find(text)
        return found

    def _find(self, text: str, depth: int = 0) -> list[Span]:
        spans: list[Span] = []
        lowered: str | None = None
        for rank, rule in enumerate(self._rules):
            if rule.triggers:
                if lowered is None:
                    lowered = text.lower()
                if not any(map(lowered.__contains__, rule.triggers)):  # (in C: the same test)
                    continue
            target = text
            if rule.lowered:
                if lowered is None:
                    lowered = text.lower()
                # lowercasing keeps positions unless a character grows (U+0130): then the slow way
                target = lowered if len(lowered) == len(text) else text
                regex = rule.regex if target is lowered else re.compile(rule.regex.pattern, re.IGNORECASE)
            else:
                regex = rule.regex
            for m in regex.finditer(target):
                if rule.spans is not None:
                    if rule.check is not None and rule.check(m, text) is None:
                        continue
                    for start, end in rule.spans(m, text):
                        value = text[start:end]
                        if value and not MARKER_RE.fullmatch(value) and not self._allowed(value):
                            self._record(value, rule.kind)
                            spans.append(Span(start, end, rule.kind, rank))
                    continue
                group = rule.group(m) if callable(rule.group) else rule.group
                start, end = m.start(group), m.end(group)
                value = text[start:end]
                if not value or MARKER_RE.fullmatch(value) or self._allowed(value):
                    continue
                kind = rule.check(m, text) if rule.check else rule.kind
                if kind is None:
                    continue
                self._record(value, kind)
                spans.append(Span(start, end, kind, rank))
        rank = len(self._rules)
        lowered = text.lower() if lowered is None else lowered
        for plugin in self._plugins():
            triggers = _PLUGIN_TRIGGERS.get(type(plugin).__name__)
            if triggers and not any(map(lowered.__contains__, triggers)):
                continue
            for found in set(plugin.analyze_string(text)):
                # some plugins yield a fragment (GitHubTokenDetector yields the "ghp" prefix), or a placeholder
                # (BasicAuthDetector: the "password" of user:password@host): skip those. A hit is a token,
                # never an expression: a dotted one (SendGrid's SG.x.y) is not taken for code
                if not plausible_secret(found, min_length=MIN_KNOWN_LENGTH, literal=True) or self._allowed(found):
                    continue
                kind = _plugin_kind(plugin, found)
                start = text.find(found)
                while start >= 0:
                    # the whole token, not the prefix a fixed-length regex took (a JWT's signature, the
                    # tail of a longer Stripe key)
                    begin, end = whole_token(text, start, start + len(found))
                    self._record(text[begin:end], kind)
                    spans.append(Span(begin, end, kind, rank))
                    start = text.find(found, start + len(found))
        if depth < MAX_BASE64_DEPTH:
            spans.extend(self._encoded(text, spans, depth))
        return spans

    def _encoded(self, text: str, spans: list[Span], depth: int) -> list[Span]:
        """Base64 blobs of ``text`` that decode to text holding a secret (a ``.env`` piped through
        ``base64``, a Kubernetes Secret's ``data:``, a Docker ``config.json`` auth), each redacted whole
        as ``base64-secret``. What the decoded text holds is not counted on its own: the blob is the
        secret the summarizer would have seen."""
        out = []
        rank = len(self._rules) + 1
        for start, end in base64_blobs(text):
            if any(s.start <= start and end <= s.end for s in spans):
                continue  # already inside a secret (a PEM body, a basic-auth value)
            blob = text[start:end]
            decoded = decode_base64_text(blob)
            if decoded is None:
                continue
            found_before = dict(self.found)
            inner = self._find(decoded, depth + 1)
            self.found = found_before
            if inner and not self._allowed(blob):
                self._record(blob, "base64-secret")
                out.append(Span(start, end, "base64-secret", rank))
        return out

    def _plugins(self) -> list[Any]:
        if self._detectors is None:
            self._detectors = load_detect_secrets_plugins()
        return self._detectors

    def _known_values(self) -> list[str]:
        """The secret values found so far in this run that are redacted wherever they occur."""
        if len(self.found) != self._known_size:
            self._known = [v for v in self.found if _distinctive(v)]
            self._known_size = len(self.found)
        return self._known

    def _apply(self, text: str, spans: list[Span], known: list[str]) -> str:
        rank = len(self._rules) + 1
        for value in known:  # substring search, much faster than one regex alternation of them all
            start = text.find(value)
            while start >= 0:
                spans.append(Span(start, start + len(value), self.found[value], rank))
                start = text.find(value, start + len(value))
        if "[REDACTED:" in text:  # markers already there stay as they are
            kept = [(m.start(), m.end()) for m in MARKER_RE.finditer(text)]
            spans = [s for s in spans if not any(s.start < end and start < s.end for start, end in kept)]
        if not spans:
            return text
        out: list[str] = []
        pos = 0
        for span in _merge(spans):
            out.append(text[pos:span.start])
            out.append(MARKER.format(kind=span.kind))
            pos = span.end
        out.append(text[pos:])
        return "".join(out)


def _merge(spans: Iterable[Span]) -> list[Span]:
    """Non-overlapping spans: overlapping ones become one, named after the best-ranked (then longest) of them."""
    ordered = sorted(spans, key=lambda s: (s.start, -s.end, s.rank))
    merged: list[Span] = []
    for span in ordered:
        if merged and span.start < merged[-1].end:
            last = merged[-1]
            best = min((last, span), key=lambda s: (s.rank, -(s.end - s.start)))
            merged[-1] = Span(last.start, max(last.end, span.end), best.kind, best.rank)
        else:
            merged.append(span)
    return merged


# -- summarizers ------------------------------------------------------------------------------------------

class RedactingSummarizer:
    """A summarizer that is never shown a secret and never returns one.

    Wraps any summarizer (the same ``complete`` / ``summarize`` methods): the
    messages, and the ``--instructions`` focus, are redacted before the wrapped
    summarizer sees them, and its answer is redacted too (a model may still
    echo a secret it guessed, a command may read files itself; for the
    extractive summarizer the redacted input already keeps its quotes clean).
    Everything else (``name``, ``stats``...) is the wrapped summarizer's.
    """

    def __init__(self, inner: Any, redactor: Redactor):
        self.inner = inner
        self.redactor = redactor

    def __getattr__(self, item: str) -> Any:
        if item == "inner":  # not set yet (copy, pickle): no recursion
            raise AttributeError(item)
        return getattr(self.inner, item)

    @property
    def name(self) -> str:
        return getattr(self.inner, "name", type(self.inner).__name__)

    def complete(self, messages: list[dict], *, system: str | None, max_tokens: int) -> str:
        with self._redacted_errors():
            answer = self.inner.complete(self.redactor.messages(messages), system=system, max_tokens=max_tokens)
        return self.redactor.text(answer)

    def summarize(self, messages: list[dict], *, instructions: str | None = None) -> str:
        focus = self.redactor.text(instructions) if instructions else instructions
        with self._redacted_errors():
            answer = self.inner.summarize(self.redactor.messages(messages), instructions=focus)
        return self.redactor.text(answer)

    @contextmanager
    def _redacted_errors(self) -> Iterator[None]:
        """A summarizer's error quotes its answer ("malformed summary: ... it reads: '...'") or a command's
        stderr: redacted like the answer, for it goes to the terminal and CI logs."""
        try:
            yield
        except LLMError as exc:
            exc.message = self.redactor.text(exc.message)
            exc.args = (exc.message,)
            raise


def redactor_for(ctx: Any) -> Redactor:
    """The run's redactor, built from the policy's ``redact`` section on first use and kept on ``ctx``
    (so that one report counts what every stage redacted)."""
    redactor = getattr(ctx, "redactor", None)
    if redactor is None:
        settings = ctx.policy.redact
        redactor = Redactor(enabled=settings.enabled, patterns=settings.patterns, allowlist=settings.allowlist)
        ctx.redactor = redactor
    return redactor


def guard(summarizer: Any, ctx: Any) -> Any:
    """``summarizer`` wrapped in the run's redactor (as it is when redaction is off)."""
    redactor = redactor_for(ctx)
    if not redactor.enabled or isinstance(summarizer, RedactingSummarizer):
        return summarizer
    return RedactingSummarizer(summarizer, redactor)
