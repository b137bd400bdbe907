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


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def renamed(annotations: str, old: str, new: str) -> str:
    """Annotations that named the file ``old`` (a local copy of a URL) naming ``new`` instead, in the
    property and in the message, each in its own escaping."""
    for escape in (escape_property, escape_data):
        annotations = annotations.replace(escape(old), escape(new))
    return annotations


def annotation(level: str, file: str, line: int, col: int, message: str) -> str:
    """One workflow command line (with its newline); ``level`` is error, warning or notice."""
    kind = level if level in ("error", "warning", "notice") else "error"
    # lines and columns count from 1: a problem with the whole file (line 0: missing, unreadable) goes on line 1
    return (f"::{kind} file={escape_property(file)},line={max(1, int(line))},col={max(1, int(col))}::"
            f"{escape_data(message)}\n")


def threshold_annotation(file: str, line: int, tokens: int, fail_at: str, threshold: int, level: str) -> str:
    """``ctxkit check``'s annotation for a transcript whose view reaches the threshold it checks: one
    text for one file's run and for a batch's (which builds it from the run's JSON figures)."""
    return annotation("error", file, line, 1, f"{tokens} tokens reach the {fail_at} threshold {threshold} "
                                              f"(level {level}); compact this session")
