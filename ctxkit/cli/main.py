"""Entry point: ``ctxkit`` (see ``ctxkit --help``)."""
from __future__ import annotations

from . import commands, extra_cmds, policy_cmd, trust_cmd  # noqa: F401  (registers the commands on the app)
from .app import app


def run() -> None:
    app(prog_name="ctxkit")  # the same name in messages however it was started (python -m, a shim)


if __name__ == "__main__":
    run()
