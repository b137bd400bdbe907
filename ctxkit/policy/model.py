"""The compiled policy: frozen, typed, what stages and the CLI read.

``ctxkit.policy.load_policy`` builds it from YAML layers; nothing else
constructs it except tests (``Policy.from_mapping`` over a plain dict).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

from .defaults import schema_defaults
from .schema import static_schema

#: Every default of the policy's own sections, read out of ``schemas/policy.schema.json``: the schema
#: states each default once, and the fields below take theirs from here (a test forbids literals).
SCHEMA_DEFAULTS: Mapping[str, Any] = MappingProxyType(schema_defaults(static_schema()))
#: How the loader names the origin of a value no layer wrote (``ctxkit.policy.loader.SCHEMA_DEFAULT_LABEL``).
SCHEMA_DEFAULT_ORIGIN = "schema default"
#: The origin of a value a session's transcript gave (``ctxkit.tokens.session``): no choice of the policy's.
SESSION_ORIGIN = "session"
_THRESHOLDS = SCHEMA_DEFAULTS["thresholds"]
_TOOLS = SCHEMA_DEFAULTS["tools"]
DEFAULT_COMPACTABLE_TOOLS = tuple(_TOOLS["compactable"])
DEFAULT_COLLAPSIBLE_TOOLS = tuple(_TOOLS["collapsible"])
DEFAULT_STATE_CHANGING_TOOLS = tuple(_TOOLS["state_changing"])


@dataclass(frozen=True)
class Thresholds:
    """Token buffers, as in Claude Code: 20,000 reserved for the summary output, autocompact 13,000
    below the effective window, warning 20,000 below the autocompact threshold, blocking 3,000
    below the effective window."""

    summary_reserve: int = _THRESHOLDS["summary_reserve"]
    autocompact_buffer: int = _THRESHOLDS["autocompact_buffer"]
    warning_buffer: int = _THRESHOLDS["warning_buffer"]
    blocking_buffer: int = _THRESHOLDS["blocking_buffer"]


@dataclass(frozen=True)
class ToolSets:
    compactable: frozenset[str] = frozenset(DEFAULT_COMPACTABLE_TOOLS)
    collapsible: frozenset[str] = frozenset(DEFAULT_COLLAPSIBLE_TOOLS)
    state_changing: frozenset[str] = frozenset(DEFAULT_STATE_CHANGING_TOOLS)


@dataclass(frozen=True)
class Redaction:
    """The ``redact`` section: secrets kept out of what goes to a summarizer and of summaries (ctxkit.summarize.redact).
    The defaults are the schema's (``schemas/policy.schema.json``)."""

    enabled: bool = SCHEMA_DEFAULTS["redact"]["enabled"]
    patterns: tuple[Any, ...] = tuple(SCHEMA_DEFAULTS["redact"]["patterns"])  # extra regexes: strings, or {regex, name} mappings
    allowlist: tuple[Any, ...] = tuple(SCHEMA_DEFAULTS["redact"]["allowlist"])  # literal values or {regex} mappings kept

    @classmethod
    def from_mapping(cls, doc: Mapping[str, Any] | None) -> Redaction:
        doc = doc or {}
        return cls(enabled=bool(doc.get("enabled", cls.enabled)),
                   patterns=tuple(_frozen(p) for p in doc.get("patterns") or ()),
                   allowlist=tuple(_frozen(a) for a in doc.get("allowlist") or ()))


def _frozen(item: Any) -> Any:
    return MappingProxyType(dict(item)) if isinstance(item, Mapping) else item


@dataclass(frozen=True)
class StageSpec:
    """One entry of the policy's ordered ``stages`` list."""

    id: str
    use: str
    enabled: bool = True
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Policy:
    model: str = SCHEMA_DEFAULTS["model"]
    context_window: int | None = None  # None: from the model table (ctxkit.tokens.KNOWN_MODELS)
    max_output_tokens: int = SCHEMA_DEFAULTS["max_output_tokens"]
    estimator: str = SCHEMA_DEFAULTS["estimator"]  # rough | tiktoken | anthropic
    #: system prompt and tool definitions, counted when no reported usage describes the view (ctxkit.tokens.view_count)
    overhead_tokens: int = SCHEMA_DEFAULTS["overhead_tokens"]
    thresholds: Thresholds = Thresholds()
    tools: ToolSets = ToolSets()
    attachments: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: MappingProxyType({}))
    summarizer: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType(dict(SCHEMA_DEFAULTS["summarizer"])))
    redact: Redaction = Redaction()
    proactive: str | None = None  # which proactive mechanism wins when collapse and autocompact are both on
    stages: tuple[StageSpec, ...] = ()
    origins: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))  # dotted key -> "file:line"
    merged: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))  # the merged document
    layers: tuple[str, ...] = ()  # the sources merged, lowest first ("<builtin>/default.yaml", ".ctxkit.yaml", "--set")
    untrusted: tuple[Any, ...] = ()  # settings from a repository policy not trusted yet (see .trust)
    #: dotted key -> folder of the file that set it (None: --set); summarizer.command runs there
    origin_folders: Mapping[str, str | None] = field(default_factory=lambda: MappingProxyType({}))

    def enabled_stages(self) -> tuple[StageSpec, ...]:
        return tuple(s for s in self.stages if s.enabled)

    @property
    def cache_ttl(self) -> str:
        """The prompt-cache lifetime the agent asks for (``request.cache_ttl``: ``5m`` or ``1h``)."""
        return str((self.merged.get("request") or {}).get("cache_ttl") or "1h")

    @property
    def cache_minutes(self) -> int:
        return 5 if self.cache_ttl == "5m" else 60

    def explicit(self, key: str) -> bool:
        """Whether a policy file or ``--set`` gave the dotted ``key``: the schema's default is no choice,
        nor a value taken from the session (``ctxkit.tokens.session``), so the session's own model, say,
        wins over them. A policy compiled from a plain mapping (not loaded from layers) sets what its
        mapping holds."""
        origin = self.origins.get(key)
        if origin is not None:
            return not origin.startswith((SCHEMA_DEFAULT_ORIGIN, SESSION_ORIGIN))
        if self.layers:
            return False
        node: Any = self.merged
        for part in key.split("."):
            if not isinstance(node, Mapping) or part not in node:
                return False
            node = node[part]
        return True

    def stage(self, use: str) -> StageSpec | None:
        """The first enabled stage that uses ``use``, if any (stages look up each other's options this way)."""
        return next((s for s in self.stages if s.use == use and s.enabled), None)

    @classmethod
    def from_mapping(cls, doc: Mapping[str, Any], origins: Mapping[str, str] | None = None) -> Policy:
        """Compile an already validated and merged policy document."""
        th = doc.get("thresholds") or {}
        tools = doc.get("tools") or {}
        stages = tuple(
            StageSpec(
                id=s["id"],
                use=s.get("use", s["id"]),
                enabled=bool(s.get("enabled", True)),
                options=MappingProxyType(dict(s.get("options") or {})),
            )
            for s in doc.get("stages") or []
        )
        return cls(
            model=doc.get("model", cls.model),
            context_window=doc.get("context_window"),
            max_output_tokens=doc.get("max_output_tokens", cls.max_output_tokens),
            estimator=doc.get("estimator", cls.estimator),
            overhead_tokens=doc.get("overhead_tokens", cls.overhead_tokens),
            thresholds=Thresholds(**{k: th[k] for k in Thresholds.__dataclass_fields__ if k in th}),
            tools=ToolSets(
                compactable=frozenset(tools.get("compactable", DEFAULT_COMPACTABLE_TOOLS)),
                collapsible=frozenset(tools.get("collapsible", DEFAULT_COLLAPSIBLE_TOOLS)),
                state_changing=frozenset(tools.get("state_changing", DEFAULT_STATE_CHANGING_TOOLS)),
            ),
            attachments=MappingProxyType({k: MappingProxyType(dict(v or {})) for k, v in (doc.get("attachments") or {}).items()}),
            summarizer=MappingProxyType(dict(doc.get("summarizer") or SCHEMA_DEFAULTS["summarizer"])),
            redact=Redaction.from_mapping(doc.get("redact")),
            proactive=doc.get("proactive"),
            stages=stages,
            origins=MappingProxyType(dict(origins or {})),
            merged=MappingProxyType(dict(doc)),
        )
