"""GitHub Actions annotations (``--output-format github``): a problem shown on the line of the file it is about.

The runner reads workflow commands from a step's standard output; one line per problem::

    ::error file=policies/team.yaml,line=4,col=3::thresholds.autocompact_buffer must be ...

Values are escaped as the runner expects (``%``, CR and LF everywhere; ``:`` and ``,`` too in the
properties), so a message or a path holding them cannot end the command early or start another.
"""
from __future__ import annotations


def last_line(path: str) -> int:
    """The number of a file's last line: where a transcript that grew too big became so (1 for stdin)."""
    if path == "-":
        return 1
    with open(path, "rb") as f:
        return max(1, sum(1 for _ in f))


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(level: str, file: str, line: int, col: int, message: str) -> str:
    """One workflow command line (with its newline); ``level`` is error, warning or notice."""
    kind = level if level in ("error", "warning", "notice") else "error"
    return (f"::{kind} file={_escape_property(file)},line={int(line)},col={int(col)}::"
            f"{_escape_data(message)}\n")
