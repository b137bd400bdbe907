"""Where secrets hide in formats whose shape says what is secret: the values of ``Cookie:`` headers and of
a Kubernetes Secret's ``data:``, passwords given to command-line tools, and base64 that decodes to text.
:mod:`ctxkit.summarize.secret_rules` turns them into rules; :mod:`ctxkit.summarize.redact` decodes base64."""
from __future__ import annotations

import re

from .secret_values import MARKER_RE, _distinctive, _has_digit_and_letter, plausible_secret, secret_name

#: A base64 run worth decoding: 16 characters or more (12 bytes: ``password=x1``). One that is all letters
#: (``AbstractSingletonProxyFactoryBean``) is skipped: base64 of text nearly always holds a digit, ``+``
#: or ``/``. (A simple character class: Python's ``re`` scans for it fast; a look-around would be tried at
#: every position, ten times slower.)
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{16,}={0,2}")
#: The line lengths at which tools wrap base64 (``base64``: 76; PEM, ``openssl base64``: 64).
_BASE64_WRAPS = (64, 76)


def base64_blobs(text: str) -> list[tuple[int, int]]:
    """Where ``text`` may hold base64: each run of 16 characters or more, with the lines that continue
    it when it is wrapped (a line of exactly 64 or 76 characters followed by another run)."""
    blobs: list[tuple[int, int]] = []
    for m in _BASE64_RUN.finditer(text):
        if m.group().isalpha():
            continue
        start, end = m.span()
        if blobs and _continues(text, blobs[-1], start):
            blobs[-1] = (blobs[-1][0], end)
        else:
            blobs.append((start, end))
    return blobs


def _continues(text: str, blob: tuple[int, int], start: int) -> bool:
    """Whether a run at ``start`` is the next line of the wrapped ``blob``."""
    gap = text[blob[1]:start]
    if gap not in ("\n", "\r\n"):
        return False
    last_line = blob[1] - max(blob[0], text.rfind("\n", 0, blob[1]) + 1)
    return last_line in _BASE64_WRAPS and text[blob[1] - 1] != "="
#: How deep base64 inside base64 is decoded (a Docker ``config.json`` in a Kubernetes Secret holds the
#: registry's ``auth`` in base64 again: that one is found as a secret-named value).
MAX_BASE64_DEPTH = 2


def decode_base64_text(blob: str) -> str | None:
    """``blob`` decoded, when it is base64 of text (UTF-8, printable but for whitespace); else None
    (a hash, a path, an image: bytes no one reads)."""
    import base64
    import binascii

    compact = "".join(blob.split()).rstrip("=")
    if len(compact) % 4 == 1:
        return None
    try:
        decoded = base64.b64decode(compact + "=" * (-len(compact) % 4), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    printable = sum(c.isprintable() or c in "\n\r\t" for c in decoded)
    return decoded if decoded and printable == len(decoded) else None


#: Cookie attributes (``Set-Cookie: id=x; Path=/; HttpOnly``): not values.
_COOKIE_ATTRIBUTES = {"path", "domain", "expires", "max-age", "httponly", "secure", "samesite", "priority",
                      "partitioned", "version", "comment"}
#: How far a cookie list is read (browsers keep a header under 8 KB).
_COOKIE_REACH = 8192
_COOKIE_PAIR = re.compile(r"[ \t]*(?P<name>[^=;\s\"']+)=(?P<value>[^;\s\"']*)")


def cookie_values(m: re.Match[str], text: str) -> list[tuple[int, int]]:
    """The values in a ``Cookie:`` / ``Set-Cookie:`` header or a ``curl -b`` argument, up to the end of its
    line or quote: each one that may be a session (secret-named, random-looking or long), not the
    attributes (``Path=/``) nor a word (``theme=dark``)."""
    out = []
    pos = m.end()
    end = min(len(text), pos + _COOKIE_REACH)  # bounded: a text of a thousand headers is read once each
    for stop in ("\n", "\r", '"', "'", "\\n"):
        at = text.find(stop, pos, end)
        end = at if at >= 0 else end
    while pos < end:
        pair = _COOKIE_PAIR.match(text, pos, end)
        if pair is None:
            break
        name, value = pair.group("name"), pair.group("value")
        if name.lower() not in _COOKIE_ATTRIBUTES and plausible_secret(value, literal=True) and (
                secret_name(name) or _distinctive(value) or _has_digit_and_letter(value) or len(value) >= 16):
            out.append((pair.start("value"), pair.end("value")))
        pos = pair.end()
        if pos >= end or text[pos] != ";":
            break  # the list ends where a pair is not followed by ``;``
        pos += 1
    return out


_K8S_DATA_YAML = re.compile(r"^([ \t]*-?[ \t]*)(?:data|stringData):[ \t]*$", re.MULTILINE)
_K8S_ITEM_YAML = re.compile(r"[ \t]*[^\s:#][^:\n]*:[ \t]*(?P<value>\S(?:[^\n]*\S)?)?[ \t]*$")
_K8S_DATA_JSON = re.compile(r'"(?:data|stringData)"\s*:\s*\{')
_K8S_ITEM_JSON = re.compile(r'\s*"(?:[^"\\]|\\.)*"\s*:\s*"(?P<value>(?:[^"\\]|\\.)*)"\s*,?')


def kubernetes_secret_values(m: re.Match[str], text: str) -> list[tuple[int, int]]:
    """The values of the ``data:`` and ``stringData:`` of a Kubernetes Secret (``kubectl get secret -o
    yaml`` or ``-o json``, a manifest): every one is a secret by what holds it, whatever its key and
    whether or not its base64 decodes to something recognisable. The manifest is the YAML document
    (between ``---`` lines) around ``kind: Secret``."""
    begin = text.rfind("\n---", 0, m.start())
    begin = 0 if begin < 0 else begin + 4
    end = text.find("\n---", m.end())
    end = len(text) if end < 0 else end
    out: list[tuple[int, int]] = []
    for block in _K8S_DATA_YAML.finditer(text, begin, end):
        indent = len(block.group(1).expandtabs())
        pos = block.end() + 1
        while pos < end:
            line_end = text.find("\n", pos, end)
            line_end = end if line_end < 0 else line_end
            line = text[pos:line_end]
            if line.strip():
                if len(line) - len(line.lstrip()) <= indent:
                    break
                item = _K8S_ITEM_YAML.fullmatch(line)
                if item is not None and item.group("value") and item.group("value") not in ("|", ">", "|-", ">-"):
                    out.append((pos + item.start("value"), pos + item.end("value")))
                elif item is None:  # a line of a block scalar (``key: |``): all of it
                    out.append((pos + len(line) - len(line.lstrip()), line_end))
            pos = line_end + 1
    for block in _K8S_DATA_JSON.finditer(text, begin, end):
        pos = block.end()
        while (item := _K8S_ITEM_JSON.match(text, pos, end)) is not None:
            if item.group("value"):
                out.append(item.span("value"))
            pos = item.end()
    return [(a, b) for a, b in out if not MARKER_RE.fullmatch(text[a:b])]


#: How far back from a flag its command is looked for, and what ends a command line before that: a pipe, a
#: ``;``, ``&``, a backtick or the end of a quoted command in a list (``"docker ps", "7z a -p x.7z"``).
_COMMAND_REACH = 400
_COMMAND_ENDS = ("\n", "|", ";", "&", "`", '",', "',")


def cli_flag(flag: str, *, attached: bool = False) -> re.Pattern[str]:
    """``FLAG VALUE`` (after a space or ``=``, or ``attached`` to the flag: ``7z x a.7z -pPASS``), quoted or
    not; the value is the group ``secret``. The regex starts with the flag, a literal Python's ``re`` finds
    fast; which command the flag belongs to is :func:`on_command_line`'s to say."""
    gap = "" if attached else r"(?:[ \t]+|=)?"
    return re.compile(rf"{flag}{gap}['\"]?(?P<secret>[^\s'\"`]+)")


def on_command_line(commands: str) -> re.Pattern[str]:
    """A regex for the start of the command line a flag must be on (``sshpass``, ``docker ... login``):
    ``commands`` as a word, searched by :func:`command_before` in the text before the flag."""
    return re.compile(rf"(?:^|[\s/\"'(=])(?:{commands})[ \t]")


def command_before(command: re.Pattern[str], text: str, at: int) -> bool:
    """Whether the flag at ``at`` starts a word and is on a command line that ``command`` starts: looked for
    back to the line's start, its last ``|``, ``;`` or ``&``, at most :data:`_COMMAND_REACH` characters
    (bounded, so that a text of a thousand ``docker login`` is not searched a thousand times over)."""
    if at == 0 or text[at - 1] not in " \t":
        return False
    start = max(at - _COMMAND_REACH, 0)
    start = max([start] + [text.rfind(end, start, at) + len(end) for end in _COMMAND_ENDS if end in text[start:at]])
    return command.search(text[start:at]) is not None
