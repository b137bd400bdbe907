"""``ctxkit policy trust``: trust a repository's policy; every command checks for it before it uses one
(:func:`ctxkit.cli.run_setup.guard_policy`).

See :mod:`ctxkit.policy.trust` (and docs/security.md) for what needs trust and why.
"""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..errors import UsageError
from .app import handle_errors, stderr_console
from .completion import complete_policy
from .policy_cmd import policy_app


@policy_app.command("trust")
@handle_errors
def trust(file: Annotated[Optional[str], typer.Argument(metavar="FILE|NAME",
        help="The policy file to trust (default: the .ctxkit.yaml found from the working directory).",
        autocompletion=complete_policy)] = None
          ) -> None:
    """Trust a repository's policy file, as it is now: let it set what runs a program or sends data.

    The files it names with 'extends:' are trusted with it. A changed file must be trusted again. A
    built-in policy's name is taken as every policy subcommand takes it: ctxkit's own, it needs no trust.
    """
    from ..policy import find_repo_policy
    from ..policy.layers import LayerReader
    from ..policy.trust import REPO_FILE_HINT, trust_file_path, trust_policy_file
    cwd = Path.cwd()
    if file is None:
        path = find_repo_policy(cwd)
        if path is None:
            raise UsageError(f"no .ctxkit.yaml in {cwd} or a folder above it; {REPO_FILE_HINT}")
    else:
        layer = LayerReader(cwd).named(file)  # the one resolver: a file, or a built-in name
        if layer.builtin:
            stderr_console().print(f"{layer.label}: a built-in policy is ctxkit's own and trusted as it is; "
                                   "nothing to do", markup=False)
            return
        if layer.path is None:
            raise UsageError(layer.problems[0].message + (f" ({layer.problems[0].hint})" if layer.problems[0].hint
                                                          else ""))
        path = layer.path
    if not path.is_file():
        raise UsageError(f"{path}: no such file")
    from ..policy.render import flow  # PyYAML: imported by the command that prints YAML

    console = stderr_console()
    for trusted in trust_policy_file(path, cwd):
        console.print(f"trusted {trusted.label} (sha256 {trusted.digest[:16]})", markup=False)
        for key, value in trusted.settings:
            console.print(f"  {key}: {flow(value)}", markup=False)
    console.print(f"recorded in {trust_file_path()}", markup=False)
