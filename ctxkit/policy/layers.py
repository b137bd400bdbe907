"""Finding and reading the policy layers.

Lowest first:

1. the bases: the policies named by ``extends:`` (a built-in name or a path
   relative to the file that names it), each after its own bases; when no
   layer names one, the built-in ``default``. When several layers name bases,
   all of them stack in layer order (each once), so a repository's
   ``extends: no-llm`` survives ``--policy strict.yaml`` extending ``default``;
2. the user's file, ``$XDG_CONFIG_HOME/ctxkit/policy.yaml``
   (``~/.config/ctxkit/policy.yaml``), if present (a config folder that
   cannot be read, or no home folder at all, is the same as no user file);
3. the repository's ``.ctxkit.yaml``, the first found walking up from the
   working directory;
4. ``--policy``: a file, or the name of a built-in policy;
5. each ``--set path=value``, in order.

Files are named in problems and origins relative to the working directory
when they are in it or directly in one of its parents, with ``~`` under the
home folder, else absolutely; built-ins as ``<builtin>/NAME.yaml``.
"""
from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from .. import resources
from ..errors import Problem
from ..filenames import is_file
from ..quoting import QUOTE_LIMIT, clip, quote
from .hints import did_you_mean
from .positions import Document, FixedDocument

REPO_FILE = ".ctxkit.yaml"
DEFAULT_BASE = "default"
_SET_KEY = re.compile(r"[\w-]+")


@dataclass(frozen=True)
class Labels:
    """How the caller's own layers are named in problems and origins: the policy it named (4.) and the
    settings it gave (5.). The command line names its options; a library caller is told about its
    arguments, not about options it never typed (``--policy:1:1: error: ...`` from a library call
    sends its user looking for a command line)."""

    policy: str
    setting: str


CLI_LABELS = Labels("--policy", "--set")
LIBRARY_LABELS = Labels("policy argument", "setting")


@dataclass
class Layer:
    """One policy source: its name in messages, what it says, and what went wrong reading it."""

    label: str
    document: Document | None
    problems: list[Problem] = field(default_factory=list)
    path: Path | None = None  # the file behind it, against which a relative 'extends' resolves
    #: one of ctxkit's own policies, read by name: trusted to fit the schema (see ``loader.assemble``)
    builtin: bool = False

    @property
    def key(self) -> str | None:
        """Identity for cycle detection: the resolved file."""
        return str(self.path.resolve()) if self.path else None

    @property
    def extends(self) -> str | None:
        data = self.document.data if self.document else None
        value = data.get("extends") if isinstance(data, dict) else None
        return value if isinstance(value, str) and value else None


class Unresolved(Exception):
    """An ``extends`` or ``--policy`` value that names no file and no built-in policy."""

    def __init__(self, message: str, hint: str | None):
        super().__init__(message)
        self.message = message
        self.hint = hint


def user_config_path() -> Path | None:
    """``$XDG_CONFIG_HOME/ctxkit/policy.yaml``; XDG says to ignore an unset, empty or relative value.
    None when there is no home folder to look in (``HOME`` unset and no passwd entry). A folder on the
    way that cannot be read is the same as no user policy (:func:`ctxkit.filenames.is_file`)."""
    xdg = os.environ.get("XDG_CONFIG_HOME", "")
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "ctxkit" / "policy.yaml"
    home = _home()
    return home / ".config" / "ctxkit" / "policy.yaml" if home is not None else None


def _home() -> Path | None:
    try:
        return Path.home()
    except (RuntimeError, KeyError, OSError):
        return None


def find_repo_policy(cwd: Path) -> Path | None:
    """The nearest ``.ctxkit.yaml`` in ``cwd`` or a folder above it, up to the filesystem root."""
    start = Path(cwd).absolute()
    for folder in (start, *start.parents):
        candidate = folder / REPO_FILE
        if is_file(candidate):
            return candidate
    return None


class LayerReader:
    """Reads layers for one load, relative to one working directory; reads each file once."""

    def __init__(self, cwd: Path, labels: Labels = CLI_LABELS):
        self.cwd = Path(cwd).absolute()
        self.labels = labels
        self._read: dict[str, Layer] = {}
        self.repo: Layer | None = None  # the repository's .ctxkit.yaml, once layers() found it (see .trust)

    # -- the stack ------------------------------------------------------------

    def layers(self, policy: str | None, sets: Sequence[str], user_config: Path | None) -> list[Layer]:
        """Layers 2 to 5 (the bases come from :meth:`bases`)."""
        found = []
        user = user_config_path() if user_config is None else Path(user_config)
        if user is not None and is_file(user):
            found.append(self.file(user))
        repo = find_repo_policy(self.cwd)
        if repo is not None:
            self.repo = self.file(repo)
            found.append(self.repo)
        if policy is not None:
            found.append(self.policy_option(policy))
        found.extend(self.setting(item) for item in sets)
        return found

    def bases(self, layers: Sequence[Layer]) -> tuple[list[Layer], list[Problem]]:
        """The layers below ``layers``: what their ``extends`` name, in layer order, else ``default``."""
        problems: list[Problem] = []
        chain: list[Layer] = []
        for layer in layers:
            for base in self._extends_chain(layer, [layer], problems):
                if all(base.key != seen.key for seen in chain):
                    chain.append(base)
        if not chain:
            default = self.builtin(DEFAULT_BASE)
            chain = [*self._extends_chain(default, [default], problems), default]
        return chain, problems

    def extends_chain(self, layer: Layer, problems: list[Problem] | None = None) -> list[Layer]:
        """What ``layer`` extends, lowest first (built-ins included), not including ``layer``."""
        return self._extends_chain(layer, [layer], [] if problems is None else problems)

    def _extends_chain(self, layer: Layer, trail: list[Layer], problems: list[Problem]) -> list[Layer]:
        """What ``layer`` extends, lowest first, not including ``layer``; ``trail`` detects cycles."""
        name = layer.extends
        if name is None or layer.document is None:
            return []
        folder = layer.path.parent if layer.path else self.cwd
        try:
            target = self._locate(name, folder, "paths are relative to the file that names them")
        except Unresolved as exc:
            problems.append(layer.document.problem(["extends"], exc.message, exc.hint))
            return []
        if any(target.key == seen.key for seen in trail):
            cycle = " -> ".join(seen.label for seen in [*trail, target])
            problems.append(layer.document.problem(["extends"], f"'extends' cycle: {cycle}"))
            return []
        return [*self._extends_chain(target, [*trail, target], problems), target]

    # -- single layers --------------------------------------------------------

    def file(self, path: Path) -> Layer:
        path = path if path.is_absolute() else self.cwd / path
        return self._cached(path, self.label(path))

    def builtin(self, name: str) -> Layer:
        return self._cached(resources.policies_dir() / f"{name}.yaml", f"<builtin>/{name}.yaml", builtin=True)

    def _cached(self, path: Path, label: str, builtin: bool = False) -> Layer:
        key = str(path.resolve())
        if key not in self._read:
            document, problems = read_policy_file(path, label, builtin=builtin)
            self._read[key] = Layer(label, document, problems, path, builtin=builtin)
        return self._read[key]

    def policy_option(self, value: str) -> Layer:
        """``--policy``: a file (relative to the working directory) or a built-in name."""
        try:
            return self._locate(value, self.cwd)
        except Unresolved as exc:
            label = self.labels.policy
            return Layer(label, None, [Problem(label, 1, 1, exc.message, exc.hint)])

    def named(self, value: str) -> Layer:
        """The FILE|NAME argument of a policy subcommand (validate, lint, show, trust): resolved as ``--policy``
        is, by the one rule of :meth:`_locate`; one that names nothing is reported under its own name."""
        try:
            return self._locate(value, self.cwd)
        except Unresolved as exc:
            return Layer(value, None, [Problem(value, 1, 1, exc.message, exc.hint)])

    def _locate(self, value: str, folder: Path, path_hint: str | None = None) -> Layer:
        """A value that looks like a path (has a slash or a .yaml/.yml suffix) is a file, else a
        built-in name. Raises :class:`Unresolved`; the caller knows where to report it."""
        if _looks_like_path(value):
            path = Path(value).expanduser()
            path = path if path.is_absolute() else folder / path
            if path.exists():  # read_policy_file says why a FIFO, a folder or a huge file is no policy
                return self.file(path)
            raise Unresolved(f"policy file {quote(value)} not found", path_hint)
        names = resources.builtin_policy_names()
        if value in names:
            return self.builtin(value)
        hint = did_you_mean(value, names) or f"built-in policies: {', '.join(names)}; or give a file path"
        raise Unresolved(f"no built-in policy named {quote(value)}", hint)

    def setting(self, item: str) -> Layer:
        """One ``--set path=value``: the value is YAML (``5``, ``false``, ``[Read, Grep]``, ``{a: 1}``);
        ``stages.ID.rest`` addresses the stage with that id."""
        label = self.labels.setting
        try:
            data = _setting_data(item, label)
        except ValueError as exc:
            return Layer(label, None, [Problem(label, 1, 1, f"malformed {label} {quote(item)}: {exc}",
                                               "expected PATH=VALUE, e.g. thresholds.autocompact_buffer=20000")])
        except _BadValue as exc:
            return Layer(label, None, exc.problems)
        return Layer(label, FixedDocument(label, data))

    def label(self, path: Path) -> str:
        """How a file is named in problems and origins (see the module docstring)."""
        path = Path(os.path.abspath(path))
        if path.is_relative_to(self.cwd) or self.cwd.is_relative_to(path.parent):
            return os.path.relpath(path, self.cwd)
        home = _home()
        if home is not None and path.is_relative_to(home):
            return str(Path("~") / path.relative_to(home))
        return str(path)


#: the largest policy file read: a policy is a few hundred lines; anything bigger is not one
MAX_POLICY_BYTES = 1 << 20


def read_policy_file(path: Path, label: str, builtin: bool = False) -> tuple[Document | None, list[Problem]]:
    """Read and parse one policy file, naming it ``label`` in problems (a ``builtin`` one from its
    form parsed ahead of time, when there is one for these bytes: :mod:`ctxkit.policy.builtin_forms`).

    A policy names other files (``extends:``) and a repository's ``.ctxkit.yaml`` is not the user's
    own, so what is read is bounded: only a regular file (opened non-blocking, so a FIFO cannot hang
    the run), at most :data:`MAX_POLICY_BYTES`, and holding exactly the bytes its size says (a
    ``/proc`` pseudo-file, which says 0, is refused). Anything else is a problem naming the file."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None, [Problem(label, 1, 1, "no such file")]
    except OSError as exc:
        return None, [Problem(label, 1, 1, f"cannot read the file: {exc.strerror or exc}")]
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None, [Problem(label, 1, 1, "cannot read the file: not a regular file (a policy is a YAML file)")]
        if st.st_size > MAX_POLICY_BYTES:
            return None, [Problem(label, 1, 1, f"the file is {st.st_size} bytes, more than the {MAX_POLICY_BYTES} "
                                               "a policy may hold")]
        chunks, size = [], 0
        while size <= st.st_size:
            chunk = os.read(fd, st.st_size + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        return None, [Problem(label, 1, 1, f"cannot read the file: {exc.strerror or exc}")]
    finally:
        os.close(fd)
    if size != st.st_size:
        return None, [Problem(label, 1, 1, f"cannot read the file: it holds more than its size ({st.st_size} bytes) "
                                           "says (a pseudo-file, or one being written)")]
    raw = b"".join(chunks)
    if builtin:
        from .builtin_forms import compiled_form

        document = compiled_form(path, raw, label)
        if document is not None:
            return document, []
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, [Problem(label, 1, 1, f"cannot read the file: not UTF-8 ({exc.reason})")]
    from . import yamlpos  # PyYAML: imported when a policy is parsed, not with this module

    return yamlpos.parse(text, label)


def _looks_like_path(value: str) -> bool:
    return "/" in value or os.sep in value or value.endswith((".yaml", ".yml"))


class _BadValue(Exception):
    """A ``--set`` value that is not valid YAML or breaks a limit: its problems."""

    def __init__(self, problems: list[Problem]):
        super().__init__(problems)
        self.problems = problems


def _setting_data(item: str, label: str) -> dict[str, Any]:
    """The layer a ``--set`` item stands for; ValueError says what is malformed, :class:`_BadValue`
    what is wrong in its value."""
    dotted, equals, raw = item.partition("=")
    keys = dotted.strip().split(".")
    if not equals:
        raise ValueError("no '='")
    if not all(_SET_KEY.fullmatch(key) for key in keys):
        raise ValueError(f"{quote(dotted)} is not a dotted path")
    # the value is read like a policy file, under the same limits; its problems are named
    # '--set PATH' and placed in the value
    from . import yamlpos

    value, problems = yamlpos.parse_value(raw, f"{label} {clip(dotted.strip(), QUOTE_LIMIT)}")
    if problems:
        raise _BadValue(problems)
    if keys[0] != "stages" or len(keys) == 1:
        return _nested(keys, value)
    stage_id, rest = keys[1], keys[2:]
    if rest:
        return {"stages": [{"id": stage_id, **_nested(rest, value)}]}
    if not isinstance(value, dict):
        raise ValueError(f"a stage takes a mapping, e.g. stages.{stage_id}={{enabled: false}}")
    return {"stages": [{"id": stage_id, **{k: v for k, v in value.items() if k != "id"}}]}


def _nested(keys: Sequence[str], value: Any) -> dict[str, Any]:
    for key in reversed(keys[1:]):
        value = {key: value}
    return {keys[0]: value}
