"""Entry point: ``ctxkit`` (see ``ctxkit --help``)."""
from __future__ import annotations

import signal
import sys
import threading


def _terminated_while_starting(signum, frame):
    """SIGTERM before a command runs (while its modules load): nothing is written yet; say so, exit 4
    like a SIGTERM during a command (:func:`ctxkit.cli.app.handle_errors`), instead of dying silently."""
    sys.stderr.write("ctxkit: error: terminated; no file was left half-written\n")
    raise SystemExit(4)


if threading.current_thread() is threading.main_thread():
    # first, before the imports below (most of the start-up time): a command replaces it while it runs
    signal.signal(signal.SIGTERM, _terminated_while_starting)

# each import registers its commands on the app; --help lists them in this order
# isort: off
from . import commands, doctor_cmd, memory_cmd, snip_cmd, tools_cmd, stages_cmd, policy_cmd, trust_cmd, simulate_cmd, hooks_cmd, proxy_cmd, sessions_cmd  # noqa: E402, F401
# isort: on
from .app import app  # noqa: E402


def run() -> None:
    """The console script: run the command, then end the process without tearing it down
    (:mod:`ctxkit.cli.quick_exit`)."""
    from . import quick_exit

    quick_exit.enable()
    try:
        app(prog_name="ctxkit")  # the same name in messages however it was started (python -m, a shim)
    except SystemExit as exc:
        quick_exit.exit_now(exc.code)
    quick_exit.exit_now(0)


if __name__ == "__main__":
    run()
