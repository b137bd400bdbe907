"""The one interface every transcript format declares, and the registry the reader looks formats up in.

A format is a sub-package of :mod:`ctxkit.transcript` (``claude_code/``, ``plain/``, ...) whose
``__init__`` builds its :class:`Format`; :mod:`ctxkit.transcript.formats` lists them, in the order
detection tries them. This module imports no format: the transcript model looks its projection up
here (``handler(t.format).project``), so a format may build on the model without a circle.

Adding an agent: one folder, its ``Format``, one line in :mod:`ctxkit.transcript.formats`.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple

if TYPE_CHECKING:
    from .lineindex import LineIndex
    from .model import Transcript
    from .view import View


class RequestUsage(NamedTuple):
    """What an agent recorded one model request used, in the shape the cost model prices (Anthropic's:
    ``input_tokens`` without the cached ones), and the model the record names (None: the session's)."""

    input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    output_tokens: int = 0
    model: str | None = None

    @property
    def prompt_tokens(self) -> int:
        """Every input token the request held: plain input, cache reads and cache writes."""
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens


#: more tokens than any request holds: a figure above it is not a count (as ``ctxkit.reports.usage`` reads one)
MAX_REPORTED_TOKENS = 10 ** 9


def reported(v: Any) -> int:
    """A token figure as an agent records one (a count up to a billion); anything else counts as 0."""
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 < v <= MAX_REPORTED_TOKENS else 0


class UsageWriter(NamedTuple):
    """How a format's recorded usage is replaced by a simulated request's (``ctxkit simulate``: a policy's
    replay appends the session's lines to a history the policy rewrote, and the usage the agent recorded
    counted the context the agent sent, not the one the policy would have sent; thresholds count by usage,
    so a recorded figure left in would make every step after a compaction compact again).

    Each format records usage in its own place (Claude Code's ``message.usage``, Codex's ``token_count``
    event, Gemini's ``tokens``, ...): its writer puts the simulated figures where its usage reader
    (:attr:`Format.usage`, :attr:`Format.request_usage`) finds them."""

    #: bytes every line that carries usage holds: a line without them is not parsed
    marker: bytes
    #: ``(entry, usage) ->`` whether ``entry`` carries usage, then changed in place to report ``usage``'s
    #: input figures (plain input, cache reads, cache writes); the recorded output figures are kept
    write: Callable[[dict, RequestUsage], bool]


class ToolOutputs(NamedTuple):
    """Where a format keeps its tool calls' outputs, for one whose results are not ``tool_result``
    blocks of a content list (Codex's output items, Gemini's ``toolCalls[].result``, OpenCode's tool
    parts): what the stages that replace a result (tool-result-budget, microcompact) write through,
    and what ``ctxkit expand`` puts the original back into.

    A ``tool_result`` of the view made of such an output has the ref ``BlockRef(entry, k)``: ``k`` is
    the output's index in ``slots(t, entry, d)``.
    """

    #: the outputs entry ``i`` of ``t`` holds when it is ``d`` (as read, or as edited), in order: ``(call id,
    #: key path to the output, the output as stored)``; only outputs a replacement can be written into (a
    #: pruned or failed one is none). ``t`` and ``i``: for a format whose outputs name their call only
    #: through an earlier entry (a checkpoint's function response without an id)
    slots: Callable[[Transcript, int, dict], list[tuple[str, tuple, Any]]]
    #: an output as stored -> the content of the view's ``tool_result`` (what a replacement is matched against)
    shown: Callable[[Any], Any]
    #: an output as stored, and the replacement text -> the output the agent reads back with that text
    written: Callable[[Any, str], Any]
    #: the call ids whose outputs entry ``d`` holds a copy of, sent again besides the calls' own (Gemini
    #: CLI 0.61's function-response records); None: the format keeps no copies
    copies: Callable[[dict], list[str]] | None = None
    #: ``(d, call id, the output as it was stored, as it is now) ->`` ``d`` with its copy of that output
    #: written as it is now, when the copy is, part for part and key for key, the output as it was
    #: (``d`` itself otherwise): a replacement reaches every copy, and ``ctxkit expand`` puts each back
    mirror: Callable[[dict, str, Any, Any], dict] | None = None


class Format(NamedTuple):
    """What ctxkit needs of one transcript format.

    - **detect**: whether a parsed line is this format's (tried on the first lines, by content only:
      never by file name);
    - **read**: ``index_line`` records in the line index what the projection reads of a line (its
      type, routing fields); ``keep_parsed``/``keep_while_reading`` say what stays parsed;
    - **view**: ``project`` gives the messages the model is sent next (a valid request: every tool
      call answered);
    - **write**: ``write``, when the format needs more than line-for-line (None: unchanged lines are
      copied byte for byte, edited ones re-serialized, appended ones last — :meth:`Transcript.write`);
    - **check**: ``check`` rejects a line whose fields the reader relies on have the wrong type;
    - **records**: ``records`` lists the format's own bookkeeping lines ctxkit appended (index, entry),
      None when the format has no room for them (then removed lines go to the store).
    """

    name: str
    detect: Callable[[dict], bool]
    index_line: Callable[[LineIndex, int, dict], None]
    project: Callable[[Transcript], View]
    content_path: tuple[str, ...]  # where an entry keeps its content list
    keep_parsed: bool  # plain formats are small enough (a context window) to keep parsed
    #: otherwise, what the reader keeps of a parsed entry: ``(i, entry, line size, kept entries, extracts)``
    keep_while_reading: Callable[[int, dict, int, dict, dict], None] | None = None
    write: Callable[[Transcript, BinaryIO, Callable[[bytes], bytes | None] | None], None] | None = None
    records: Callable[[Transcript, str | None], list[tuple[int, dict]]] | None = None
    #: raises :class:`ctxkit.transcript.shapes.Bad` for a line whose fields the reader relies on have the
    #: wrong type (None: the checks of :data:`ctxkit.transcript.shapes.CHECKS` by the format's name)
    check: Callable[[dict], None] | None = None
    #: the tokens the API reported for the response an assistant view message was made of (its entries),
    #: for a format that records usage elsewhere than on the message (None: on the message, as Claude Code)
    usage: Callable[[Transcript, list[int]], int | None] | None = None
    #: the stages that know how to edit this format (None: every stage); the pipeline skips the others,
    #: saying so, rather than write lines the agent cannot read
    stages: frozenset[str] | None = None
    #: the settings the session ran with (:class:`ctxkit.transcript.claude_code.session.RecordedSettings`:
    #: its model, ...), for a format that records them otherwise than Claude Code (None: as Claude Code)
    settings: Callable[[Transcript], Any] | None = None
    #: where the format keeps tool outputs, when not as ``tool_result`` blocks of ``content_path``
    tool_outputs: ToolOutputs | None = None
    #: what the agent recorded each request used: ``(transcript, the entries of an assistant view message) ->``
    #: its :class:`RequestUsage`, None where it recorded none (``simulate`` and ``report`` price them);
    #: None: the format records no usage (Cursor, aider), or records it as Claude Code does
    request_usage: Callable[[Transcript, list[int]], RequestUsage | None] | None = None
    #: a snip, for a format that records one as a rewritten history: ``(transcript, its view, the
    #: ``[start, end)`` view ranges of the turns to drop, timestamp) ->`` the transcript with the rewrite
    #: appended (None: the lines are removed, as from a message list)
    drop_turns: Callable[[Transcript, View, list[tuple[int, int]], str], Transcript] | None = None
    #: why a stage outside ``stages`` is skipped on this format, by stage name (what the report says)
    skip_reasons: Mapping[str, str] = MappingProxyType({})
    #: where a simulated request's usage replaces the recorded one (None: the format records no usage)
    usage_writer: UsageWriter | None = None


_REGISTRY: dict[str, Format] = {}


def register(fmt: Format) -> None:
    """Add a format (:mod:`ctxkit.transcript.formats` does, for each one it lists)."""
    _REGISTRY[fmt.name] = fmt


def handler(name: str) -> Format:
    """The registered format called ``name``."""
    return _REGISTRY[name]


def registered() -> tuple[Format, ...]:
    """Every registered format, in registration order (the order detection tries them)."""
    return tuple(_REGISTRY.values())
