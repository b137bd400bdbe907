"""Entry point: ``ctxkit`` (see ``ctxkit --help``)."""
from __future__ import annotations

# each import registers its commands on the app; --help lists them in this order
# isort: off
from . import commands, memory_cmd, snip_cmd, tools_cmd, stages_cmd, policy_cmd, trust_cmd  # noqa: F401
# isort: on
from .app import app


def run() -> None:
    app(prog_name="ctxkit")  # the same name in messages however it was started (python -m, a shim)


if __name__ == "__main__":
    run()
