"""The built-in policies, parsed ahead of time: a run on them reads JSON instead of importing YAML.

Importing PyYAML and parsing ``default.yaml`` with positions is a tenth of the start-up of
``ctxkit compact`` (docs/benchmarks.md). ``policies/builtin-forms.json`` holds, for each built-in
policy, what :func:`ctxkit.policy.yamlpos.parse` makes of it (the data and the position tree) with
the SHA-256 of the YAML it was made from. A form is used only when that hash is the file's: a
built-in edited since (or a missing form) is parsed from its YAML as any other policy is, so the
forms can make a run faster but never make it read something else.

After editing a built-in policy, write the forms again (``tests/test_startup.py`` fails until then)::

    python -m ctxkit.policy.builtin_forms
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import orjson

from .. import resources
from .positions import Document

FORMS_FILE = "builtin-forms.json"
_forms: dict | None = None


def compiled_form(path: Path, raw: bytes, label: str) -> Document | None:
    """The parsed form of the built-in policy at ``path`` whose bytes are ``raw``; None when there is
    no form for these exact bytes."""
    global _forms
    if _forms is None:
        try:
            _forms = orjson.loads((resources.policies_dir() / FORMS_FILE).read_bytes())
        except (OSError, orjson.JSONDecodeError):
            _forms = {}
    form = _forms.get(path.stem) if isinstance(_forms, dict) else None
    if not isinstance(form, dict) or form.get("sha256") != hashlib.sha256(raw).hexdigest():
        return None
    return Document(label, form["data"], form["tree"])


def build_forms() -> bytes:
    """The forms of every built-in policy, as the file holds them."""
    from .yamlpos import parse

    forms = {}
    for name in resources.builtin_policy_names():
        raw = (resources.policies_dir() / f"{name}.yaml").read_bytes()
        document, problems = parse(raw.decode("utf-8"), f"<builtin>/{name}.yaml")
        if document is None or problems:
            continue  # a broken built-in is parsed (and its problems reported) at run time
        forms[name] = {"sha256": hashlib.sha256(raw).hexdigest(), "data": document.data, "tree": document.root}
    return orjson.dumps(forms, option=orjson.OPT_SORT_KEYS) + b"\n"


def main() -> None:
    target = resources.policies_dir() / FORMS_FILE
    target.write_bytes(build_forms())
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
