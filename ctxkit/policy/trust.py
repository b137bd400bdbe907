"""Trust for repository policies: a cloned repository cannot make ctxkit run its programs.

A repository's ``.ctxkit.yaml`` is found by walking up from the working
directory, so cloning a repository and running ``ctxkit compact`` there reads
whatever policy the repository's authors wrote. Most settings only change how
ctxkit compacts. A few run a program (``summarizer.command``: a shell command,
with the user's environment and API key) or send data elsewhere
(``summarizer.base_url``: receives the API key and the transcript). Those are
the settings that need trust, and they are marked in ONE place: the
``x-requires-trust`` annotation in ``schemas/policy.schema.json`` (its value
says what the setting does). :func:`keys_requiring_trust` reads them from
there; a new key of that kind needs only the annotation.

The rule, as direnv and editors' workspace trust have it: a value of such a
key that comes from a repository layer (the ``.ctxkit.yaml`` found from the
working directory, or a file it names with ``extends:``) is used only once the
user has trusted that file's exact content with ``ctxkit policy trust``. The
user's own file, a file named with ``--policy`` and ``--set`` are the user's
word and always trusted; so is a file the user's layers extend themselves.

Trust is recorded in ``trusted.json`` beside the user's policy
(``$XDG_CONFIG_HOME/ctxkit/``), by resolved path and SHA-256 of the content:
a changed file must be trusted again, and the same content at another path is
not trusted (``command: ./summarize.sh`` means another program in another
clone).

This module finds the untrusted settings of a merged policy
(:attr:`ctxkit.policy.model.Policy.untrusted`); the command about to use a
setting refuses with :func:`require_trusted` (exit 2, before anything runs),
and one that will not use it prints :func:`untrusted_warning`.
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import shlex
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Collection, Iterable, Mapping, NamedTuple, Sequence

from .. import resources
from ..confined import Refused, read_regular
from ..errors import PolicyError, Problem, UsageError
from ..fileio import atomic_write
from ..side_files import parse_json
from .layers import MAX_POLICY_BYTES, Layer, LayerReader, user_config_path
from .merge import Origin

TRUST_KEYWORD = "x-requires-trust"
TRUST_FILE = "trusted.json"
REPO_FILE_HINT = "name the policy file to trust"


class TrustMark(NamedTuple):
    """One ``x-requires-trust`` annotation: what the setting does, and which of its values need trust.

    The annotation is the text (every value needs trust) or ``{"does": text, "values": [...]}`` when
    only some values reach outside (``estimator: anthropic`` sends the transcript; ``rough`` does not).
    A mark on a section (``redact``) covers every key under it.
    """

    does: str
    values: tuple[Any, ...] | None = None  # None: any value

    def covers(self, value: Any) -> bool:
        return self.values is None or value in self.values


def trust_marks() -> dict[str, TrustMark]:
    """Every dotted policy key the schema marks ``x-requires-trust``, with its mark."""
    from .schema import static_schema

    found: dict[str, TrustMark] = {}

    def walk(node: Mapping[str, Any], prefix: str) -> None:
        for key, spec in (node.get("properties") or {}).items():
            if not isinstance(spec, Mapping):
                continue
            dotted = f"{prefix}{key}"
            mark = spec.get(TRUST_KEYWORD)
            if isinstance(mark, Mapping):
                found[dotted] = TrustMark(str(mark["does"]), tuple(mark["values"]))
            elif mark:
                found[dotted] = TrustMark(str(mark))
            walk(spec, dotted + ".")

    walk(static_schema(), "")
    return found


def keys_requiring_trust() -> dict[str, str]:
    """Every dotted policy key the schema marks ``x-requires-trust``, with what it does."""
    return {key: mark.does for key, mark in trust_marks().items()}


# -- the record of trusted files ------------------------------------------------------------------
def trust_file_path() -> Path:
    """``$XDG_CONFIG_HOME/ctxkit/trusted.json``, beside the user's policy."""
    return user_config_path().parent / TRUST_FILE


#: the largest record of trusted files read (one line per trusted file: far more than anyone trusts)
MAX_RECORD_BYTES = 16 << 20


def file_digest(path: Path) -> str:
    """The SHA-256 of a policy file, read as policies are (a regular file of at most
    :data:`~ctxkit.policy.layers.MAX_POLICY_BYTES`; anything else raises ``OSError``)."""
    try:
        return hashlib.sha256(read_regular(path, limit=MAX_POLICY_BYTES)).hexdigest()
    except Refused as exc:
        raise OSError(errno.EINVAL, exc.reason, str(path)) from None


def _read_record(where: Path) -> Any:
    """The record of trusted files, parsed (bounded like any file read from outside)."""
    try:
        return parse_json(read_regular(where, limit=MAX_RECORD_BYTES))
    except Refused as exc:
        raise OSError(errno.EINVAL, exc.reason, str(where)) from None


def _identity(path: Path) -> str:
    return str(Path(path).resolve())


def trusted_files() -> dict[str, str]:
    """Resolved path -> SHA-256 of each trusted file. A damaged record is a usage error naming it
    (trusting nothing silently would be safe, but would hide why every repository is refused)."""
    where = trust_file_path()
    try:
        data = _read_record(where)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise UsageError(f"{where}: cannot read the record of trusted policies ({exc}); fix or delete it, "
                         "then trust the files again") from None
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict):
        raise UsageError(f"{where}: not a record of trusted policies (no 'files' mapping); fix or delete it")
    return {str(k): str(v.get("sha256")) for k, v in files.items() if isinstance(v, dict)}


def is_trusted(path: Path, record: Mapping[str, str]) -> bool:
    """Whether the file at ``path`` has exactly the content that was trusted there."""
    try:
        return record.get(_identity(path)) == file_digest(path)
    except OSError:
        return False


def _record_trust(paths: Sequence[Path]) -> dict[Path, str]:
    """Record ``paths`` (with their current content) as trusted; returns each one's digest."""
    where = trust_file_path()
    try:
        data = _read_record(where)
    except FileNotFoundError:
        data = {}
    except (OSError, ValueError):
        trusted_files()  # raises the error that names the file
        raise
    files = dict(data.get("files") or {})
    when = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    digests = {}
    for path in paths:
        digests[path] = file_digest(path)
        files[_identity(path)] = {"sha256": digests[path], "trusted_at": when}
    text = json.dumps({"version": 1, "files": dict(sorted(files.items()))}, indent=2) + "\n"
    where.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(where, text.encode("utf-8"))
    return digests


# -- which merged values are untrusted --------------------------------------------------------------
@dataclass(frozen=True)
class UntrustedSetting:
    """A trust-requiring value that comes from a repository file not trusted with that content."""

    key: str  # dotted, e.g. summarizer.command
    does: str  # what it does, from the schema: "runs this shell command, ..."
    file: str  # the file that sets it, as problems name files
    line: int
    col: int
    repository_policy: str  # the .ctxkit.yaml it comes through (the file to trust)
    marked: str = ""  # the marked key it falls under (``redact`` for ``redact.enabled``); "" means ``key``

    @property
    def setting(self) -> str:
        """The marked key: what a command about to use it names (:func:`require_trusted`)."""
        return self.marked or self.key

    @property
    def trust_command(self) -> str:
        return f"ctxkit policy trust {shlex.quote(self.repository_policy)}"

    def problem(self) -> Problem:
        through = "" if self.file == self.repository_policy else f" (extended by {self.repository_policy})"
        return Problem(self.file, self.line, self.col,
                       f"{self.key} comes from a repository policy{through} that you have not trusted: it "
                       f"{self.does}. Nothing was run",
                       f"read the file, then run: {self.trust_command}")


def _builtin(layer: Layer) -> bool:
    return layer.path is not None and layer.path.resolve().parent == resources.policies_dir().resolve()


def repository_positions(bases: Sequence[Layer], layers: Sequence[Layer], repo: Layer | None,
                         reader: LayerReader) -> dict[int, Layer]:
    """Positions in ``[*bases, *layers]`` whose values come from the repository: its own slot, and
    each base file its ``extends`` chain reaches that no other layer's chain reaches; mapped to the
    repository layer they come through."""
    slot = next((i for i, layer in enumerate(layers) if layer is repo), None)
    if repo is None or slot is None:
        return {}
    positions = {len(bases) + slot: repo}
    from_repo = {base.key for base in reader.extends_chain(repo) if not _builtin(base)}
    from_user = {base.key for i, layer in enumerate(layers) if i != slot for base in reader.extends_chain(layer)}
    for i, base in enumerate(bases):
        if base.key in from_repo and base.key not in from_user:
            positions[i] = repo
    return positions


def untrusted_settings(stack: Sequence[Layer], added: Sequence[int], repository: Mapping[int, Layer],
                       origins: Mapping[str, Origin], doc: Mapping[str, Any] | None = None
                       ) -> list[UntrustedSetting]:
    """The trust-requiring values of the merged policy (``doc``) that a repository layer set, in files
    not trusted with their current content. ``added[rank - 1]`` is the position in ``stack`` of the
    layer merged with that rank (layers that could not be read are not merged). A marked section
    counts each key under it; a mark listing values counts only when the merged value is one of them."""
    candidates = []
    for marked, mark in trust_marks().items():
        if mark.values is not None and not mark.covers(_get(doc or {}, marked)):
            continue
        for key, origin in origins.items():
            if key != marked and not key.startswith(marked + "."):
                continue
            position = added[origin.rank - 1]
            if position in repository:
                candidates.append((key, marked, mark.does, origin, stack[position], repository[position]))
    if not candidates:
        return []  # the record is read only when there is something to check
    record = trusted_files()
    return [UntrustedSetting(key, does, origin.file, origin.line, origin.col, repo.label,
                             "" if marked == key else marked)
            for key, marked, does, origin, layer, repo in candidates
            if layer.path is None or not is_trusted(layer.path, record)]


# -- using them ---------------------------------------------------------------------------------------
def require_trusted(untrusted: Iterable[UntrustedSetting], keys: Collection[str]) -> None:
    """Raise :class:`PolicyError` (exit 2) when a setting about to be used (``keys``) is untrusted."""
    problems = [setting.problem() for setting in untrusted if setting.setting in keys]
    if problems:
        raise PolicyError(problems)


def require_trusted_summarizer(policy: Any, env: Mapping[str, str] | None = None) -> None:
    """Before building the policy's summarizer: refuse when it would use an untrusted setting."""
    if not getattr(policy, "untrusted", ()):
        return
    from ..summarize import summarizer_settings_used

    require_trusted(policy.untrusted, summarizer_settings_used(policy.summarizer, os.environ if env is None else env))


def require_trusted_estimator(policy: Any) -> None:
    """Before counting tokens: refuse when the estimator would send the transcript on an untrusted word
    (only ``estimator: anthropic`` is marked, so any untrusted ``estimator`` setting is that one)."""
    require_trusted(getattr(policy, "untrusted", ()), {"estimator"})


def untrusted_warning(untrusted: Sequence[UntrustedSetting]) -> str | None:
    """The one warning for a run that will not use the untrusted settings (or None when there are none)."""
    if not untrusted:
        return None
    where = ", ".join(f"{s.key} ({s.file}:{s.line})" for s in untrusted)
    commands = ", ".join(dict.fromkeys(s.trust_command for s in untrusted))
    return (f"the repository policy sets {where}, which you have not trusted; a command that would use "
            f"{'them' if len(untrusted) > 1 else 'it'} refuses to run until you read the file and run: {commands}")


# -- ctxkit policy trust -------------------------------------------------------------------------------
@dataclass
class TrustedFile:
    label: str
    digest: str
    settings: list[tuple[str, Any]]  # the trust-requiring (dotted key, value) it sets


def trust_policy_file(path: Path, cwd: Path) -> list[TrustedFile]:
    """Trust ``path`` and every file its ``extends`` chain names, with their current content.

    Raises :class:`PolicyError` when one cannot be read or parsed: there is nothing to trust in a
    file ctxkit cannot read.
    """
    reader = LayerReader(cwd)
    layer = reader.file(Path(path))
    problems: list[Problem] = []
    chain = [base for base in reader.extends_chain(layer, problems) if not _builtin(base)]
    broken = [p for f in [layer, *chain] for p in f.problems] + problems
    if broken:
        raise PolicyError(broken)
    digests = _record_trust([f.path for f in [layer, *chain]])
    keys = keys_requiring_trust()
    out = []
    for f in [layer, *chain]:
        data = f.document.data if f.document and isinstance(f.document.data, dict) else {}
        settings = [(key, value) for key in keys if (value := _get(data, key)) is not None]
        out.append(TrustedFile(f.label, digests[f.path], settings))
    return out


def _get(data: Mapping[str, Any], dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(data, Mapping):
            return None
        data = data.get(part)
    return data
