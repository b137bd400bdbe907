#!/usr/bin/env python3
"""Benchmark row: ``ctxkit doctor`` on a 100 MB session against ``ctxkit stats`` on the same session.

doctor reads the whole file like stats, projects the view and checks it, and also walks every line for
what the agent cannot read and what ``--slim`` would move (the ``toolUseResult`` copies are parsed for
their size). The session is the one ``bench/perf.py`` builds from the corpus (a compact boundary every
10 copies). The row is doctor's CPU seconds over stats' (target: at most 1.5x). Part of the table
``python bench/perf.py`` prints (``rows`` is its plug-in interface); alone:
``python bench/perf.py --only doctor``.
"""
from __future__ import annotations

NAME = "doctor vs stats, 100 MB session"
TARGET = 1.5


def rows(ctx) -> list:
    """The row, for ``bench/perf.py`` (``ctx`` is its Context: inputs, scratch folder, ``run``)."""
    from perf import Row, Sample  # bench/ is on sys.path when perf.py runs

    def measure() -> Sample:
        session = ctx.session(100)
        store = ctx.work / "doctor-store"
        doctor = ctx.run([*ctx.ctxkit, "doctor", str(session), "--json", "--store", str(store)], inputs=(session,))[0]
        stats = ctx.run([*ctx.ctxkit, "stats", str(session), "--json", "--store", str(store)], inputs=(session,))[0]
        return Sample(doctor, stats, f"{doctor:.2f} s vs {stats:.2f} s")

    size = f"{100 * ctx.scale:g} MB"
    return [Row(NAME.replace("100 MB", size), "time", TARGET, measure)]
