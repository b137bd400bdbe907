"""Reading a transcript: one streaming pass that indexes every line, with clear errors.

A read may start after a prefix of the input an earlier run indexed already (a :class:`Resume`, found
and checked by :mod:`ctxkit.store.checkpoint`): then only the lines after it are read.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import BinaryIO

from ..errors import InputError, NoReadableLine, TranscriptError, UsageError
from ..quoting import quote, quote_id
from . import claude_dir_logs
from .aider import history as aider_history
from .carried import carry
from .claude_code.grown import grown_from
from .claude_code.projection import NAME as CLAUDE_CODE
from .cline import ui_messages as cline_ui_messages
from .cursor import legacy as cursor_legacy
from .document import copy_of_lines
from .formats import FORMATS, detect, handler
from .gemini import not_sessions
from .gemini import prompt_log as gemini_prompt_log
from .jsonl import BAD_LINE_POLICIES, BadLines, Source, document_source, open_source
from .lineindex import BAD, LineIndex
from .model import ReadInfo, Transcript
from .opencode import database as opencode_database
from .opencode.database import split_session
from .shapes import CHECKS, Bad

_DETECT_WINDOW = 50


def from_database(source: Source, session: str | None) -> Source:
    """``source`` itself, or, when it is an OpenCode database (its first bytes), a read-only source over
    the session ``session`` of it as ``opencode export`` prints it; when it is an aider chat history or an
    older Cursor transcript, a read-only source over its messages."""
    first = source.read_at(0, not_sessions.HEAD if session is None else 4096)
    head = first[:4096]
    if session is None and gemini_prompt_log.looks_like_prompt_log(head):
        source.close()
        raise TranscriptError(source.name, 1, gemini_prompt_log.WHAT)
    # what an agent writes beside its sessions, or for them, that is none: refused naming what it is
    what = (not_sessions.what_it_is(first) or cline_ui_messages.what_it_is(first)
            or claude_dir_logs.what_it_is(first)) if session is None else None
    if what is not None:
        source.close()
        raise TranscriptError(source.name, 1, what)
    text_formats = ((aider_history.looks_like_history, aider_history.as_lines, aider_history.READ_ONLY),
                    (cursor_legacy.looks_like_text, cursor_legacy.as_lines, cursor_legacy.READ_ONLY))
    for looks_like, as_lines, read_only in text_formats if session is None else ():
        if looks_like(head):
            source.file.seek(0)
            lines = as_lines(source.file.read())
            if lines is None:  # not that format after all: read as it is
                source.file.seek(0)
                break
            source.close()
            return Source(name=source.name, file=copy_of_lines(lines), path=source.path, read_only=read_only)
    if head[:len(opencode_database.MAGIC)] != opencode_database.MAGIC:
        if session is not None:
            source.close()
            raise InputError(source.name, 0, "no such file")
        return source
    try:
        if source.path is None:
            raise InputError(source.name, 0, "an OpenCode database is read from its file, not standard input")
        data = opencode_database.export(source.path, source.name, session)
    finally:
        source.close()
    return document_source(source.name, source.path, data, read_only=opencode_database.READ_ONLY)


@dataclass
class Resume:
    """A prefix of the input already indexed (by an earlier run): its line index (session facts
    included) and its length in bytes. Every line of the prefix ends with a newline and none is
    unreadable; the prefix was read as ``fmt`` (Claude Code unless told). ``detected_early``:
    auto-detection chose ``fmt`` from the prefix's lines alone (then it does for every file that starts
    with them: :attr:`ctxkit.transcript.model.ReadInfo.settled`), so a run with ``--format auto`` may
    resume too."""

    lines: LineIndex
    size: int
    detected_early: bool
    #: parsed copies of lines of the prefix, as :meth:`Transcript.parsed_input_lines` keeps them (the
    #: same bytes at the same index): not parsed again when the projection asks for them
    parsed: dict[int, dict] | None = None
    #: the transcript the prefix was read as (an earlier read of the file, or the run whose output the prefix
    #: is): its active chain and view go on from there, the new lines' only worked out
    #: (:mod:`ctxkit.transcript.claude_code.grown`)
    grown_from: Transcript | None = None
    #: the format the prefix was read as
    fmt: str = CLAUDE_CODE


def read_transcript(path: str | os.PathLike | None = "-", *, fmt: str = "auto", on_bad_line: str = "fail",
                    stdin: BinaryIO | None = None, check_pairing: bool = True,
                    resume: Callable[[Source], Resume | None] | None = None, keep: bool = True) -> Transcript:
    """Read a transcript (a path, or ``-``/None for standard input) in any supported format.

    ``on_bad_line``: ``fail`` raises :class:`TranscriptError` naming the first unreadable line;
    ``skip`` keeps such lines in the output untouched, leaves them out of the view, and counts them.
    With ``check_pairing``, a tool_result in the view that answers no tool_use is a bad line too.
    ``resume``, given the opened input, may return the index of a prefix of it (a :class:`Resume`):
    then only the bytes after that prefix are read; the transcript is the one a full read gives.
    ``keep=False``: nothing is kept parsed for a first projection (a caller that walks every line once
    and never projects, ``ctxkit expand``: its memory then does not follow the view).
    """
    if fmt != "auto" and fmt not in FORMATS:
        raise UsageError(f"unknown format {quote(fmt)}; choose one of auto, {', '.join(FORMATS)}")
    if on_bad_line not in BAD_LINE_POLICIES:
        raise UsageError(f"--on-bad-line must be one of {', '.join(BAD_LINE_POLICIES)}, got {quote(on_bad_line)}")
    session = None
    if path is not None and str(path) != "-":
        path, session = split_session(str(path))
    source = from_database(open_source(path, stdin), session)
    try:
        start = resume(source) if resume is not None and fmt in ("auto", CLAUDE_CODE) else None
        if start is not None and (fmt not in ("auto", start.fmt) or fmt == "auto" and not start.detected_early):
            start = None  # another format told, or a full read would decide the format from lines after the prefix too
        return _read(source, fmt, on_bad_line, check_pairing, start, keep)
    except BaseException:
        source.close()
        raise


def require_a_readable_line(t: Transcript) -> Transcript:
    """``t``, when a line of it could be read; :class:`NoReadableLine` when ``--on-bad-line skip`` left
    out every line (blank ones aside). A file with no line at all is not this: it is empty, as the
    command reading it says."""
    bad = t.info.bad_lines
    if bad.count and all(flag & BAD for flag in t.lines.flags):
        raise NoReadableLine(t.source.name, bad.count, bad.first[0])
    return t


def read_bytes(data: bytes, *, name: str, fmt: str = "auto", check_pairing: bool = True,
               on_bad_line: str = "fail") -> Transcript:
    """Read a transcript held in memory (JSONL ``data``; ``name`` names it in errors): what
    :class:`ctxkit.ContextManager` reads a message list from, without a file."""
    import io

    from .jsonl import Source

    if fmt != "auto" and fmt not in FORMATS:
        raise UsageError(f"unknown format {quote(fmt)}; choose one of auto, {', '.join(FORMATS)}")
    if on_bad_line not in BAD_LINE_POLICIES:
        raise UsageError(f"--on-bad-line must be one of {', '.join(BAD_LINE_POLICIES)}, got {quote(on_bad_line)}")
    return _read(Source(name=name, file=io.BytesIO(data)), fmt, on_bad_line, check_pairing, None, True)


def _read(source, fmt: str, on_bad_line: str, check_pairing: bool, start: Resume | None, keep: bool) -> Transcript:
    from .jsonl import iter_lines, parse_raw

    bad = BadLines()
    lines = start.lines if start is not None else LineIndex()
    pending: list[tuple[int, dict, int]] = []  # parsed entries (and their size) waiting for the format
    cache: dict[int, dict] = dict(start.parsed) if start is not None and start.parsed else {}
    extracts: dict[tuple, object] = {}  # see Transcript.extract
    chosen = handler(start.fmt) if start is not None else None if fmt == "auto" else handler(fmt)
    index: Callable[[int, dict, int], None] | None = None
    detected_early = start is not None and start.detected_early and start.fmt == CLAUDE_CODE
    settled = start is not None and start.detected_early  # auto-detection decided from lines a longer file has too
    resumed = (len(lines), start.size) if start is not None else None

    def indexer(h) -> Callable[[int, dict, int], None]:
        """What is done with each parsed line once the format is known (the read's inner loop: the
        handler's parts are looked up once, not per line)."""
        check, index_line, keep_all = h.check or CHECKS[h.name], h.index_line, h.keep_parsed
        keeping = None if keep_all or not keep else h.keep_while_reading

        def index(i: int, d: dict, size: int) -> None:
            try:
                check(d)  # every field a reader relies on has its type (shapes.py)
            except Bad as exc:
                if on_bad_line == "fail":
                    raise TranscriptError(source.name, i + 1, exc.describe()) from None
                bad.add(f"{source.name}:{i + 1}: {exc.describe()}")
                lines.mark_bad(i)
                return
            index_line(lines, i, d)
            if keep_all:
                cache[i] = d
            elif keeping is not None:
                keeping(i, d, size, cache, extracts)
        return index

    def settle():
        """Decide the format from the entries read so far, and index them with it."""
        nonlocal detected_early, settled, index
        decided = handler(detect([e for _, e, _ in pending]) or "anthropic")
        # detection takes the first Claude Code-looking entry of the window: whatever follows these
        # lines, a read of a file starting with them decides the same; so does a whole window of them
        detected_early = decided.name == CLAUDE_CODE
        settled = detected_early or len(pending) >= _DETECT_WINDOW
        index = indexer(decided)
        for ln, e, size in pending:
            index(ln, e, size)
        pending.clear()
        return decided

    skip_lines, skip_bytes = resumed or (0, 0)
    if chosen is not None:
        index = indexer(chosen)
    offset, raw = skip_bytes, b""  # (the last line read, after the loop: where reading stopped)
    for line_no, offset, raw in iter_lines(source, skip_bytes, skip_lines):
        i = lines.add(offset)
        try:
            d = parse_raw(source.name, line_no, raw)
        except TranscriptError as exc:
            if on_bad_line == "fail":
                raise
            bad.add(exc.message)
            lines.mark_bad(i)
            continue
        if d is None:
            lines.mark_bad(i)  # a blank line: nothing to read, nothing to keep
            continue
        size = len(raw)  # its line ending included: a size for the handler to judge by, not a length to cut at
        if chosen is None:
            pending.append((i, d, size))
            if len(pending) >= _DETECT_WINDOW:
                chosen = settle()
        else:
            index(i, d, size)
    # where reading stopped, not the file's size now: an agent may append a line between the last read and
    # this point, and the last line's span, the output and a checkpoint would then take it in unindexed
    lines.end = offset + len(raw)
    if chosen is None:
        chosen = settle()
    t = Transcript(source, lines, chosen.name, ReadInfo(bad, detected_early, resumed, settled), cache=cache,
                   keep_all_parsed=chosen.keep_parsed, extracts=extracts)
    if start is not None and start.grown_from is not None:
        grown_from(t, start.grown_from)  # (Claude Code's chain and view)
        carry(t, start.grown_from)  # (the formats whose projection is a fold over their lines)
    if check_pairing:
        view = t.view()
        if view.orphans:
            ref = view.orphans[0]
            msg = f"tool_result {quote_id(ref[1])} answers no tool_use before it"
            if on_bad_line == "fail":
                raise TranscriptError(source.name, t.line_no(ref[0]), msg + " (use --on-bad-line skip to leave it out)")
            for entry, tool_id in view.orphans:
                bad.add(f"{source.name}:{t.line_no(entry)}: tool_result {quote_id(tool_id)} answers no tool_use before it")
    return t
